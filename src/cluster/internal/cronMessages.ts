/**
 * A cluster cron's next instant written in the instant's own transaction: the `fire` request's row inserted straight
 * into @effect/cluster's messages table (`<prefix>_messages`), as registration writes reminder occurrences
 * (`occurrenceSql.ts`, whose checks this shares: a runner built by `ClusterRunner`, over the cron's own `SqlClient`,
 * on SQLite or PostgreSQL, with a messages table of exactly the known columns).
 *
 * The row is the one `SqlMessageStorage.saveRequest` writes for the request a send with `discard` makes: a fresh
 * request id from the runner's Snowflake generator, the shard of the entity id (the instant), the payload encoded
 * with the `fire` RPC's schema, the fiber's request headers, the primary key `<entity type>/<instant>/fire/<generation>`
 * as `message_id`, the payload's delivery time (`cron.READ_AHEAD_MILLIS` before the instant) as `deliver_at`, and
 * `ON CONFLICT (message_id) DO NOTHING` for a message stored twice.
 * `test/cluster/ClusterScheduler.test.ts` compares it column by column with the one `saveRequest` writes.
 *
 * Only a message for one of this runner's shards is written so; after the commit, this runner's read loop is opened
 * (`Sharding.pollStorage`, what a local send does) when the instant is near, and its arming scan arms the instant:
 * once for everything written within `WAKE_AFTER_MILLIS` (`occurrenceSql.wakeFor`, shared with reminder occurrences:
 * ten every-second schedules made ten reads and arming scans a second, in the middle of the instants, where one does). A message for another runner's
 * shard is sent through `Sharding` after the commit, as before, so that runner is told at once.
 *
 * @internal
 */
import * as DeliverAt from "@effect/cluster/DeliverAt"
import * as EntityId from "@effect/cluster/EntityId"
import type { Sharding } from "@effect/cluster/Sharding"
import * as RpcClient from "@effect/rpc/RpcClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as PrimaryKey from "effect/PrimaryKey"
import * as Schema from "effect/Schema"
import { messageRow, ownMessageStorage, wakeFor } from "./occurrenceSql.js"

/** What the writer needs of the cron's entity (`cron.makeEntity`). */
export interface FireEntity {
  readonly type: string
  readonly getShardGroup: (entityId: EntityId.EntityId) => string
  readonly protocol: { readonly requests: ReadonlyMap<string, { readonly payloadSchema: Schema.Schema.Any }> }
}

/** The `fire` request's payload as the writer sees it (`cron.FirePayload`). */
export interface FireLike {
  readonly instant: number
}

export interface FireWriter {
  /**
   * The statement that writes the message of `payload`, for entity id `entityId`, when its shard is this runner's
   * (to run in the instant's transaction, alone or as part of another statement); undefined when the shard is another
   * runner's (send it).
   */
  readonly statement: (entityId: string, payload: FireLike) => Effect.Effect<Statement.Statement<unknown> | undefined>
  /**
   * After the commit of a written message delivered at `deliverAt`: `occurrenceSql.wakeFor`.
   */
  readonly wake: (deliverAt: number) => Effect.Effect<void>
}

const FIRE = "fire"

/** The writer for `entity`'s fire messages on the runner behind `sharding`; undefined where it cannot be used. */
export const make = (
  sharding: Context.Tag.Service<Sharding>,
  sql: SqlClient.SqlClient,
  entity: FireEntity
): Effect.Effect<FireWriter | undefined> =>
  Effect.map(ownMessageStorage(sharding, sql, "cluster crons send each instant's message instead"), (own) => {
    if (own === undefined) return undefined
    const raw = own.raw
    const messages = raw(`${own.storage.prefix}_messages`)
    const schema = entity.protocol.requests.get(FIRE)?.payloadSchema
    if (schema === undefined) return undefined
    const encode = Schema.encodeSync(schema as Schema.Schema<unknown, unknown>)
    const statement = (entityId: string, payload: FireLike) =>
      Effect.gen(function* () {
        const id = EntityId.make(entityId)
        const shardId = sharding.getShardId(id, entity.getShardGroup(id))
        if (!sharding.hasShardId(shardId)) return undefined
        const row = yield* messageRow(sharding, {
          entityType: entity.type,
          entityId,
          shardId: shardId.toString(),
          tag: FIRE,
          primaryKey: PrimaryKey.value(payload as unknown as PrimaryKey.PrimaryKey),
          payload: encode(payload),
          headers: JSON.stringify(yield* FiberRef.get(RpcClient.currentHeaders)),
          deliverAt: DeliverAt.toMillis(payload) ?? payload.instant
        })
        return raw`INSERT INTO ${messages} ${raw.insert({ ...row })} ON CONFLICT (message_id) DO NOTHING` as Statement.Statement<unknown>
      })
    const wake = wakeFor(sharding, own.storage.pollMillis)
    return { statement, wake }
  })
