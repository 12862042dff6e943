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
