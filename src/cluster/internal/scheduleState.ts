/**
 * What an operator steers on a cluster schedule, in the runners' storage beside the schedule's own tables:
 *
 * - `<prefix>_tickwork_schedule_state`: one row per reference: the pause (note, by, at), the stored policies (JSON:
 *   misfire, grace, overlap, pauseAfterFailures, history), what the code last registered (`defined`, JSON: the
 *   expression, zone and policies; an operator's update holds until the code registers something else), the failures
 *   in a row, and a marker of a run in progress (`running_since`, for overlap across processes).
 * - `<prefix>_tickwork_schedule_runs`: one row per run, skip or miss (`Schedules.Run`), pruned to the newest
 *   `history` rows of the reference each time one is written.
 *
 * Portable SQL (SQLite and PostgreSQL); BIGINT columns come back as strings from PostgreSQL, so reads go through
 * `Number`.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Row } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { scheduleEvents } from "../../Metrics.js"
import type { Misfire, Overlap, Run, ScheduleInfo } from "../../Schedules.js"
import { ScheduleStorageError } from "../../TimerError.js"
import { createTables, Tables } from "./runner.js"

/** The policies kept in storage (a `retry` Schedule is code: it stays with the registration). */
export interface StoredPolicies {
  readonly misfire: Misfire
  readonly graceMillis: number
  readonly overlap: Overlap
  readonly pauseAfterFailures: number | undefined
  readonly history: number
  /** Whether the registration gave a retry schedule. */
  readonly retry: boolean
}

export interface StateRow {
  readonly reference: string
  readonly pause: { readonly note: string; readonly by: string; readonly at: number } | undefined
  readonly policies: StoredPolicies
  readonly defined: string
  readonly failuresInRow: number
  readonly runningSince: number | undefined
  readonly buffered: string | undefined
}

const num = (value: unknown): number | undefined => (value === null || value === undefined ? undefined : Number(value))

/** Infinity does not survive JSON: a grace or a runAll max without limit is stored as null. */
export const encodePolicies = (policies: StoredPolicies): string =>
  JSON.stringify(policies, (_key, value) => (value === Number.POSITIVE_INFINITY ? null : value))

export const decodePolicies = (json: string): StoredPolicies => {
  const raw = JSON.parse(json) as Record<string, any>
  const misfire: Misfire =
    raw.misfire?._tag === "RunAll"
      ? { _tag: "RunAll", max: raw.misfire.max ?? Number.POSITIVE_INFINITY }
      : raw.misfire?._tag === "SkipMissed"
        ? { _tag: "SkipMissed" }
        : { _tag: "RunOnce" }
  return {
    misfire,
    graceMillis: raw.graceMillis ?? Number.POSITIVE_INFINITY,
    overlap: raw.overlap ?? "bufferAll",
    pauseAfterFailures: raw.pauseAfterFailures ?? undefined,
    history: raw.history ?? 100,
    retry: raw.retry === true
  }
}

interface RawState {
  readonly reference: string
  readonly paused_note: string | null
  readonly paused_by: string | null
  readonly paused_at: unknown
  readonly policies: string
  readonly defined: string
  readonly failures_in_row: unknown
  readonly running_since: unknown
  readonly buffered: string | null
}

const toState = (raw: RawState): StateRow => ({
  reference: raw.reference,
  pause:
    raw.paused_note === null
      ? undefined
      : { note: raw.paused_note, by: raw.paused_by ?? "operator", at: num(raw.paused_at) ?? 0 },
  policies: decodePolicies(raw.policies),
  defined: raw.defined,
  failuresInRow: num(raw.failures_in_row) ?? 0,
  runningSince: num(raw.running_since),
  buffered: raw.buffered ?? undefined
})

interface RawRun {
  readonly instant: unknown
  readonly run_trigger: string
  readonly started: unknown
  readonly ended: unknown
  readonly outcome: string
  readonly lateness: unknown
  readonly attempts: unknown
  readonly detail: string | null
}

