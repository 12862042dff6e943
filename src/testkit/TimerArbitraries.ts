/**
 * fast-check arbitraries for property tests of timer code (Effect re-exports fast-check as `FastCheck`; `it.prop` and
 * `it.effect.prop` of `@effect/vitest` take them): durations, Quartz cron expressions, Spot overrun policies, and
 * interleavings of timer operations to run against a user's actor and a model of it.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as FastCheck from "effect/FastCheck"
import { MIN_INTERVAL_MILLIS } from "../internal/duration.js"
import * as OverrunPolicy from "../OverrunPolicy.js"

const DEFAULT_MAX_MILLIS = Duration.toMillis(Duration.hours(1))

/**
 * Durations of whole milliseconds in `[min, max]`, shrinking toward `min`; by default from the shortest interval a
 * timer accepts (`MIN_INTERVAL_MILLIS`) to an hour (`DEFAULT_MAX_MILLIS`).
 *
 * @example
 * ```ts
 * import { FastCheck } from "effect"
 * import { TimerArbitraries } from "tickwork/testkit"
 *
 * const samples = FastCheck.sample(TimerArbitraries.duration({ min: 10, max: 1000 }), 5)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const duration = (
  options: { readonly min?: number; readonly max?: number } = {}
): FastCheck.Arbitrary<Duration.Duration> =>
  FastCheck.integer({ min: options.min ?? MIN_INTERVAL_MILLIS, max: options.max ?? DEFAULT_MAX_MILLIS }).map(
    Duration.millis
  )

const field = (max: number, min = 0): FastCheck.Arbitrary<string> =>
  FastCheck.oneof(
    FastCheck.integer({ min, max }).map(String),
    FastCheck.constant("*"),
    FastCheck.integer({ min: 1, max: Math.max(1, Math.floor(max / 2)) }).map((step) => `*/${step}`),
    FastCheck.tuple(FastCheck.integer({ min, max }), FastCheck.integer({ min, max })).map(([a, b]) =>
      a <= b ? `${a}-${b}` : `${b}-${a}`
    )
  )

const dayOfMonth: FastCheck.Arbitrary<string> = FastCheck.oneof(
  field(28, 1),
  FastCheck.constant("L"),
  FastCheck.integer({ min: 1, max: 28 }).map((day) => `${day}W`)
)

const dayOfWeek: FastCheck.Arbitrary<string> = FastCheck.oneof(
  FastCheck.integer({ min: 1, max: 7 }).map(String),
  FastCheck.constant("MON-FRI"),
  FastCheck.tuple(FastCheck.integer({ min: 1, max: 7 }), FastCheck.integer({ min: 1, max: 4 })).map(
    ([day, nth]) => `${day}#${nth}`
  ),
  FastCheck.integer({ min: 1, max: 7 }).map((day) => `${day}L`)
)

/**
 * Valid Quartz cron expressions (`sec min hour day-of-month month day-of-week`): numbers, `*`, steps, ranges, and
 * `L`, `W`, `#` in the day fields, one of which is `?` as Quartz requires.
 *
 * @example
 * ```ts
 * import { Either, FastCheck } from "effect"
 * import { QuartzCron } from "tickwork"
 * import { TimerArbitraries } from "tickwork/testkit"
 *
 * FastCheck.assert(FastCheck.property(TimerArbitraries.quartzCron, (e) => Either.isRight(QuartzCron.parse(e))))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const quartzCron: FastCheck.Arbitrary<string> = FastCheck.tuple(
  field(59),
  field(59),
  field(23),
  FastCheck.oneof(
    dayOfMonth.map((dom) => [dom, "?"] as const),
    dayOfWeek.map((dow) => ["?", dow] as const)
  ),
  field(12, 1)
).map(([sec, min, hour, [dom, dow], month]) => `${sec} ${min} ${hour} ${dom} ${month} ${dow}`)

/**
 * Spot overrun policies: `SkipLateTicks`, `DelayNextTick` and `CatchUpBounded(limit)` with a limit in `[1, maxLimit]`
 * (default 10).
 *
 * @example
 * ```ts
 * import { FastCheck } from "effect"
 * import { TimerArbitraries } from "tickwork/testkit"
 *
 * const policies = FastCheck.sample(TimerArbitraries.overrunPolicy(), 3)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const overrunPolicy = (maxLimit = 10): FastCheck.Arbitrary<OverrunPolicy.OverrunPolicy> =>
  FastCheck.oneof(
    FastCheck.constant(OverrunPolicy.SkipLateTicks),
    FastCheck.constant(OverrunPolicy.DelayNextTick),
    FastCheck.integer({ min: 1, max: maxLimit }).map((limit) => OverrunPolicy.CatchUpBounded(limit))
  )

/**
 * One timer operation of an interleaving: start a timer under a key (replacing one under the same key), cancel a
 * key, or let time pass.
 *
 * @since 0.1.0
 * @category models
 */
export type TimerOperation =
  | {
      readonly _tag: "Start"
      readonly key: string
      readonly mode: "single" | "fixed-delay" | "fixed-rate"
      readonly millis: number
    }
  | { readonly _tag: "Cancel"; readonly key: string }
  | { readonly _tag: "Advance"; readonly millis: number }

/**
 * Interleavings of timer operations over a few keys (default `a`, `b`, `c`, so that replacing and cancelling a live
 * timer is common): up to `maxLength` operations (default 30), delays and intervals in `[1, maxMillis]` ms (default
 * 5,000), time passing in `[0, 2 × maxMillis]` ms. Run each against the actor under test and a model, and compare.
 *
 * @example
 * ```ts
 * import { FastCheck } from "effect"
 * import { TimerArbitraries } from "tickwork/testkit"
 *
 * const [ops] = FastCheck.sample(TimerArbitraries.timerOperations({ keys: ["beat"] }), 1)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const timerOperations = (
  options: { readonly keys?: ReadonlyArray<string>; readonly maxLength?: number; readonly maxMillis?: number } = {}
): FastCheck.Arbitrary<ReadonlyArray<TimerOperation>> => {
  const key = FastCheck.constantFrom(...(options.keys ?? ["a", "b", "c"]))
  const maxMillis = options.maxMillis ?? 5_000
  const operation: FastCheck.Arbitrary<TimerOperation> = FastCheck.oneof(
    FastCheck.record({
      _tag: FastCheck.constant("Start" as const),
      key,
      mode: FastCheck.constantFrom("single" as const, "fixed-delay" as const, "fixed-rate" as const),
      millis: FastCheck.integer({ min: 1, max: maxMillis })
    }),
    FastCheck.record({ _tag: FastCheck.constant("Cancel" as const), key }),
    FastCheck.record({
      _tag: FastCheck.constant("Advance" as const),
      millis: FastCheck.integer({ min: 0, max: 2 * maxMillis })
    })
  )
  return FastCheck.array(operation, { maxLength: options.maxLength ?? 30 })
}
