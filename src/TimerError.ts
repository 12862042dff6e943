/**
 * The tagged errors that timer and scheduler operations fail with.
 *
 * Every timer API in tickwork fails with one of these instead of throwing, so bad input shows up in the type of the
 * effect that caused it.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"

/**
 * A delay was negative or not a finite number of milliseconds.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TimerError } from "tickwork"
 *
 * const failure = Effect.fail(new TimerError.InvalidTimerDelay({ delayMillis: -1, reason: "must not be negative" }))
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidTimerDelay extends Data.TaggedError("InvalidTimerDelay")<{
  readonly delayMillis: number
  readonly reason: string
}> {
  override get message(): string {
    return `invalid timer delay ${this.delayMillis} ms: ${this.reason}`
  }
}

/**
 * An interval was not strictly positive or not a finite number of milliseconds.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * const error = new TimerError.InvalidTimerInterval({ intervalMillis: 0, reason: "must be strictly positive" })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidTimerInterval extends Data.TaggedError("InvalidTimerInterval")<{
  readonly intervalMillis: number
  readonly reason: string
}> {
  override get message(): string {
    return `invalid timer interval ${this.intervalMillis} ms: ${this.reason}`
  }
}

/**
 * A cron expression could not be parsed or can never fire. `field` names the Quartz field at fault when one is.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * const error = new TimerError.InvalidCronExpression({
 *   expression: "0 0 25 * * ?",
 *   field: "hours",
 *   reason: "25 is outside 0-23"
 * })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidCronExpression extends Data.TaggedError("InvalidCronExpression")<{
  readonly expression: string
  readonly field?: string | undefined
  readonly reason: string
}> {
  override get message(): string {
    const where = this.field === undefined ? "" : ` (field ${this.field})`
    return `invalid cron expression "${this.expression}"${where}: ${this.reason}`
  }
}

/**
 * A grain scheduled or cancelled a timer while it was deactivating (in `onDeactivate`) or not activated.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * console.log(new TimerError.GrainTimersStopped({ grain: "device/dev-1" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class GrainTimersStopped extends Data.TaggedError("GrainTimersStopped")<{ readonly grain: string }> {
  override get message(): string {
    return `the timers of grain ${this.grain} are stopped: it is deactivating or not activated`
  }
}

/**
 * A timer option was not usable, so nothing was scheduled. `option` names it and `reason` says why:
 *
 * - grain timers (`GrainTimers`): not one of `reference`, `keepAlive` and `timeZone`, a `keepAlive` or `timeZone` of
 *   the wrong kind, or a `timeZone` on a timer that is not a cron timer (a bad reference is `InvalidTimerReference`);
 * - Spot timers (`SpotTimers.start`): options that are not an object, an unknown option, an empty or blank `name`, a
 *   `handler` that is not a function.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { type Grain, GrainTimers } from "tickwork"
 *
 * const start = (props: Grain.GrainProps<"poll">) =>
 *   props.schedule("poll", "1 minute", GrainTimers.withTimeZone("Europe/Berlin")).pipe(
 *     // a zone only applies to cron timers: "invalid timer option timeZone for grain ...: ..."
 *     Effect.catchTag("InvalidTimerOptions", (error) => Effect.logWarning(error.message))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidTimerOptions extends Data.TaggedError("InvalidTimerOptions")<{
  /** Whose timer: `grain <kind>/<key>` or `Spot <path>`. */
  readonly owner: string
  /** The option at fault (`timeZone`, `name`, `handler`, an unknown key), or `options` for a non-object. */
  readonly option: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid timer option ${this.option} for ${this.owner}: ${this.reason}`
  }
}

/**
 * No active timer has this reference: it was never registered, was cancelled, or is a one-shot that already fired.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * console.log(new TimerError.ScheduledReferenceNotFound({ reference: "payment-timeout" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ScheduledReferenceNotFound extends Data.TaggedError("ScheduledReferenceNotFound")<{
  readonly reference: string
}> {
  override get message(): string {
    return `no active timer with reference "${this.reference}"`
  }
}

/**
 * What a timer would deliver to is not usable: a message schedule's target or sender that is not an `ActorRef`, or a
 * function task that is not an `Effect`. Checked when the schedule is made, so a bad value never reaches the engine.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * console.log(new TimerError.InvalidTimerTarget({ target: "undefined", reason: "the target must be an ActorRef" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidTimerTarget extends Data.TaggedError("InvalidTimerTarget")<{
  /** The value given, as text. */
  readonly target: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid timer target ${this.target}: ${this.reason}`
  }
}

/**
 * A timer reference (the name a schedule is steered by) that is not a non-empty string; for a grain timer also one
 * that starts with `$`, which is reserved for the references a grain makes up.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * console.log(new TimerError.InvalidTimerReference({ reference: "", reason: "must not be empty" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidTimerReference extends Data.TaggedError("InvalidTimerReference")<{
  /** The value given, as text. */
  readonly reference: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid timer reference ${JSON.stringify(this.reference)}: ${this.reason}`
  }
}

/**
 * A schedule policy that cannot work (`Schedules.Policies`): a `grace` that is not a duration, a `runAll` max below 1,
 * an unknown overlap, a `retry` that is not a `Schedule`, a `pauseAfterFailures` or `history` that is not a whole
 * number >= 1.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * console.log(new TimerError.InvalidSchedulePolicy({ policy: "overlap", reason: "must be skip, ..." }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSchedulePolicy extends Data.TaggedError("InvalidSchedulePolicy")<{
  readonly policy: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid schedule policy ${this.policy}: ${this.reason}`
  }
}

/**
 * The storage behind a cluster schedule (a cluster cron's or a reminder's tables) could not be read or written.
 * Local schedules never fail with it; `Schedules` operations on a cluster schedule can.
 *
 * @example
 * ```ts
 * import { TimerError } from "tickwork"
 *
 * console.log(new TimerError.ScheduleStorageError({ operation: "pause", reference: "nightly", reason: "timeout" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ScheduleStorageError extends Data.TaggedError("ScheduleStorageError")<{
  readonly operation: string
  /** The schedule the operation was for, when it was for one. */
  readonly reference: string | undefined
  readonly reason: string
}> {
  override get message(): string {
    return `schedule storage failed during ${this.operation}${this.reference === undefined ? "" : ` of "${this.reference}"`}: ${this.reason}`
  }
}

/**
 * Any error a timer operation can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type TimerError =
  | InvalidTimerDelay
  | InvalidTimerInterval
  | InvalidCronExpression
  | GrainTimersStopped
  | InvalidTimerOptions
  | ScheduledReferenceNotFound
  | InvalidTimerTarget
  | InvalidTimerReference
  | InvalidSchedulePolicy
  | ScheduleStorageError
