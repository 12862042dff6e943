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
 * generation, delivered `READ_AHEAD_MILLIS` before the instant (the handler waits for it). Sending the same (instant,
 * generation) twice stores it once.
 *
 * The handler of instant `i`, in one SQL transaction: lock the schedule row (reading its state row in the same
 * statement); if `i` is not its cursor, the message is stale (a redelivery after a crash, a second chain after a
 * singleton restart, an old expression): drop it and re-send the cursor's message (a no-op if it exists). Otherwise
 * record `i`, run `execute` inside the same transaction, move the cursor to the next instant, write the next
 * instant's message when its shard is this runner's (`cronMessages.ts`), commit, then send the next instant's message
 * when it was not written. A runner that dies anywhere in there leaves either no trace (rollback: the message is
 * redelivered and runs again) or a moved cursor (the redelivered message is stale, and re-sends the next one). So an instant's transactional effects
 * happen exactly once; effects outside the transaction at least once.
 *
 * docs/design-choices.md ("An instant is one transaction of few statements") says how the statements of an instant
 * were cut, and which overlap policies take a turn before it.
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
import type { Overlap, Run } from "../../Schedules.js"
import * as CronMessages from "./cronMessages.js"
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
import { decodePolicies, encodePolicies, ensureStateTables, type StoredPolicies } from "./scheduleState.js"
import { countAttempt, cronInstantSpan, runnerAddress } from "./spans.js"

/**
 * How long before its instant an instant's message is delivered (its `deliver_at`): the read, the delivery and the
 * entity's start happen before the instant, and the handler waits for the instant itself (`untilInstant`), so that
 * `execute` starts at the instant rather than after the read loop's work. docs/design-choices.md ("A cron instant's
 * message comes early").
 */
export const READ_AHEAD_MILLIS = 250

/** When the message of `instant` is delivered: `READ_AHEAD_MILLIS` before it. */
export const deliverAtOf = (instant: number): number => instant - READ_AHEAD_MILLIS

export class FirePayload extends Schema.Class<FirePayload>("tickwork/ClusterScheduler/Fire")({
  instant: Schema.Number,
  generation: Schema.Number
}) {
  [PrimaryKey.symbol](): string {
    return String(this.generation)
  }
  [DeliverAt.symbol](): DateTime.DateTime {
    return DateTime.unsafeMake(deliverAtOf(this.instant))
  }
}

/** Per clock and instant: the gate the fibers waiting for that instant share (`untilInstant`). */
const gates = new WeakMap<Clock.Clock, Map<number, Effect.Latch>>()

/**
 * Waits until `instant` by the runner's clock (a message read ahead of it); at once when it is due. The waits for
 * one instant share one sleep, so that they resume together (ten schedules due at once run their `execute`s first,
 * then their writes: see `instantTransaction`), not one timer callback after the other. Interruptible: nothing of the
 * instant has happened yet (a transaction begun ahead is rolled back), and its message stays to be delivered again.
 */
export const untilInstant = (instant: number): Effect.Effect<void> =>
  Effect.clockWith((clock) =>
    Effect.flatMap(clock.currentTimeMillis, (now) => {
      if (now >= instant) return Effect.void
      let byInstant = gates.get(clock)
      if (byInstant === undefined) gates.set(clock, (byInstant = new Map()))
      const open = byInstant.get(instant)
      // After the gate opens, the clock is read again (an opener interrupted opens it early).
      if (open !== undefined) return Effect.zipRight(Effect.interruptible(open.await), untilInstant(instant))
      const gate = Effect.unsafeMakeLatch(false)
      const waits = byInstant
      waits.set(instant, gate)
      return Effect.interruptible(Effect.sleep(instant - now)).pipe(
        Effect.ensuring(
          Effect.suspend(() => {
            if (waits.get(instant) === gate) waits.delete(instant)
            return gate.open
          })
        ),
        Effect.zipRight(untilInstant(instant))
      )
    })
  )

/**
 * On PostgreSQL an instant's transaction begins `CLAIM_AHEAD_MILLIS` before the instant: its BEGIN and the lock of the
 * schedule's row (with the fired row) are behind it when it comes, and `execute` starts at the instant. Each holds a
 * pooled connection until it commits, so at most `CLAIMS_AHEAD` do at once per client; the others begin at the
 * instant, as on SQLite (whose one connection a transaction would hold for everyone).
 */
