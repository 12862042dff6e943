/**
 * Reminder registration's write path: the reminder rows and their first occurrences in one statement or transaction,
 * the occurrences inserted straight into @effect/cluster's messages table (`<prefix>_messages`) as many rows per
 * statement, instead of one `Sharding` send (routing, then one `MessageStorage.saveRequest`) per occurrence.
 *
 * Each occurrence is the row @effect/cluster 0.60's `SqlMessageStorage.saveRequest` writes for the grain's `Remind`
 * request sent with `discard`: a fresh request id from the runner's Snowflake generator, the shard of the grain's
 * entity id, the payload encoded with the `Remind` RPC's own payload schema, the request headers of the fiber
 * (`RpcClient.currentHeaders`), the primary key `<entity type>/<entity id>/Remind/<ReminderDelivery's key>` as
 * `message_id` (its SHA-256 when longer than 255 characters), the delivery time in `deliver_at`, and the same handling
 * of a message stored twice (`ON CONFLICT (message_id) DO NOTHING`; on SQLite `SqlMessageStorage` writes `INSERT OR
 * IGNORE`, which would also drop a row whose request id is taken: here that is an error, never a silent loss). No
 * trace context is written: an occurrence runs in a root span of its own anyway.
 * `test/cluster/fastRegistration.test.ts` compares these rows column by column with the ones `saveRequest` writes, so
 * a change of format fails there.
 *
 * It is used only where it is sure to write the runner's own message storage: a runner built by `ClusterRunner` (it
 * records its storage in `runnerStorages`) whose `SqlClient` is the reminders' own, on SQLite or PostgreSQL, and
 * whose messages table has exactly the columns of the format above (read once, when the reminders service is built:
 * a table another @effect/cluster version made is not written to blindly). Elsewhere registration sends each
 * occurrence through the cluster as before.
 *
 * A send also wakes the runner that owns the grain's shard (a storage read, then local arming's scan). Here the rows
 * are committed first, then this runner's read loop is opened (`Sharding.pollStorage`) when an occurrence of its own
 * shards is due within one poll interval. Another runner's shards are read at that runner's next poll, whose arming
 * scan arms what is due later: only an occurrence due within one poll interval of its registration, on a shard of
 * another runner, can be up to one poll interval late.
 *
 * @internal
 */
import * as EntityId from "@effect/cluster/EntityId"
import type { Sharding } from "@effect/cluster/Sharding"
import * as RpcClient from "@effect/rpc/RpcClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Row } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as FiberRef from "effect/FiberRef"
import * as PrimaryKey from "effect/PrimaryKey"
import * as Schema from "effect/Schema"
import { type AnyKindWire, localKind, ReminderDelivery, UnknownClusterGrainKind } from "./grainProtocol.js"
import { chunks, type ReminderRow, type ReminderSql, rowColumns } from "./reminderSql.js"
import { runnerStorages } from "./runner.js"
import { type Guarded, unguarded } from "./scheduleState.js"

/** A row of `<prefix>_messages` as `SqlMessageStorage` writes a request (its `envelopeToRow`). */
export interface MessageRow {
  readonly id: string
  readonly message_id: string
  readonly shard_id: string
  readonly entity_type: string
  readonly entity_id: string
  readonly kind: 0
  readonly tag: string
  readonly payload: string
  readonly headers: string
  readonly trace_id: null
  readonly span_id: null
  readonly sampled: null
  readonly request_id: string
  readonly reply_id: null
  readonly deliver_at: number
}

/** The RPC tag of a reminder occurrence (`grainProtocol.makeEntity`). */
const REMIND = "Remind"

/** `SqlMessageStorage`'s width of `message_id`: a longer primary key is stored as its SHA-256, in hex. */
const MESSAGE_ID_WIDTH = 255

const encoder = new TextEncoder()

