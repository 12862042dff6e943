/**
 * tickwork: Effect-native timers and scheduling for actor systems.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Actor from "./Actor.js"
/** @since 0.1.0 */
export * as ActorRef from "./ActorRef.js"
/** @since 0.1.0 */
export * as ActorSystem from "./ActorSystem.js"
/** @since 0.1.0 */
export * as Deadline from "./Deadline.js"
/** @since 0.1.0 */
export * as Entity from "./Entity.js"
/** @since 0.1.0 */
export * as EntityTimers from "./EntityTimers.js"
/** @since 0.1.0 */
export * as EventStream from "./EventStream.js"
/** @since 0.1.0 */
export * as GameClock from "./GameClock.js"
/** @since 0.1.0 */
export * as Grain from "./Grain.js"
/** @since 0.1.0 */
export * as Grains from "./Grains.js"
/** @since 0.1.0 */
export * as GrainTimers from "./GrainTimers.js"
/** @since 0.1.0 */
export * as LogContext from "./LogContext.js"
/** @since 0.1.0 */
export * as Metrics from "./Metrics.js"
/** @since 0.1.0 */
export * as OverrunPolicy from "./OverrunPolicy.js"
/** @since 0.1.0 */
export * as Passivation from "./Passivation.js"
/** @since 0.1.0 */
export * as QuartzCron from "./QuartzCron.js"
/** @since 0.1.0 */
export * as Scheduler from "./Scheduler.js"
/** @since 0.1.0 */
export * as Schedules from "./Schedules.js"
/** @since 0.1.0 */
export * as Spot from "./Spot.js"
/** @since 0.1.0 */
export * as SpotTimers from "./SpotTimers.js"
/** @since 0.1.0 */
export * as Supervision from "./Supervision.js"
/** @since 0.1.0 */
export * as Tick from "./Tick.js"
/** @since 0.1.0 */
export * as TimerError from "./TimerError.js"
/** @since 0.1.0 */
export * as Timers from "./Timers.js"
/** @since 0.1.0 */
export * as Workers from "./Workers.js"
