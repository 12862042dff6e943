import { assert, describe, it } from "@effect/vitest"
import { Duration, Either, FastCheck } from "effect"
import { delayMillis, intervalMillis, scheduleDue } from "../../src/internal/duration.js"
import { InvalidTimerDelay, InvalidTimerInterval } from "../../src/TimerError.js"

/** Input that does not type-check as a `DurationInput`, as it could arrive from JavaScript or config. */
const raw = (input: unknown): Duration.DurationInput => input as Duration.DurationInput

const rightOf = <A, E>(either: Either.Either<A, E>, label: string): A => {
  if (Either.isLeft(either)) assert.fail(`${label}: expected Right, got Left ${String(either.left)}`)
  return either.right
}

const leftOf = <A, E>(either: Either.Either<A, E>, label: string): E => {
  if (Either.isRight(either)) assert.fail(`${label}: expected Left, got Right ${String(either.right)}`)
  return either.left
}

const delayError = (input: Duration.DurationInput, label: string): InvalidTimerDelay => {
  const error = leftOf(delayMillis(input), label)
  assert.instanceOf(error, InvalidTimerDelay, label)
  assert.strictEqual(error._tag, "InvalidTimerDelay", label)
  assert.isAbove(error.reason.length, 0, `${label}: reason is empty`)
  assert.include(error.message, error.reason, `${label}: message carries the reason`)
  return error
}

const intervalError = (input: Duration.DurationInput, label: string): InvalidTimerInterval => {
  const error = leftOf(intervalMillis(input), label)
  assert.instanceOf(error, InvalidTimerInterval, label)
  assert.strictEqual(error._tag, "InvalidTimerInterval", label)
  assert.isAbove(error.reason.length, 0, `${label}: reason is empty`)
  assert.include(error.message, error.reason, `${label}: message carries the reason`)
  return error
}

/** Valid delays and the millis they decode to. */
const validDelays: ReadonlyArray<readonly [string, Duration.DurationInput, number]> = [
  ["0", 0, 0],
  ["-0 (the number)", -0, 0],
  ["5", 5, 5],
  ["1.5", 1.5, 1.5],
  ["a large number", 86_400_000 * 365, 86_400_000 * 365],
  ['"0 millis"', "0 millis", 0],
  ['"5 millis"', "5 millis", 5],
  ['"1 milli"', "1 milli", 1],
  ['"2 seconds"', "2 seconds", 2000],
  ['"1.5 seconds"', "1.5 seconds", 1500],
  ['"3 minutes"', "3 minutes", 180_000],
  ['"1 hour"', "1 hour", 3_600_000],
  ['"1 day"', "1 day", 86_400_000],
  ['"1 week"', "1 week", 604_800_000],
  ['"500 micros"', "500 micros", 0.5],
  ["Duration.millis(250)", Duration.millis(250), 250],
  ["Duration.seconds(3)", Duration.seconds(3), 3000],
  ["Duration.zero", Duration.zero, 0],
  ["Duration.nanos(1500000n)", Duration.nanos(1_500_000n), 1.5],
  ["a bigint of nanos", 2_000_000n, 2],
  ["an hrtime tuple", [1, 500_000_000], 1500]
]

