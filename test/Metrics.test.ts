import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Metric, TestClock } from "effect"
import { Actor, ActorSystem, Metrics } from "tickwork"
import { makeStallClock } from "./utils.js"

const count = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => state.count)

describe("Metrics", () => {
  it.effect("ticks delivered by kind, lateness, and the active-timers gauge per system", () =>
    Effect.gen(function* () {
      const { clock, stall } = yield* makeStallClock
      const program = Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const deliveredBefore = yield* count(Metrics.ticksDelivered("actor_timer"))
        const latenessBefore = (yield* Metric.value(Metrics.tickLateness)).count
        const Ticking = Actor.make<string>()({
          preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("t", "tick", "100 millis")),
          receive: () => Effect.void
        })
        yield* system.spawn(Ticking, "ticking")
        yield* TestClock.adjust("300 millis")
        assert.strictEqual((yield* count(Metrics.ticksDelivered("actor_timer"))) - deliveredBefore, 3)
        const gauge = Metrics.activeTimers("metrics")
        assert.strictEqual((yield* Metric.value(gauge)).value, 1)

        // a stall makes the next firing 250 ms late: the lateness histogram records it
        yield* stall(250)
        yield* TestClock.adjust("100 millis")
        const lateness = yield* Metric.value(Metrics.tickLateness)
        assert.isAtLeast(lateness.count - latenessBefore, 4)
        assert.isAtLeast(lateness.max, 250)
        yield* system.shutdown
        assert.strictEqual((yield* Metric.value(gauge)).value, 0, "nothing is armed after shutdown")
      })
      // only the system (its driver) reads the stalling clock; the test drives TestClock
      const system = Layer.scopedContext(Effect.withClock(Layer.build(ActorSystem.layer({ name: "metrics" })), clock))
      yield* program.pipe(Effect.provide(system))
    })
  )

  it.effect("ticks handled after a handler suspended are counted when its drain ends", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const before = yield* count(Metrics.ticksDelivered("scheduler_message"))
      const handled: Array<number> = []
      // the first message sleeps: the rest of the drain runs on the resumed fiber, outside any flush
      const Slow = Actor.make<number>()({
        receive: (i) =>
          Effect.zipRight(
            i === 0 ? Effect.sleep("50 millis") : Effect.void,
            Effect.sync(() => handled.push(i))
          )
      })
      const slow = yield* system.spawn(Slow, "slow")
      for (let i = 0; i < 5; i++) yield* system.scheduler.scheduleOnce("10 millis", slow, i)
      yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(handled, [])
      assert.strictEqual((yield* count(Metrics.ticksDelivered("scheduler_message"))) - before, 1)
      yield* TestClock.adjust("50 millis")
      assert.deepStrictEqual(handled, [0, 1, 2, 3, 4])
      assert.strictEqual((yield* count(Metrics.ticksDelivered("scheduler_message"))) - before, 5)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "metrics-resumed" })))
  )

  it.effect("a function task's run is counted as a delivered scheduler_function tick", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const before = yield* count(Metrics.ticksDelivered("scheduler_function"))
      let runs = 0
      yield* system.scheduler.scheduleOnceFunction(
        "10 millis",
        Effect.sync(() => runs++)
      )
      yield* TestClock.adjust("10 millis")
      assert.strictEqual(runs, 1)
      assert.strictEqual((yield* count(Metrics.ticksDelivered("scheduler_function"))) - before, 1)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "metrics-function" })))
  )
})
