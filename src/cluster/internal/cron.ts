/**
 * Cluster-wide Quartz cron: a singleton per schedule plus one persisted message per cron instant, as in
 * @effect/cluster's ClusterCron, with a cursor row per schedule that makes "exactly once" hold across fail-over.
 *
 * State, in the runners' SQL storage:
 * - `<prefix>_tickwork_cron`: one row per reference: the expression and zone, the one instant the schedule waits
 *   for (`next_instant`, the cursor) and a `generation` bumped at each singleton start.
 * - `<prefix>_tickwork_cron_fired`: one row per fired instant, `PRIMARY KEY (reference, instant)`, with the outcome.
 * - the operator's state and the runs history (`scheduleState.ts`): read by the handler in the instant's
 *   transaction (a paused cron's instants move the cursor without running; policies decide misfires and retries).
 *
 * Messages: entity type `tickwork/ClusterScheduler/<reference>`, entity id = the instant (ISO), primary key = the
 * generation, delivered at the instant. Sending the same (instant, generation) twice stores it once.
 *
 * The handler of instant `i`, in one SQL transaction: lock the schedule row; if `i` is not its cursor, the message
 * is stale (a redelivery after a crash, a second chain after a singleton restart, an old expression): drop it and
 * re-send the cursor's message (a no-op if it exists). Otherwise record `i`, run `execute` inside the same
 * transaction, move the cursor to the next instant, commit, then send the next instant's message. A runner that
 * dies anywhere in there leaves either no trace (rollback: the message is redelivered and runs again) or a moved
 * cursor (the redelivered message is stale, and re-sends the next one). So an instant's transactional effects
 * happen exactly once; effects outside the transaction at least once.
 *
 * Runs outside the grid (`Schedules.trigger`, `backfill`) are `run` messages (identity: a snowflake), run in a
 * transaction with their record in the runs table, so a redelivered one that committed is not run again.
 *
 * The singleton (one runner at a time) bumps the generation and sends the cursor's message at start: that revives a
 * chain whose message was answered without running (e.g. its entity was not registered), and merges with a live one.
 *
 * @internal
 */

import { ClientTracingEnabled, Persisted, Uninterruptible } from "@effect/cluster/ClusterSchema"
import * as DeliverAt from "@effect/cluster/DeliverAt"
import * as Entity from "@effect/cluster/Entity"
import * as Sharding from "@effect/cluster/Sharding"
import * as Rpc from "@effect/rpc/Rpc"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as PrimaryKey from "effect/PrimaryKey"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import { notRun, type ParsedPolicies } from "../../internal/schedules.js"
import { recordsSpans } from "../../internal/tracing.js"
import { scheduleEvents } from "../../Metrics.js"
import * as QuartzCron from "../../QuartzCron.js"
import type { Run } from "../../Schedules.js"
import {
  awaitTurn,
  decideMisfire,
  MAX_MISSED_SCAN,
  type MisfireDecision,
  RUNNING_STALE_MILLIS,
  runningIn,
  type TurnHost
} from "./cronPolicy.js"
import { createTables, Tables } from "./runner.js"
import * as ScheduleState from "./scheduleState.js"
import { encodePolicies, ensureStateTables, type StoredPolicies } from "./scheduleState.js"
import { countAttempt, cronInstantSpan, runnerAddress } from "./spans.js"

export class FirePayload extends Schema.Class<FirePayload>("tickwork/ClusterScheduler/Fire")({
  instant: Schema.Number,
  generation: Schema.Number
}) {
  [PrimaryKey.symbol](): string {
    return String(this.generation)
  }
  [DeliverAt.symbol](): DateTime.DateTime {
    return DateTime.unsafeMake(this.instant)
  }
}

/** Runs outside the grid (`Schedules.trigger`, `Schedules.backfill`): the instants, in order, each once. */
export class RunPayload extends Schema.Class<RunPayload>("tickwork/ClusterScheduler/Run")({
  id: Schema.String,
  trigger: Schema.Literal("manual", "backfill"),
  instants: Schema.Array(Schema.Number)
}) {
  [PrimaryKey.symbol](): string {
    return this.id
  }
}

