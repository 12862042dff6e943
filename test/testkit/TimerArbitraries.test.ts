import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Either, FastCheck } from "effect"
import { Actor, ActorSystem, OverrunPolicy, QuartzCron } from "tickwork"
import { TestSystem, TestTimers, TimerArbitraries } from "tickwork/testkit"

describe("TimerArbitraries", () => {
  it.prop("duration stays in its bounds", [TimerArbitraries.duration({ min: 5, max: 50 })], ([d]) => {
    const millis = Duration.toMillis(d)
    assert.isTrue(Number.isInteger(millis) && millis >= 5 && millis <= 50)
  })

  it.prop("every generated Quartz expression parses and has a next instant", [TimerArbitraries.quartzCron], ([e]) => {
    const parsed = QuartzCron.parse(e)
    assert.isTrue(Either.isRight(parsed), `${e} did not parse`)
  })

  it.prop("overrun policies are policies a Spot accepts", [TimerArbitraries.overrunPolicy(3)], ([policy]) => {
    assert.isTrue(OverrunPolicy.isOverrunPolicy(policy))
    if (policy._tag === "CatchUpBounded") assert.isTrue(policy.limit >= 1 && policy.limit <= 3)
  })

  it("interleavings use the given keys and bounds", () => {
    const samples = FastCheck.sample(TimerArbitraries.timerOperations({ keys: ["k"], maxLength: 5, maxMillis: 10 }), 50)
    for (const ops of samples) {
      assert.isAtMost(ops.length, 5)
      for (const op of ops) {
        if (op._tag !== "Advance") assert.strictEqual(op.key, "k")
        if (op._tag === "Start") assert.isTrue(op.millis >= 1 && op.millis <= 10)
        if (op._tag === "Advance") assert.isTrue(op.millis >= 0 && op.millis <= 20)
      }
    }
  })
})

// ---------------------------------------------------------------------------------------------- a user's actor vs a model

type Msg = TimerArbitraries.TimerOperation | { readonly _tag: "Tick"; readonly key: string }

/** The actor under test: starts and cancels timers as told, and handles their ticks. */
const UserActor = Actor.make<Msg>()({
  receive: (msg, ctx) => {
    switch (msg._tag) {
      case "Start": {
        const tick = { _tag: "Tick" as const, key: msg.key }
        const started =
          msg.mode === "single"
            ? ctx.timers.startSingleTimer(msg.key, tick, msg.millis)
            : msg.mode === "fixed-delay"
              ? ctx.timers.startTimerWithFixedDelay(msg.key, tick, msg.millis)
              : ctx.timers.startTimerAtFixedRate(msg.key, tick, msg.millis)
        return Effect.orDie(started)
      }
      case "Cancel":
        return Effect.asVoid(ctx.timers.cancel(msg.key))
      default:
        return Effect.void
    }
  }
})

/** What the actor should hold and have handled: its timers by key, and ticks delivered per key. */
class Model {
  readonly timers = new Map<string, { mode: string; due: number; interval: number }>()
  readonly delivered = new Map<string, number>()
  constructor(public now: number) {}

  apply(op: TimerArbitraries.TimerOperation): void {
    if (op._tag === "Start") this.timers.set(op.key, { mode: op.mode, due: this.now + op.millis, interval: op.millis })
    else if (op._tag === "Cancel") this.timers.delete(op.key)
    else {
      const end = this.now + op.millis
      for (const [key, timer] of this.timers) {
        while (timer.due <= end) {
          this.delivered.set(key, (this.delivered.get(key) ?? 0) + 1)
          if (timer.mode === "single") {
            this.timers.delete(key)
            break
          }
          timer.due += timer.interval
        }
      }
      this.now = end
    }
  }
}

describe("a user's actor checked against a model (it.effect.prop)", () => {
  it.effect.prop(
    "after any interleaving of starts, cancels and time passing, its timers and deliveries are the model's",
    [TimerArbitraries.timerOperations({ maxLength: 15, maxMillis: 2_000 })],
    ([ops]) =>
      Effect.gen(function* () {
        const ref = yield* ActorSystem.spawn(UserActor, "user")
        const model = new Model(yield* TestTimers.now)
        for (const op of ops) {
          if (op._tag === "Advance") yield* TestTimers.advance(op.millis)
          else yield* ref.tell(op)
          model.apply(op)
          const held = yield* TestSystem.timers(ref)
          assert.deepStrictEqual(
            held.map((t) => [t.key, t.mode, t.nextDue, t.intervalMillis]).sort(),
            [...model.timers]
              .map(([key, t]) => [key, t.mode, t.due, t.mode === "single" ? undefined : t.interval])
              .sort(),
            `after ${JSON.stringify(op)}`
          )
        }
        for (const key of ["a", "b", "c"]) {
          assert.strictEqual((yield* TestSystem.counts(ref, key)).delivered, model.delivered.get(key) ?? 0, key)
        }
      }).pipe(Effect.provide(TestSystem.layer())),
    { fastCheck: { numRuns: 20 } }
  )
})
