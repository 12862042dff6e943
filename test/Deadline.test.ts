import { assert, describe, it } from "@effect/vitest"
import { Array as Arr, DateTime, Duration, Effect, Either, Equal, HashSet, TestClock } from "effect"
import * as Deadline from "../src/Deadline.js"
import * as GameClock from "../src/GameClock.js"

describe("Deadline", () => {
  it("is made from epoch millis, a DateTime or a Deadline", () => {
    const fromMillis = Deadline.unsafeMake(1_000)
    assert.isTrue(Deadline.isDeadline(fromMillis))
    assert.isFalse(Deadline.isDeadline(1_000))
    assert.strictEqual(Deadline.toEpochMillis(fromMillis), 1_000)
    const fromDateTime = Deadline.unsafeMake(DateTime.unsafeMake("1970-01-01T00:00:01Z"))
    assert.isTrue(Equal.equals(fromMillis, fromDateTime))
    const zoned = DateTime.unsafeMakeZoned(1_000, { timeZone: "Europe/Helsinki" })
    assert.isTrue(Equal.equals(Deadline.unsafeMake(zoned), fromMillis), "the instant counts, not the zone")
    assert.strictEqual(Deadline.unsafeMake(fromMillis), fromMillis)
    assert.strictEqual(DateTime.formatIso(Deadline.toDateTime(fromMillis)), "1970-01-01T00:00:01.000Z")
    assert.strictEqual(String(fromMillis), "Deadline(1970-01-01T00:00:01.000Z)")
    assert.deepStrictEqual(JSON.parse(JSON.stringify(fromMillis)), { _id: "Deadline", epochMillis: 1_000 })
  })

  it("a non-finite time is a typed error (InvalidDeadline); unsafeMake throws it", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const result = Deadline.make(bad)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "InvalidDeadline")
    }
    assert.throws(() => Deadline.unsafeMake(Number.NaN))
  })

  it("a time a DateTime cannot represent, or a value that is not a time, is InvalidDeadline naming the problem", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [8.64e15 + 1, "is outside the range a DateTime can represent"],
      [-(2 ** 60), "is outside the range a DateTime can represent"],
      ["2030-01-01", '"2030-01-01" is not a DateTime, a Deadline or epoch millis'],
      [undefined, "undefined is not a DateTime, a Deadline or epoch millis"],
      [{}, "an object is not a DateTime"],
      [new Date(0), "a Date is not a DateTime"]
    ]
    for (const [input, reason] of cases) {
      const result = Deadline.make(input as Deadline.Input)
      if (Either.isRight(result)) return assert.fail(`expected ${String(input)} to be rejected`)
      assert.strictEqual(result.left._tag, "InvalidDeadline")
      assert.include(result.left.message, reason)
    }
    // the ends of the range are fine, and print
    assert.strictEqual(String(Deadline.unsafeMake(8.64e15)), "Deadline(+275760-09-13T00:00:00.000Z)")
    assert.strictEqual(Deadline.toEpochMillis(Deadline.unsafeMake(-8.64e15)), -8.64e15)
  })

  it.effect("fromNow with a duration that lands past what a DateTime can represent is InvalidTimerDelay", () =>
    Effect.gen(function* () {
      const far = yield* Effect.flip(Deadline.fromNow(2 ** 60))
      assert.strictEqual(far._tag, "InvalidTimerDelay")
      assert.include(far.message, "is outside the range a DateTime can represent")
      const words = yield* Effect.flip(Deadline.fromNow("soon" as Duration.DurationInput))
      assert.strictEqual(words._tag, "InvalidTimerDelay")
      assert.strictEqual(Deadline.toEpochMillis(yield* Deadline.fromNow(8.64e15)), 8.64e15, "the very end is fine")
    })
  )

  it("isDue and remaining compare against a given now (millis or DateTime), both call styles", () => {
    const deadline = Deadline.unsafeMake(60_000)
    assert.isFalse(Deadline.isDue(deadline, 59_999))
    assert.isTrue(Deadline.isDue(deadline, 60_000))
    assert.isTrue(deadline.pipe(Deadline.isDue(DateTime.unsafeMake(61_000))))
    assert.strictEqual(Duration.toMillis(Deadline.remaining(deadline, 15_000)), 45_000)
    assert.strictEqual(Duration.toMillis(deadline.pipe(Deadline.remaining(90_000))), 0, "zero once due")
  })

  it("is a structural value: equal instants are equal and hash alike; Order sorts by time", () => {
    const set = HashSet.make(Deadline.unsafeMake(5), Deadline.unsafeMake(5), Deadline.unsafeMake(6))
    assert.strictEqual(HashSet.size(set), 2)
    assert.isFalse(Equal.equals(Deadline.unsafeMake(5), Deadline.unsafeMake(6)))
    const sorted = Arr.sort([Deadline.unsafeMake(3), Deadline.unsafeMake(1), Deadline.unsafeMake(2)], Deadline.Order)
    assert.deepStrictEqual(sorted.map(Deadline.toEpochMillis), [1, 2, 3])
  })

  it.effect("fromNow, isDueNow and remainingNow read the game clock", () =>
    Effect.gen(function* () {
      const cooldown = yield* Deadline.fromNow("5 minutes")
      assert.strictEqual(cooldown.epochMillis, 300_000)
      assert.isFalse(yield* Deadline.isDueNow(cooldown))
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(Duration.toMillis(yield* Deadline.remainingNow(cooldown)), 240_000)
      yield* GameClock.skip("4 minutes")
      assert.isTrue(yield* Deadline.isDueNow(cooldown))
      assert.strictEqual(Duration.toMillis(yield* Deadline.remainingNow(cooldown)), 0)
      const later = yield* Deadline.fromNow("1 minute")
      assert.strictEqual(later.epochMillis, 360_000, "from game time, skip included")
    }).pipe(Effect.provide(GameClock.layer))
  )

  it.effect("without a GameClock the helpers read the Clock; a bad duration is a typed error", () =>
    Effect.gen(function* () {
      yield* TestClock.adjust("10 seconds")
      const deadline = yield* Deadline.fromNow(1_000)
      assert.strictEqual(deadline.epochMillis, 11_000)
      const bad = yield* Effect.flip(Deadline.fromNow(-1))
      assert.strictEqual(bad._tag, "InvalidTimerDelay")
      const nan = yield* Effect.flip(Deadline.fromNow(Number.NaN))
      assert.strictEqual(nan._tag, "InvalidTimerDelay")
      assert.isTrue(Either.isRight(Deadline.make(0)))
      const made = yield* Deadline.make(DateTime.unsafeMake(5))
      assert.strictEqual(made.epochMillis, 5)
    })
  )
})