export const entityType = (reference: string): string => `tickwork/ClusterScheduler/${reference}`

export const makeEntity = (reference: string) =>
  Entity.make(entityType(reference), [
    Rpc.make("fire", { payload: FirePayload }).annotate(Persisted, true).annotate(Uninterruptible, true),
    Rpc.make("run", { payload: RunPayload }).annotate(Persisted, true).annotate(Uninterruptible, true)
  ]).annotate(ClientTracingEnabled, false)

/** What a schedule's `execute` is told about the instant it runs for. */
export interface Fire {
  readonly reference: string
  readonly instant: DateTime.Utc
  /** How long after the instant it started. */
  readonly late: Duration.Duration
  /** True for a run of an instant later than the misfire threshold (the cluster was down). */
  readonly misfired: boolean
  /** `"schedule"` for an instant of the grid, `"manual"` for `Schedules.trigger`, `"backfill"` for a backfill. */
  readonly trigger: "schedule" | "manual" | "backfill"
}

export interface Definition<E, R> {
  readonly reference: string
  readonly cron: QuartzCron.QuartzCron
  readonly timeZone: string
  /** The policies; `graceMillis` is the misfire threshold. */
  readonly policies: ParsedPolicies
  readonly execute: (fire: Fire) => Effect.Effect<unknown, E, R>
}

export interface HistoryEntry {
  readonly instant: DateTime.Utc
  readonly firedAt: DateTime.Utc
  readonly runner: string
  readonly outcome: "ok" | "failed"
}

/** Fired instants are kept this long (they are an audit trail; the cursor alone guarantees once per instant). */
const HISTORY_MILLIS = 24 * 60 * 60 * 1000

const retrySql = Schedule.exponential("100 millis", 2).pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.jittered
)

const toNumber = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value))

export const tableNames = Effect.map(Tables, ({ prefix }) => ({
  schedules: `${prefix}_tickwork_cron`,
  fired: `${prefix}_tickwork_cron_fired`
}))

export const ensureTables = Effect.gen(function* () {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const tables = yield* tableNames
  yield* sql`
    CREATE TABLE IF NOT EXISTS ${sql(tables.schedules)} (
      reference VARCHAR(255) PRIMARY KEY,
      expression TEXT NOT NULL,
      time_zone TEXT NOT NULL,
      next_instant BIGINT,
      generation BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`
  yield* sql`
    CREATE TABLE IF NOT EXISTS ${sql(tables.fired)} (
      reference VARCHAR(255) NOT NULL,
      instant BIGINT NOT NULL,
      fired_at BIGINT NOT NULL,
      runner VARCHAR(255) NOT NULL,
      outcome VARCHAR(16) NOT NULL,
      PRIMARY KEY (reference, instant)
    )`
  yield* ensureStateTables
}).pipe(createTables)

/** The stored part of a definition's policies. */
export const storedPolicies = (policies: ParsedPolicies): StoredPolicies => ({
  misfire: policies.misfire,
  graceMillis: policies.graceMillis,
  overlap: policies.overlap,
  pauseAfterFailures: policies.pauseAfterFailures,
  history: policies.history,
  retry: policies.retry !== undefined
})

/** What the code registered: an operator's update holds until the code registers something else. */
const definedOf = (definition: Definition<any, any>): string =>
  JSON.stringify({
    expression: definition.cron.expression,
    timeZone: definition.timeZone,
    policies: encodePolicies(storedPolicies(definition.policies))
  })

/** Parsed expressions by zone and text: an operator's update changes what the handler evaluates. */
const parsedCrons = new Map<string, QuartzCron.QuartzCron>()

