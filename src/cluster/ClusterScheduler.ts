/**
 * Cluster-wide cron: run an effect at each instant of a Quartz cron expression, once per instant across all the
 * runners of a cluster.
 *
 * Every runner registers the same schedules (as layers in its runner stack, or in a scope); one runner at a time
 * drives each schedule (an @effect/cluster singleton), and each instant is a persisted message delivered at that
 * instant to whichever runner owns it then, as in @effect/cluster's `ClusterCron`, but with Quartz expressions
 * (`QuartzCron`) evaluated in UTC unless a zone is given.
 *
 * Guarantees (see docs/cluster.md for the reasoning and the tests behind them):
 * - **Once per instant.** Each instant runs `execute` inside one SQL transaction of the runners' storage, together
 *   with the row that records the instant. SQL written through the `SqlClient` in `execute` therefore commits
 *   exactly once per instant; anything outside it (HTTP calls, emails) happens at least once: it can repeat when a
 *   runner dies after it and before the commit.
 * - **No instant lost to a dead runner.** The instants a schedule misses while its runner is being replaced run
 *   late, in order, each once, as long as they are at most `misfireThreshold` late (default 1 minute, as Quartz).
 * - **Whole cluster down** (or the schedule registered nowhere) for longer than that: by default (misfire
 *   `runOnce`) the pending instant runs once on recovery (`fire.misfired` is true), the instants missed since are
 *   skipped with one warning that counts them, and the schedule continues on its grid from now; `withPolicies` can
 *   skip them all (`skipMissed`) or run the latest of them (`runAll(max)`).
 * - **A failing `execute`** (error or defect) has its SQL rolled back, is logged as a warning and recorded with
 *   outcome `"failed"`; the schedule continues with the next instant (retried first under a `retry` policy, and
 *   paused after `pauseAfterFailures` failed instants in a row).
 * - **Operable**: with `ClusterSchedules.layer`, `Schedules` lists, pauses, resumes, triggers, updates, backfills and
 *   removes cluster crons, cluster-wide (docs/operations.md).
 * - **Lateness**: an instant runs at most about `entityMessagePollInterval` (1 second by default) after it is due
 *   while its runner is healthy.
 *
 * `execute` may run long: its transaction (and so "once" for its SQL) lasts until it ends. With SQLite the transaction
 * holds the file's write lock (and, in one runner, its single connection) while it runs: the runner's other SQL waits
 * for it (its shard lock refresh does not), and with several runner processes on one file the other runners cannot
 * write meanwhile, so there keep `execute` well under the shard lock interval (docs/cluster.md, "Long execute"). Do
 * not wait inside `execute` for SQL that another fiber runs: it cannot get the connection of a transaction in
 * progress.
 *
 * @since 0.1.0
 */
import * as Sharding from "@effect/cluster/Sharding"
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Data from "effect/Data"
import type * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as GrainTimers from "../GrainTimers.js"
import { DEFAULTS, type ParsedPolicies, parsePolicies } from "../internal/schedules.js"
import * as QuartzCron from "../QuartzCron.js"
import type * as Schedules from "../Schedules.js"
import type { InvalidCronExpression, InvalidSchedulePolicy } from "../TimerError.js"
import * as internal from "./internal/cron.js"
import { runnerScopes } from "./internal/runner.js"

/**
 * Options of one schedule; combine several by passing them one after the other (later ones win). The grain timer
 * helpers `GrainTimers.withTimerReference` and `GrainTimers.withTimeZone` are accepted as they are.
 *
 * @since 0.1.0
 * @category models
 */
export interface CronOptions {
  /** Names the schedule cluster-wide (required): 1-100 characters, the same on every runner. */
  readonly reference?: string
  /** IANA zone the expression is evaluated in (default `"UTC"`). */
  readonly timeZone?: string
  /** How late an instant may run and still count as on time (default 1 minute); see the module docs. */
  readonly misfireThreshold?: Duration.DurationInput
  /**
   * The schedule's policies (`Schedules.Policies`): misfire and grace (the grace is the misfire threshold), overlap of
   * triggered and backfilled runs, retry and pause after failures, history kept. Stored, and steerable with
   * `Schedules.update`, except `retry`, which stays with the registration.
   */
  readonly policies?: Schedules.Policies
}