const toRun = (raw: RawRun): Run => {
  const detail = raw.detail ?? undefined
  const run: Run = {
    instant: Number(raw.instant),
    trigger: raw.run_trigger as Run["trigger"],
    start: num(raw.started),
    end: num(raw.ended),
    outcome: raw.outcome as Run["outcome"],
    lateness: num(raw.lateness),
    attempts: num(raw.attempts) ?? 0
  }
  return detail === undefined ? run : { ...run, detail }
}

/**
 * A statement written only where `guard` (SQL for a WHERE clause) holds; `sameSnapshot`: it runs in one statement with
 * others (PostgreSQL's data-modifying CTEs) and does not see their changes.
 */
export type Guarded = (guard: Statement.Fragment, sameSnapshot: boolean) => Statement.Statement<Row>

/** Runs `statements` one after the other, each where it always holds (SQLite, or statements outside one CTE). */
export const unguarded = (
  sql: SqlClient.SqlClient,
  statements: ReadonlyArray<Guarded>
): Effect.Effect<void, SqlError> =>
  Effect.forEach(statements, (statement) => statement(sql`1 = 1`, false), { discard: true })

/**
 * `condition` (a statement returning the rows it changed, e.g. a reminder's advance conditional on its generation)
 * and, only when it changed one, the `guarded` statements (e.g. the run of the occurrence): on PostgreSQL one
 * statement of data-modifying CTEs (each guarded statement gets `EXISTS (SELECT 1 FROM guard)` to put in its WHERE
 * clause, and `sameSnapshot` true: it does not see the others' changes), on SQLite one transaction. True when the
 * condition held. `"deferred"`: on PostgreSQL the commit does not wait for the WAL flush (`synchronous_commit` off
 * for that transaction, the caller's when there is one), for a write whose loss in a crash of the database only
 * repeats work (at least once).
 */
export const guardedWrite = (
  client: SqlClient.SqlClient,
  condition: Statement.Statement<Row>,
  guarded: ReadonlyArray<Guarded>,
  commit: "durable" | "deferred" = "durable"
): Effect.Effect<boolean, SqlError> => {
  const sql = client.withoutTransforms()
  return sql.onDialectOrElse({
    pg: () => {
      const guard = sql`EXISTS (SELECT 1 FROM guard)`
      const parts = [
        sql`guard AS (${condition})`,
        ...guarded.map((statement, i) => sql`${sql(`guarded_${i}`)} AS (${statement(guard, true)})`),
        ...(commit === "deferred" ? [sql`deferred AS (SELECT set_config('synchronous_commit', 'off', true) AS v)`] : [])
      ]
      const selected = commit === "deferred" ? sql`, (SELECT v FROM deferred) AS deferred` : sql``
      return Effect.map(
        sql<{
          readonly written: unknown
        }>`WITH ${sql.csv(parts)} SELECT (SELECT count(*) FROM guard) AS written${selected}`,
        (result) => Number(result[0]?.written ?? 0) > 0
      )
    },
    orElse: () => sql.withTransaction(guardedSequence(sql, condition, guarded))
  })
}

/**
 * `condition`, then, only when it changed a row, the `guarded` statements, one after the other (SQLite's form of
 * `guardedWrite`, to run inside a transaction). True when the condition held.
 */
export const guardedSequence = (
  sql: SqlClient.SqlClient,
  condition: Statement.Statement<Row>,
  guarded: ReadonlyArray<Guarded>
): Effect.Effect<boolean, SqlError> =>
  Effect.flatMap(condition, (rows) =>
    rows.length === 0 ? Effect.succeed(false) : Effect.as(unguarded(sql, guarded), true)
  )

export const tableNames = Effect.map(Tables, ({ prefix }) => ({
  state: `${prefix}_tickwork_schedule_state`,
  runs: `${prefix}_tickwork_schedule_runs`
}))

export const ensureStateTables = Effect.gen(function* () {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const tables = yield* tableNames
  yield* sql`
    CREATE TABLE IF NOT EXISTS ${sql(tables.state)} (
      reference VARCHAR(255) PRIMARY KEY,
      paused_note TEXT,
      paused_by TEXT,
      paused_at BIGINT,
      policies TEXT NOT NULL,
      defined TEXT NOT NULL,
      failures_in_row BIGINT NOT NULL,
      running_since BIGINT,
      buffered TEXT
    )`
  yield* sql`
    CREATE TABLE IF NOT EXISTS ${sql(tables.runs)} (
      reference VARCHAR(255) NOT NULL,
      id VARCHAR(100) NOT NULL,
      instant BIGINT NOT NULL,
      run_trigger VARCHAR(16) NOT NULL,
      started BIGINT,
      ended BIGINT,
      outcome VARCHAR(16) NOT NULL,
      lateness BIGINT,
      attempts BIGINT NOT NULL,
      detail TEXT,
      PRIMARY KEY (reference, id)
    )`
}).pipe(createTables)