describe("delayMillis", () => {
  describe("accepts 0 and positive durations", () => {
    for (const [label, input, millis] of validDelays) {
      it(label, () => {
        assert.strictEqual(rightOf(delayMillis(input), label), millis)
      })
    }

    // Fractional millis are kept to the nanosecond (Duration's resolution), so the property uses quarter millis.
    it("any non-negative whole or quarter number of millis decodes to itself", () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.integer({ min: 0, max: 4e9 }), (quarters) => {
          const n = quarters / 4
          return rightOf(delayMillis(n), String(n)) === n
        }),
        { numRuns: 500 }
      )
    })

    it('any "<n> millis" string with a non-negative integer n decodes to n', () => {
      FastCheck.assert(
        FastCheck.property(
          FastCheck.nat({ max: 1e9 }),
          (n) => rightOf(delayMillis(`${n} millis`), `${n} millis`) === n
        ),
        { numRuns: 300 }
      )
    })
  })

  describe("rejects negative delays with the signed delayMillis", () => {
    const negatives: ReadonlyArray<readonly [string, Duration.DurationInput, number]> = [
      ["-1", -1, -1],
      ["-5", -5, -5],
      ["-0.5", -0.5, -0.5],
      ["-Infinity", Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY],
      ['"-5 millis"', "-5 millis", -5],
      ['"-5.5 millis"', "-5.5 millis", -5.5],
      ['"-1 seconds"', "-1 seconds", -1000],
      ['"-2 minutes"', "-2 minutes", -120_000],
      ['" -5 millis" (leading space)', raw(" -5 millis"), -5]
    ]
    for (const [label, input, signed] of negatives) {
      it(label, () => {
        const error = delayError(input, label)
        assert.strictEqual(error.delayMillis, signed)
        assert.match(error.reason, /negative/)
        assert.include(error.message, String(signed))
      })
    }

    it("any negative number is rejected and reported as given", () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.double({ min: -1e12, max: -Number.MIN_VALUE, noNaN: true }), (n) => {
          const error = delayError(n, String(n))
          return error.delayMillis === n && /negative/.test(error.reason)
        }),
        { numRuns: 300 }
      )
    })

    it('any "-<n> millis" string with n > 0 is rejected with delayMillis -n', () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.integer({ min: 1, max: 1e9 }), (n) => {
          const error = delayError(raw(`-${n} millis`), `-${n} millis`)
          return error.delayMillis === -n && /negative/.test(error.reason)
        }),
        { numRuns: 300 }
      )
    })

    // A negative bigint or hrtime tuple is as negative as a negative number: the error should say how negative.
    it("a negative bigint of nanos reports its signed millis", () => {
      const error = delayError(-5_000_000n, "-5000000n")
      assert.match(error.reason, /negative/)
      assert.strictEqual(error.delayMillis, -5)
    })

    it("a negative hrtime tuple reports its signed millis", () => {
      const error = delayError([-1, 0], "[-1, 0]")
      assert.match(error.reason, /negative/)
      assert.strictEqual(error.delayMillis, -1000)
    })
  })

  describe("rejects non-finite and nonsense input", () => {
    it("Infinity", () => {
      const error = delayError(Number.POSITIVE_INFINITY, "Infinity")
      assert.strictEqual(error.delayMillis, Number.POSITIVE_INFINITY)
      assert.match(error.reason, /finite/)
    })

    it("Duration.infinity", () => {
      const error = delayError(Duration.infinity, "Duration.infinity")
      assert.strictEqual(error.delayMillis, Number.POSITIVE_INFINITY)
      assert.match(error.reason, /finite/)
    })

    it("an hrtime tuple with Infinity", () => {
      const error = delayError([Number.POSITIVE_INFINITY, 0], "[Infinity, 0]")
      assert.match(error.reason, /finite/)
    })

    it("NaN is rejected with a reason about NaN / finiteness, not negativity", () => {
      const error = delayError(Number.NaN, "NaN")
      assert.isNaN(error.delayMillis)
      assert.notMatch(error.reason, /negative/, "NaN is not negative")
      assert.match(error.reason, /finite|number|NaN/i)
    })

    it("an hrtime tuple with NaN is rejected with a reason about NaN / finiteness, not negativity", () => {
      const error = delayError([Number.NaN, 0], "[NaN, 0]")
      assert.notMatch(error.reason, /negative/, "NaN is not negative")
      assert.match(error.reason, /finite|number|NaN/i)
    })

    const nonsense = [
      "soon",
      "5 fortnights",
      "",
      "Infinity",
      "1e3 millis",
      "5millis",
      "  5 millis",
      "5 millis ",
      "five"
    ]
    for (const input of nonsense) {
      it(`${JSON.stringify(input)} is not a duration`, () => {
        const error = delayError(raw(input), input)
        assert.isNaN(error.delayMillis)
        assert.include(error.reason, JSON.stringify(input), "the reason quotes the input")
        assert.include(error.reason, "is not a duration")
      })
    }

    // A leading minus does not turn garbage into a negative number: the reason should name the real problem.
    for (const input of ["-soon", "- 5 millis", "-"]) {
      it(`${JSON.stringify(input)} is reported as not a duration, not as negative`, () => {
        const error = delayError(raw(input), input)
        assert.isNaN(error.delayMillis)
        assert.include(error.reason, "is not a duration")
      })
    }

    it("values of the wrong type are not durations", () => {
      for (const input of [null, undefined, {}, "5", [1], [1, 2, 3], true]) {
        const error = delayError(raw(input), String(input))
        assert.isNaN(error.delayMillis, String(input))
      }
    })
  })
})