/**
 * Sets the schedule's policies (`Schedules.Policies`); the defaults keep the behaviour of a cluster cron without them
 * (misfire `runOnce` past a 1 minute grace, no retry, no pause, 100 runs of history, overlap `bufferAll`).
 *
 * @example
 * ```ts
 * import { Schedule } from "effect"
 * import { Schedules } from "tickwork"
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const options = ClusterScheduler.withPolicies({
 *   misfire: Schedules.skipMissed,
 *   grace: "5 minutes",
 *   retry: Schedule.exponential("1 second").pipe(Schedule.intersect(Schedule.recurs(3))),
 *   pauseAfterFailures: 5
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withPolicies = (policies: Schedules.Policies): CronOptions => ({ policies })

/**
 * Names the schedule; required in cluster mode, since the reference is what makes every runner agree on it.
 *
 * @example
 * ```ts
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const options = ClusterScheduler.withTimerReference("nightly-report")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withTimerReference: (reference: string) => CronOptions = GrainTimers.withTimerReference

/**
 * Evaluates the expression in `timeZone` instead of UTC.
 *
 * @example
 * ```ts
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const options = ClusterScheduler.withTimeZone("Europe/Berlin")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withTimeZone: (timeZone: string) => CronOptions = GrainTimers.withTimeZone

/**
 * Sets how late an instant may run and still count as on time (not negative; 0 means a late instant always skips
 * the ones missed after it).
 *
 * @example
 * ```ts
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const options = ClusterScheduler.withMisfireThreshold("5 minutes")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const withMisfireThreshold = (misfireThreshold: Duration.DurationInput): CronOptions => ({ misfireThreshold })

/**
 * What `execute` is told about the instant it runs for: `reference`, `instant`, how `late` it started, and
 * `misfired` (true for the one run of an instant older than the misfire threshold).
 *
 * @since 0.1.0
 * @category models
 */
export type Fire = internal.Fire

/**
 * One fired instant as recorded in storage (kept for a day; older ones are deleted at most once an hour).
 *
 * @since 0.1.0
 * @category models
 */
export type HistoryEntry = internal.HistoryEntry

/**
 * `scheduleWithCron` was called without a reference: in a cluster the reference is the schedule's identity.
 *
 * @example
 * ```ts
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * console.log(new ClusterScheduler.MissingCronReference({ expression: "0 0 * * * ?" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingCronReference extends Data.TaggedError("MissingCronReference")<{ readonly expression: string }> {
  override get message(): string {
    return (
      `cluster cron "${this.expression}" has no reference: add ClusterScheduler.withTimerReference(name), ` +
      "the same on every runner"
    )
  }
}

/**
 * A schedule option was invalid (an empty or too long reference, a reference already registered on this runner, a
 * negative misfire threshold); `issues` names each.
 *
 * @example
 * ```ts
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const error = new ClusterScheduler.InvalidClusterCronOptions({ reference: "", issues: ["reference: empty"] })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidClusterCronOptions extends Data.TaggedError("InvalidClusterCronOptions")<{
  readonly reference: string
  readonly issues: ReadonlyArray<string>
}> {
  override get message(): string {
    return `invalid options for cluster cron "${this.reference}": ${this.issues.join("; ")}`
  }
}

/**
 * Any error `scheduleWithCron` and `layer` fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type ClusterSchedulerError =
  | MissingCronReference
  | InvalidClusterCronOptions
  | InvalidCronExpression
  | InvalidSchedulePolicy

/** A cluster cron's defaults: a local schedule's, with Quartz's one minute misfire threshold as the grace. */
const CLUSTER_DEFAULTS: ParsedPolicies = { ...DEFAULTS, graceMillis: Duration.toMillis(Duration.minutes(1)) }

type Execute<E, R> = Effect.Effect<unknown, E, R> | ((fire: Fire) => Effect.Effect<unknown, E, R>)

