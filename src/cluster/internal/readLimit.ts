/**
 * Paged reads of a backlog: a runner reads at most `limit` persisted requests that are not answered yet.
 *
 * @effect/cluster 0.60.2's storage read loop reads every due message of the runner's shards in one statement and
 * hands each to its entity at once. After a full restart over a backlog (100,000 overdue reminders on as many grains)
 * that is 100,000 entities and fibers made in one go: the runner's CPU goes to garbage collection, it misses its shard
 * lock refreshes, its entities are interrupted, and the messages it had marked as read wait ten minutes for another
 * read (`last_read`). Here the read is wrapped: it claims at most the room left under `limit` (the oldest first, as
 * @effect/cluster orders them), marking only those as read, and loads them by id through @effect/cluster's own
 * `unprocessedMessagesById`. Each request handed out is counted until its final reply is saved (its `respond` is
 * wrapped); a read that filled its room, or found none, asks for the next one when half of `limit` is free again
 * (`Sharding.pollStorage`). So a backlog is delivered in pages, at the rate the runner answers.
 *
 * A request whose answer never comes through this runner's `respond` (its entity was closing, its shard moved, its
 * handler runs for long) stops counting after `STALE_MILLIS`, so it delays the pages after it, never stops them; and
 * its mark is taken off (`last_read` cleared, if it is still unprocessed), so that whichever runner holds its shard
 * reads it again at its next read instead of ten minutes later (a claim can race a shard's move: the runner that
 * claimed it drops it, the shard's new owner cleared the marks before the claim). Read again here while its handler
 * still runs, @effect/cluster skips it; a request released once is not counted again when claimed again.
 * Storage stays the source of truth: a message claimed and not delivered is read again as @effect/cluster reads any
 * message it marked.
 *
 * The same `respond` wrapper saves final replies together (`make`): @effect/cluster saves each in a transaction of
 * its own, one durable commit per request; replies answered while one transaction of them is written share the next.
 * It applies with or without a limit.
 *
 * @internal
 */
import { type MalformedMessage, PersistenceError } from "@effect/cluster/ClusterError"
import * as Message from "@effect/cluster/Message"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as Reply from "@effect/cluster/Reply"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as GroupCommit from "./groupCommit.js"
import { booleanLiteral } from "./retention.js"

/** How long a request handed out counts against the limit when no final reply comes for it. */
export const STALE_MILLIS = 30_000

/** How long a released request is remembered (not counted when claimed again): @effect/cluster's read mark expiry. */
const RELEASE_MEMORY_MILLIS = 10 * 60_000

/**
 * What a read claims: the ids of at most `limit` due, unanswered messages of `shards` not read in the last ten
 * minutes, the oldest first, each marked as read.
 */
export type ClaimQuery = (
  shards: ReadonlyArray<string>,
  now: number,
  limit: number
) => Effect.Effect<ReadonlyArray<Snowflake.Snowflake>, SqlError>

/** Takes the read mark off the messages `ids` that are still unprocessed. */
export type ReleaseQuery = (ids: ReadonlyArray<string>) => Effect.Effect<void, SqlError>

/** The read limit of one runner. */
export interface ReadLimit {
  /** `storage` whose reads of unprocessed messages claim at most the room left under the limit. */
  readonly wrap: (storage: MessageStorage.MessageStorage["Type"]) => MessageStorage.MessageStorage["Type"]
  /** Gives the read limit the runner's read trigger (`Sharding.pollStorage`), once Sharding exists. */
  readonly attach: (poll: Effect.Effect<void>) => void
  /** How many requests handed out are counted now (tests). */
  readonly inFlight: () => number
}

/** A final reply to save: the request's own `respond` and the reply. */
interface Answer {
  readonly respond: Message.IncomingRequest<any>["respond"]
  readonly reply: Reply.ReplyWithContext<any>
}

/** Final replies saved in one transaction at most (PostgreSQL: each is a savepoint, a subtransaction; 64 overflow). */
const REPLY_BATCH = 32

class ReadLimitImpl implements ReadLimit {
  /** The requests handed out and not answered: request id → when handed out (insertion order is time order). */
  private readonly handed = new Map<string, number>()
  /** Requests that went stale and were released: request id → when; not counted when claimed again. */
  private readonly released = new Map<string, number>()
  /** A read filled its room (or had none): read again once half of the limit is free. */
  private wanted = false
  private poll: Effect.Effect<void> = Effect.void

