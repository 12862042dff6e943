import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule, TestClock } from "effect"
import { Actor, type ActorRef, ActorSystem } from "tickwork"
import { TestProbe } from "tickwork/testkit"

const system = ActorSystem.layer({ name: "timers-test" })

type Msg =
  | { readonly _tag: "Tick"; readonly n: number }
  | { readonly _tag: "StartSingle"; readonly key: string; readonly delay: number; readonly n: number }

describe("Timers", () => {
  it.scoped("startSingleTimer delivers once after the delay", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<number>()
      const Single = Actor.make<Msg>()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startSingleTimer("once", { _tag: "Tick", n: 1 }, "1 second")),
        receive: (msg) => (msg._tag === "Tick" ? probe.ref.tell(msg.n) : Effect.void)
      })
      const sys = yield* ActorSystem.ActorSystem
      yield* sys.spawn(Single, "single")
      yield* probe.expectNoMessage("999 millis")
      yield* TestClock.adjust("1 millis")
      const received = yield* probe.expectReceived
      assert.strictEqual(received.message, 1)
      assert.strictEqual(received.at, 1000)
      yield* probe.expectNoMessage("10 seconds")
    }).pipe(Effect.provide(system))
  )

  it.scoped("fixed delay ticks every interval", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<number>()
      const A = Actor.make<Msg>()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startTimerWithFixedDelay("t", { _tag: "Tick", n: 0 }, "100 millis")),
        receive: (msg) => (msg._tag === "Tick" ? probe.ref.tell(msg.n) : Effect.void)
      })
      const sys = yield* ActorSystem.ActorSystem
      yield* sys.spawn(A, "a")
      yield* TestClock.adjust("1 second")
      const all = yield* probe.receiveAll
      assert.deepStrictEqual(
        all.map((r) => r.at),
        [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
      )
    }).pipe(Effect.provide(system))
  )

  it.scoped("schedule timer", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<number>()
      const A = Actor.make<Msg>()({
        preStart: (ctx) =>
          ctx.timers.startTimerWithSchedule(
            "t",
            { _tag: "Tick", n: 0 },
            Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(4)))
          ),
        receive: (msg) => (msg._tag === "Tick" ? probe.ref.tell(msg.n) : Effect.void)
      })
      const sys = yield* ActorSystem.ActorSystem
      const ref: ActorRef.ActorRef<Msg> = yield* sys.spawn(A, "a")
      void ref
      yield* TestClock.adjust("10 seconds")
      const all = yield* probe.receiveAll
      console.log(all.map((r) => r.at))
    }).pipe(Effect.provide(system))
  )
})