/** The state and runs tables of the runner's prefix, with the operations on them. */
export const make = Effect.gen(function* () {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const tables = yield* tableNames
  const state = sql(tables.state)
  const runs = sql(tables.runs)
  const selectState = sql`
    SELECT reference, paused_note, paused_by, paused_at, policies, defined, failures_in_row, running_since, buffered
    FROM ${state}`
  /** `select`'s rows (as `q`) with the state of each one's `reference` beside them (as `s`). */
  const joinState = <A extends object>(select: Statement.Statement<A>, reference: Statement.Fragment) =>
    sql<A & { readonly [K in keyof RawState]: RawState[K] | null }>`SELECT q.*, s.reference, s.paused_note,
      s.paused_by, s.paused_at, s.policies, s.defined, s.failures_in_row, s.running_since, s.buffered
      FROM (${select}) q LEFT JOIN ${state} s ON s.reference = ${reference}`
  const stateOf = (row: { readonly reference: string | null }): StateRow | undefined =>
    row.reference === null ? undefined : toState(row as RawState)
  /** A reference's runs, the newest first: what a trim keeps the head of. */
  const newestFirst = (alias: string) =>
    sql`ORDER BY COALESCE(${sql(alias)}.ended, ${sql(alias)}.started, ${sql(alias)}.instant) DESC, ${sql(alias)}.instant DESC`
  /**
   * `record`'s statements, each written only where `guard` holds (SQL for a WHERE clause): the run's insert and the
   * trim to the newest `keep`. Run in one statement (`sameSnapshot`), the trim does not see the insert: it keeps
   * `keep - 1` besides it (one fewer when the run was recorded already, a redelivery).
   */
  const recordStatements = (reference: string, id: string, run: Run, keep: number): ReadonlyArray<Guarded> => [
    // CAST: PostgreSQL types a parameter in a SELECT list as text, which a BIGINT column does not take.
    (guard) => sql`
      INSERT INTO ${runs} (reference, id, instant, run_trigger, started, ended, outcome, lateness, attempts, detail)
      SELECT ${reference}, ${id}, CAST(${run.instant} AS BIGINT), ${run.trigger}, CAST(${run.start ?? null} AS BIGINT),
        CAST(${run.end ?? null} AS BIGINT), ${run.outcome}, CAST(${run.lateness ?? null} AS BIGINT),
        CAST(${run.attempts} AS BIGINT), ${run.detail ?? null}
      WHERE ${keep > 0 ? guard : sql`1 = 0`}
      ON CONFLICT (reference, id) DO NOTHING`,
    (guard, sameSnapshot) => sql`
      DELETE FROM ${runs} WHERE reference = ${reference} AND ${guard} AND id NOT IN (
        SELECT id FROM ${runs} v WHERE reference = ${reference}
        ${newestFirst("v")} LIMIT ${sameSnapshot ? Math.max(0, keep - 1) : keep})`
  ]
  return {
    /**
     * The row `select` returns (at most one) with the state of `reference` beside it, in one round trip; undefined
     * when `select` returns none. `select`'s columns must not be the state table's.
     */
    withState: <A extends object>(
      select: Statement.Statement<A>,
      reference: string
    ): Effect.Effect<{ readonly row: A; readonly state: StateRow | undefined } | undefined, SqlError> =>
      Effect.map(joinState(select, sql`${reference}`), (rows) => {
        const first = rows[0]
        return first === undefined ? undefined : { row: first, state: stateOf(first) }
      }),
    /**
     * `withState` for many rows in one round trip: each row of `select` with the state of the reference in its `ref`
     * column beside it. `select`'s columns must not be the state table's.
     */
    withStates: <A extends { readonly ref: string }>(
      select: Statement.Statement<A>
    ): Effect.Effect<ReadonlyArray<{ readonly row: A; readonly state: StateRow | undefined }>, SqlError> =>
      Effect.map(joinState(select, sql`q.ref`), (rows) => rows.map((row) => ({ row, state: stateOf(row) }))),
    get: (reference: string): Effect.Effect<StateRow | undefined, SqlError> =>
      Effect.map(sql<RawState>`${selectState} WHERE reference = ${reference}`, (rows) =>
        rows[0] === undefined ? undefined : toState(rows[0])
      ),
    all: Effect.map(sql<RawState>`${selectState}`, (rows) => rows.map(toState)),
    /** Creates the row for a registration, or, when the code registers something new, takes its policies. */
    define: (reference: string, policies: StoredPolicies, defined: string) =>
      Effect.gen(function* () {
        const current = yield* Effect.map(sql<RawState>`${selectState} WHERE reference = ${reference}`, (rows) =>
          rows[0] === undefined ? undefined : toState(rows[0])
        )
        if (current === undefined) {
          yield* sql`
            INSERT INTO ${state} (reference, policies, defined, failures_in_row)
            VALUES (${reference}, ${encodePolicies(policies)}, ${defined}, 0)
            ON CONFLICT (reference) DO NOTHING`
          return { changed: true }
        }
        if (current.defined === defined) return { changed: false }
        yield* sql`
          UPDATE ${state} SET policies = ${encodePolicies(policies)}, defined = ${defined}
          WHERE reference = ${reference}`
        return { changed: true }
      }),
    setPolicies: (reference: string, policies: StoredPolicies) =>
      sql`UPDATE ${state} SET policies = ${encodePolicies(policies)} WHERE reference = ${reference}`,
    /** Pauses the schedule unless it is paused already: true when this paused it. */
    pause: (reference: string, note: string, by: string, at: number): Effect.Effect<boolean, SqlError> =>
      Effect.map(
        sql<{ readonly reference: string }>`UPDATE ${state} SET paused_note = ${note}, paused_by = ${by},
          paused_at = ${at}
          WHERE reference = ${reference} AND paused_note IS NULL RETURNING reference`,
        (rows) => rows.length > 0
      ),
    resume: (reference: string) =>
      sql`UPDATE ${state} SET paused_note = NULL, paused_by = NULL, paused_at = NULL, failures_in_row = 0
        WHERE reference = ${reference}`,
    failed: (reference: string) =>
      Effect.map(
        sql<{ readonly failures_in_row: unknown }>`
          UPDATE ${state} SET failures_in_row = failures_in_row + 1 WHERE reference = ${reference}
          RETURNING failures_in_row`,
        (rows) => num(rows[0]?.failures_in_row) ?? 0
      ),
    succeeded: (reference: string) =>
      sql`UPDATE ${state} SET failures_in_row = 0 WHERE reference = ${reference} AND failures_in_row <> 0`,
    running: (reference: string, since: number | null) =>
      sql`UPDATE ${state} SET running_since = ${since} WHERE reference = ${reference}`,
    buffer: (reference: string, id: string | null) =>
      sql`UPDATE ${state} SET buffered = ${id} WHERE reference = ${reference}`,
    remove: (reference: string) =>
      Effect.zipRight(
        sql`DELETE FROM ${state} WHERE reference = ${reference}`,
        sql`DELETE FROM ${runs} WHERE reference = ${reference}`
      ),
    /** Records a run (once per id) and keeps the newest `keep` of the reference. */
    record: (reference: string, id: string, run: Run, keep: number) =>
      unguarded(sql, recordStatements(reference, id, run, keep)),
    recordStatements,
    /**
     * `record` as the two parts of one PostgreSQL statement (data-modifying CTEs): its prune does not see the row
     * inserted beside it, which is the newest, so it keeps `keep - 1` of the others.
     */
    recordParts: (reference: string, id: string, run: Run, keep: number) => {
      const [insert, prune] = recordStatements(reference, id, run, keep).map((statement) => statement(sql`1 = 1`, true))
      return { insert: insert!, prune: prune! }
    },
    /**
     * PostgreSQL: `recordStatements` for many runs in one statement, as data-modifying CTEs over the CTE `input`
     * (columns `i`, `reference`, `id`, `instant`, `run_trigger`, `started`, `ended`, `outcome`, `lateness`, `attempts`,
     * `detail`, `keep`; `reference` null for no run), for the inputs in the CTE `done (i)` only. In one statement the
     * trim does not see the insert: it keeps `keep - 1` besides it. One reference twice in a batch is not expected.
     */
    recordManyParts: (input: string, done: string): ReadonlyArray<Statement.Fragment> => {
      const recorded = sql`${sql(input)} x JOIN ${sql(done)} d ON d.i = x.i`
      return [
        sql`recorded AS (
          INSERT INTO ${runs} (reference, id, instant, run_trigger, started, ended, outcome, lateness, attempts, detail)
          SELECT x.reference, x.id, x.instant, x.run_trigger, x.started, x.ended, x.outcome, x.lateness, x.attempts,
            x.detail
          FROM ${recorded} WHERE x.reference IS NOT NULL AND x.keep > 0
          ON CONFLICT (reference, id) DO NOTHING)`,
        sql`trimmed AS (
          DELETE FROM ${runs} u USING ${recorded}
          WHERE x.reference IS NOT NULL AND u.reference = x.reference AND u.id NOT IN (
            SELECT v.id FROM ${runs} v WHERE v.reference = x.reference ${newestFirst("v")}
            LIMIT GREATEST(x.keep - 1, 0)))`
      ]
    },
    /** Whether the run `id` is recorded (a redelivered trigger or backfill that committed already). */
    hasRun: (reference: string, id: string): Effect.Effect<boolean, SqlError> =>
      Effect.map(
        sql<{ readonly id: string }>`SELECT id FROM ${runs} WHERE reference = ${reference} AND id = ${id}`,
        (rows) => rows.length > 0
      ),
    history: (reference: string): Effect.Effect<ReadonlyArray<Run>, SqlError> =>
      Effect.map(
        sql<RawRun>`
          SELECT instant, run_trigger, started, ended, outcome, lateness, attempts, detail FROM ${runs}
          WHERE reference = ${reference} ORDER BY COALESCE(ended, started, instant), instant`,
        (rows) => rows.map(toRun)
      ),
    lastRun: (reference: string): Effect.Effect<Run | undefined, SqlError> =>
      Effect.map(
        sql<RawRun>`
          SELECT instant, run_trigger, started, ended, outcome, lateness, attempts, detail FROM ${runs} v
          WHERE reference = ${reference} ${newestFirst("v")} LIMIT 1`,
        (rows) => (rows[0] === undefined ? undefined : toRun(rows[0]))
      )
  }
})