/** The `message_id` `SqlMessageStorage` stores for a request's primary key. */
const messageIdOf = (primaryKey: string): Effect.Effect<string> =>
  primaryKey.length <= MESSAGE_ID_WIDTH
    ? Effect.succeed(primaryKey)
    : Effect.map(
        Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", encoder.encode(primaryKey))),
        (digest) => Encoding.encodeHex(new Uint8Array(digest))
      )

/**
 * The row `SqlMessageStorage.saveRequest` writes for a request sent with `discard`: a fresh request id from the
 * runner's Snowflake generator, the primary key `<entity type>/<entity id>/<tag>/<key>` as `message_id` (hashed when
 * long), the encoded payload and the caller's headers (`headers`: JSON), no trace context.
 */
export const messageRow = (
  sharding: Context.Tag.Service<Sharding>,
  request: {
    readonly entityType: string
    readonly entityId: string
    readonly shardId: string
    readonly tag: string
    readonly primaryKey: string
    readonly payload: unknown
    readonly headers: string
    readonly deliverAt: number
  }
): Effect.Effect<MessageRow> =>
  Effect.gen(function* () {
    const id = String(yield* sharding.getSnowflake)
    return {
      id,
      message_id: yield* messageIdOf(`${request.entityType}/${request.entityId}/${request.tag}/${request.primaryKey}`),
      shard_id: request.shardId,
      entity_type: request.entityType,
      entity_id: request.entityId,
      kind: 0,
      tag: request.tag,
      payload: JSON.stringify(request.payload),
      headers: request.headers,
      trace_id: null,
      span_id: null,
      sampled: null,
      request_id: id,
      reply_id: null,
      deliver_at: request.deliverAt
    }
  })

/**
 * How long after a commit that wrote messages on this runner's own shards its read loop is opened at most
 * (`wakeFor`): the messages written meanwhile (instants of many cron schedules, occurrences of many reminders) share
 * that one read and its arming scan instead of one read each.
 */
export const WAKE_AFTER_MILLIS = 100

/** Per runner: when its read loop is to be opened next for messages written straight into storage. */
const wakes = new WeakMap<object, { at: number | undefined }>()

/**
 * After the commit of a message written straight into storage on the shards of the runner behind `sharding`, due at
 * `dueAt`: opens that runner's read loop, as a local send does, when the message is due within two poll intervals (a
 * later one is armed after a regular poll), so that its arming scan arms it (and a message already due is read). Not
 * at once but after a quarter of the time left, at most `WAKE_AFTER_MILLIS`, and once for every message written
 * meanwhile on that runner.
 */
export const wakeFor = (sharding: Context.Tag.Service<Sharding>, pollMillis: number) => {
  let waking = wakes.get(sharding)
  if (waking === undefined) wakes.set(sharding, (waking = { at: undefined }))
  const pending = waking
  return (dueAt: number): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (dueAt - now >= 2 * pollMillis) return Effect.void
      // After a quarter of the time left, at most WAKE_AFTER_MILLIS: before the message is due and, usually, after
      // the others of a burst committed.
      const at = now + Math.max(0, Math.min(WAKE_AFTER_MILLIS, Math.floor((dueAt - now) / 4)))
      // A pending wake not yet gone long after its time (a starved process) is not trusted: one more read is cheap.
      if (pending.at !== undefined && pending.at <= at && pending.at >= now - WAKE_AFTER_MILLIS) return Effect.void
      pending.at = at
      return Effect.asVoid(
        Effect.forkDaemon(
          Effect.zipRight(
            Effect.sleep(at - now),
            Effect.suspend(() => {
              if (pending.at === at) pending.at = undefined
              return sharding.pollStorage
            })
          )
        )
      )
    })
}

/** One reminder of a registration: the grain's key and the row to write. */
export interface Registered {
  readonly key: string
  readonly row: ReminderRow
}