  constructor(
    /** Undefined: no limit (each read takes everything due, as @effect/cluster's own read does). */
    private readonly limit: number | undefined,
    private readonly claim: ClaimQuery,
    private readonly release: ReleaseQuery,
    private readonly replies: GroupCommit.GroupCommit<Answer, void, MalformedMessage | PersistenceError> | undefined
  ) {}

  readonly attach = (poll: Effect.Effect<void>): void => {
    this.poll = poll
  }

  readonly inFlight = (): number => this.handed.size

  readonly wrap = (storage: MessageStorage.MessageStorage["Type"]): MessageStorage.MessageStorage["Type"] => ({
    ...storage,
    unprocessedMessages: (shardIds) => {
      const limit = this.limit
      if (limit === undefined) {
        return Effect.map(storage.unprocessedMessages(shardIds), (messages) =>
          messages.map((message) => this.track(message, 0))
        )
      }
      const shards = Array.from(shardIds, String)
      if (shards.length === 0) return Effect.succeed([])
      return Effect.flatMap(
        Effect.clockWith((clock) => clock.currentTimeMillis),
        (now) => {
          const stale = this.dropStale(now)
          const room = limit - this.handed.size
          if (room <= 0) {
            this.wanted = true
            return Effect.succeed([])
          }
          // A release that fails leaves those marks to expire (ten minutes), as they would without it.
          const released =
            stale.length === 0
              ? Effect.void
              : Effect.catchAllCause(this.release(stale), (cause) =>
                  Effect.logDebug("read limit: could not release stale requests' read marks", cause)
                )
          return Effect.zipRight(released, this.claim(shards, now, room)).pipe(
            PersistenceError.refail,
            Effect.flatMap((ids) => {
              this.wanted = ids.length >= room
              return ids.length === 0 ? Effect.succeed([]) : storage.unprocessedMessagesById(ids)
            }),
            Effect.map((messages) => messages.map((message) => this.track(message, now)))
          )
        }
      )
    }
  })

  /**
   * A request handed out, its `respond` wrapped: its final reply is saved with others answered meanwhile (one
   * transaction), and, under a limit, it counts until then.
   */
  private track(message: Message.Incoming<any>, now: number): Message.Incoming<any> {
    if (message._tag !== "IncomingRequest") return message
    const key = String(message.envelope.requestId)
    if (this.limit !== undefined && !this.released.delete(key)) {
      this.handed.delete(key)
      this.handed.set(key, now)
    }
    const respond = message.respond
    const replies = this.replies
    const save = replies === undefined ? respond : (reply: Answer["reply"]) => replies.submit({ respond, reply })
    return new Message.IncomingRequest({
      envelope: message.envelope,
      lastSentReply: message.lastSentReply,
      respond: (reply) =>
        reply.reply._tag === "WithExit" ? Effect.ensuring(save(reply), this.answered(key)) : respond(reply)
    })
  }

  private answered(key: string): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (!this.handed.delete(key) || !this.wanted || this.handed.size > this.limit! / 2) return Effect.void
      this.wanted = false
      return this.poll
    })
  }

  /**
   * Stops counting requests handed out `STALE_MILLIS` ago or earlier, and returns their ids (to release). Forgets
   * releases older than ten minutes (their marks would have expired anyway).
   */
  private dropStale(now: number): Array<string> {
    for (const [key, at] of this.released) {
      if (now - at < RELEASE_MEMORY_MILLIS) break
      this.released.delete(key)
    }
    const stale: Array<string> = []
    for (const [key, at] of this.handed) {
      if (now - at < STALE_MILLIS) break
      this.handed.delete(key)
      this.released.set(key, now)
      stale.push(key)
    }
    return stale
  }
}

/** A read limit over any claim and release queries (tests give their own), saving each final reply alone. */
export const makeWith = (limit: number | undefined, claim: ClaimQuery, release: ReleaseQuery): ReadLimit =>
  new ReadLimitImpl(limit, claim, release, undefined)

/**
 * The claim on @effect/cluster's `<prefix>_messages`: the conditions of its own read (unprocessed, no final or
 * unacknowledged reply, not read in the last ten minutes, due), ordered as it orders them (`rowid`), with a limit.
 */
