/**
 * Helpers that make timer tests short under `TestClock`.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"

/**
 * Lets every fiber of the test run until it is done or suspended, without moving the clock. Messages in flight
 * arrive; nothing that waits for time happens.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestTimers } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   yield* TestTimers.settle
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const settle: Effect.Effect<void> = TestClock.adjust(0)

/**
 * Moves the test clock by `duration`, firing every timer due on the way in order, and settles.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestTimers } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   yield* TestTimers.advance("5 seconds")
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const advance = (duration: Duration.DurationInput): Effect.Effect<void> => TestClock.adjust(duration)

/**
 * The test clock's current time in epoch millis (TestClock starts at 0).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestTimers } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const now = yield* TestTimers.now
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const now: Effect.Effect<number> = Effect.clockWith((clock) => clock.currentTimeMillis)

/**
 * Akka's `ManualTime.timePasses(amount)`: moves the test clock by `duration`, firing every timer due on the way in
 * order, and settles (the same as `advance`, under Akka's name).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestTimers } from "tickwork/testkit"
 *
 * const test = TestTimers.timePasses("1 minute")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const timePasses = (duration: Duration.DurationInput): Effect.Effect<void> => advance(duration)

/**
 * Akka's `ManualTime.expectNoMessageFor(duration, probes*)`: moves the test clock by `duration` and asserts that none
 * of `probes` received anything meanwhile (what they held before counts too: read it first).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestProbe, TestTimers } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const a = yield* TestProbe.make<string>("a")
 *   const b = yield* TestProbe.make<string>("b")
 *   yield* TestTimers.expectNoMessageFor("5 seconds", a, b)
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const expectNoMessageFor = (
  duration: Duration.DurationInput,
  ...probes: ReadonlyArray<{ readonly expectNoMessage: (duration?: Duration.DurationInput) => Effect.Effect<void> }>
): Effect.Effect<void> =>
  Effect.zipRight(
    advance(duration),
    Effect.forEach(probes, (probe) => probe.expectNoMessage(0), { discard: true })
  )
