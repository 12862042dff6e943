/**
 * The reminders table. Portable SQL (SQLite and PostgreSQL): TEXT keys, BIGINT times, `ON CONFLICT ... DO UPDATE`.
 * BIGINT columns come back as numbers from SQLite and as strings from PostgreSQL, so reads go through `Number`.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Row } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import { createTables } from "./runner.js"

/** A segment of a reminder's reference: `/` and `%` escaped, so the three segments split back unambiguously. */
const escapeSegment = (segment: string): string => segment.replaceAll("%", "%25").replaceAll("/", "%2F")

/** A grain as a reminder's owner in `Schedules`: `<kind>/<key>`. */
export const ownerOf = (kind: string, key: string): string => `${escapeSegment(kind)}/${escapeSegment(key)}`

/** A reminder's reference in `Schedules`: `<kind>/<key>/<name>` (each segment with `/` and `%` escaped). */
export const referenceOf = (kind: string, key: string, name: string): string =>
  `${ownerOf(kind, key)}/${escapeSegment(name)}`

/** The (kind, key, name) of a reminder's reference; undefined when it is not one. */
export const parseReference = (
  reference: string
): { readonly kind: string; readonly key: string; readonly name: string } | undefined => {
  if (typeof reference !== "string") return undefined
  const parts = reference.split("/")
  if (parts.length !== 3 || parts.some((part) => part.length === 0)) return undefined
  try {
    const [kind, key, name] = parts.map(decodeURIComponent) as [string, string, string]
    return { kind, key, name }
  } catch {
    return undefined
  }
}

/** The reminder's row in the schedule state and runs tables, apart from the cluster crons' references. */
export const stateKeyOf = (reference: string): string => `reminder:${reference}`

/** The state key of the reminder `name` of grain `key` of `kind`. */
export const stateKeyFor = (kind: string, key: string, name: string): string => stateKeyOf(referenceOf(kind, key, name))

export interface ReminderRow {
  readonly name: string
  readonly generation: string
  readonly message: string
  readonly nextDue: number
  readonly periodMillis: number | undefined
  readonly cron: string | undefined
  readonly timeZone: string | undefined
}

export interface RawRow {
  readonly name: string
  readonly generation: string
  readonly message: string
  readonly next_due: number | string | bigint
  readonly period_millis: number | string | bigint | null
  readonly cron: string | null
  readonly time_zone: string | null
}

export const rowOf = (raw: RawRow): ReminderRow => ({
  name: raw.name,
  generation: raw.generation,
  message: raw.message,
  nextDue: Number(raw.next_due),
  periodMillis: raw.period_millis === null ? undefined : Number(raw.period_millis),
  cron: raw.cron ?? undefined,
  timeZone: raw.time_zone ?? undefined
})

/** Rows per multi-row upsert: 10 parameters each, well under SQLite's and PostgreSQL's parameter limits. */
export const UPSERT_CHUNK = 500

/**
 * Registrations per PostgreSQL statement: one array parameter per column whatever the count (binding thousands of
 * parameters costs more than the inserts), so this only bounds a statement's size; more are several statements in
 * one transaction.
 */
export const PG_CHUNK = 1_000

/** A checked registration: the grain's key and the reminder's row. */
export interface Prepared {
  readonly key: string
  readonly row: ReminderRow
}

/**
 * One reminder to write: the grain's key, the row, and the shard of the grain's entity (`ShardId.toString()`), which
 * the runner holding that shard scans for due reminders (`reminderDispatch.ts`).
 */
export interface Registered extends Prepared {
  readonly shardId: string
}

/** A grain's identity within the cluster, as a map key: its kind and key. */
export const grainId = (kind: string, key: string): string => `${kind}\u0000${key}`

/** A reminder the scan of a runner's shards found due within its window. */
export interface DueRow {
  readonly kind: string
  readonly key: string
  readonly name: string
  readonly generation: string
  readonly due: number
}

/** A reminder to read (`manyStatement`), with a value carried along to its row. */
export interface Wanted {
  readonly kind: string
  readonly key: string
  readonly name: string
  readonly ref: string
}

/** A row of `manyStatement`: the reminder's, the index of its `Wanted` and the `ref` it carried. */
export interface ManyRow extends RawRow {
  readonly i: number | string
  readonly ref: string
}

