/**
 * The tickwork testkit: `TestSystem` (a system for one test, its timers and timeline), `TestProbe` and `TestClock`
 * helpers.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as TestProbe from "./TestProbe.js"
/** @since 0.1.0 */
export * as TestSystem from "./TestSystem.js"
/** @since 0.1.0 */
export * as TestTimers from "./TestTimers.js"
/** @since 0.1.0 */
export * as TimerArbitraries from "./TimerArbitraries.js"
