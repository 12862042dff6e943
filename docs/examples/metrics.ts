import { Effect, Metric } from "effect"
import { Actor, ActorSystem, Metrics } from "tickwork"

const Ticker = Actor.make<"tick">()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("tick", "tick", "100 millis")),
  receive: () => Effect.void
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  yield* system.spawn(Ticker, "ticker")
  yield* Effect.sleep("550 millis")

  const delivered = yield* Metric.value(Metrics.ticksDelivered("actor_timer"))
  const stale = yield* Metric.value(Metrics.ticksDropped("stale"))
  const lateness = yield* Metric.value(Metrics.tickLateness)
  yield* Effect.logInfo(`actor-timer ticks delivered: ${delivered.count}, stale ticks dropped: ${stale.count}`)
  yield* Effect.logInfo(`lateness: ${lateness.count} firings, worst ${lateness.max} ms`)
  // live counts of this system (the metrics are process-wide)
  yield* Effect.logInfo(`armed in the engine: ${(yield* system.stats).engineEntries}`)
}).pipe(Effect.provide(ActorSystem.layer({ name: "metrics" })))

// `npx tsx docs/examples/metrics.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
