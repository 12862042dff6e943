import { Effect } from "effect"
import { ActorSystem, Entity } from "tickwork"

interface Model {
  readonly sweeps: number
}

type Command = { readonly _tag: "CheckExpiredItems" } | { readonly _tag: "Report" }

const Inventory = Entity.make<Model, Command>()({
  name: "Inventory",
  initialize: (id, ctx) =>
    Effect.gen(function* () {
      // Programmatic timers: an interval read at runtime, started only under some condition.
      yield* ctx.startRandomizedPeriodicTimer("400 millis", { _tag: "CheckExpiredItems" }) // first after 200-600 ms
      yield* ctx.startPeriodicTimer("100 millis", "1 second", { _tag: "Report" }) // first after 100 ms
      // One-shots run an effect on the entity's context; the handle cancels one until it starts.
      yield* ctx.scheduleExecuteOnActorContext("700 millis", Effect.logInfo(`${id}: one-shot after 700 ms`))
      const never = yield* ctx.scheduleExecuteOnActorContext("800 millis", Effect.logInfo("never printed"))
      yield* never.cancel
      return { sweeps: 0 }
    }).pipe(Effect.orDie),
  commands: {
    CheckExpiredItems: (_cmd, model) => Effect.succeed({ sweeps: model.sweeps + 1 }),
    Report: (_cmd, model, ctx) => Effect.as(Effect.logInfo(`${ctx.id}: ${model.sweeps} sweeps so far`), model)
  },
  // A declarative timer: it starts with every incarnation and runs until the entity stops. Its handler takes
  // 250 ms but runs every 100 ms: the invocations that come due meanwhile are dropped, with one warning each time.
  timers: [
    {
      name: "slow-audit",
      interval: "100 millis",
      initialDelay: 0,
      run: (model) => Effect.as(Effect.sleep("250 millis"), model)
    }
  ]
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const inventories = yield* Entity.makeRegistry(Inventory)
  yield* inventories.tell("warehouse-1", { _tag: "Report" }) // wakes the entity: initialize runs
  yield* Effect.sleep("1500 millis")
  yield* Effect.logInfo(`before sleep: ${JSON.stringify(yield* inventories.stats)}`)
  yield* inventories.sleep("warehouse-1") // every timer of the entity is cancelled with its actor
  const stats = yield* system.stats
  yield* Effect.logInfo(
    `after sleep: ${JSON.stringify(yield* inventories.stats)}, engine entries ${stats.engineEntries}`
  )
}).pipe(Effect.scoped, Effect.provide(ActorSystem.layer({ name: "inventory" })))

// `npx tsx docs/examples/entities-timers.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
