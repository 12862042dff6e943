// An app in TypeScript run with `node --import tsx`: its CPU task module is TypeScript too.
import { Effect } from "effect"
import { ActorSystem, Workers } from "tickwork"
import { triple } from "./tasks.js"

const main = Workers.run(triple, 14).pipe(
  Effect.provide(ActorSystem.layer({ name: "typescript-app", workers: { minThreads: 1, maxThreads: 1 } }))
)

const result = await Effect.runPromise(main)
if (result !== 42) throw new Error(`expected 42, got ${result}`)
console.log(`typescript task module under tsx: ${result}`)