const define = <E, R>(
  expression: string,
  execute: Execute<E, R>,
  options: ReadonlyArray<CronOptions>
): Effect.Effect<internal.Definition<E, R>, ClusterSchedulerError> =>
  Effect.gen(function* () {
    const merged: CronOptions = Object.assign({}, ...options)
    const reference = merged.reference
    if (reference === undefined) return yield* new MissingCronReference({ expression })
    const issues: Array<string> = []
    if (reference.length === 0 || reference.length > 100) {
      issues.push(`reference: must be 1-100 characters, got ${reference.length}`)
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
    if (/[\u0000-\u001f]/.test(reference)) issues.push("reference: must not contain control characters")
    let misfireThresholdMillis = CLUSTER_DEFAULTS.graceMillis
    if (merged.misfireThreshold !== undefined) {
      const decoded = Duration.decodeUnknown(merged.misfireThreshold)
      if (Option.isNone(decoded) || !Duration.isFinite(decoded.value)) {
        issues.push(`misfireThreshold: ${String(merged.misfireThreshold)} is not a finite duration`)
      } else {
        misfireThresholdMillis = Duration.toMillis(decoded.value)
      }
    }
    if (issues.length > 0) return yield* new InvalidClusterCronOptions({ reference, issues })
    const policies = yield* parsePolicies(merged.policies, { ...CLUSTER_DEFAULTS, graceMillis: misfireThresholdMillis })
    const timeZone = merged.timeZone ?? "UTC"
    const cron = yield* QuartzCron.make(expression, { timeZone })
    return {
      reference,
      cron,
      timeZone,
      policies,
      execute: typeof execute === "function" ? execute : () => execute
    }
  })

/**
 * Runs `execute` at each instant of the Quartz cron `expression`, once per instant across the cluster, for as long
 * as the surrounding scope is open on at least one runner. Register it on every runner (same expression, zone and
 * reference); a reference is required. `execute` may be an effect or a function of the `Fire`.
 *
 * Fails with `MissingCronReference` without a reference, `InvalidCronExpression` for a bad expression or zone,
 * `InvalidSchedulePolicy` for a bad policy, and `InvalidClusterCronOptions` for a bad reference (or one registered
 * and still open on this runner) or threshold.
 *
 * Closing the scope stops the schedule on this runner only; registering it again there (at run time) is allowed on
 * a runner built by `ClusterRunner`, whose scope keeps the schedule's entity (@effect/cluster cannot register an
 * entity type twice on one runner; on a runner built otherwise a second registration fails with
 * `InvalidClusterCronOptions`). Instants whose messages land on a runner that dropped the schedule wait there until
 * it registers it again or restarts, so to stop a schedule everywhere use `Schedules.remove` (`ClusterSchedules`). A schedule registered on no runner
 * keeps its next instant in storage and resumes (by the misfire rules) when a runner registers it again. A changed
 * expression or zone under the same reference starts over from the next instant of the new one.
 *
 * @example
 * ```ts
 * import { SqlClient } from "@effect/sql"
 * import { DateTime, Effect } from "effect"
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const hourly = ClusterScheduler.scheduleWithCron(
 *   "0 0 * * * ?",
 *   (fire) =>
 *     Effect.gen(function* () {
 *       const sql = yield* SqlClient.SqlClient
 *       // Commits with the instant's record: exactly once per instant.
 *       yield* sql`INSERT INTO hourly_totals (hour) VALUES (${DateTime.formatIso(fire.instant)})`
 *     }),
 *   ClusterScheduler.withTimerReference("hourly-totals"),
 *   ClusterScheduler.withTimeZone("Europe/Berlin")
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const scheduleWithCron = <E, R>(
  expression: string,
  execute: Execute<E, R>,
  ...options: ReadonlyArray<CronOptions>
): Effect.Effect<
  void,
  ClusterSchedulerError,
  Sharding.Sharding | SqlClient.SqlClient | Scope.Scope | Exclude<R, Scope.Scope>
> =>
  Effect.gen(function* () {
    const definition = yield* define(expression, execute, options)
    const sharding = yield* Sharding.Sharding
    yield* internal.ensureTables.pipe(Effect.orDie)
    const registered = yield* internal.register(definition, runnerScopes.get(sharding))
    if (!registered) {
      return yield* new InvalidClusterCronOptions({
        reference: definition.reference,
        issues: [
          runnerScopes.has(sharding)
            ? "reference: already registered on this runner, and its scope is still open"
            : "reference: already registered on this runner (a runner not built by ClusterRunner cannot register it again once closed)"
        ]
      })
    }
  }) as Effect.Effect<
    void,
    ClusterSchedulerError,
    Sharding.Sharding | SqlClient.SqlClient | Scope.Scope | Exclude<R, Scope.Scope>
  >

/**
 * `scheduleWithCron` as a layer: the schedule lives as long as the layer. Add it to every runner's layer.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"
 *
 * const Cleanup = ClusterScheduler.layer(
 *   "0 30 3 * * ?",
 *   Effect.log("purging expired sessions"),
 *   ClusterScheduler.withTimerReference("purge-sessions")
 * )
 * const Runner = Cleanup.pipe(Layer.provideMerge(ClusterRunner.layer({ port: 34431 })))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(
  expression: string,
  execute: Execute<E, R>,
  ...options: ReadonlyArray<CronOptions>
): Layer.Layer<never, ClusterSchedulerError, Sharding.Sharding | SqlClient.SqlClient | Exclude<R, Scope.Scope>> =>
  Layer.scopedDiscard(scheduleWithCron(expression, execute, ...options))

/**
 * The most recent fired instants of a schedule (up to `limit`, default 100), oldest first, from storage.
 *
 * @example
 * ```ts
 * import { DateTime, Effect } from "effect"
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const report = Effect.gen(function* () {
 *   const fired = yield* ClusterScheduler.history("hourly-totals", { limit: 24 })
 *   for (const entry of fired) console.log(DateTime.formatIso(entry.instant), entry.runner, entry.outcome)
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const history = (
  reference: string,
  options?: { readonly limit?: number }
): Effect.Effect<ReadonlyArray<HistoryEntry>, SqlError.SqlError, SqlClient.SqlClient> =>
  internal.history(reference, Math.max(1, Math.floor(options?.limit ?? 100)))

/**
 * The instant a schedule waits for next, from storage; none if it was never started or has no more instants.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ClusterScheduler } from "tickwork/cluster"
 *
 * const next = ClusterScheduler.nextInstant("hourly-totals")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const nextInstant = (
  reference: string
): Effect.Effect<Option.Option<DateTime.Utc>, SqlError.SqlError, SqlClient.SqlClient> => internal.nextInstant(reference)