export const cronOf = (expression: string, timeZone: string): QuartzCron.QuartzCron | undefined => {
  const key = `${timeZone}\u0000${expression}`
  let cron = parsedCrons.get(key)
  if (cron === undefined) {
    const parsed = QuartzCron.parse(expression, { timeZone })
    if (Either.isLeft(parsed)) return undefined
    cron = parsed.right
    if (parsedCrons.size > 1000) parsedCrons.clear()
    parsedCrons.set(key, cron)
  }
  return cron
}

interface Cursor {
  readonly next: number | null
  readonly generation: number
}

const iso = (millis: number) => DateTime.formatIso(DateTime.unsafeMake(millis))

/** The history's entry for a run of `execute` that started at `start` and ended at `end`. */
const ranRun = (
  instant: number,
  trigger: Run["trigger"],
  start: number,
  end: number,
  exit: Exit.Exit<unknown, unknown>,
  attempts: number
): Run => ({
  instant,
  trigger,
  start,
  end,
  outcome: Exit.isFailure(exit) ? "failed" : "succeeded",
  lateness: start - instant,
  attempts
})

/** What a misfire did, for the log and the history. */
const missedDetail = (instant: number, decision: MisfireDecision, policies: StoredPolicies): string => {
  const count = `${decision.capped ? `${MAX_MISSED_SCAN} or more` : decision.missed} instants`
  const resumes = decision.next === null ? "never (the expression has no more instants)" : `at ${iso(decision.next)}`
  switch (policies.misfire._tag) {
    case "RunOnce":
      return (
        `${count} after ${iso(instant)} were missed while no runner served the schedule; ${iso(instant)} ran once, ` +
        `the grid resumes ${resumes}`
      )
    case "SkipMissed":
      return `${count} from ${iso(instant)} were missed by more than the grace window (misfire: skipMissed); the grid resumes ${resumes}`
    case "RunAll":
      return (
        `${count} from ${iso(instant)} were missed by more than the grace window; the latest ` +
        `${policies.misfire.max} run now (misfire: runAll), from ${resumes}`
      )
  }
}

/** What one runner holds for a reference: the current registration, if its scope is open. */
interface Slot {
  current: { readonly definition: Definition<any, any>; readonly context: Context.Context<any> } | undefined
  last: Definition<any, any>
  /** Open while a registration is current. */
  readonly present: Effect.Latch
  /** Writes the registration to storage and (re)starts its chain of messages. */
  start: Effect.Effect<void>
}

/** Per runner (Sharding instance): the references whose entity and singleton are registered there. */
const slots = new WeakMap<object, Map<string, Slot>>()

/**
 * Registers `definition` on this runner. The entity and singleton of a reference are registered once per runner, in
 * `runnerScope` when the runner has one (`ClusterRunner` layers), so that a registration whose scope closed can be
 * made again on the same runner; their handlers run the current registration, and wait while there is none.
 * Succeeds with false when the reference is registered (and open) on this runner already, or was registered without
 * a runner scope and closed (@effect/cluster cannot register an entity type twice on one runner).
 */
export const register = <E, R>(
  definition: Definition<E, R>,
  runnerScope: Scope.Scope | undefined
): Effect.Effect<boolean, never, Sharding.Sharding | SqlClient.SqlClient | Scope.Scope | R> =>
  Effect.gen(function* () {
    const sharding = yield* Sharding.Sharding
    let byReference = slots.get(sharding)
    if (byReference === undefined) slots.set(sharding, (byReference = new Map()))
    // The services `execute` was registered with, without the registering code's span: an instant is no part of
    // that trace (docs/design-choices.md, "Ticks carry no diagnostic context").
    const context = Context.omit(Tracer.ParentSpan)(yield* Effect.context<R>()) as Context.Context<any>
    const existing = byReference.get(definition.reference)
    const registration = { definition, context }
    const release = (slot: Slot) =>
      Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (slot.current !== registration) return
          slot.current = undefined
          slot.present.unsafeClose()
        })
      )
    if (existing !== undefined) {
      if (existing.current !== undefined || runnerScope === undefined) return false
      existing.current = registration
      existing.last = definition
      existing.present.unsafeOpen()
      yield* release(existing)
      yield* existing.start
      return true
    }
    const slot: Slot = {
      current: registration,
      last: definition,
      present: yield* Effect.makeLatch(true),
      start: Effect.void
    }
    byReference.set(definition.reference, slot)
    yield* release(slot)
    const scope = runnerScope ?? (yield* Effect.scope)
    yield* registerSlot(definition.reference, slot).pipe(Scope.extend(scope))
    return true
  })

