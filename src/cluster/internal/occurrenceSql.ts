/**
 * Messages written straight into @effect/cluster's messages table (`<prefix>_messages`) by tickwork: a cluster cron's
 * next instant, in the instant's own transaction (`cronMessages.ts`), instead of one `Sharding` send (routing, then one
 * `MessageStorage.saveRequest`).
 *
 * Each is the row @effect/cluster 0.60's `SqlMessageStorage.saveRequest` writes for a request sent with `discard`: a
 * fresh request id from the runner's Snowflake generator, the shard of the entity id, the encoded payload, the request
 * headers, the primary key `<entity type>/<entity id>/<tag>/<key>` as `message_id` (its SHA-256 when longer than 255
 * characters) and the delivery time in `deliver_at`. It is used only where it is sure to write the runner's own
 * message storage: a runner built by `ClusterRunner` (it records its storage in `runnerStorages`) whose `SqlClient` is
 * the writer's own, on SQLite or PostgreSQL, and whose messages table has exactly the columns of that format (read
 * once: a table another @effect/cluster version made is not written to blindly).
 *
 * A send also wakes the runner that owns the entity's shard (a storage read, then local arming's scan). Here the
 * rows are committed first, then this runner's read loop is opened (`wakeFor`) when one of its own shards has a
 * message due soon.
 *
 * @internal
 */
import type { Sharding } from "@effect/cluster/Sharding"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
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
