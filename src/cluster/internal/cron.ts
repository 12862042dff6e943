/**
 * Cluster-wide Quartz cron: a singleton per schedule plus one persisted message per cron instant, as in
 * @effect/cluster's ClusterCron, with a cursor row per schedule that makes "exactly once" hold across fail-over.
 *
 * State, in the runners' SQL storage:
 * - `<prefix>_tickwork_cron`: one row per reference: the expression and zone, the one instant the schedule waits
 *   for (`next_instant`, the cursor) and a `generation` bumped at each singleton start.
 * - `<prefix>_tickwork_cron_fired`: one row per fired instant, `PRIMARY KEY (reference, instant)`, with the outcome.
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
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as PrimaryKey from "effect/PrimaryKey"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import { recordsSpans } from "../../internal/tracing.js"
import * as QuartzCron from "../../QuartzCron.js"
import { createTables, Tables } from "./runner.js"
import { countAttempt, cronInstantSpan } from "./spans.js"

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

export const entityType = (reference: string): string => `tickwork/ClusterScheduler/${reference}`

export const makeEntity = (reference: string) =>
  Entity.make(entityType(reference), [
    Rpc.make("fire", { payload: FirePayload }).annotate(Persisted, true).annotate(Uninterruptible, true)
  ]).annotate(ClientTracingEnabled, false)

/** What a schedule's `execute` is told about the instant it runs for. */
export interface Fire {
  readonly reference: string
  readonly instant: DateTime.Utc
  /** How long after the instant it started. */
  readonly late: Duration.Duration
  /** True for the one run of an instant later than the misfire threshold (the cluster was down). */
  readonly misfired: boolean
}

