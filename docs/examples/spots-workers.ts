import { Effect } from "effect"
import { ActorSystem, Spot, Workers } from "tickwork"
import { countPrimes } from "./spots-tasks.js"

interface Stats {
  readonly primes: number
  readonly requests: number
}

// An I/O call (a database, HTTP): here, 200 ms of waiting.
const fetchLimit = Effect.succeed(3_000_000).pipe(Effect.delay("200 millis"))

const main = Effect.gen(function* () {
  const spot = yield* Spot.spawn<Stats>({ initialState: { primes: 0, requests: 0 } }, "stats")

  // Yield: the turn is given back while the worker runs; other work of the Spot runs meanwhile
  yield* spot.submit((ctx) =>
    Effect.gen(function* () {
      const below = yield* Workers.io(fetchLimit).pipe(Spot.Yield)
      // a copy of the input goes to a worker thread; the main thread (and every timer) keeps running
      const primes = yield* Workers.cpu(countPrimes, { below }).pipe(Spot.Yield)
      // other work may have changed the state meanwhile: update from the current state
      yield* ctx.update((s) => ({ ...s, primes }))
      yield* Effect.logInfo(`primes below ${below}: ${primes}`)
    })
  )
  // runs while the first item waits
  yield* spot.submit((ctx) =>
    Effect.zipRight(
      ctx.update((s) => ({ ...s, requests: s.requests + 1 })),
      Effect.logInfo("request counted")
    )
  )

  // Async: the turn is held; nothing else of the Spot runs until the call completes
  yield* spot.submit((ctx) =>
    Effect.gen(function* () {
      yield* Workers.io(Effect.sleep("50 millis")).pipe(Spot.Async)
      yield* ctx.update((s) => ({ ...s, requests: s.requests + 1 }))
    })
  )

  // Submit: fire and forget; a failure is logged
  yield* spot.submit(() => Workers.io(Effect.logInfo("audit line written")).pipe(Spot.Submit))

  yield* Effect.sleep("3 seconds")
  yield* Effect.logInfo(yield* spot.run((ctx) => ctx.state))
}).pipe(
  // the system's worker pool is configured in its root options
  Effect.provide(
    ActorSystem.layer({
      name: "spots-workers",
      workers: { minThreads: 1, maxThreads: 2, idleTime: "10 seconds", queueLength: 100 }
    })
  )
)

// `npx tsx docs/examples/spots-workers.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
