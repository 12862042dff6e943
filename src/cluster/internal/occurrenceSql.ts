/**
 * Reminder registration's write path: the reminder rows and their first occurrences in one statement or transaction,
 * the occurrences inserted straight into @effect/cluster's messages table (`<prefix>_messages`) as many rows per
 * statement, instead of one `Sharding` send (routing, then one `MessageStorage.saveRequest`) per occurrence.
 *
 * Each occurrence is the row @effect/cluster 0.60's `SqlMessageStorage.saveRequest` writes for the grain's `Remind`
 * request sent with `discard`: a fresh request id from the runner's Snowflake generator, the shard of the grain's
 * entity id, the payload encoded with the `Remind` RPC's own payload schema, the request headers of the fiber
 * (`RpcClient.currentHeaders`), the primary key `<entity type>/<entity id>/Remind/<ReminderDelivery's key>` as
 * `message_id` (its SHA-256 when longer than 255 characters), the delivery time in `deliver_at`, and the same conflict
 * handling (`ON CONFLICT (message_id) DO NOTHING` on PostgreSQL, `INSERT OR IGNORE` on SQLite). No trace context is
 * written: an occurrence runs in a root span of its own anyway. `test/cluster/fastRegistration.test.ts` compares
 * these rows column by column with the ones `saveRequest` writes, so a change of format fails there.
 *
 * It is used only where it is sure to write the runner's own message storage: a runner built by `ClusterRunner` (it
 * records its storage in `runnerStorages`) whose `SqlClient` is the reminders' own, on SQLite or PostgreSQL.
 * Elsewhere registration sends each occurrence through the cluster as before.
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
import { chunks, type ReminderRow } from "./reminderSql.js"
import { runnerStorages } from "./runner.js"

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

const messageIdOf = (primaryKey: string): Effect.Effect<string> =>
  primaryKey.length <= MESSAGE_ID_WIDTH
    ? Effect.succeed(primaryKey)
    : Effect.map(
        Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", encoder.encode(primaryKey))),
        (digest) => Encoding.encodeHex(new Uint8Array(digest))
      )

/** One reminder of a registration: the grain's key and the row to write. */
export interface Registered {
  readonly key: string
  readonly row: ReminderRow
}

export interface OccurrenceWriter {
  /**
   * Writes the reminder rows (`upsert`, a multi-row upsert of at most `UPSERT_CHUNK` rows) and each one's first
   * occurrence (due at its `nextDue`), all or none; then wakes this runner's read loop if one of its shards has an
   * occurrence due within a poll interval. Fails with `UnknownClusterGrainKind`, writing nothing, when this runner
   * owns a grain's shard and does not host the kind (the check a send makes).
   */
  readonly register: (
    kind: AnyKindWire,
    registered: ReadonlyArray<Registered>,
    upsert: (kind: string, rows: ReadonlyArray<Registered>) => Statement.Statement<unknown>
  ) => Effect.Effect<void, SqlError | UnknownClusterGrainKind>
  /** The message rows of `occurrences` of grains of `kind` (what `register` inserts). */
  readonly rows: (
    kind: AnyKindWire,
    occurrences: ReadonlyArray<{ readonly key: string; readonly delivery: ReminderDelivery }>
  ) => Effect.Effect<ReadonlyArray<MessageRow>, UnknownClusterGrainKind>
}

/**
 * The writer for the runner behind `sharding`, when registration may write its message storage directly: the
 * runner was built by `ClusterRunner`, over `sql` itself, on SQLite or PostgreSQL. Undefined otherwise.
 */
export const make = (
  sharding: Context.Tag.Service<Sharding>,
  sql: SqlClient.SqlClient
): OccurrenceWriter | undefined => {
  const storage = runnerStorages.get(sharding)
  if (storage === undefined || storage.sql !== sql) return undefined
  const dialect = sql.onDialectOrElse({
    pg: () => "pg" as const,
    sqlite: () => "sqlite" as const,
    orElse: () => undefined
  })
  if (dialect === undefined) return undefined
  const raw = sql.withoutTransforms()
  const messages = raw(`${storage.prefix}_messages`)
  const pollMillis = storage.pollMillis

  const insertStatement = (rows: ReadonlyArray<MessageRow>): Statement.Statement<unknown> =>
    dialect === "pg"
      ? raw`INSERT INTO ${messages} ${raw.insert(rows as unknown as Array<Record<string, unknown>>)}
          ON CONFLICT (message_id) DO NOTHING`
      : raw`INSERT OR IGNORE INTO ${messages} ${raw.insert(rows as unknown as Array<Record<string, unknown>>)}`

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
        const id = String(yield* sharding.getSnowflake)
        result[i] = {
          id,
          message_id: yield* messageIdOf(`${kind.entity.type}/${key}/${REMIND}/${PrimaryKey.value(delivery)}`),
          shard_id: shardId.toString(),
          entity_type: kind.entity.type,
          entity_id: key,
          kind: 0,
          tag: REMIND,
          payload: JSON.stringify(encode(delivery)),
          headers,
          trace_id: null,
          span_id: null,
          sampled: null,
          request_id: id,
          reply_id: null,
          deliver_at: delivery.due
        }
      }
      return { rows: result as ReadonlyArray<MessageRow>, local: local as ReadonlyArray<boolean> }
    })

  const register: OccurrenceWriter["register"] = (kind, registered, upsert) =>
    Effect.gen(function* () {
      const { local, rows: written } = yield* build(
        kind,
        registered.map(({ key, row }) => ({
          key,
          delivery: new ReminderDelivery({ name: row.name, generation: row.generation, due: row.nextDue })
        }))
      )
      const parts = chunks(registered.map((entry, i) => ({ entry, message: written[i]! })))
      const statements = parts.map((part) => {
        const reminders = upsert(
          kind.name,
          part.map(({ entry }) => entry)
        )
        const occurrences = insertStatement(part.map(({ message }) => message))
        // PostgreSQL: one statement per chunk, atomic by itself. SQLite has no data-modifying CTE: two statements.
        return dialect === "pg"
          ? Effect.asVoid(raw`WITH reminders AS (${reminders}) ${occurrences}`)
          : Effect.zipRight(reminders, Effect.asVoid(occurrences))
      })
      yield* statements.length === 1 && dialect === "pg"
        ? statements[0]!
        : raw.withTransaction(Effect.all(statements, { discard: true }))
      const now = yield* Clock.currentTimeMillis
      const soon = now + pollMillis
      for (let i = 0; i < written.length; i++) {
        if (local[i] && written[i]!.deliver_at < soon) {
          yield* sharding.pollStorage
          return
        }
      }
    })

  return { register, rows: (kind, occurrences) => Effect.map(build(kind, occurrences), ({ rows }) => rows) }
}
