/**
 * Schedules you can operate: named schedules (an interval or a Quartz cron, sending a message or running a task) that
 * an operator can list, pause with a note, resume, trigger, update in place and remove, each with its history of runs
 * and its policies for missed instants (misfire), overlapping runs (overlap) and failures (retry, pause after N).
 *
 * The `Schedules` service covers every named schedule of the system: the ones made here, and the system scheduler's
 * crons made with a `reference` (`system.scheduler.scheduleWithCron(..., { reference })`). `tickwork/cluster` adds
 * its cluster-wide crons to the same service (`ClusterSchedules.layer`, through `addSource`).
 *
 * The policies' names follow Temporal's schedules and Quartz's misfire instructions (docs/operations.md maps them):
 *
 * | policy | values | default (today's behaviour) |
 * | --- | --- | --- |
 * | `misfire` (an instant later than `grace`) | `skipMissed`, `runOnce`, `runAll(max)` | none: with `grace` infinite, a late instant runs late, as any timer |
 * | `overlap` (a task instant while a run is going) | `"skip"`, `"bufferOne"`, `"bufferAll"`, `"allowAll"` | `"bufferAll"`: runs never overlap and none is lost |
 * | `retry` (a failed task run) | any Effect `Schedule` | none |
 * | `pauseAfterFailures` | a whole number >= 1 | none |
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { ActorRef } from "./ActorRef.js"
import { ActorSystem } from "./ActorSystem.js"
import { systemOf } from "./internal/actorSystem.js"
import type {
  InvalidCronExpression,
  InvalidSchedulePolicy,
  InvalidTimerDelay,
  InvalidTimerInterval,
  InvalidTimerReference,
  InvalidTimerTarget,
  ScheduledReferenceNotFound,
  ScheduleStorageError
} from "./TimerError.js"
import type { TimerInfo } from "./Timers.js"

/**
 * When a schedule fires: every `every` on a fixed grid from its creation (the first instant after `first`, default
 * `every`), or at the instants of a Quartz cron expression in a time zone.
 *
 * @since 0.1.0
 * @category models
 */
export type Spec =
  | { readonly _tag: "Interval"; readonly every: Duration.DurationInput; readonly first?: Duration.DurationInput }
  | { readonly _tag: "Cron"; readonly expression: string; readonly timeZone?: string }

/**
 * An interval spec: every `every` on a fixed grid, the first instant after `first` (default `every`).
 *
 * @example
 * ```ts
 * import { Schedules } from "tickwork"
 *
 * const spec = Schedules.every("5 minutes", { first: "10 seconds" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const every = (every: Duration.DurationInput, options?: { readonly first?: Duration.DurationInput }): Spec =>
  options?.first === undefined ? { _tag: "Interval", every } : { _tag: "Interval", every, first: options.first }

/**
 * A Quartz cron spec (see `QuartzCron`), in `timeZone` (default: the process's local zone).
 *
 * @example
 * ```ts
 * import { Schedules } from "tickwork"
 *
 * const nightly = Schedules.cron("0 0 2 * * ?", { timeZone: "Europe/Berlin" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const cron = (expression: string, options?: { readonly timeZone?: string }): Spec =>
  options?.timeZone === undefined
    ? { _tag: "Cron", expression }
    : { _tag: "Cron", expression, timeZone: options.timeZone }

/**
 * What a schedule does at an instant: send a message to an actor (as a tick: removing or pausing the schedule drops
 * one still waiting in the mailbox), or run a task on a fiber of its own.
 *
 * @since 0.1.0
 * @category models
 */
export type Action<R = never> =
  | {
      readonly _tag: "Send"
      readonly target: ActorRef<any>
      readonly message: unknown
      readonly sender?: ActorRef<any> | undefined
    }
  | { readonly _tag: "Run"; readonly task: Effect.Effect<unknown, unknown, R> }