export interface OccurrenceWriter {
  /**
   * Writes the reminder rows and each one's first occurrence (due at its `nextDue`), all or none; then wakes this
   * runner's read loop if one of its shards has an occurrence due within a poll interval. Fails with
   * `UnknownClusterGrainKind`, writing nothing, when this runner owns a grain's shard and does not host the kind
   * (the check a send makes). Each (key, name) appears once in `registered`.
   */
  readonly register: (
    kind: AnyKindWire,
    registered: ReadonlyArray<Registered>,
    reminders: Pick<ReminderSql, "upsertStatement" | "upsertSelect">
  ) => Effect.Effect<void, SqlError | UnknownClusterGrainKind>
  /**
   * Replaces one reminder's row and writes its first occurrence, only while the row's generation is still `expected`
   * (one statement on PostgreSQL, one transaction on SQLite): false, writing nothing, when the reminder was removed or
   * registered again meanwhile. Then wakes this runner's read loop as `register` does.
   */
  readonly replace: (
    kind: AnyKindWire,
    entry: Registered,
    expected: string,
    reminders: Pick<ReminderSql, "replaceStatement">
  ) => Effect.Effect<boolean, SqlError | UnknownClusterGrainKind>
  /**
   * `condition` (a statement returning the rows it changed, e.g. a reminder's advance conditional on its generation),
   * and only when it changed one, the occurrence `delivery` of the grain `key` (if given) and the `guarded` statements
   * (e.g. the history of the occurrence delivered). On PostgreSQL one statement of data-modifying CTEs: each guarded
   * statement gets `EXISTS (SELECT 1 FROM guard)` to put in its WHERE clause, and `sameSnapshot` true (it does not see
   * the others' changes); on SQLite they run one after the other, given `1 = 1`. For the caller's transaction:
   * `written` says whether the condition held; `wake` (run it after the commit) opens this runner's read loop as
   * `register` does.
   *
   * `commit: "beforeReply"` is for a write that a synchronous commit of the same database follows before anyone
   * relies on it (a delivery's outcome, before @effect/cluster saves the message's reply): on PostgreSQL the
   * statement's own commit does not wait for the WAL flush (`synchronous_commit` off for that transaction). The WAL
   * is flushed in order, so the reply's durable commit makes this write durable too; a crash before it loses both,
   * and the message, unanswered, is delivered again (at least once). Registration keeps the default, `"durable"`.
   */
  readonly writeIf: (
    kind: AnyKindWire,
    key: string,
    delivery: ReminderDelivery | undefined,
    condition: Statement.Statement<Row>,
    guarded?: ReadonlyArray<Guarded>,
    commit?: "durable" | "beforeReply"
  ) => Effect.Effect<
    { readonly written: boolean; readonly wake: Effect.Effect<void> },
    SqlError | UnknownClusterGrainKind
  >
}

/**
 * Registrations per PostgreSQL statement: one JSON parameter whatever the count, so this only bounds a statement's
 * size; a larger batch is several statements in one transaction.
 */
const PG_CHUNK = 1_000

/**
 * The columns of `<prefix>_messages` as @effect/cluster 0.60's `SqlMessageStorage` creates it, by dialect (SQLite's
 * `rowid` is implicit, not a column `PRAGMA table_info` lists).
 */
const MESSAGE_COLUMNS = [
  "id",
  "message_id",
  "shard_id",
  "entity_type",
  "entity_id",
  "kind",
  "tag",
  "payload",
  "headers",
  "trace_id",
  "span_id",
  "sampled",
  "processed",
  "request_id",
  "reply_id",
  "last_reply_id",
  "last_read",
  "deliver_at"
]
const expectedColumns = {
  sqlite: MESSAGE_COLUMNS.slice().sort().join(","),
  pg: [...MESSAGE_COLUMNS, "rowid"].sort().join(",")
}

/**
 * The writer for the runner behind `sharding`, when registration may write its message storage directly: the
 * runner was built by `ClusterRunner`, over `sql` itself, on SQLite or PostgreSQL, and its messages table has exactly
 * the columns this module writes for (read once, here): a table of another @effect/cluster format is left to
 * `Sharding`'s own send (logged). Undefined otherwise.
 */
