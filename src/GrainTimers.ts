/**
 * Grain timers: messages a grain schedules to itself, once, at a fixed interval or on a Quartz cron expression.
 *
 * They are volatile and activation-scoped: registered in `onActivate` they stay dormant until the activation has
 * completed (and are discarded if it fails); deactivation (passivation, shutdown, failure) stops them all before
 * `onDeactivate` runs; a tick already queued when its timer is cancelled or the grain deactivates is dropped; a
 * reactivated grain starts with no timers; a timer never reactivates a passivated grain.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type {
  GrainTimersStopped,
  InvalidCronExpression,
  InvalidTimerDelay,
  InvalidTimerInterval,
  InvalidTimerOptions,
  InvalidTimerReference,
  ScheduledReferenceNotFound
} from "./TimerError.js"

/**
 * Options of one timer; combine several by passing them one after the other. They are checked when the timer is
 * scheduled: an option that is not one of these, or has a value of the wrong kind, fails the schedule call with
 * `TimerError.InvalidTimerOptions` rather than being ignored.
 *
 * @since 0.1.0
 * @category models
 */
export interface TimerOptions {
  /**
   * The timer's reference, scoped to the grain; reusing one cancels and replaces that timer. Without one the grain
   * makes one up (`$timer-1`, `$timer-2`, ...): references starting with `$` are reserved for those. An empty, blank,
   * non-string or `$`-prefixed reference fails the schedule call with `TimerError.InvalidTimerReference`.
   */
  readonly reference?: string
  /** Ticks count as activity for idle passivation (default: false). */
  readonly keepAlive?: boolean
  /** IANA zone for cron timers (default: the process's local zone); only `scheduleWithCron` accepts it. */
  readonly timeZone?: string
}

/**
 * Sets the timer's reference.
 *
 * @example
 * ```ts
 * import { GrainTimers } from "tickwork"
 *
 * const options = GrainTimers.withTimerReference("payment-timeout")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withTimerReference = (reference: string): TimerOptions => ({ reference })

/**
 * Makes the timer's ticks count as passivation activity.
 *
 * @example
 * ```ts
 * import { GrainTimers } from "tickwork"
 *
 * const options = GrainTimers.withTimerKeepAlive()
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withTimerKeepAlive = (): TimerOptions => ({ keepAlive: true })

/**
 * Evaluates a cron timer in `timeZone`. Only `scheduleWithCron` takes it (the other timers fail with
 * `TimerError.InvalidTimerOptions`); an unknown zone fails `scheduleWithCron` with `InvalidCronExpression`.
 *
 * @example
 * ```ts
 * import { GrainTimers } from "tickwork"
 *
 * const options = GrainTimers.withTimeZone("Europe/Berlin")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withTimeZone = (timeZone: string): TimerOptions => ({ timeZone })

/**
 * A timer as listed for diagnostics.
 *
 * @since 0.1.0
 * @category models
 */
export interface TimerInfo {
  readonly reference: string
  readonly kind: "once" | "interval" | "cron"
  /** Epoch millis of the next tick; undefined for a one-shot that fired and waits in the mailbox. */
  readonly nextDue: number | undefined
  readonly keepAlive: boolean
}

/**
 * The timer operations available on `GrainContext` (in `onReceive`) and `GrainProps` (in `onActivate` and
 * `onDeactivate`). Each schedule call succeeds with the timer's reference.
 *
 * @since 0.1.0
 * @category models
 */
export interface GrainTimers<Msg> {
  /** Delivers `message` once after `delay`. */
  readonly scheduleOnce: (
    message: Msg,
    delay: Duration.DurationInput,
    ...options: ReadonlyArray<TimerOptions>
  ) => Effect.Effect<string, GrainTimersStopped | InvalidTimerDelay | InvalidTimerOptions | InvalidTimerReference>
  /** Delivers `message` every `interval` at a fixed cadence from registration (ticks may queue, never overlap). */
  readonly schedule: (
    message: Msg,
    interval: Duration.DurationInput,
    ...options: ReadonlyArray<TimerOptions>
  ) => Effect.Effect<string, GrainTimersStopped | InvalidTimerInterval | InvalidTimerOptions | InvalidTimerReference>
  /**
   * Delivers `message` at each instant of a Quartz cron expression. An expression that does not parse, an unknown
   * zone, and an expression with no instant after now (`0 0 0 1 1 ? 1999`) fail with `InvalidCronExpression`.
   */
  readonly scheduleWithCron: (
    message: Msg,
    expression: string,
    ...options: ReadonlyArray<TimerOptions>
  ) => Effect.Effect<string, GrainTimersStopped | InvalidCronExpression | InvalidTimerOptions | InvalidTimerReference>
  /** Cancels a timer and drops its queued ticks. */
  readonly cancelSchedule: (reference: string) => Effect.Effect<void, GrainTimersStopped | ScheduledReferenceNotFound>
  /** The active timers, in registration order. */
  readonly timers: Effect.Effect<ReadonlyArray<TimerInfo>>
}