export interface Definition<E, R> {
  readonly reference: string
  readonly cron: QuartzCron.QuartzCron
  readonly timeZone: string
  readonly misfireThresholdMillis: number
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

const tableNames = Effect.map(Tables, ({ prefix }) => ({
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
}).pipe(createTables)

/** The instants in (after, until], counted up to `cap`. */
const countBetween = (cron: QuartzCron.QuartzCron, after: number, until: number, cap: number): number => {
  let count = 0
  for (const instant of QuartzCron.iterate(cron, after)) {
    if (instant > until || count >= cap) break
    count++
  }
  return count
}

class ExecuteFailed extends Data.TaggedError("ExecuteFailed")<{ readonly cause: Cause.Cause<unknown> }> {}

interface Cursor {
  readonly next: number | null
  readonly generation: number
}

const iso = (millis: number) => DateTime.formatIso(DateTime.unsafeMake(millis))

export const register = <E, R>(
  definition: Definition<E, R>
): Effect.Effect<void, never, Sharding.Sharding | SqlClient.SqlClient | Scope.Scope | R> =>
  Effect.gen(function* () {
    const sharding = yield* Sharding.Sharding
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const tables = yield* tableNames
    // The services `execute` was registered with, without the registering code's span: an instant is no part of
    // that trace (docs/design-choices.md, "Ticks carry no diagnostic context").
    const context = Context.omit(Tracer.ParentSpan)(yield* Effect.context<R>())
    const { reference, cron } = definition
    const entity = makeEntity(reference)
    const makeClient = yield* sharding.makeClient(entity)
    const schedulesTable = sql(tables.schedules)
    const firedTable = sql(tables.fired)

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

    const record = (instant: number, now: number, runner: string, outcome: "ok" | "failed") =>
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

    /** The instant after `instant`, handled at `now`: the grid after it, or after now past the misfire threshold. */
    const nextAfter = (instant: number, now: number): Effect.Effect<number | null> =>
      Effect.suspend(() => {
        if (now - instant <= definition.misfireThresholdMillis) {
          return Effect.succeed(Option.getOrNull(QuartzCron.next(cron, instant)))
        }
        const skipped = countBetween(cron, instant, now, 10_000)
        const next = Option.getOrNull(QuartzCron.next(cron, now))
        return skipped === 0
          ? Effect.succeed(next)
          : Effect.as(
              Effect.logWarning(
                `cron ${reference}: ${skipped >= 10_000 ? "10000 or more" : skipped} instants after ${iso(instant)} ` +
                  `were missed while no runner served the schedule; ${iso(instant)} ran once, the grid resumes ` +
                  (next === null ? "never (the expression has no more instants)" : `at ${iso(next)}`)
              ),
              next
            )
      })

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

    /** `execute` with the services it was registered with, in the transaction of the caller's fiber. */
    const run = (fire: Fire) =>
      Effect.zipRight(
        countAttempt,
        Effect.scoped(definition.execute(fire)).pipe(Effect.provide(context))
      ) as Effect.Effect<unknown, E>

    const fire = (payload: FirePayload) =>
      Effect.gen(function* () {
        const instant = payload.instant
        const now = yield* Clock.currentTimeMillis
        const runner = Option.match(yield* Effect.serviceOption(Entity.CurrentRunnerAddress), {
          onNone: () => "unknown",
          onSome: (address) => `${address.host}:${address.port}`
        })
        const misfired = now - instant > definition.misfireThresholdMillis
        const outcome = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const cursor = yield* lockCursor(now)
              if (cursor === undefined || cursor.next !== instant) return { cursor, ran: false }
              if (!(yield* record(instant, now, runner, "ok"))) return { cursor, ran: false }
              const exit = yield* Effect.exit(
                run({
                  reference,
                  instant: DateTime.unsafeMake(instant),
                  late: Duration.millis(Math.max(0, now - instant)),
                  misfired
                })
              )
              if (Exit.isFailure(exit)) return yield* new ExecuteFailed({ cause: exit.cause })
              const next = yield* nextAfter(instant, now)
              yield* moveCursor(next)
              yield* prune(instant)
              return { cursor: { next, generation: cursor.generation }, ran: true }
            })
          )
          .pipe(
            Effect.catchTag("ExecuteFailed", (failed) =>
              Effect.zipRight(
                Effect.logWarning(`cron ${reference}: the run for ${iso(instant)} failed`, failed.cause),
                // Its SQL effects were rolled back; record the instant as failed and move on, like a repeating task.
                sql.withTransaction(
                  Effect.gen(function* () {
                    const cursor = yield* lockCursor(now)
                    if (cursor === undefined || cursor.next !== instant) return { cursor, ran: false }
                    yield* record(instant, now, runner, "failed")
                    const next = yield* nextAfter(instant, now)
                    yield* moveCursor(next)
                    return { cursor: { next, generation: cursor.generation }, ran: true }
                  })
                )
              )
            ),
            Effect.tapErrorCause((cause) =>
              Effect.logWarning(`cron ${reference}: storage failed while firing ${iso(instant)}, retrying`, cause)
            ),
            Effect.retry(retrySql)
          )
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

    const traced = recordsSpans(yield* Effect.tracer)
    const handle = (payload: FirePayload) =>
      traced ? cronInstantSpan(reference, payload.instant, fire(payload)) : fire(payload)
    yield* sharding.registerEntity(entity, Effect.succeed(entity.of({ fire: (request) => handle(request.payload) })), {
      maxIdleTime: "5 seconds"
    })

    const start = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const cursor = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const current = yield* lockCursor(now)
            const first = Option.getOrNull(QuartzCron.next(cron, now))
            if (current === undefined) {
              yield* sql`
                INSERT INTO ${schedulesTable} (reference, expression, time_zone, next_instant, generation, updated_at)
                VALUES (${reference}, ${cron.expression}, ${definition.timeZone}, ${first}, 1, ${now})`
              return { next: first, generation: 1 }
            }
            const generation = current.generation + 1
            const changed = current.expression !== cron.expression || current.timeZone !== definition.timeZone
            // A changed expression or zone starts over from now; otherwise the schedule resumes at its cursor.
            const next = changed ? first : current.next
            yield* sql`
              UPDATE ${schedulesTable}
              SET expression = ${cron.expression}, time_zone = ${definition.timeZone}, next_instant = ${next},
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