/**
 * Sends `message` to `target` at each instant.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem, Schedules } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const reports = yield* ActorSystem.spawn(Actor.make<string>()({ receive: (m) => Effect.log(m) }), "reports")
 *   const action = Schedules.send(reports, "daily report")
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const send = <Msg>(target: ActorRef<Msg>, message: Msg, sender?: ActorRef<any>): Action =>
  ({ _tag: "Send", target, message, sender }) as Action

/**
 * Runs `task` at each instant, with the services of the fiber that created the schedule.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Schedules } from "tickwork"
 *
 * const action = Schedules.run(Effect.log("cleaning up"))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <E, R>(task: Effect.Effect<unknown, E, R>): Action<R> => ({ _tag: "Run", task })

/**
 * What happens to instants missed by more than the `grace` window (a stalled process, an outage, a paused one is not a
 * misfire): `skipMissed` runs none of them (Quartz's "do nothing"), `runOnce` runs one, now, for all of them (Quartz's
 * "fire once now"), `runAll(max)` runs each of them, the latest `max` at most (Quartz's "ignore misfire policy").
 *
 * @since 0.1.0
 * @category models
 */
export type Misfire =
  | { readonly _tag: "SkipMissed" }
  | { readonly _tag: "RunOnce" }
  | { readonly _tag: "RunAll"; readonly max: number }

/**
 * Missed instants are not run; the schedule goes on from its next instant.
 *
 * @example
 * ```ts
 * import { Schedules } from "tickwork"
 *
 * const policies: Schedules.Policies = { misfire: Schedules.skipMissed, grace: "1 minute" }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const skipMissed: Misfire = { _tag: "SkipMissed" }

/**
 * Missed instants run once, now, for all of them.
 *
 * @example
 * ```ts
 * import { Schedules } from "tickwork"
 *
 * const policies: Schedules.Policies = { misfire: Schedules.runOnce, grace: "30 seconds" }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const runOnce: Misfire = { _tag: "RunOnce" }

/**
 * Missed instants each run, in order, the latest `max` of them at most (the older ones are recorded as missed).
 *
 * @example
 * ```ts
 * import { Schedules } from "tickwork"
 *
 * const policies: Schedules.Policies = { misfire: Schedules.runAll(10), grace: "5 seconds" }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const runAll = (max = Number.POSITIVE_INFINITY): Misfire => ({ _tag: "RunAll", max })

/**
 * What happens to a task's instant while a run of it is still going (Temporal's overlap policies): `"skip"` drops
 * it, `"bufferOne"` keeps the latest one to run after, `"bufferAll"` keeps them all, `"allowAll"` runs it at once
 * beside the other.
 *
 * @since 0.1.0
 * @category models
 */
export type Overlap = "skip" | "bufferOne" | "bufferAll" | "allowAll"

/**
 * A schedule's policies; every field is optional and defaults to today's behaviour (see the module's table).
 *
 * @since 0.1.0
 * @category models
 */
export interface Policies {
  readonly misfire?: Misfire
  /** How late an instant may run and still count as on time (default: no limit, so nothing misfires). */
  readonly grace?: Duration.DurationInput
  readonly overlap?: Overlap
  /** Retries a failed run of a task, per instant (an exponential backoff with a cap, say). */
  readonly retry?: Schedule.Schedule<unknown, unknown>
  /** Pauses the schedule after this many runs in a row failed (after their retries), with a note saying why. */
  readonly pauseAfterFailures?: number
  /** Runs kept in the schedule's history (default 100). */
  readonly history?: number
}

/**
 * One run of a schedule, as its history keeps it. `instant` is the time it was due for (for a manual trigger, the time
 * of the trigger); `outcome` says how it ended: a task `"succeeded"` or `"failed"` (after `attempts`), a message was
 * `"sent"`, or the instant was `"skipped"` (an overlap) or `"missed"` (a misfire), which did not run at all.
 *
 * @since 0.1.0
 * @category models
 */
