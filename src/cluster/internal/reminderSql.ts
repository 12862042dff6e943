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

/** Rows per multi-row upsert: 9 parameters each, well under SQLite's and PostgreSQL's parameter limits. */
export const UPSERT_CHUNK = 500

export const chunks = <A>(items: ReadonlyArray<A>, size = UPSERT_CHUNK): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

export interface ReminderSql {
  /**
   * The multi-row upsert of `rows` as a statement not yet run, to run alone or inside another (a (key, name) must
   * appear once; at most `UPSERT_CHUNK` rows).
   */
  readonly upsertStatement: (
    kind: string,
    rows: ReadonlyArray<{ readonly key: string; readonly row: ReminderRow }>
  ) => Statement.Statement<Row>
  /**
   * The upsert of the rows `select` yields, as a statement not yet run: `select` gives the columns `kind, grain_key,
   * name, generation, message, next_due, period_millis, cron, time_zone` in that order, each (kind, key, name) once.
   */
  readonly upsertSelect: (select: Statement.Fragment) => Statement.Statement<Row>
  readonly upsert: (kind: string, key: string, row: ReminderRow) => Effect.Effect<void, SqlError>
  /**
   * The update of the reminder (kind, key, `row.name`) to `row`, only while its generation is still `expected`, as a
   * statement not yet run: it returns the row it changed (`grain_key, name`), none when the reminder was removed or
   * registered again meanwhile.
   */
  readonly replaceStatement: (kind: string, key: string, row: ReminderRow, expected: string) => Statement.Statement<Row>
  /** `replaceStatement`, run: true when the row was changed. */
  readonly replace: (kind: string, key: string, row: ReminderRow, expected: string) => Effect.Effect<boolean, SqlError>
  /** `upsert` of many rows, `UPSERT_CHUNK` per statement; a (key, name) must appear once. */
  readonly upsertMany: (
    kind: string,
    rows: ReadonlyArray<{ readonly key: string; readonly row: ReminderRow }>
  ) => Effect.Effect<void, SqlError>
  readonly get: (kind: string, key: string, name: string) => Effect.Effect<ReminderRow | undefined, SqlError>
  /** `get` as a statement not yet run (to read with more beside it); `rowOf` reads its row. */
  readonly getStatement: (kind: string, key: string, name: string) => Statement.Statement<RawRow>
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
    write: { readonly _tag: "advance"; readonly nextDue: number } | { readonly _tag: "remove" | "current" }
  ) => Statement.Statement<Row>
  /** Moves the reminder to its next occurrence, only if `generation` is still current: true when it did. */
  readonly advance: (
    kind: string,
    key: string,
    name: string,
    generation: string,
    nextDue: number
  ) => Effect.Effect<boolean, SqlError>
  /** Deletes the reminder; with a generation, only if it is still current. True when a row was deleted. */
  readonly remove: (kind: string, key: string, name: string, generation?: string) => Effect.Effect<boolean, SqlError>
}

/** A reminder's row as its table's columns, but for the kind. */
export const rowColumns = (key: string, row: ReminderRow) => ({
  grain_key: key,
  name: row.name,
  generation: row.generation,
  message: row.message,
  next_due: row.nextDue,
  period_millis: row.periodMillis ?? null,
  cron: row.cron ?? null,
  time_zone: row.timeZone ?? null
})

/** Whether a statement touched a row. */
const touched = (statement: Statement.Statement<Row>): Effect.Effect<boolean, SqlError> =>
  Effect.map(statement, (rows) => rows.length > 0)

export const make = (client: SqlClient.SqlClient, tableName: string): Effect.Effect<ReminderSql, SqlError> =>
  Effect.gen(function* () {
    // Rows are read by their column names: no name transforms the client may be configured with.
    const sql = client.withoutTransforms()
    const table = sql(tableName)
    yield* createTables(sql`CREATE TABLE IF NOT EXISTS ${table} (
      kind TEXT NOT NULL,
      grain_key TEXT NOT NULL,
      name TEXT NOT NULL,
      generation TEXT NOT NULL,
      message TEXT NOT NULL,
      next_due BIGINT NOT NULL,
      period_millis BIGINT,
      cron TEXT,
      time_zone TEXT,
      PRIMARY KEY (kind, grain_key, name)
    )`)
    const columns = (kind: string, key: string, row: ReminderRow) => ({ kind, ...rowColumns(key, row) })
    const onConflict = sql`ON CONFLICT (kind, grain_key, name) DO UPDATE SET
      generation = excluded.generation, message = excluded.message, next_due = excluded.next_due,
      period_millis = excluded.period_millis, cron = excluded.cron, time_zone = excluded.time_zone`
    const select = sql`SELECT name, generation, message, next_due, period_millis, cron, time_zone FROM ${table}`
    const replaceStatement = (kind: string, key: string, row: ReminderRow, expected: string) =>
      sql`UPDATE ${table} SET generation = ${row.generation}, message = ${row.message}, next_due = ${row.nextDue},
          period_millis = ${row.periodMillis ?? null}, cron = ${row.cron ?? null}, time_zone = ${row.timeZone ?? null}
        WHERE kind = ${kind} AND grain_key = ${key} AND name = ${row.name} AND generation = ${expected}
        RETURNING grain_key, name`
    const getStatement = (kind: string, key: string, name: string) =>
      sql<RawRow>`${select} WHERE kind = ${kind} AND grain_key = ${key} AND name = ${name}`
    const finalStatement: ReminderSql["finalStatement"] = (kind, key, name, generation, write) => {
      const where = sql`WHERE kind = ${kind} AND grain_key = ${key} AND name = ${name} AND generation = ${generation}`
      switch (write._tag) {
        case "advance":
          // Not when it is there already: an attempt written again after a commit whose answer was lost.
          return sql`UPDATE ${table} SET next_due = ${write.nextDue} ${where} AND next_due <> ${write.nextDue}
            RETURNING name`
        case "current":
          return sql`UPDATE ${table} SET generation = generation ${where} RETURNING name`
        case "remove":
          return sql`DELETE FROM ${table} ${where} RETURNING name`
      }
    }
    const upsertStatement: ReminderSql["upsertStatement"] = (kind, rows) =>
      sql`INSERT INTO ${table} ${sql.insert(rows.map(({ key, row }) => columns(kind, key, row)))} ${onConflict}`
    return {
      upsertSelect: (select) =>
        sql`INSERT INTO ${table} (kind, grain_key, name, generation, message, next_due, period_millis, cron, time_zone)
          ${select} ${onConflict}`,
      upsertStatement,
      upsert: (kind, key, row) => Effect.asVoid(upsertStatement(kind, [{ key, row }])),
      replaceStatement: (kind, key, row, expected) => replaceStatement(kind, key, row, expected),
      replace: (kind, key, row, expected) =>
        Effect.map(replaceStatement(kind, key, row, expected), (rows) => rows.length > 0),
      upsertMany: (kind, rows) =>
        Effect.forEach(chunks(rows), (chunk) => upsertStatement(kind, chunk), { discard: true }),
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
      advance: (kind, key, name, generation, nextDue) =>
        touched(finalStatement(kind, key, name, generation, { _tag: "advance", nextDue })),
      remove: (kind, key, name, generation) =>
        touched(
          generation === undefined
            ? sql`DELETE FROM ${table} WHERE kind = ${kind} AND grain_key = ${key} AND name = ${name} RETURNING name`
            : finalStatement(kind, key, name, generation, { _tag: "remove" })
        )
    }
  })