export const make = (
  sharding: Context.Tag.Service<Sharding>,
  sql: SqlClient.SqlClient
): Effect.Effect<OccurrenceWriter | undefined> =>
  Effect.map(ownMessageStorage(sharding, sql, "reminders: registration sends each occurrence instead"), (own) =>
    own === undefined ? undefined : writer(sharding, own.storage, own.dialect, own.raw)
  )

/** The runner's own message storage, when `sql` is it and its messages table has this module's format. */
export interface OwnMessageStorage {
  readonly storage: { readonly prefix: string; readonly pollMillis: number }
  readonly dialect: "pg" | "sqlite"
  readonly raw: SqlClient.SqlClient
}

/**
 * The message storage of the runner behind `sharding`, when its messages may be written directly: the runner was
 * built by `ClusterRunner`, over `sql` itself, on SQLite or PostgreSQL, and its messages table has exactly the columns
 * of `MessageRow` (read here: a table of another @effect/cluster format is logged with `otherwise` and left alone).
 */
export const ownMessageStorage = (
  sharding: Context.Tag.Service<Sharding>,
  sql: SqlClient.SqlClient,
  otherwise: string
): Effect.Effect<OwnMessageStorage | undefined> => {
  const storage = runnerStorages.get(sharding)
  if (storage === undefined || storage.sql !== sql) return Effect.succeed(undefined)
  const dialect = sql.onDialectOrElse({
    pg: () => "pg" as const,
    sqlite: () => "sqlite" as const,
    orElse: () => undefined
  })
  if (dialect === undefined) return Effect.succeed(undefined)
  const raw = sql.withoutTransforms()
  const tableName = `${storage.prefix}_messages`
  const columns =
    dialect === "pg"
      ? raw<{ readonly name: string }>`SELECT column_name AS name FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ${tableName}`
      : raw<{ readonly name: string }>`SELECT name FROM pragma_table_info(${tableName})`
  return Effect.flatMap(
    Effect.either(
      Effect.map(columns, (rows) =>
        rows
          .map(({ name }) => name)
          .sort()
          .join(",")
      )
    ),
    (found) => {
      if (found._tag === "Right" && found.right === expectedColumns[dialect]) {
        return Effect.succeed({ storage, dialect, raw })
      }
      return Effect.as(
        Effect.logWarning(
          `${tableName} is not the messages table this version writes (columns ` +
            `${found._tag === "Right" ? found.right : "unreadable"}); ${otherwise}`
        ),
        undefined
      )
    }
  )
}