export interface Run {
  readonly instant: number
  readonly trigger: "schedule" | "manual" | "backfill"
  readonly start: number | undefined
  readonly end: number | undefined
  readonly outcome: "succeeded" | "failed" | "sent" | "skipped" | "missed"
  /** Milliseconds between the instant and the start of the run. */
  readonly lateness: number | undefined
  readonly attempts: number
  /** Why it was skipped, missed or failed. */
  readonly detail?: string | undefined
}

/**
 * A schedule as `list` and `get` show it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScheduleInfo {
  readonly reference: string
  /** `"interval"` and `"cron"` are local; `"cluster-cron"` and `"reminder"` come from `tickwork/cluster`. */
  readonly kind: "interval" | "cron" | "cluster-cron" | "reminder"
  /** Who the schedule acts for: the path of a message's target, `"task"`, or the cluster grain of a reminder. */
  readonly owner: string
  readonly expression: string | undefined
  readonly intervalMillis: number | undefined
  readonly timeZone: string | undefined
  readonly state: "active" | "paused"
  /** Why, by whom and when it was paused. */
  readonly pause: { readonly note: string; readonly by: string; readonly at: number } | undefined
  /** The next instant it will fire at; undefined while paused or when it has none left. */
  readonly nextFire: number | undefined
  readonly lastRun: Run | undefined
  readonly policies: {
    readonly misfire: Misfire
    readonly graceMillis: number
    readonly overlap: Overlap
    readonly retry: boolean
    readonly pauseAfterFailures: number | undefined
  }
}

/**
 * Which schedules `list` returns.
 *
 * @since 0.1.0
 * @category models
 */
export interface Filter {
  readonly kind?: ScheduleInfo["kind"]
  /** An exact owner, as `ScheduleInfo.owner` shows it. */
  readonly owner?: string
  readonly state?: ScheduleInfo["state"]
}

/**
 * Why `create` or `update` refused a schedule.
 *
 * @since 0.1.0
 * @category errors
 */
export type ScheduleError =
  | InvalidTimerInterval
  | InvalidTimerDelay
  | InvalidCronExpression
  | InvalidTimerTarget
  | InvalidTimerReference
  | InvalidSchedulePolicy

/**
 * The operations on named schedules. Every member is a property that works on its own (destructuring is safe).
 *
 * A `ScheduleStorageError` comes only from a cluster schedule (`tickwork/cluster`'s `ClusterSchedules`), whose state
 * is in the runners' storage; local schedules never fail with it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SchedulesService extends SchedulesOperations {
  /**
   * Creates the local schedule `reference`, or updates it in place when it exists (idempotent: registering the same
   * reference again makes no second schedule, and keeps its pause and history). Cluster crons are created with
   * `ClusterScheduler.scheduleWithCron` on every runner, reminders with `Reminders.register`.
   */
  readonly create: <R>(
    reference: string,
    spec: Spec,
    action: Action<R>,
    policies?: Policies
  ) => Effect.Effect<ScheduleInfo, ScheduleError, R>
  /**
   * The timers an owner holds now, read without sending it a message: an actor's `ctx.timers` and receive timeout, and
   * the timers of a grain activation, an entity or a Spot (each is an actor: pass its ref). A ref without a mailbox of
   * this system fails with `InvalidTimerTarget`; a stopped actor holds none.
   */
  readonly timersOf: (owner: ActorRef<any>) => Effect.Effect<ReadonlyArray<TimerInfo>, InvalidTimerTarget>
}

/**
 * The operations on existing named schedules, which a `ScheduleSource` implements for the schedules it keeps.
 *
 * @since 0.1.0
 * @category models
 */
