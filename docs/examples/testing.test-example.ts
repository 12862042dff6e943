import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { Actor, ActorRef, ActorSystem } from "tickwork"
import { TestProbe, TestTimers } from "tickwork/testkit"

type Msg =
  | { readonly _tag: "Start"; readonly listener: ActorRef.ActorRef<string> }
  | { readonly _tag: "Beat" }
  | { readonly _tag: "RemindMe"; readonly after: number; readonly replyTo: ActorRef.ActorRef<string> }

// Tells its listener "beat" every second; answers RemindMe after the requested delay.
const Heartbeat = Actor.make<Msg>()({
  preStart: () => Effect.succeed<ActorRef.ActorRef<string> | undefined>(undefined),
  receive: (msg, ctx, listener) => {
    switch (msg._tag) {
      case "Start":
        return Effect.as(
          Effect.orDie(ctx.timers.startTimerWithFixedDelay("beat", { _tag: "Beat" }, "1 second")),
          msg.listener
        )
      case "Beat":
        return Effect.as(listener?.tell("beat") ?? Effect.void, listener)
      case "RemindMe":
        return Effect.as(
          ctx.system.scheduler.scheduleOnce(msg.after, msg.replyTo, "reminder").pipe(Effect.orDie),
          listener
        )
    }
  }
})

const remindMe =
  (after: number) =>
  (replyTo: ActorRef.ActorRef<string>): Msg => ({ _tag: "RemindMe", after, replyTo })

// Every test gets a fresh system; it.effect provides the TestClock.
const SystemLive = ActorSystem.layer({ name: "test" })

describe("Heartbeat", () => {
  it.effect("scheduleOnce: nothing at 999 ms, the message at 1000 ms", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      yield* system.scheduler.scheduleOnce("1 second", probe.ref, "tick")
      yield* probe.expectNoMessage("999 millis") // moves the clock 999 ms and asserts nothing arrived
      yield* TestClock.adjust("1 millis")
      yield* probe.expectMessageEquals("tick")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("beats every second, on time", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const heartbeat = yield* ActorSystem.spawn(Heartbeat, "heartbeat")
      yield* heartbeat.tell({ _tag: "Start", listener: probe.ref })
      yield* TestTimers.advance("1 second")
      const first = yield* probe.expectReceived
      assert.strictEqual(first.message, "beat")
      assert.strictEqual(first.at, 1000) // TestClock starts at 0
      yield* TestTimers.advance("2 seconds")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.at),
        [2000, 3000]
      )
      assert.strictEqual(yield* TestTimers.now, 3000)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("fork, adjust, assert: an ask answered by a timer", () =>
    Effect.gen(function* () {
      const heartbeat = yield* ActorSystem.spawn(Heartbeat, "heartbeat")
      // ask waits for the reply, so it runs on its own fiber while the test moves the clock
      const reply = yield* Effect.fork(ActorRef.ask(heartbeat, remindMe(3000)))
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual(yield* Fiber.join(reply), "reminder")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("nothing is left after shutdown", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const heartbeat = yield* system.spawn(Heartbeat, "heartbeat")
      yield* heartbeat.tell({ _tag: "Start", listener: probe.ref })
      yield* system.scheduler.scheduleAtFixedRateFunction("1 second", "1 second", Effect.void)
      yield* TestTimers.advance("5 seconds")
      yield* system.shutdown
      const stats = yield* system.stats
      assert.deepStrictEqual([stats.actors, stats.fibers, stats.timers, stats.engineEntries], [0, 0, 0, 0])
    }).pipe(Effect.provide(SystemLive))
  )
})