export type ScheduleState = Effect.Effect.Success<typeof make>

/**
 * A source's `pause` and `resume`: nothing when the schedule is in that state already; otherwise `change` (given the
 * time) is stored, the event counted, and the schedule answered as it is after.
 */
export const changeState = <E, E2>(
  to: "paused" | "active",
  info: Effect.Effect<ScheduleInfo, E>,
  change: (now: number) => Effect.Effect<void, E2>
): Effect.Effect<ScheduleInfo, E | E2> =>
  Effect.gen(function* () {
    const before = yield* info
    if (before.state === to) return before
    yield* change(yield* Clock.currentTimeMillis)
    scheduleEvents(to === "paused" ? "paused" : "resumed").unsafeUpdate(1, [])
    return yield* info
  })

/** A storage failure of a source's `operation` as the typed error `Schedules` answers with. */
export const storageError = (operation: string, reference: string | undefined) => (cause: unknown) =>
  new ScheduleStorageError({
    operation,
    reference,
    reason: cause instanceof Error ? cause.message : String(cause)
  })

/** `effect` of a source's `operation` with its storage failures (a `SqlError`) as `ScheduleStorageError`. */
export const stored =
  (operation: string) =>
  <A, E, R>(reference: string | undefined, effect: Effect.Effect<A, E, R>) =>
    Effect.catchIf(
      effect,
      (error): error is Extract<E, { readonly _tag: "SqlError" }> =>
        (error as { readonly _tag?: string })?._tag === "SqlError",
      (error) => Effect.fail(storageError(operation, reference)(error))
    )