export const CLAIM_AHEAD_MILLIS = 50
export const CLAIMS_AHEAD = 8

/** Per SQL client: the instant transactions begun ahead of their instant and not ended. */
const claimsAhead = new WeakMap<object, { count: number }>()

/**
 * Runs `transaction` (an instant's, which waits for the instant after its claim) now when `sql` is given and fewer
 * than `CLAIMS_AHEAD` of its transactions are begun ahead; otherwise at the instant.
 */
export const claimAhead = <A, E, R>(
  sql: object | undefined,
  instant: number,
  transaction: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const atInstant = Effect.zipRight(untilInstant(instant), transaction)
    if (sql === undefined) return atInstant
    const held = claimsAhead.get(sql) ?? { count: 0 }
    claimsAhead.set(sql, held)
    if (held.count >= CLAIMS_AHEAD) return atInstant
    held.count++
    return Effect.ensuring(
      transaction,
      Effect.sync(() => {
        held.count--
      })
    )
  })

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

/**
 * Fired instants are kept this long, deleted at most once an hour (`PRUNE_FIRED_EVERY_MILLIS`); they are an audit
 * trail: the cursor alone guarantees once per instant.
 */
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

/** What an instant's transaction reads in the statement that locks its schedule (`claimCursor`). */
interface Claimed extends Cursor {
  readonly expression: string
  readonly timeZone: string
  readonly paused: boolean
  /** The stored policies; undefined when the schedule has no state row. */
  readonly policies: StoredPolicies | undefined
  readonly failuresInRow: number
  readonly runningSince: number | undefined
}

interface ClaimRow {
  readonly next_instant: unknown
  readonly generation: unknown
  readonly expression: string
  readonly time_zone: string
  readonly paused_note: string | null
  readonly policies: string | null
  readonly failures_in_row: unknown
  readonly running_since: unknown
}

const toClaimed = (rows: ReadonlyArray<ClaimRow>): Claimed | undefined => {
  const row = rows[0]
  if (row === undefined) return undefined
  return {
    next: toNumber(row.next_instant),
    generation: toNumber(row.generation) ?? 0,
    expression: row.expression,
    timeZone: row.time_zone,
    paused: row.paused_note !== null && row.paused_note !== undefined,
    policies: row.policies === null || row.policies === undefined ? undefined : decodePolicies(row.policies),
    failuresInRow: toNumber(row.failures_in_row) ?? 0,
    runningSince: toNumber(row.running_since) ?? undefined
  }
}

/** An instant handled: its schedule's cursor after it, whether it ran, whether the next message was written with it. */
interface Done {
  readonly _tag: "done"
  readonly cursor: Cursor | undefined
  readonly ran: boolean
  readonly written: boolean
}

const done = (cursor: Cursor | undefined, ran: boolean, written: boolean): Done => ({
  _tag: "done",
  cursor,
  ran,
  written
})

/** `execute` failed in the instant's transaction without a savepoint: the transaction is rolled back, then recorded. */
class ExecuteFailed {
  readonly _tag = "ExecuteFailed"
  constructor(
    readonly exit: Exit.Failure<unknown, unknown>,
    /** When the run started. */
    readonly start: number,
    /** The cursor's next instant, as the run would have moved it. */
    readonly next: number | null
  ) {}
}

/**
 * Whether a run under `overlap` must take a turn (`awaitTurn`) rather than run at once under the schedule's lock:
 * `skip` and `bufferOne` need their marker written before the run, `bufferAll` waits while another process marks a
 * run; `allowAll` never waits.
 */
const needsTurn = (overlap: Overlap, runningSince: number | undefined, now: number): boolean =>
  overlap === "skip" ||
  overlap === "bufferOne" ||
  (overlap === "bufferAll" && runningSince !== undefined && now - runningSince < RUNNING_STALE_MILLIS)

