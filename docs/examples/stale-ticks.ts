import { Effect, Metric } from "effect"
import { Actor, ActorSystem, Metrics } from "tickwork"

type Msg = { readonly _tag: "Reminder" } | { readonly _tag: "Work" }

const Worker = Actor.make<Msg>()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startSingleTimer("reminder", { _tag: "Reminder" }, "100 millis")),
  receive: (msg, ctx) =>
    msg._tag === "Reminder"
      ? Effect.logInfo("never logged: the reminder was cancelled while it waited in the mailbox")
      : Effect.gen(function* () {
          // The reminder fires at 100 ms and queues behind this 300 ms job.
          yield* Effect.sleep("300 millis")
          // A single timer stays active until its tick is handled, so cancel still succeeds and drops the tick.
          const cancelled = yield* ctx.timers.cancel("reminder")
          yield* Effect.logInfo(`cancel("reminder") while its tick was queued: ${cancelled}`)
        })
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const stale = Metric.value(Metrics.ticksDropped("stale"))
  const before = (yield* stale).count
  const worker = yield* system.spawn(Worker, "worker")
  yield* worker.tell({ _tag: "Work" })
  yield* Effect.sleep("500 millis")
  yield* Effect.logInfo(`stale ticks dropped: ${(yield* stale).count - before}`)
}).pipe(Effect.provide(ActorSystem.layer({ name: "stale-ticks" })))

// `npx tsx docs/examples/stale-ticks.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
