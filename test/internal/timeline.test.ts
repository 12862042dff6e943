import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Actor, ActorSystem } from "tickwork"
import { systemOf } from "../../src/internal/actorSystem.js"
import { formatTimeline } from "../../src/internal/timeline.js"

describe("the timeline (what the testkit records)", () => {
  it.effect("records arms, fires, deliveries, stale drops and cancels with time, owner and key; counts per key", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const impl = systemOf(system)!
      assert.isUndefined(impl.timeline, "off unless the testkit asks")
      assert.isUndefined(impl.driver.observer, "the engine's one check when it is off: an undefined field")
      const timeline = impl.recordTimeline(100)
      assert.strictEqual(impl.driver.observer, timeline)
      const Worker = Actor.make<"tick" | "stop-it" | "slow">()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "tick", "100 millis")),
        receive: (msg, ctx) =>
          msg === "slow"
            ? Effect.sleep("250 millis")
            : msg === "stop-it"
              ? Effect.asVoid(ctx.timers.cancel("beat"))
              : Effect.void
      })
      const ref = yield* system.spawn(Worker, "worker")
      yield* TestClock.adjust("100 millis") // delivered at 100
      yield* ref.tell("slow") // busy until 350: the ticks at 200 and 300 queue
      yield* TestClock.adjust("150 millis")
      yield* ref.tell("stop-it") // at 250: behind the tick at 200, ahead of the one at 300
      yield* TestClock.adjust("200 millis")
      const events = timeline.lines().map((line) => `${line.at} ${line.event} ${line.key ?? "-"}`)
      assert.includeMembers(events, ["0 armed beat", "100 fired beat", "100 delivered beat", "200 fired beat"])
      assert.include(events, "350 cancelled beat")
      const counts = timeline.countsOf("/user/worker", "beat")
      assert.strictEqual(counts.delivered, 2, "the ticks at 100 and 200, handled before the cancel")
      assert.strictEqual(counts.stale, 1, "the tick at 300, queued behind the cancel")
      const text = formatTimeline(timeline.lines(3), 0)
      assert.match(text, /\+\d+ms {2}\S+/)
      assert.include(
        formatTimeline(timeline.lines(), 0),
        '+0ms  armed     actor_timer "beat" of /user/worker (due +100ms)'
      )
    }).pipe(Effect.provide(ActorSystem.layer({ name: "timeline" })))
  )
  // the stale ticks of a cancelled timer, counted per owner and key: test/testkit/TestSystem.test.ts (counts)
})
