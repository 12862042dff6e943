/**
 * Bounded storage: @effect/cluster keeps every persisted message and its replies forever (`<prefix>_messages`,
 * `<prefix>_replies`), so each delivered reminder occurrence and cron instant would leave its rows behind. A sweeper
 * on every runner deletes the rows of requests whose final reply is older than the retention period, in batches.
 *
 * Only processed requests are touched: @effect/cluster marks a request `processed` when it stores its final reply
 * (`last_reply_id`, a Snowflake, so its time is in its high bits), and everything pending has no final reply. The age
 * is the reply's, not the message's: a reminder sent a month ahead is kept until a retention period after it was
 * delivered. Deleting a processed request also forgets its primary key; a reminder occurrence or cron instant sent
 * again after that is still dropped by its own check (the reminder's generation and next due time, the schedule's
 * cursor), so retention never makes one run twice. Several runners sweeping at once delete the same rows; the
 * statements are idempotent.
 *
 * @internal
 */
import * as MachineId from "@effect/cluster/MachineId"
import * as Snowflake from "@effect/cluster/Snowflake"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { createTables } from "./runner.js"

/** Requests deleted per transaction: a short write lock on SQLite. */
export const BATCH = 1_000

/** SQL's boolean literal as @effect/cluster writes it (SQLite and SQL Server keep 0 and 1). */
export const booleanLiteral = (sql: SqlClient.SqlClient, value: boolean) =>
  sql.literal(
    sql.onDialectOrElse({
      mssql: () => (value ? "1" : "0"),
      sqlite: () => (value ? "1" : "0"),
      orElse: () => (value ? "TRUE" : "FALSE")
    })
  )

/** How often a runner sweeps: a fraction of the retention period, at least every minute and at most every second. */
export const intervalMillis = (retentionMillis: number): number =>
  Math.min(60_000, Math.max(1_000, retentionMillis / 4))

/** The sweeper of a runner (its index is created first): `sweep` deletes what has aged, `run` sweeps forever. */
export const make = (client: SqlClient.SqlClient, prefix: string, retentionMillis: number) =>
  Effect.gen(function* () {
    const sql = client.withoutTransforms()
    const messages = sql(`${prefix}_messages`)
    const replies = sql(`${prefix}_replies`)
    const processed = booleanLiteral(sql, true)
    // Finds the oldest processed requests without reading the pending ones (a partial index: PostgreSQL, SQLite).
    yield* createTables(
      sql`CREATE INDEX IF NOT EXISTS ${sql(`${prefix}_messages_tickwork_retention_idx`)}
        ON ${messages} (last_reply_id) WHERE processed = ${processed}`
    )

    /** Deletes one batch of requests answered before `cutoff`; the number of message rows deleted. */
    const batch = (cutoff: bigint) => {
      const answered = sql`SELECT request_id FROM ${messages}
        WHERE processed = ${processed} AND last_reply_id < ${sql.literal(cutoff.toString())}
        ORDER BY last_reply_id LIMIT ${BATCH}`
      return sql
        .withTransaction(
          Effect.zipRight(
            sql`DELETE FROM ${replies} WHERE request_id IN (${answered})`,
            sql<{ readonly id: unknown }>`DELETE FROM ${messages} WHERE request_id IN (${answered}) RETURNING id`
          )
        )
        .pipe(Effect.map((rows) => rows.length))
    }

    /** Deletes every request answered more than the retention period ago; the number of message rows deleted. */
    const sweep = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const cutoff = Snowflake.make({
        timestamp: now - retentionMillis,
        machineId: MachineId.make(0),
        sequence: 0
      })
      let total = 0
      for (;;) {
        const deleted = yield* batch(cutoff)
        total += deleted
        if (deleted < BATCH) return total
        yield* Effect.yieldNow()
      }
    })
    const run = sweep.pipe(
      Effect.tap((deleted) =>
        deleted > 0 ? Effect.logDebug(`retention: deleted ${deleted} rows of processed messages`) : Effect.void
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("retention: sweep failed; the next one retries", cause)),
      Effect.delay(intervalMillis(retentionMillis)),
      Effect.forever
    )
    return { sweep, run }
  })