/** How often a schedule's fired instants older than `HISTORY_MILLIS` are deleted (per runner). */
const PRUNE_FIRED_EVERY_MILLIS = 60 * 60 * 1000

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
    const stateTable = sql((yield* ScheduleState.tableNames).state)
    const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    const writer = yield* CronMessages.make(sharding, storage, entity as unknown as CronMessages.FireEntity)
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

    /**
     * Locks the schedule row, as `lockCursor`, and reads in the same statement what an instant needs of the schedule's
     * state row (undefined fields when it has none).
     */
    const claimStatement = (now: number) =>
      sql<ClaimRow>`
          UPDATE ${schedulesTable} SET updated_at = ${now} WHERE reference = ${reference}
          RETURNING next_instant, generation, expression, time_zone,
            (SELECT paused_note FROM ${stateTable} WHERE reference = ${reference}) AS paused_note,
            (SELECT policies FROM ${stateTable} WHERE reference = ${reference}) AS policies,
            (SELECT failures_in_row FROM ${stateTable} WHERE reference = ${reference}) AS failures_in_row,
            (SELECT running_since FROM ${stateTable} WHERE reference = ${reference}) AS running_since`
    const claimCursor = (now: number) => Effect.map(claimStatement(now), toClaimed)

    /**
     * Moves the cursor to `next` and, when the shard of its message is this runner's, writes that message in the same
     * transaction.
     */
    const moveCursorAndWrite = (next: number | null, generation: number) =>
      Effect.gen(function* () {
        yield* moveCursor(next)
        const message = yield* nextMessage(next, generation)
        if (message !== undefined) yield* message
        return done({ next, generation }, true, message !== undefined)
      })

    /** The statement that writes the message of instant `next`, when it goes to this runner's shards (`cronMessages`). */
    const nextMessage = (next: number | null, generation: number) =>
      next === null || writer === undefined
        ? Effect.succeed(undefined)
        : writer.statement(iso(next), new FirePayload({ instant: next, generation }))

    /**
     * PostgreSQL: the lock (`claimCursor`) and the instant's fired row in one statement, the row inserted when the
     * cursor is the instant and the schedule is not paused (`firedNew`: whether it was; the caller deletes it again
     * with `unfire` when the instant does not run after all; fired at the instant when claimed ahead of it). SQLite:
     * `claimCursor`, the row left to `recordFired`.
     */
    const claim = (now: number, instant: number, runner: string) =>
      isPg
        ? Effect.map(
            sql<ClaimRow & { readonly fired: unknown }>`
              WITH c AS (${claimStatement(now)}), f AS (
                INSERT INTO ${firedTable} (reference, instant, fired_at, runner, outcome)
                SELECT ${reference}, ${instant}, ${Math.max(now, instant)}, ${runner}, 'ok' FROM c
                WHERE c.next_instant = ${instant} AND c.paused_note IS NULL
                ON CONFLICT (reference, instant) DO NOTHING
                RETURNING instant
              )
              SELECT c.*, (SELECT count(*) FROM f) AS fired FROM c`,
            (rows) => {
              const claimed = toClaimed(rows)
              return claimed === undefined ? undefined : { ...claimed, firedNew: Number(rows[0]!.fired) > 0 }
            }
          )
        : Effect.map(claimCursor(now), (claimed) =>
            claimed === undefined ? undefined : { ...claimed, firedNew: undefined as boolean | undefined }
          )

    /** Deletes the fired row `claim` inserted for an instant that does not run after all. */
    const unfire = (instant: number, firedNew: boolean | undefined) =>
      firedNew === true
        ? Effect.asVoid(sql`DELETE FROM ${firedTable} WHERE reference = ${reference} AND instant = ${instant}`)
        : Effect.void

    /** Fired instants older than a day go, at most once an hour per schedule and runner. */
    let prunedAt = Number.NEGATIVE_INFINITY
    const pruneFired = (instant: number) =>
      Effect.suspend(() => {
        if (instant - prunedAt < PRUNE_FIRED_EVERY_MILLIS && instant >= prunedAt) return Effect.void
        prunedAt = instant
        return prune(instant)
      })

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

    /** One run of `execute` with the services it was registered with. */
    const runExecute = (definition: Definition<any, any>, context: Context.Context<any>, fire: Fire) =>
      Effect.zipRight(
        countAttempt(Duration.toMillis(fire.late)),
        Effect.scoped(definition.execute(fire)).pipe(Effect.provide(context)) as Effect.Effect<unknown, unknown>
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
          return sql.withTransaction(runExecute(definition, context, fire))
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
      paused: boolean,
      failuresInRow?: number
    ) =>
      Effect.gen(function* () {
        const detail = Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : undefined
        yield* state.record(reference, id, detail === undefined ? run : { ...run, detail }, policies.history)
        // The count is known when the caller read it under the schedule's lock: nothing to reset when it is 0.
        if (Exit.isSuccess(exit)) return failuresInRow === 0 ? undefined : yield* state.succeeded(reference)
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

    /**
     * The handling of instant `instant` in one transaction. With `turn` undefined (the fast path: nothing of the
     * schedule runs in this process), the overlap policy is read in the transaction: `bufferAll` and `allowAll` need
     * no turn (the cursor's row lock already runs the instant after any other run of the schedule, and no marker is
     * written for it), while `skip`, `bufferOne` or a run marked by another process answer "needsTurn" before
     * anything is written, for the caller to take a turn (`awaitTurn`, which marks the run) and come back with it.
     * The next instant's message is written in the same transaction when its shard is this runner's (`written`).
     */
    const instantTransaction = (
      instant: number,
      turn: { readonly _tag: "run" } | { readonly _tag: "skip"; readonly detail: string } | undefined
    ) =>
      Effect.gen(function* () {
        const runner = yield* runnerAddress
        return yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const claimedAt = yield* Clock.currentTimeMillis
              const claimed = yield* claim(claimedAt, instant, runner)
              if (claimed === undefined || claimed.next !== instant) return done(claimed, false, false)
              // Claimed ahead of the instant (`claimAhead`): the transaction holds the schedule's row until it.
              yield* untilInstant(instant)
              const now = yield* Clock.currentTimeMillis
              const policies = claimed.policies ?? storedPolicies(slot.last.policies)
              const cron = cronOf(claimed.expression, claimed.timeZone) ?? slot.last.cron
              const moveOn = (next: number | null) => moveCursorAndWrite(next, claimed.generation)
              if (claimed.paused) {
                // Paused: the instant passes; the chain goes on so that resume needs nothing but the flag.
                return yield* moveOn(Option.getOrNull(QuartzCron.next(cron, Math.max(instant, now))))
              }
              const decision = decideMisfire(cron, instant, now, policies.misfire, policies.graceMillis)
              if (decision.run && turn === undefined && needsTurn(policies.overlap, claimed.runningSince, now)) {
                // Remembered, so that the next instants of a `skip` or `bufferOne` schedule take their turn at once.
                local.overlap = policies.overlap
                yield* unfire(instant, claimed.firedNew)
                return { _tag: "needsTurn" } as const
              }
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
              if (!decision.run) return yield* Effect.zipRight(unfire(instant, claimed.firedNew), moveOn(decision.next))
              if (turn?._tag === "skip") {
                yield* unfire(instant, claimed.firedNew)
                yield* state.record(
                  reference,
                  `s:${instant}`,
                  notRun(instant, "schedule", "skipped", turn.detail),
                  policies.history
                )
                return yield* moveOn(decision.next)
              }
              if (!(claimed.firedNew ?? (yield* recordFired(instant, now, runner, "ok")))) {
                return done(claimed, false, false)
              }
              const fire: Fire = {
                reference,
                instant: DateTime.unsafeMake(instant),
                late: Duration.millis(Math.max(0, now - instant)),
                misfired: decision.misfired,
                trigger: "schedule"
              }
              const { definition, context } = yield* current
              let exit: Exit.Exit<unknown, unknown> = Exit.void
              let attempts = 1
              if (definition.policies.retry !== undefined || decision.missed > 0) {
                ;({ exit, attempts } = yield* attempt(fire))
              } else {
                // In the instant's own transaction, no savepoint: a failure rolls it all back (the miss recorded
                // above would go with it, hence the savepoint then), and `recordFailure` records it.
                const ran = yield* Effect.exit(runExecute(definition, context, fire))
                if (Exit.isFailure(ran)) return yield* Effect.fail(new ExecuteFailed(ran, now, decision.next))
                // Instants due together resume together (`untilInstant`): their `execute`s go before their writes.
                yield* Effect.yieldNow()
              }
              if (Exit.isFailure(exit)) {
                // Its SQL effects were rolled back (each attempt is a savepoint); the instant is recorded as failed.
                yield* Effect.logWarning(`cron ${reference}: the run for ${iso(instant)} failed`, exit.cause)
                yield* sql`UPDATE ${firedTable} SET outcome = 'failed' WHERE reference = ${reference} AND instant = ${instant}`
              }
              const end = yield* Clock.currentTimeMillis
              const run = ranRun(instant, "schedule", now, end, exit, attempts)
              if (isPg && Exit.isSuccess(exit)) {
                // One statement for the run's record, the cursor's move and the next instant's message.
                const next = decision.next
                const message = yield* nextMessage(next, claimed.generation)
                const record = state.recordParts(reference, `s:${instant}`, run, policies.history)
                const move = sql`UPDATE ${schedulesTable} SET next_instant = ${next} WHERE reference = ${reference}`
                yield* message === undefined
                  ? sql`WITH r AS (${record.insert}), p AS (${record.prune}), m AS (${move}) SELECT 1`
                  : sql`WITH r AS (${record.insert}), p AS (${record.prune}), m AS (${move}), n AS (${message}) SELECT 1`
                if (claimed.failuresInRow !== 0) yield* state.succeeded(reference)
                yield* pruneFired(instant)
                return done({ next, generation: claimed.generation }, true, message !== undefined)
              }
              yield* finish(`s:${instant}`, run, exit, policies, false, claimed.failuresInRow)
              yield* pruneFired(instant)
              return yield* moveOn(decision.next)
            })
          )
          .pipe(
            Effect.catchTag("ExecuteFailed", (failed) => recordFailure(instant, runner, failed)),
            Effect.tapErrorCause((cause) =>
              Effect.logWarning(`cron ${reference}: storage failed while firing ${iso(instant)}, retrying`, cause)
            ),
            Effect.retry(retrySql)
          )
      })

    /**
     * A failed `execute` run without a savepoint: its transaction was rolled back whole; this records the instant as
     * failed and moves the cursor on, in a transaction of its own, unless the instant was handled meanwhile.
     */
    const recordFailure = (instant: number, runner: string, failed: ExecuteFailed) =>
      Effect.gen(function* () {
        yield* Effect.logWarning(`cron ${reference}: the run for ${iso(instant)} failed`, failed.exit.cause)
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const end = yield* Clock.currentTimeMillis
            const claimed = yield* claimCursor(end)
            if (claimed === undefined || claimed.next !== instant) return done(claimed, false, false)
            if (!(yield* recordFired(instant, failed.start, runner, "failed"))) return done(claimed, false, false)
            const policies = claimed.policies ?? storedPolicies(slot.last.policies)
            yield* finish(
              `s:${instant}`,
              ranRun(instant, "schedule", failed.start, end, failed.exit, 1),
              failed.exit,
              policies,
              claimed.paused,
              claimed.failuresInRow
            )
            yield* pruneFired(instant)
            return yield* moveCursorAndWrite(failed.next, claimed.generation)
          })
        )
      })

    const fire = (payload: FirePayload) =>
      Effect.gen(function* () {
        const instant = payload.instant
        yield* current
        // Nothing of the schedule runs here and its last known policy needs no marker: no turn is taken up front.
        const fast =
          local.count === 0 && local.overlap !== "skip" && local.overlap !== "bufferOne"
            ? yield* claimAhead(isPg ? storage : undefined, instant, instantTransaction(instant, undefined))
            : undefined
        let outcome: Done
        if (fast !== undefined && fast._tag === "done") {
          outcome = fast
        } else {
          yield* untilInstant(instant)
          const turn = yield* awaitTurn(turnHost, `s:${instant}`)
          const body = Effect.flatMap(instantTransaction(instant, turn), (result) =>
            // With a turn taken, the transaction never asks for one.
            result._tag === "done" ? Effect.succeed(result) : Effect.dieMessage("cron: a turn was asked for twice")
          )
          outcome = turn._tag === "run" ? yield* asRun(body) : yield* body
        }
        if (!outcome.ran) {
          yield* Effect.logDebug(`cron ${reference}: dropped a stale message for ${iso(instant)}`)
        }
        // The next instant's message: written with the transaction (then this runner's read loop is told), or sent;
        // after a stale one, the cursor's (already stored unless a runner died).
        if (outcome.written) yield* writer!.wake(deliverAtOf(outcome.cursor!.next!))
        else if (outcome.cursor !== undefined) yield* send(outcome.cursor)
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
          // A message comes `READ_AHEAD_MILLIS` early: the instant's span and work start `CLAIM_AHEAD_MILLIS` before
          // it, and `claimAhead` decides whether its transaction begins then (PostgreSQL) or at the instant.
          fire: (request) =>
            Effect.zipRight(
              untilInstant(request.payload.instant - CLAIM_AHEAD_MILLIS),
              traced
                ? cronInstantSpan(reference, request.payload.instant, fire(request.payload))
                : fire(request.payload)
            ),
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