const registerSlot = (
  reference: string,
  slot: Slot
): Effect.Effect<void, never, Sharding.Sharding | SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function* () {
    const sharding = yield* Sharding.Sharding
    const storage = yield* SqlClient.SqlClient
    const sql = storage.withoutTransforms()
    const tables = yield* tableNames
    const state = yield* ScheduleState.make
    const traced = recordsSpans(yield* Effect.tracer)
    const entity = makeEntity(reference)
    const makeClient = yield* sharding.makeClient(entity)
    const schedulesTable = sql(tables.schedules)
    const firedTable = sql(tables.fired)
    const local = runningIn(storage, `${tables.schedules}/${reference}`)

    /** The current registration on this runner; waits (interruptibly) while its scope is closed. */
    const current = Effect.suspend(() =>
      slot.current !== undefined
        ? Effect.succeed(slot.current)
        : Effect.zipRight(
            Effect.interruptible(slot.present.await),
            Effect.sync(() => slot.current!)
          )
    )

    /** Locks the schedule row (a write first: SQLite takes its write lock at once, PostgreSQL the row lock). */
    const lockCursor = (now: number) =>
      Effect.map(
        sql<{
          readonly next_instant: unknown
          readonly generation: unknown
          readonly expression: string
          readonly time_zone: string
        }>`
          UPDATE ${schedulesTable} SET updated_at = ${now} WHERE reference = ${reference}
          RETURNING next_instant, generation, expression, time_zone`,
        (rows): (Cursor & { readonly expression: string; readonly timeZone: string }) | undefined =>
          rows[0] === undefined
            ? undefined
            : {
                next: toNumber(rows[0].next_instant),
                generation: toNumber(rows[0].generation) ?? 0,
                expression: rows[0].expression,
                timeZone: rows[0].time_zone
              }
      )

    const moveCursor = (next: number | null) =>
      sql`UPDATE ${schedulesTable} SET next_instant = ${next} WHERE reference = ${reference}`

    const recordFired = (instant: number, now: number, runner: string, outcome: "ok" | "failed") =>
      Effect.map(
        sql<{ readonly instant: unknown }>`
          INSERT INTO ${firedTable} (reference, instant, fired_at, runner, outcome)
          VALUES (${reference}, ${instant}, ${now}, ${runner}, ${outcome})
          ON CONFLICT (reference, instant) DO NOTHING
          RETURNING instant`,
        (rows) => rows.length > 0
      )

    const prune = (instant: number) =>
      sql`DELETE FROM ${firedTable} WHERE reference = ${reference} AND instant < ${instant - HISTORY_MILLIS}`

    const send = (cursor: Cursor) =>
      cursor.next === null
        ? Effect.void
        : makeClient(iso(cursor.next))
            .fire(new FirePayload({ instant: cursor.next, generation: cursor.generation }), { discard: true })
            .pipe(
              Effect.tapErrorCause((cause) =>
                Effect.logWarning(`cron ${reference}: could not store the next instant, retrying`, cause)
              ),
              Effect.retry(retrySql)
            )

    const policiesOf = (row: ScheduleState.StateRow | undefined, definition: Definition<any, any>) =>
      row?.policies ?? storedPolicies(definition.policies)

    const turnHost: TurnHost = {
      local,
      stored: Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(Effect.orDie(state.get(reference)), (row) => ({
          overlap: row?.policies.overlap ?? slot.last.policies.overlap,
          runningElsewhere: row?.runningSince !== undefined && now - row.runningSince < RUNNING_STALE_MILLIS,
          buffered: row?.buffered
        }))
      ),
      buffer: (id) => Effect.orDie(Effect.asVoid(state.buffer(reference, id)))
    }

    /** Runs `body` as a run of the schedule: counted here and marked in storage while it goes. */
    const asRun = <A, E2, R2>(body: Effect.Effect<A, E2, R2>) =>
      Effect.gen(function* () {
        yield* Effect.orDie(Effect.flatMap(Clock.currentTimeMillis, (now) => state.running(reference, now)))
        return yield* body
      }).pipe(
        Effect.ensuring(
          Effect.suspend(() => {
            local.count--
            return local.count === 0 ? Effect.ignore(state.running(reference, null)) : Effect.void
          })
        )
      )

    /**
     * `execute`, each attempt in a transaction of its own inside the caller's (a savepoint: a failed attempt's SQL
     * is rolled back), retried under the retry policy. Succeeds with the exit and the number of attempts.
     */
    const attempt = (fire: Fire) =>
      Effect.gen(function* () {
        const { definition, context } = yield* current
        let attempts = 0
        const once = Effect.suspend(() => {
          if (attempts++ > 0) scheduleEvents("retry").unsafeUpdate(1, [])
          return sql.withTransaction(
            Effect.zipRight(
              countAttempt,
              Effect.scoped(definition.execute(fire)).pipe(Effect.provide(context)) as Effect.Effect<unknown, unknown>
            )
          )
        })
        const retry = definition.policies.retry
        const exit = yield* Effect.exit(retry === undefined ? once : Effect.retry(once, retry))
        return { exit, attempts, history: definition.policies.history }
      })

    /** Records a finished run, and counts failures in a row (pausing the schedule at the policy's limit). */
    const finish = (
      id: string,
      run: Run,
      exit: Exit.Exit<unknown, unknown>,
      policies: StoredPolicies,
      paused: boolean
    ) =>
      Effect.gen(function* () {
        const detail = Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : undefined
        yield* state.record(reference, id, detail === undefined ? run : { ...run, detail }, policies.history)
        if (Exit.isSuccess(exit)) return yield* state.succeeded(reference)
        const failures = yield* state.failed(reference)
        const limit = policies.pauseAfterFailures
        if (limit !== undefined && failures >= limit && !paused) {
          // Counted only when this paused it (an operator may have paused it meanwhile).
          const pausedNow = yield* state.pause(
            reference,
            `paused after ${failures} failed runs in a row; the last: ${detail}`,
            "tickwork",
            run.end ?? 0
          )
          if (pausedNow) scheduleEvents("paused_on_failure").unsafeUpdate(1, [])
        }
      })

    const fire = (payload: FirePayload) =>
      Effect.gen(function* () {
        const instant = payload.instant
        yield* current
        const turn = yield* awaitTurn(turnHost, `s:${instant}`)
        const body = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const runner = yield* runnerAddress
          return yield* sql
            .withTransaction(
              Effect.gen(function* () {
                const cursor = yield* lockCursor(now)
                if (cursor === undefined || cursor.next !== instant) return { cursor, ran: false }
                const row = yield* state.get(reference)
                const policies = policiesOf(row, slot.last)
                const cron = cronOf(cursor.expression, cursor.timeZone) ?? slot.last.cron
                const moveOn = (next: number | null) =>
                  Effect.as(moveCursor(next), { cursor: { next, generation: cursor.generation }, ran: true })
                if (row?.pause !== undefined) {
                  // Paused: the instant passes; the chain goes on so that resume needs nothing but the flag.
                  return yield* moveOn(Option.getOrNull(QuartzCron.next(cron, Math.max(instant, now))))
                }
                const decision = decideMisfire(cron, instant, now, policies.misfire, policies.graceMillis)
                if (decision.missed > 0) {
                  scheduleEvents("missed").unsafeUpdate(decision.missed, [])
                  const detail = missedDetail(instant, decision, policies)
                  yield* Effect.logWarning(`cron ${reference}: ${detail}`)
                  yield* state.record(
                    reference,
                    `x:${instant}`,
                    notRun(instant, "schedule", "missed", detail, now - instant),
                    policies.history
                  )
                }
                if (!decision.run) return yield* moveOn(decision.next)
                if (turn._tag === "skip") {
                  yield* state.record(
                    reference,
                    `s:${instant}`,
                    notRun(instant, "schedule", "skipped", turn.detail),
                    policies.history
                  )
                  return yield* moveOn(decision.next)
                }
                if (!(yield* recordFired(instant, now, runner, "ok"))) return { cursor, ran: false }
                const { exit, attempts } = yield* attempt({
                  reference,
                  instant: DateTime.unsafeMake(instant),
                  late: Duration.millis(Math.max(0, now - instant)),
                  misfired: decision.misfired,
                  trigger: "schedule"
                })
                const end = yield* Clock.currentTimeMillis
                if (Exit.isFailure(exit)) {
                  // Its SQL effects were rolled back (each attempt is a savepoint); the instant is recorded as failed.
                  yield* Effect.logWarning(`cron ${reference}: the run for ${iso(instant)} failed`, exit.cause)
                  yield* sql`UPDATE ${firedTable} SET outcome = 'failed' WHERE reference = ${reference} AND instant = ${instant}`
                }
                yield* finish(
                  `s:${instant}`,
                  ranRun(instant, "schedule", now, end, exit, attempts),
                  exit,
                  policies,
                  false
                )
                yield* prune(instant)
                return yield* moveOn(decision.next)
              })
            )
            .pipe(
              Effect.tapErrorCause((cause) =>
                Effect.logWarning(`cron ${reference}: storage failed while firing ${iso(instant)}, retrying`, cause)
              ),
              Effect.retry(retrySql)
            )
        })
        const outcome = turn._tag === "run" ? yield* asRun(body) : yield* body
        if (!outcome.ran) {
          yield* Effect.logDebug(`cron ${reference}: dropped a stale message for ${iso(instant)}`)
        }
        // The next instant's message; after a stale one, the cursor's (already stored unless a runner died).
        if (outcome.cursor !== undefined) yield* send(outcome.cursor)
      }).pipe(
        // Both retries are unbounded: a cron instant is never given up because storage is briefly unavailable.
        Effect.orDie,
        Effect.annotateLogs({ module: "ClusterScheduler", reference })
      )

    /** A triggered or backfilled run of each instant, in order, outside the grid. */
    const runOutside = (payload: RunPayload) =>
      Effect.gen(function* () {
        yield* current
        for (const instant of payload.instants) {
          const id = `${payload.trigger === "manual" ? "m" : "b"}:${payload.id}:${instant}`
          const turn = yield* awaitTurn(turnHost, id)
          const body = sql
            .withTransaction(
              Effect.gen(function* () {
                const now = yield* Clock.currentTimeMillis
                const exists = yield* lockCursor(now)
                // Removed meanwhile, or a redelivery of a run that committed: its SQL happened once already.
                if (exists === undefined || (yield* state.hasRun(reference, id))) return
                const row = yield* state.get(reference)
                const policies = policiesOf(row, slot.last)
                if (turn._tag === "skip") {
                  return yield* state.record(
                    reference,
                    id,
                    notRun(instant, payload.trigger, "skipped", turn.detail),
                    policies.history
                  )
                }
                const { exit, attempts } = yield* attempt({
                  reference,
                  instant: DateTime.unsafeMake(instant),
                  late: Duration.millis(Math.max(0, now - instant)),
                  misfired: false,
                  trigger: payload.trigger
                })
                if (Exit.isFailure(exit)) {
                  yield* Effect.logWarning(
                    `cron ${reference}: the ${payload.trigger} run for ${iso(instant)} failed`,
                    exit.cause
                  )
                }
                const end = yield* Clock.currentTimeMillis
                yield* finish(
                  id,
                  ranRun(instant, payload.trigger, now, end, exit, attempts),
                  exit,
                  policies,
                  row?.pause !== undefined
                )
              })
            )
            .pipe(
              Effect.tapErrorCause((cause) =>
                Effect.logWarning(`cron ${reference}: storage failed during a ${payload.trigger} run, retrying`, cause)
              ),
              Effect.retry(retrySql)
            )
          const spanned = traced ? cronInstantSpan(reference, instant, body) : body
          yield* turn._tag === "run" ? asRun(spanned) : spanned
        }
      }).pipe(Effect.orDie, Effect.annotateLogs({ module: "ClusterScheduler", reference }))

    yield* sharding.registerEntity(
      entity,
      Effect.succeed(
        entity.of({
          fire: (request) =>
            traced ? cronInstantSpan(reference, request.payload.instant, fire(request.payload)) : fire(request.payload),
          run: (request) => runOutside(request.payload)
        })
      ),
      { maxIdleTime: "5 seconds" }
    )

    const start = Effect.gen(function* () {
      const definition = slot.current?.definition ?? slot.last
      const cron = definition.cron
      const now = yield* Clock.currentTimeMillis
      const cursor = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const current = yield* lockCursor(now)
            const first = Option.getOrNull(QuartzCron.next(cron, now))
            const defined = yield* state.define(reference, storedPolicies(definition.policies), definedOf(definition))
            if (current === undefined) {
              yield* sql`
                INSERT INTO ${schedulesTable} (reference, expression, time_zone, next_instant, generation, updated_at)
                VALUES (${reference}, ${cron.expression}, ${definition.timeZone}, ${first}, 1, ${now})`
              return { next: first, generation: 1 }
            }
            const generation = current.generation + 1
            // What the code registers wins when it changed since the last registration (a deploy); otherwise the
            // stored expression holds (an operator's update survives restarts).
            const changed =
              defined.changed && (current.expression !== cron.expression || current.timeZone !== definition.timeZone)
            // A changed expression or zone starts over from now; otherwise the schedule resumes at its cursor.
            const next = changed ? first : current.next
            yield* sql`
              UPDATE ${schedulesTable}
              SET expression = ${changed ? cron.expression : current.expression},
                time_zone = ${changed ? definition.timeZone : current.timeZone}, next_instant = ${next},
                generation = ${generation}
              WHERE reference = ${reference}`
            return { next, generation }
          })
        )
        .pipe(
          Effect.tapErrorCause((cause) => Effect.logWarning(`cron ${reference}: could not start, retrying`, cause)),
          Effect.retry(retrySql)
        )
      yield* send(cursor)
    }).pipe(Effect.orDie, Effect.annotateLogs({ module: "ClusterScheduler", reference }))
    slot.start = start

    yield* sharding.registerSingleton(entityType(reference), start)
  })

export const history = (
  reference: string,
  limit: number
): Effect.Effect<ReadonlyArray<HistoryEntry>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const tables = yield* tableNames
    const rows = yield* sql<{
      readonly instant: unknown
      readonly fired_at: unknown
      readonly runner: string
      readonly outcome: string
    }>`
      SELECT instant, fired_at, runner, outcome FROM ${sql(tables.fired)}
      WHERE reference = ${reference} ORDER BY instant DESC LIMIT ${limit}`
    return rows
      .map(
        (row): HistoryEntry => ({
          instant: DateTime.unsafeMake(Number(row.instant)),
          firedAt: DateTime.unsafeMake(Number(row.fired_at)),
          runner: row.runner,
          outcome: row.outcome === "failed" ? "failed" : "ok"
        })
      )
      .reverse()
  })

export const nextInstant = (
  reference: string
): Effect.Effect<Option.Option<DateTime.Utc>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const tables = yield* tableNames
    const rows = yield* sql<{ readonly next_instant: unknown }>`
      SELECT next_instant FROM ${sql(tables.schedules)} WHERE reference = ${reference}`
    const next = toNumber(rows[0]?.next_instant)
    return next === null ? Option.none() : Option.some(DateTime.unsafeMake(next))
  })