export const claimQuery = (sql: SqlClient.SqlClient, prefix: string): ClaimQuery => {
  const messages = sql(`${prefix}_messages`)
  const replies = sql(`${prefix}_replies`)
  const no = booleanLiteral(sql, false)
  const pending = (shards: ReadonlyArray<string>, now: number) =>
    sql`${sql.in("shard_id", shards)}
      AND processed = ${no}
      AND NOT EXISTS (
        SELECT 1 FROM ${replies} r WHERE r.request_id = c.request_id AND (r.kind = 0 OR r.acked = ${no})
      )
      AND (deliver_at IS NULL OR deliver_at <= ${now})`
  const ids = (rows: ReadonlyArray<{ readonly id: string | bigint | number }>) =>
    rows.map((row) => Snowflake.Snowflake(typeof row.id === "number" ? BigInt(row.id) : row.id))
  return sql.onDialectOrElse({
    pg: () => (shards, now, limit) =>
      Effect.map(
        // The claim in a materialized CTE, evaluated once: as a subquery of UPDATE ... FROM it can be scanned again
        // for each row joined, and each scan skips the rows this statement already updated, so its LIMIT takes the
        // next ones (seen: 10 rows claimed under a limit of 4).
        sql<{ readonly id: string }>`
          WITH claimed AS MATERIALIZED (
            SELECT c.id FROM ${messages} c
            WHERE ${pending(shards, now)}
            AND (c.last_read IS NULL OR c.last_read < NOW() - INTERVAL '10 minutes')
            ORDER BY c.rowid LIMIT ${limit}
            FOR UPDATE
          )
          UPDATE ${messages} m SET last_read = NOW()
          FROM claimed
          WHERE m.id = claimed.id
          RETURNING m.id`,
        ids
      ),
    orElse: () => (shards, now, limit) =>
      Effect.map(
        sql<{ readonly id: bigint }>`
          UPDATE ${messages} SET last_read = CURRENT_TIMESTAMP
          WHERE id IN (
            SELECT c.id FROM ${messages} c
            WHERE ${pending(shards, now)}
            AND (c.last_read IS NULL OR c.last_read < DATETIME('now', '-10 minute'))
            ORDER BY +c.id LIMIT ${limit}
          )
          RETURNING id`,
        ids
      ).pipe(Effect.provideService(SqlClient.SafeIntegers, true))
  })
}

/** The release on `<prefix>_messages`: the read marks of `ids` cleared where still unprocessed. */
export const releaseQuery =
  (sql: SqlClient.SqlClient, prefix: string): ReleaseQuery =>
  (ids) =>
    sql`UPDATE ${sql(`${prefix}_messages`)} SET last_read = NULL
      WHERE ${sql.in("id", ids)} AND processed = ${booleanLiteral(sql, false)}`.pipe(Effect.asVoid)

/**
 * The read limit of a runner over `sql`, for @effect/cluster's tables under `prefix` (`limit` undefined: none), whose
 * final replies are saved together: the replies of requests answered while a transaction of replies is written go
 * in the next one (up to `REPLY_BATCH`), one commit for all, each with @effect/cluster's own `saveReply` statements.
 * Each caller resumes when its transaction committed; a failed transaction saves its replies again one by one, so
 * a reply storage refuses fails alone (`groupCommit.ts`). A client waiting on this runner for a reply is told when its
 * statements ran, before the commit: if the commit then fails and so does saving it alone, the request stays
 * unprocessed and is delivered again (at least once, as any unanswered request).
 */
export const make = (
  sql: SqlClient.SqlClient,
  prefix: string,
  limit: number | undefined
): Effect.Effect<ReadLimit, never, Scope.Scope> =>
  Effect.map(
    GroupCommit.make<Answer, void, MalformedMessage | PersistenceError, never>({
      maxBatch: REPLY_BATCH,
      write: (answers) =>
        answers.length === 1
          ? Effect.as(answers[0]!.respond(answers[0]!.reply), [undefined])
          : Effect.as(
              sql.withTransaction(Effect.forEach(answers, (answer) => answer.respond(answer.reply), { discard: true })),
              answers.map(() => undefined)
            ).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(new PersistenceError({ cause: error })))),
      closed: (when) =>
        new PersistenceError({
          cause: `the runner is closing: the reply was ${when === "queued" ? "not" : "maybe"} saved`
        })
    }),
    (replies) => {
      const raw = sql.withoutTransforms()
      return new ReadLimitImpl(limit, claimQuery(raw, prefix), releaseQuery(raw, prefix), replies)
    }
  )