describe("intervalMillis", () => {
  describe("accepts durations of at least the engine's 1 ms resolution", () => {
    for (const [label, input, millis] of validDelays.filter(([, , m]) => m >= 1)) {
      it(label, () => {
        assert.strictEqual(rightOf(intervalMillis(input), label), millis)
      })
    }

    it("any whole or quarter number of millis from 1 decodes to itself", () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.integer({ min: 4, max: 4e9 }), (quarters) => {
          const n = quarters / 4
          return rightOf(intervalMillis(n), String(n)) === n
        }),
        { numRuns: 500 }
      )
    })
  })

  describe("rejects intervals below 1 ms, the engine's resolution", () => {
    for (const [label, input, millis] of [
      ["0.001", 0.001, 0.001],
      ["0.999", 0.999, 0.999],
      ['"500 micros"', "500 micros", 0.5],
      ['"1 nano"', "1 nano", 1e-6],
      ["1n (a nanosecond)", 1n, 1e-6]
    ] as ReadonlyArray<readonly [string, Duration.DurationInput, number]>) {
      it(label, () => {
        const error = intervalError(input, label)
        assert.closeTo(error.intervalMillis, millis, 1e-9)
        assert.include(error.reason, "at least 1 ms")
      })
    }

    it("any positive number of millis below 1 is rejected", () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.double({ min: Number.MIN_VALUE, max: 0.9999999, noNaN: true }), (n) =>
          Either.isLeft(intervalMillis(n))
        ),
        { numRuns: 500 }
      )
    })
  })

  describe("scheduleDue", () => {
    it("keeps a due time at least 1 ms after the previous firing", () => {
      assert.strictEqual(scheduleDue(1000, 1000), 1001)
      assert.strictEqual(scheduleDue(999, 1000), 1001)
      assert.strictEqual(scheduleDue(1005, 1000), 1005)
    })
  })

  describe("rejects zero with InvalidTimerInterval", () => {
    for (const [label, input] of [
      ["0", 0],
      ["-0 (the number)", -0],
      ['"0 millis"', "0 millis"],
      ['"0 seconds"', "0 seconds"],
      ["Duration.zero", Duration.zero],
      ["0n", 0n],
      ["[0, 0]", [0, 0]]
    ] as ReadonlyArray<readonly [string, Duration.DurationInput]>) {
      it(label, () => {
        const error = intervalError(input, label)
        assert.strictEqual(error.intervalMillis, 0)
        assert.match(error.reason, /positive/)
      })
    }
  })

  describe("rejects negative intervals with the signed intervalMillis", () => {
    for (const [label, input, signed] of [
      ["-1", -1, -1],
      ["-0.25", -0.25, -0.25],
      ['"-5 millis"', "-5 millis", -5],
      ['"-3 seconds"', "-3 seconds", -3000],
      ["-Infinity", Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY]
    ] as ReadonlyArray<readonly [string, Duration.DurationInput, number]>) {
      it(label, () => {
        const error = intervalError(input, label)
        assert.strictEqual(error.intervalMillis, signed)
        assert.match(error.reason, /negative/)
        assert.include(error.message, String(signed))
      })
    }

    it("a negative bigint of nanos reports its signed millis", () => {
      const error = intervalError(-2_000_000n, "-2000000n")
      assert.strictEqual(error.intervalMillis, -2)
    })
  })

  describe("rejects non-finite and nonsense input", () => {
    it("Infinity", () => {
      const error = intervalError(Number.POSITIVE_INFINITY, "Infinity")
      assert.strictEqual(error.intervalMillis, Number.POSITIVE_INFINITY)
      assert.match(error.reason, /finite/)
    })

    it("Duration.infinity", () => {
      const error = intervalError(Duration.infinity, "Duration.infinity")
      assert.match(error.reason, /finite/)
    })

    it("NaN is rejected with a reason about NaN / finiteness, not negativity", () => {
      const error = intervalError(Number.NaN, "NaN")
      assert.isNaN(error.intervalMillis)
      assert.notMatch(error.reason, /negative/, "NaN is not negative")
    })

    for (const input of ["soon", "5 fortnights", ""]) {
      it(`${JSON.stringify(input)} is not a duration`, () => {
        const error = intervalError(raw(input), input)
        assert.isNaN(error.intervalMillis)
        assert.include(error.reason, "is not a duration")
      })
    }
  })
})