export interface SchedulesOperations {
  readonly list: (filter?: Filter) => Effect.Effect<ReadonlyArray<ScheduleInfo>, ScheduleStorageError>
  readonly get: (reference: string) => Effect.Effect<ScheduleInfo, ScheduledReferenceNotFound | ScheduleStorageError>
  /** Stops the schedule firing until `resume`; `note` (and `by`) say why, for whoever looks at it next. */
  readonly pause: (
    reference: string,
    note: string,
    options?: { readonly by?: string }
  ) => Effect.Effect<ScheduleInfo, ScheduledReferenceNotFound | ScheduleStorageError>
  /** Fires again from the next instant after now; instants that passed while paused are not run. */
  readonly resume: (reference: string) => Effect.Effect<ScheduleInfo, ScheduledReferenceNotFound | ScheduleStorageError>
  /** Runs the action once now, without moving the schedule's instants; a task's run obeys its overlap policy. */
  readonly trigger: (reference: string) => Effect.Effect<void, ScheduledReferenceNotFound | ScheduleStorageError>
  /** Changes the spec and/or the policies in place: no duplicate run, and no instant lost. */
  readonly update: (
    reference: string,
    changes: { readonly spec?: Spec; readonly policies?: Policies }
  ) => Effect.Effect<ScheduleInfo, ScheduledReferenceNotFound | ScheduleError | ScheduleStorageError>
  readonly remove: (reference: string) => Effect.Effect<void, ScheduledReferenceNotFound | ScheduleStorageError>
  /** The schedule's runs, oldest first (a bounded ring locally: `Policies.history`; a stored table on the cluster). */
  readonly history: (
    reference: string
  ) => Effect.Effect<ReadonlyArray<Run>, ScheduledReferenceNotFound | ScheduleStorageError>
  /**
   * Runs the schedule's action once for each of its instants in `[from, to]`, oldest first, without moving its grid
   * (recorded with `trigger: "backfill"`); succeeds with how many instants that is. The runs obey the overlap policy.
   * `from` after `to`, or a range of more than 10,000 instants, is an `InvalidSchedulePolicy` (policy `"backfill"`).
   */
  readonly backfill: (
    reference: string,
    from: DateTime.DateTime | number,
    to: DateTime.DateTime | number
  ) => Effect.Effect<number, ScheduledReferenceNotFound | InvalidSchedulePolicy | ScheduleStorageError>
}

/**
 * Named schedules kept outside the system (the cluster's crons and reminders, in the runners' storage), added to the
 * system's `Schedules` with `addSource`: `list` shows them beside the local ones, and every other operation on a
 * reference that is not local goes to the sources in the order they were added. Each operation fails with
 * `ScheduledReferenceNotFound` for a reference the source does not keep.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScheduleSource extends SchedulesOperations {
  /** Names the source in logs (e.g. `"cluster-cron"`). */
  readonly name: string
}

/**
 * Adds `source` to the schedules of the system in context, for the lifetime of the scope.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Schedules } from "tickwork"
 *
 * declare const source: Schedules.ScheduleSource
 * const added = Effect.scoped(Schedules.addSource(source))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const addSource = (source: ScheduleSource): Effect.Effect<void, never, ActorSystem | Scope.Scope> =>
  Effect.flatMap(ActorSystem, (system) => {
    const schedules = systemOf(system)!.schedules
    return Effect.acquireRelease(
      Effect.sync(() => schedules.addSource(source)),
      () => Effect.sync(() => schedules.removeSource(source))
    )
  })

/**
 * The service tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Schedules } from "tickwork"
 *
 * const paused = Effect.flatMap(Schedules.Schedules, (schedules) => schedules.list({ state: "paused" }))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class Schedules extends Context.Tag("tickwork/Schedules")<Schedules, SchedulesService>() {}

/**
 * The service over the system's named schedules (the system in context).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem, Schedules } from "tickwork"
 *
 * const Live = Schedules.layer.pipe(Layer.provideMerge(ActorSystem.layer({ name: "ops" })))
 * const program = Effect.gen(function*() {
 *   const schedules = yield* Schedules.Schedules
 *   yield* schedules.create("cleanup", Schedules.every("1 hour"), Schedules.run(Effect.log("cleanup")))
 * }).pipe(Effect.provide(Live))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Schedules, never, ActorSystem> = Layer.effect(
  Schedules,
  Effect.map(ActorSystem, (system) => systemOf(system)!.schedules.service)
)
