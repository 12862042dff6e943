/**
 * The system scheduler: schedules that belong to the actor system, not to an actor. They survive any actor's stop
 * and restart and end with the system (or when cancelled). Use it outside actors (signal handlers, start-up glue) or
 * for work that must outlive the actor that starts it; inside an actor prefer `context.timers`.
 *
 * Message schedules deliver through the target's mailbox as ticks (they do not reset its receive timeout; a full
 * bounded mailbox drops them and the schedule keeps firing); a stopped target's messages go to dead letters. Function
 * tasks run on their own fiber so a slow task never stalls other timers; runs of one task never overlap (a run that
 * comes due while the previous one is still going starts right after it). A failing task is logged at error level
 * and published as `SchedulerError`; a repeating task keeps its schedule.
 *
 * Every input is checked when the schedule is made: a target or sender that is not an `ActorRef`, or a task that is
 * not an `Effect`, fails with `InvalidTimerTarget`, a bad delay or interval with `InvalidTimerDelay` /
 * `InvalidTimerInterval`. A custom `ActorRef` whose `unsafeTell` throws when a tick is delivered is that schedule's
 * fault alone: it is logged at error level, counted in `Metrics.timerFaults` and published as `SchedulerError`, and
 * a repeating schedule keeps firing (docs/reliability.md).
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { ActorRef } from "./ActorRef.js"
import type {
  InvalidCronExpression,
  InvalidTimerDelay,
  InvalidTimerInterval,
  InvalidTimerReference,
  InvalidTimerTarget,
  ScheduledReferenceNotFound
} from "./TimerError.js"

/**
 * A handle to a schedule.
 *
 * `cancel` succeeds with true only when it stopped an active schedule: false when it was cancelled before or has
 * run out. A one-shot message schedule counts as active until the target has handled the message, so cancelling it
 * while the message waits in the mailbox still works and drops the message. A one-shot function task is done once
 * it has started.
 *
 * @since 0.1.0
 * @category models
 */
export interface Cancellable {
  readonly cancel: Effect.Effect<boolean>
  /** True after a successful `cancel` (and for schedules made after the system shut down). */
  readonly isCancelled: Effect.Effect<boolean>
  /**
   * `cancel`, done at once outside any effect, like `ActorRef.unsafeTell`: for callbacks and hot paths that already
   * run synchronously. True when it stopped an active schedule.
   */
  unsafeCancel(): boolean
}

/**
 * The scheduler of one actor system (`system.scheduler`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   const alive = yield* system.scheduler.scheduleAtFixedRateFunction("5 seconds", "30 seconds", Effect.logInfo("still alive"))
 *   // later
 *   yield* alive.cancel
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Scheduler {
  /** Sends `message` to `target` once, after `delay`. */
  readonly scheduleOnce: <Msg>(
    delay: Duration.DurationInput,
    target: ActorRef<Msg>,
    message: Msg,
    sender?: ActorRef<any>
  ) => Effect.Effect<Cancellable, InvalidTimerDelay | InvalidTimerTarget>
  /**
   * `scheduleOnce`, done at once outside any effect, like `ActorRef.unsafeTell`: for callbacks and hot paths that
   * already run synchronously (an `Effect.sync` handler). A bad `delay` throws the `InvalidTimerDelay` that
   * `scheduleOnce` would fail with. Each `scheduleOnce` is an effect, and running it costs Effect's run loop about as
   * much as the engine's own work; this skips that (see docs/performance.md).
   *
   * @example
   * ```ts
   * import { Effect } from "effect"
   * import { Actor, ActorSystem } from "tickwork"
   *
   * const program = Effect.gen(function*() {
   *   const system = yield* ActorSystem.ActorSystem
   *   const Reminder = Actor.make<string>()({ receive: (order) => Effect.log(`remind ${order}`) })
   *   const reminders = yield* system.spawn(Reminder, "reminders")
   *   // plain synchronous code: one engine record per schedule, no effect to run
   *   const schedule = (order: string) => system.scheduler.unsafeScheduleOnce("15 minutes", reminders, order)
   *   const handles = ["a", "b", "c"].map(schedule)
   *   handles[0]!.unsafeCancel() // true: "a" is not sent
   * })
   * ```
   */
  readonly unsafeScheduleOnce: <Msg>(
    delay: Duration.DurationInput,
    target: ActorRef<Msg>,
    message: Msg,
    sender?: ActorRef<any>
  ) => Cancellable
  /** Runs `task` once, after `delay`. */
  readonly scheduleOnceFunction: <E, R>(
    delay: Duration.DurationInput,
    task: Effect.Effect<unknown, E, R>
  ) => Effect.Effect<Cancellable, InvalidTimerDelay | InvalidTimerTarget, R>
  /** Sends `message` to `target` after `initialDelay`, then every `interval` on a fixed grid. */
  readonly scheduleAtFixedRate: <Msg>(
    initialDelay: Duration.DurationInput,
    interval: Duration.DurationInput,
    target: ActorRef<Msg>,
    message: Msg,
    sender?: ActorRef<any>
  ) => Effect.Effect<Cancellable, InvalidTimerDelay | InvalidTimerInterval | InvalidTimerTarget>
  /**
   * Sends `message` to `target` at every instant of a Quartz cron expression (see `QuartzCron`). Instants missed
   * while the process stalled are not replayed. An expression with no instant after now (its years are all past)
   * fails with `InvalidCronExpression`, as an expression that does not parse does.
   */
  readonly scheduleWithCron: <Msg>(
    target: ActorRef<Msg>,
    message: Msg,
    expression: string,
    options?: CronOptions
  ) => Effect.Effect<Cancellable, InvalidCronExpression | InvalidTimerTarget | InvalidTimerReference>
  /** Cancels the schedule made under `reference`. */
  readonly cancelSchedule: (reference: string) => Effect.Effect<void, ScheduledReferenceNotFound>
  /** Runs `task` after `initialDelay`, then every `interval` on a fixed grid. */
  readonly scheduleAtFixedRateFunction: <E, R>(
    initialDelay: Duration.DurationInput,
    interval: Duration.DurationInput,
    task: Effect.Effect<unknown, E, R>
  ) => Effect.Effect<Cancellable, InvalidTimerDelay | InvalidTimerInterval | InvalidTimerTarget, R>
}

/**
 * Options of `scheduleWithCron`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CronOptions {
  /** Names the schedule; reusing a reference cancels and replaces the schedule that had it. */
  readonly reference?: string
  /** IANA zone the expression is evaluated in (default: the process's local zone). */
  readonly timeZone?: string
  readonly sender?: ActorRef<any>
}

/**
 * Cancels `self`; true when it stopped an active schedule.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Scheduler } from "tickwork"
 *
 * const stop = (handle: Scheduler.Cancellable) => Scheduler.cancel(handle).pipe(Effect.tap(Effect.log))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const cancel = (self: Cancellable): Effect.Effect<boolean> => self.cancel