/** The write of a reminder's row at the end of an occurrence (`finalStatement`). */
export type FinalWrite =
  | { readonly _tag: "advance"; readonly nextDue: number; readonly shardId: string }
  | { readonly _tag: "remove" | "current" }

export const chunks = <A>(items: ReadonlyArray<A>, size = UPSERT_CHUNK): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

export interface ReminderSql {
  /** Whether the table is on PostgreSQL (else SQLite). */
  readonly pg: boolean
  /**
   * Writes the reminders `registered` of `kind` (each (key, name) once), replacing those of the same (key, name): on
   * PostgreSQL one statement per `PG_CHUNK`, on SQLite one multi-row statement per `UPSERT_CHUNK`. Several statements
   * are atomic only inside the caller's transaction.
   */
  readonly write: (kind: string, registered: ReadonlyArray<Registered>) => Effect.Effect<void, SqlError>
  /** How many statements `write` takes for `count` registrations (more than one: run it in a transaction). */
  readonly statementsFor: (count: number) => number
  /** `write` of one reminder whose shard no runner scans (for tests of the table itself). */
  readonly upsert: (kind: string, key: string, row: ReminderRow) => Effect.Effect<void, SqlError>
  /**
   * The update of the reminder (kind, key, `row.name`) to `row`, only while its generation is still `expected`, as a
   * statement not yet run: it returns the row it changed (`grain_key, name`), none when the reminder was removed or
   * registered again meanwhile.
   */
  readonly replaceStatement: (kind: string, entry: Registered, expected: string) => Statement.Statement<Row>
  /** `replaceStatement`, run: true when the row was changed. */
  readonly replace: (kind: string, entry: Registered, expected: string) => Effect.Effect<boolean, SqlError>
  /**
   * The reminders of the shards `shards` due from `from` to `until`, the earliest first, at most `limit`: what a runner
   * holding those shards delivers next. Rows written before reminders had a shard column (`shard_id` null) are not
   * found: their occurrence is a persisted message, which delivers them once and gives them the column.
   */
  readonly due: (
    shards: ReadonlyArray<string>,
    from: number,
    until: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<DueRow>, SqlError>
  /**
   * The reminders of the grains `grains` due by `until`, the earliest first, at most `limit` (as `due` finds them: rows
   * without a shard are not).
   */
  readonly dueOfGrains: (
    grains: ReadonlyArray<{ readonly kind: string; readonly key: string }>,
    until: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<DueRow>, SqlError>
  readonly get: (kind: string, key: string, name: string) => Effect.Effect<ReminderRow | undefined, SqlError>
  /** `get` as a statement not yet run (to read with more beside it); `rowOf` reads its row. */
  readonly getStatement: (kind: string, key: string, name: string) => Statement.Statement<RawRow>
  /**
   * The rows of the reminders `wanted` in one statement not yet run, each with the index `i` of its entry in `wanted`
   * and the entry's `ref` (carried along for a join); a reminder that is gone has no row.
   */
  readonly manyStatement: (wanted: ReadonlyArray<Wanted>) => Statement.Statement<ManyRow>
  /** The rows of the grains `keys` of `kind`, by key, `UPSERT_CHUNK` keys per statement. */
  readonly byKeys: (
    kind: string,
    keys: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<{ readonly key: string; readonly row: ReminderRow }>, SqlError>
  readonly list: (kind: string, key: string) => Effect.Effect<ReadonlyArray<ReminderRow>, SqlError>
  /** Every reminder of the table, by kind, key and name. */
  readonly all: Effect.Effect<
    ReadonlyArray<{ readonly kind: string; readonly key: string; readonly row: ReminderRow }>,
    SqlError
  >
  /**
   * The row's write at the end of an occurrence, conditional on `generation` still being current, as a statement not
   * yet run that returns the row it touched (none when the reminder was removed or registered again): `advance` moves
   * it to `nextDue`, `remove` deletes it (a one-shot delivered), `current` changes nothing (a manual trigger; in a
   * transaction it holds the row, on PostgreSQL, until the commit).
   */
  readonly finalStatement: (
    kind: string,
    key: string,
    name: string,
    generation: string,
    write: FinalWrite
  ) => Statement.Statement<Row>
  /**
   * PostgreSQL: `finalStatement` for many occurrences in one statement, as data-modifying CTEs over the CTE `input`
   * (columns `i`, `kind`, `grain_key`, `name`, `generation`, `op` (`FinalWrite`'s tag), `next_due`, `shard_id`). They
   * define `done (i)`: the inputs whose row was written. Inputs of one reminder twice in a batch are not expected.
   */
  readonly finalManyParts: (input: string) => ReadonlyArray<Statement.Fragment>
  /** Moves the reminder to its next occurrence, only if `generation` is still current: true when it did. */
  readonly advance: (
    kind: string,
    key: string,
    name: string,
    generation: string,
    nextDue: number,
    shardId: string
  ) => Effect.Effect<boolean, SqlError>
  /** Deletes the reminder; with a generation, only if it is still current. True when a row was deleted. */
  readonly remove: (kind: string, key: string, name: string, generation?: string) => Effect.Effect<boolean, SqlError>
}

/** A reminder's row as its table's columns, but for the kind. */
const rowColumns = ({
  key,
  row,
  shardId
}: {
  readonly key: string
  readonly row: ReminderRow
  readonly shardId: string | null
}) => ({
  grain_key: key,
  name: row.name,
  generation: row.generation,
  message: row.message,
  next_due: row.nextDue,
  period_millis: row.periodMillis ?? null,
  cron: row.cron ?? null,
  time_zone: row.timeZone ?? null,
  shard_id: shardId
})

/** A string as an element of a PostgreSQL array literal: quoted, with `"` and `\` escaped. */
const arrayElement = (value: string): string => {
  let escaped = value
  if (escaped.includes("\\")) escaped = escaped.replaceAll("\\", "\\\\")
  if (escaped.includes('"')) escaped = escaped.replaceAll('"', '\\"')
  return `"${escaped}"`
}

/** A row of a scan for due reminders. */
interface RawDue {
  readonly kind: string
  readonly grain_key: string
  readonly name: string
  readonly generation: string
  readonly next_due: number | string | bigint
}

const dueRows = (rows: ReadonlyArray<RawDue>): ReadonlyArray<DueRow> =>
  rows.map((raw) => ({
    kind: raw.kind,
    key: raw.grain_key,
    name: raw.name,
    generation: raw.generation,
    due: Number(raw.next_due)
  }))

/** Whether a statement touched a row. */
const touched = (statement: Statement.Statement<Row>): Effect.Effect<boolean, SqlError> =>
  Effect.map(statement, (rows) => rows.length > 0)

export const make = (client: SqlClient.SqlClient, tableName: string): Effect.Effect<ReminderSql, SqlError> =>
  Effect.gen(function* () {
    // Rows are read by their column names: no name transforms the client may be configured with.
    const sql = client.withoutTransforms()
    const table = sql(tableName)
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    yield* createTables(
      Effect.gen(function* () {
        yield* sql`CREATE TABLE IF NOT EXISTS ${table} (
          kind TEXT NOT NULL,
          grain_key TEXT NOT NULL,
          name TEXT NOT NULL,
          generation TEXT NOT NULL,
          message TEXT NOT NULL,
          next_due BIGINT NOT NULL,
          period_millis BIGINT,
          cron TEXT,
          time_zone TEXT,
          shard_id TEXT,
          PRIMARY KEY (kind, grain_key, name)
        )`
        // A table made before reminders were delivered from their rows has no shard column: added (null in its rows).
        if (pg) {
          yield* sql`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS shard_id TEXT`
        } else {
          const columns = yield* sql<{ readonly name: string }>`SELECT name FROM pragma_table_info(${tableName})`
          if (!columns.some(({ name }) => name === "shard_id"))
            yield* sql`ALTER TABLE ${table} ADD COLUMN shard_id TEXT`
        }
        yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${tableName}_due_idx`)} ON ${table} (next_due)`
      })
    )
    const onConflict = sql`ON CONFLICT (kind, grain_key, name) DO UPDATE SET
      generation = excluded.generation, message = excluded.message, next_due = excluded.next_due,
      period_millis = excluded.period_millis, cron = excluded.cron, time_zone = excluded.time_zone,
      shard_id = excluded.shard_id`
    const select = sql`SELECT name, generation, message, next_due, period_millis, cron, time_zone FROM ${table}`
    const replaceStatement = (kind: string, { key, row, shardId }: Registered, expected: string) =>
      sql`UPDATE ${table} SET generation = ${row.generation}, message = ${row.message}, next_due = ${row.nextDue},
          period_millis = ${row.periodMillis ?? null}, cron = ${row.cron ?? null}, time_zone = ${row.timeZone ?? null},
          shard_id = ${shardId}
        WHERE kind = ${kind} AND grain_key = ${key} AND name = ${row.name} AND generation = ${expected}
        RETURNING grain_key, name`
    const getStatement = (kind: string, key: string, name: string) =>
      sql<RawRow>`${select} WHERE kind = ${kind} AND grain_key = ${key} AND name = ${name}`
    const manyStatement = (wanted: ReadonlyArray<Wanted>) =>
      sql<ManyRow>`WITH w (i, kind, grain_key, name, ref) AS (VALUES ${sql.csv(
        wanted.map(({ key, kind, name, ref }, i) => sql`(${i}, ${kind}, ${key}, ${name}, ${ref})`)
      )})
        SELECT w.i, w.ref, r.name, r.generation, r.message, r.next_due, r.period_millis, r.cron, r.time_zone
        FROM w JOIN ${table} r ON r.kind = w.kind AND r.grain_key = w.grain_key AND r.name = w.name`
    const finalManyParts = (input: string): ReadonlyArray<Statement.Fragment> => {
      const x = sql(input)
      const same = sql`t.kind = x.kind AND t.grain_key = x.grain_key AND t.name = x.name AND t.generation = x.generation`
      // As `finalStatement` does for one: an advance already written is not written again.
      return [
        sql`removed AS (DELETE FROM ${table} t USING ${x} x WHERE x.op = 'remove' AND ${same} RETURNING x.i)`,
        sql`advanced AS (UPDATE ${table} t SET next_due = x.next_due, shard_id = x.shard_id FROM ${x} x
          WHERE x.op = 'advance' AND ${same} AND t.next_due <> x.next_due RETURNING x.i)`,
        sql`held AS (UPDATE ${table} t SET generation = t.generation FROM ${x} x
          WHERE x.op = 'current' AND ${same} RETURNING x.i)`,
        sql`done (i) AS (SELECT i FROM removed UNION ALL SELECT i FROM advanced UNION ALL SELECT i FROM held)`
      ]
    }
    const finalStatement: ReminderSql["finalStatement"] = (kind, key, name, generation, write) => {
      const where = sql`WHERE kind = ${kind} AND grain_key = ${key} AND name = ${name} AND generation = ${generation}`
      switch (write._tag) {
        case "advance":
          // Not when it is there already: an attempt written again after a commit whose answer was lost. The shard
          // is written too: a row from before the shard column gets it with its first advance.
          return sql`UPDATE ${table} SET next_due = ${write.nextDue}, shard_id = ${write.shardId}
            ${where} AND next_due <> ${write.nextDue} RETURNING name`
        case "current":
          return sql`UPDATE ${table} SET generation = generation ${where} RETURNING name`
        case "remove":
          return sql`DELETE FROM ${table} ${where} RETURNING name`
      }
    }
    const sqliteWrite = (
      kind: string,
      rows: ReadonlyArray<Registered | (Omit<Registered, "shardId"> & { shardId: null })>
    ) =>
      Effect.forEach(
        chunks(rows),
        (chunk) =>
          sql`INSERT INTO ${table} ${sql.insert(chunk.map((entry) => ({ kind, ...rowColumns(entry) })))} ${onConflict}`,
        { discard: true }
      )
    // PostgreSQL: each column as one array parameter (a text array literal), zipped into rows by the server's
    // `unnest`: cheaper for it to read than the rows as JSON.
    const pgStatement = (kind: string, rows: ReadonlyArray<Registered>) => {
      const column = (element: (entry: Registered) => string) => `{${rows.map(element).join(",")}}`
      const text = (value: string | undefined) => (value === undefined ? "NULL" : arrayElement(value))
      const number = (value: number | undefined) => (value === undefined ? "NULL" : String(value))
      return sql`INSERT INTO ${table} (kind, grain_key, name, generation, message, next_due, period_millis, cron,
          time_zone, shard_id)
        SELECT ${kind}::text, k, n, g, m, d, p, c, z, s
        FROM unnest(${column((e) => text(e.key))}::text[], ${column((e) => text(e.row.name))}::text[],
          ${column((e) => text(e.row.generation))}::text[], ${column((e) => text(e.row.message))}::text[],
          ${column((e) => number(e.row.nextDue))}::bigint[], ${column((e) => number(e.row.periodMillis))}::bigint[],
          ${column((e) => text(e.row.cron))}::text[], ${column((e) => text(e.row.timeZone))}::text[],
          ${column((e) => text(e.shardId))}::text[]) AS x(k, n, g, m, d, p, c, z, s)
        ${onConflict}`
    }
    const pgWrite = (kind: string, rows: ReadonlyArray<Registered>) =>
      Effect.forEach(chunks(rows, PG_CHUNK), (chunk) => pgStatement(kind, chunk), { discard: true })
    return {
      pg,
      write: (kind, registered) => (pg ? pgWrite(kind, registered) : sqliteWrite(kind, registered)),
      statementsFor: (count) => Math.ceil(count / (pg ? PG_CHUNK : UPSERT_CHUNK)),
      upsert: (kind, key, row) => sqliteWrite(kind, [{ key, row, shardId: null }]),
      replaceStatement,
      replace: (kind, entry, expected) => touched(replaceStatement(kind, entry, expected)),
      due: (shards, from, until, limit) =>
        shards.length === 0
          ? Effect.succeed([])
          : Effect.map(
              sql<RawDue>`SELECT kind, grain_key, name, generation, next_due FROM ${table}
                WHERE ${Number.isFinite(from) ? sql`next_due >= ${from} AND ` : sql``}next_due <= ${until}
                  AND ${sql.in("shard_id", shards)} ORDER BY next_due LIMIT ${limit}`,
              dueRows
            ),
      dueOfGrains: (grains, until, limit) =>
        grains.length === 0
          ? Effect.succeed([])
          : Effect.map(
              sql<RawDue>`WITH g (kind, grain_key) AS (VALUES ${sql.csv(grains.map(({ key, kind }) => sql`(${kind}, ${key})`))})
                SELECT r.kind, r.grain_key, r.name, r.generation, r.next_due
                FROM g JOIN ${table} r ON r.kind = g.kind AND r.grain_key = g.grain_key
                WHERE r.next_due <= ${until} AND r.shard_id IS NOT NULL ORDER BY r.next_due LIMIT ${limit}`,
              dueRows
            ),
      byKeys: (kind, keys) =>
        Effect.map(
          Effect.forEach(
            chunks(keys),
            (chunk) =>
              sql<RawRow & { readonly grain_key: string }>`SELECT grain_key, name, generation, message, next_due,
              period_millis, cron, time_zone FROM ${table} WHERE kind = ${kind} AND ${sql.in("grain_key", chunk)}`
          ),
          (results) => results.flat().map((raw) => ({ key: raw.grain_key, row: rowOf(raw) }))
        ),
      get: (kind, key, name) =>
        Effect.map(getStatement(kind, key, name), (rows) => (rows[0] === undefined ? undefined : rowOf(rows[0]))),
      getStatement,
      manyStatement,
      list: (kind, key) =>
        Effect.map(sql<RawRow>`${select} WHERE kind = ${kind} AND grain_key = ${key} ORDER BY name`, (rows) =>
          rows.map(rowOf)
        ),
      all: Effect.map(
        sql<RawRow & { readonly kind: string; readonly grain_key: string }>`SELECT kind, grain_key, name, generation,
          message, next_due, period_millis, cron, time_zone FROM ${table} ORDER BY kind, grain_key, name`,
        (rows) => rows.map((raw) => ({ kind: raw.kind, key: raw.grain_key, row: rowOf(raw) }))
      ),
      finalStatement,
      finalManyParts,
      advance: (kind, key, name, generation, nextDue, shardId) =>
        touched(finalStatement(kind, key, name, generation, { _tag: "advance", nextDue, shardId })),
      remove: (kind, key, name, generation) =>
        touched(
          generation === undefined
            ? sql`DELETE FROM ${table} WHERE kind = ${kind} AND grain_key = ${key} AND name = ${name} RETURNING name`
            : finalStatement(kind, key, name, generation, { _tag: "remove" })
        )
    }
  })
