import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import { ActorSystem } from "tickwork"
import * as Deadline from "../src/Deadline.js"
import * as Entity from "../src/Entity.js"
import * as GameClock from "../src/GameClock.js"

describe("GameClock", () => {
  it.effect("is the Clock plus an offset that starts at zero", () =>
    Effect.gen(function* () {
      const clock = yield* GameClock.GameClock
      assert.isTrue(GameClock.isGameClock(clock))
      assert.isFalse(GameClock.isGameClock({}))
      assert.strictEqual(yield* clock.currentTimeMillis, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* GameClock.currentTimeMillis, 1000)
      assert.strictEqual(clock.unsafeCurrentTimeMillis(), 1000)
      assert.isTrue(Duration.equals(yield* GameClock.offset, Duration.zero))
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("skip moves game time forward; the Clock does not move", () =>
    Effect.gen(function* () {
      yield* GameClock.skip("1 day")
      yield* GameClock.skip(0) // a no-op
      assert.strictEqual(yield* GameClock.currentTimeMillis, 86_400_000)
      assert.strictEqual(DateTime.formatIso(yield* GameClock.now), "1970-01-02T00:00:00.000Z")
      assert.strictEqual(Duration.toMillis(yield* GameClock.offset), 86_400_000)
      assert.strictEqual(yield* Effect.clockWith((clock) => clock.currentTimeMillis), 0)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(yield* GameClock.currentTimeMillis, 86_405_000, "game time keeps running with the Clock")
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("skipTo moves game time forward to an absolute time (DateTime, millis or Deadline)", () =>
    Effect.gen(function* () {
      yield* GameClock.skipTo(DateTime.unsafeMake("1970-01-01T01:00:00Z"))
      assert.strictEqual(yield* GameClock.currentTimeMillis, 3_600_000)
      yield* GameClock.skipTo(7_200_000)
      assert.strictEqual(yield* GameClock.currentTimeMillis, 7_200_000)
      yield* GameClock.skipTo(Deadline.unsafeMake(7_200_000)) // the current time: a no-op
      assert.strictEqual(yield* GameClock.currentTimeMillis, 7_200_000)
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("skipping backwards is a typed error and changes nothing", () =>
    Effect.gen(function* () {
      yield* GameClock.skip("1 hour")
      const negative = yield* Effect.flip(GameClock.skip(-1))
      assert.strictEqual(negative._tag, "TimeSkipBackwards")
      assert.deepStrictEqual(
        [(negative as GameClock.TimeSkipBackwards).fromMillis, (negative as GameClock.TimeSkipBackwards).toMillis],
        [3_600_000, 3_599_999]
      )
      const negativeString = yield* Effect.flip(GameClock.skip("-5 minutes"))
      assert.strictEqual(negativeString._tag, "TimeSkipBackwards")
      assert.include(negativeString.message, "backwards")
      const past = yield* Effect.flip(GameClock.skipTo(1000))
      assert.strictEqual(past._tag, "TimeSkipBackwards")
      assert.strictEqual(yield* GameClock.currentTimeMillis, 3_600_000)
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("nonsense input is a typed error", () =>
    Effect.gen(function* () {
      const nan = yield* Effect.flip(GameClock.skip(Number.NaN))
      assert.strictEqual(nan._tag, "InvalidTimerDelay")
      const words = yield* Effect.flip(GameClock.skip("soon" as Duration.DurationInput))
      assert.strictEqual(words._tag, "InvalidTimerDelay")
      const badTime = yield* Effect.flip(GameClock.skipTo(Number.NaN))
      assert.strictEqual(badTime._tag, "InvalidDeadline")
      assert.strictEqual(yield* GameClock.currentTimeMillis, 0)
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("a skip past what a DateTime can represent is a typed error; now keeps working (was 'Invalid date')", () =>
    Effect.gen(function* () {
      const far = yield* Effect.flip(GameClock.skip(2 ** 60))
      assert.strictEqual(far._tag, "InvalidTimerDelay")
      assert.include(far.message, `game time would be ${2 ** 60}, which is outside the range a DateTime can represent`)
      const farTo = yield* Effect.flip(GameClock.skipTo(2 ** 60))
      assert.strictEqual(farTo._tag, "InvalidDeadline")
      assert.include(farTo.message, "is outside the range a DateTime can represent")
      assert.strictEqual(yield* GameClock.currentTimeMillis, 0, "a failed skip changes nothing")
      // up to the very end of the range is fine; one more millisecond is not
      yield* GameClock.skip(8.64e15 - 1000)
      const oneTooMany = yield* Effect.flip(GameClock.skip(1001))
      assert.strictEqual(oneTooMany._tag, "InvalidTimerDelay")
      yield* GameClock.skipTo(8.64e15)
      assert.strictEqual(DateTime.formatIso(yield* GameClock.now), "+275760-09-13T00:00:00.000Z")
      const clock = yield* GameClock.GameClock
      assert.strictEqual(DateTime.toEpochMillis(yield* clock.now), 8.64e15)
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("without a GameClock, game time is the Clock", () =>
    Effect.gen(function* () {
      yield* TestClock.adjust("42 millis")
      assert.strictEqual(yield* GameClock.currentTimeMillis, 42)
      assert.strictEqual(DateTime.toEpochMillis(yield* GameClock.now), 42)
    })
  )

  it.effect("one skip re-arms the absolute one-shots of every registry and system that share the clock", () =>
    Effect.gen(function* () {
      const fired: Array<string> = []
      const Kind = Entity.make<number, { readonly _tag: "Arm"; readonly at: number }>()({
        name: "Arming",
        initialize: () => Effect.succeed(0),
        commands: {
          Arm: (cmd, n, ctx) =>
            Effect.as(
              ctx.scheduleExecuteOnActorContextAt(
                cmd.at,
                Effect.sync(() => fired.push(ctx.id))
              ),
              n
            )
        }
      })
      const inSystem = (name: string) =>
        Effect.gen(function* () {
          const registry = yield* Entity.makeRegistry(Kind)
          yield* registry.tell(name, { _tag: "Arm", at: 3_600_000 })
          yield* Effect.never
        }).pipe(Effect.scoped, Effect.provide(ActorSystem.layer({ name })))
      const fibers = yield* Effect.all([Effect.fork(inSystem("one")), Effect.fork(inSystem("two"))])
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(fired, [])
      yield* GameClock.skip("1 hour")
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(fired.sort(), ["one", "two"])
      yield* Fiber.interruptAll(fibers)
    }).pipe(Effect.provide(Layer.fresh(GameClock.layer)))
  )
})