const writer = (
  sharding: Context.Tag.Service<Sharding>,
  storage: { readonly prefix: string; readonly pollMillis: number },
  dialect: "pg" | "sqlite",
  raw: SqlClient.SqlClient
): OccurrenceWriter => {
  const messages = raw(`${storage.prefix}_messages`)
  const pollMillis = storage.pollMillis

  /**
   * SQLite: the reminder rows and the occurrences as two multi-row statements of `UPSERT_CHUNK` rows, in the caller's
   * transaction.
   */
  const sqliteStatements = (
    kind: AnyKindWire,
    part: ReadonlyArray<{ readonly entry: Registered; readonly message: MessageRow }>,
    reminders: Pick<ReminderSql, "upsertStatement">
  ): Effect.Effect<void, SqlError> =>
    Effect.zipRight(
      reminders.upsertStatement(
        kind.name,
        part.map(({ entry }) => entry)
      ),
      Effect.asVoid(
        raw`INSERT INTO ${messages} ${raw.insert(part.map(({ message }) => ({ ...message })))}
          ON CONFLICT (message_id) DO NOTHING`
      )
    )

  /**
   * PostgreSQL: one statement, atomic by itself, whose only parameter that grows is one JSON array of the
   * registrations (binding thousands of parameters costs more than the inserts): the reminder rows are upserted from
   * it in a data-modifying CTE, the occurrences inserted from it.
   */
  const pgStatement = (
    kind: AnyKindWire,
    part: ReadonlyArray<{ readonly entry: Registered; readonly message: MessageRow }>,
    headers: string,
    reminders: Pick<ReminderSql, "upsertSelect">
  ): Effect.Effect<void, SqlError> => {
    const input = JSON.stringify(
      part.map(({ entry: { key, row }, message }) => ({
        ...rowColumns(key, row),
        id: message.id,
        message_id: message.message_id,
        shard_id: message.shard_id,
        payload: message.payload
      }))
    )
    const upsert = reminders.upsertSelect(
      raw`SELECT ${kind.name}::text, grain_key, name, generation, message, next_due, period_millis, cron, time_zone
        FROM input`
    )
    return Effect.asVoid(raw`WITH input AS (
        SELECT * FROM json_to_recordset(${input}::json) AS x(grain_key text, name text, generation text, message text,
          next_due bigint, period_millis bigint, cron text, time_zone text, id bigint, message_id text, shard_id text,
          payload text)
      ), reminders AS (${upsert})
      INSERT INTO ${messages} (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload, headers, trace_id,
        span_id, sampled, request_id, reply_id, deliver_at)
      SELECT id, message_id, shard_id, ${kind.entity.type}::text, grain_key, 0, ${REMIND}::text, payload,
        ${headers}::text, NULL::text, NULL::text, NULL::boolean, id, NULL::bigint, next_due
      FROM input
      ON CONFLICT (message_id) DO NOTHING`)
  }

  /** The payload encoder of each kind's `Remind` RPC (the schema a send encodes with). */
  const encoders = new WeakMap<AnyKindWire, (delivery: ReminderDelivery) => unknown>()
  const encoderOf = (kind: AnyKindWire) => {
    let encode = encoders.get(kind)
    if (encode === undefined) {
      const rpc = kind.entity.protocol.requests.get(REMIND)
      const schema = (rpc?.payloadSchema ?? ReminderDelivery) as Schema.Schema<ReminderDelivery, unknown>
      encode = Schema.encodeSync(schema)
      encoders.set(kind, encode)
    }
    return encode
  }

  /** The rows, and whether each one's shard is this runner's. */
  const build = (
    kind: AnyKindWire,
    occurrences: ReadonlyArray<{ readonly key: string; readonly delivery: ReminderDelivery }>
  ) =>
    Effect.gen(function* () {
      const hosted = localKind(sharding, kind.name) !== undefined
      const encode = encoderOf(kind)
      const headers = JSON.stringify(yield* FiberRef.get(RpcClient.currentHeaders))
      const result: Array<MessageRow> = new Array(occurrences.length)
      const local: Array<boolean> = new Array(occurrences.length)
      for (let i = 0; i < occurrences.length; i++) {
        const { delivery, key } = occurrences[i]!
        const entityId = EntityId.make(key)
        const shardId = sharding.getShardId(entityId, kind.entity.getShardGroup(entityId))
        local[i] = sharding.hasShardId(shardId)
        if (!hosted && local[i]) {
          return yield* new UnknownClusterGrainKind({
            kind: kind.name,
            key,
            detail: "this runner owns the grain's shard and no ClusterGrain.layer on it registers the kind"
          })
        }
        result[i] = yield* messageRow(sharding, {
          entityType: kind.entity.type,
          entityId: key,
          shardId: shardId.toString(),
          tag: REMIND,
          primaryKey: PrimaryKey.value(delivery),
          payload: encode(delivery),
          headers,
          deliverAt: delivery.due
        })
      }
      return { rows: result as ReadonlyArray<MessageRow>, local: local as ReadonlyArray<boolean>, headers }
    })

  const wakeAt = wakeFor(sharding, pollMillis)
  /** `wakeFor` for the earliest of `written` on this runner's shards. */
  const wake = (written: ReadonlyArray<MessageRow>, local: ReadonlyArray<boolean>) => {
    let earliest = Number.POSITIVE_INFINITY
    for (let i = 0; i < written.length; i++) if (local[i]) earliest = Math.min(earliest, written[i]!.deliver_at)
    return earliest === Number.POSITIVE_INFINITY ? Effect.void : wakeAt(earliest)
  }

  const register: OccurrenceWriter["register"] = (kind, registered, reminders) =>
    Effect.gen(function* () {
      const {
        headers,
        local,
        rows: written
      } = yield* build(
        kind,
        registered.map(({ key, row }) => ({
          key,
          // Checked when the row was prepared: no need to check it again.
          delivery: new ReminderDelivery({ name: row.name, generation: row.generation, due: row.nextDue }, true)
        }))
      )
      const all = registered.map((entry, i) => ({ entry, message: written[i]! }))
      const statements =
        dialect === "pg"
          ? chunks(all, PG_CHUNK).map((part) => pgStatement(kind, part, headers, reminders))
          : chunks(all).map((part) => sqliteStatements(kind, part, reminders))
      yield* statements.length === 1 && dialect === "pg"
        ? statements[0]!
        : raw.withTransaction(Effect.all(statements, { discard: true }))
      yield* wake(written, local)
    })

  const writeIf: OccurrenceWriter["writeIf"] = (kind, key, delivery, condition, guarded = [], commit = "durable") =>
    Effect.gen(function* () {
      const built = delivery === undefined ? undefined : yield* build(kind, [{ key, delivery }])
      const message = built?.rows[0]
      let written: boolean
      if (dialect === "pg") {
        const inserted =
          built === undefined || message === undefined
            ? []
            : [
                raw`inserted AS (
                  INSERT INTO ${messages} (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload,
                    headers, trace_id, span_id, sampled, request_id, reply_id, deliver_at)
                  SELECT ${message.id}::bigint, ${message.message_id}::text, ${message.shard_id}::text,
                    ${message.entity_type}::text, ${message.entity_id}::text, 0, ${REMIND}::text,
                    ${message.payload}::text, ${built.headers}::text, NULL::text, NULL::text, NULL::boolean,
                    ${message.request_id}::bigint, NULL::bigint, ${message.deliver_at}::bigint
                  FROM guard
                  ON CONFLICT (message_id) DO NOTHING
                  RETURNING id
                )`
              ]
        const guard = raw`EXISTS (SELECT 1 FROM guard)`
        const parts = [
          raw`guard AS (${condition})`,
          ...inserted,
          ...guarded.map((statement, i) => raw`${raw(`guarded_${i}`)} AS (${statement(guard, true)})`),
          // Local to the statement's transaction (or the caller's, whose commit it then is).
          ...(commit === "beforeReply"
            ? [raw`deferred AS (SELECT set_config('synchronous_commit', 'off', true) AS v)`]
            : [])
        ]
        const selected = commit === "beforeReply" ? raw`, (SELECT v FROM deferred) AS deferred` : raw``
        written = yield* Effect.map(
          raw<{
            readonly written: unknown
          }>`WITH ${raw.csv(parts)} SELECT (SELECT count(*) FROM guard) AS written${selected}`,
          (result) => Number(result[0]?.written ?? 0) > 0
        )
      } else {
        written = yield* raw.withTransaction(
          Effect.gen(function* () {
            if ((yield* condition).length === 0) return false
            if (message !== undefined) {
              yield* raw`INSERT INTO ${messages} ${raw.insert({ ...message })} ON CONFLICT (message_id) DO NOTHING`
            }
            yield* unguarded(raw, guarded)
            return true
          })
        )
      }
      return { written, wake: written && built !== undefined ? wake(built.rows, built.local) : Effect.void }
    })

  const replace: OccurrenceWriter["replace"] = (kind, entry, expected, reminders) =>
    Effect.gen(function* () {
      const { key, row } = entry
      const delivery = new ReminderDelivery({ name: row.name, generation: row.generation, due: row.nextDue }, true)
      const { wake, written } = yield* writeIf(
        kind,
        key,
        delivery,
        reminders.replaceStatement(kind.name, key, row, expected)
      )
      yield* wake
      return written
    })

  return { register, replace, writeIf }
}
