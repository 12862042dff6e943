/**
 * The read limit (src/cluster/internal/readLimit.ts) over a scripted claim and storage: what a read claims, when the
 * next read is asked for, what counts as an answer. The conformance suite runs it on SQLite and PostgreSQL.
 */
import { PersistenceError } from "@effect/cluster/ClusterError"
import * as Message from "@effect/cluster/Message"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as Reply from "@effect/cluster/Reply"
import * as ShardId from "@effect/cluster/ShardId"
import * as Snowflake from "@effect/cluster/Snowflake"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as ReadLimit from "../../src/cluster/internal/readLimit.js"

/** A request as storage hands it out; its answers are recorded in `answered`. */
const request = (id: bigint, answered: Array<string>) =>
  new Message.IncomingRequest({
    envelope: {
      _tag: "Request",
      requestId: Snowflake.Snowflake(id)
    } as unknown as Message.IncomingRequest<any>["envelope"],
    lastSentReply: { _tag: "None" } as any,
    respond: (reply) => Effect.sync(() => answered.push(`${id}:${reply.reply._tag}`))
  })

const reply = (tag: "WithExit" | "Chunk") => ({ reply: { _tag: tag } }) as unknown as Reply.ReplyWithContext<any>

/**
 * A read limit of `limit` over a backlog of `backlog` requests (ids 1, 2, ...): each claim takes the oldest ones not
 * claimed yet, up to its limit. `claims` records each claim's limit, `polls` each read asked for.
 */
const scripted = (limit: number, backlog: number) => {
  let next = 1
  const claims: Array<number> = []
  const answered: Array<string> = []
  const released: Array<ReadonlyArray<string>> = []
  /** Ids released and not claimed yet: claimed again first (they are the oldest). */
  const again: Array<string> = []
  let polls = 0
  const readLimit = ReadLimit.makeWith(
    limit,
    (_shards, _now, room) =>
      Effect.sync(() => {
        claims.push(room)
        const ids: Array<Snowflake.Snowflake> = []
        while (ids.length < room && again.length > 0) ids.push(Snowflake.Snowflake(again.shift()!))
        while (ids.length < room && next <= backlog) ids.push(Snowflake.Snowflake(BigInt(next++)))
        return ids
      }),
    (ids) =>
      Effect.sync(() => {
        released.push(ids)
        again.push(...ids)
      })
  )
  readLimit.attach(Effect.sync(() => polls++))
  const storage = readLimit.wrap({
    unprocessedMessagesById: (ids: Iterable<Snowflake.Snowflake>) =>
      Effect.succeed(Array.from(ids, (id) => request(id, answered)))
  } as unknown as MessageStorage.MessageStorage["Type"])
  const read = storage.unprocessedMessages([ShardId.make("default", 1)])
  return { readLimit, storage, read, claims, answered, released, polls: () => polls }
}

describe("read limit", () => {
  it.effect("a read claims the room left; the next is asked for once half of the limit is answered", () =>
    Effect.gen(function* () {
      const { readLimit, read, claims, answered, polls } = scripted(4, 10)
      const first = yield* read
      assert.strictEqual(first.length, 4)
      assert.strictEqual(readLimit.inFlight(), 4)
      // Nothing answered: a read claims nothing and asks storage for nothing.
      assert.deepStrictEqual(yield* read, [])
      assert.deepStrictEqual(claims, [4])
      // One answer frees room, not yet half the limit: no read asked for.
      yield* (first[0] as Message.IncomingRequest<any>).respond(reply("WithExit"))
      assert.strictEqual(polls(), 0)
      // A second answer: half free, one read asked for (once).
      yield* (first[1] as Message.IncomingRequest<any>).respond(reply("WithExit"))
      assert.strictEqual(polls(), 1)
      assert.deepStrictEqual(answered, ["1:WithExit", "2:WithExit"])
      const second = yield* read
      assert.deepStrictEqual(
        second.map((message) => String(message.envelope.requestId)),
        ["5", "6"]
      )
      yield* (first[2] as Message.IncomingRequest<any>).respond(reply("WithExit"))
      assert.strictEqual(polls(), 1, "a full page again: the next read waits for half of the limit")
    })
  )

  it.effect("a read that finds less than its room asks for no other", () =>
    Effect.gen(function* () {
      const { read, claims, polls } = scripted(4, 3)
      const page = yield* read
      assert.strictEqual(page.length, 3)
      for (const message of page) yield* (message as Message.IncomingRequest<any>).respond(reply("WithExit"))
      assert.strictEqual(polls(), 0)
      assert.deepStrictEqual(claims, [4])
    })
  )

  it.effect("a chunk of a streamed reply is no answer; the final reply is", () =>
    Effect.gen(function* () {
      const { readLimit, read, answered } = scripted(2, 2)
      const [first] = yield* read
      const message = first as Message.IncomingRequest<any>
      yield* message.respond(reply("Chunk"))
      assert.strictEqual(readLimit.inFlight(), 2)
      yield* message.respond(reply("WithExit"))
      assert.strictEqual(readLimit.inFlight(), 1)
      assert.deepStrictEqual(answered, ["1:Chunk", "1:WithExit"])
    })
  )

  it.effect(
    "a request unanswered for 30 seconds stops counting, its read mark is released, and claimed again it is not counted",
    () =>
      Effect.gen(function* () {
        const { readLimit, read, claims, released } = scripted(2, 10)
        const ids = (messages: ReadonlyArray<Message.Incoming<any>>) =>
          messages.map((message) => String(message.envelope.requestId))
        assert.deepStrictEqual(ids(yield* read), ["1", "2"])
        yield* TestClock.adjust(ReadLimit.STALE_MILLIS - 1)
        assert.deepStrictEqual(yield* read, [])
        assert.deepStrictEqual(released, [])
        yield* TestClock.adjust(1)
        // Released, then claimed again first (the oldest): handed on, not counted.
        assert.deepStrictEqual(ids(yield* read), ["1", "2"])
        assert.deepStrictEqual(released, [["1", "2"]])
        assert.strictEqual(readLimit.inFlight(), 0)
        assert.deepStrictEqual(ids(yield* read), ["3", "4"])
        assert.strictEqual(readLimit.inFlight(), 2)
        assert.deepStrictEqual(claims, [2, 2, 2])
      })
  )

  it.effect("envelopes (acknowledgements, interrupts) are handed on and not counted; no shards, no claim", () =>
    Effect.gen(function* () {
      const claims: Array<number> = []
      const readLimit = ReadLimit.makeWith(
        2,
        (_shards, _now, room) =>
          Effect.sync(() => {
            claims.push(room)
            return [Snowflake.Snowflake(1n)]
          }),
        () => Effect.void
      )
      const envelope = new Message.IncomingEnvelope({ envelope: { _tag: "Interrupt" } as any })
      const storage = readLimit.wrap({
        unprocessedMessagesById: () => Effect.succeed([envelope])
      } as unknown as MessageStorage.MessageStorage["Type"])
      assert.deepStrictEqual(yield* storage.unprocessedMessages([]), [])
      assert.deepStrictEqual(claims, [])
      assert.deepStrictEqual(yield* storage.unprocessedMessages([ShardId.make("default", 1)]), [envelope])
      assert.strictEqual(readLimit.inFlight(), 0)
    })
  )
})

describe("final replies saved together", () => {
  /**
   * A runner's read limit over in-memory SQLite and a scripted storage of `n` requests, each `respond` recording
   * whether it ran inside a transaction (a batch) and failing for the ids in `refused`.
   */
  const batched = (n: number, refused: ReadonlySet<number>) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const calls: Array<[number, boolean]> = []
      const readLimit = yield* ReadLimit.make(sql, "cluster", undefined)
      const respondFor = (id: number) => (_reply: Reply.ReplyWithContext<any>) =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) => {
          calls.push([id, transaction._tag === "Some"])
          return refused.has(id) ? Effect.fail(new PersistenceError({ cause: `refused ${id}` })) : Effect.void
        })
      const storage = readLimit.wrap({
        unprocessedMessages: () =>
          Effect.succeed(
            Array.from(
              { length: n },
              (_, i) =>
                new Message.IncomingRequest({
                  envelope: { _tag: "Request", requestId: Snowflake.Snowflake(BigInt(i + 1)) } as any,
                  lastSentReply: { _tag: "None" } as any,
                  respond: respondFor(i + 1)
                })
            )
          )
      } as unknown as MessageStorage.MessageStorage["Type"])
      const messages = (yield* storage.unprocessedMessages([ShardId.make("default", 1)])) as Array<
        Message.IncomingRequest<any>
      >
      // All answered at once, as entities finishing together do.
      const results = yield* Effect.all(
        messages.map((message) => Effect.either(message.respond(reply("WithExit")))),
        { concurrency: "unbounded" }
      )
      return { calls, results }
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" })))

  it.scoped("replies answered together share one transaction; each caller resumes once it committed", () =>
    Effect.gen(function* () {
      const { calls, results } = yield* batched(6, new Set())
      assert.isTrue(results.every((result) => result._tag === "Right"))
      assert.deepStrictEqual(calls.map(([id]) => id).sort(), [1, 2, 3, 4, 5, 6])
      // The first is written at once, alone; those answered while it was written share the next transaction.
      assert.isAtLeast(calls.filter(([, inTransaction]) => inTransaction).length, 2)
    })
  )

  it.scoped("a reply storage refuses fails alone: its transaction is saved again one reply at a time", () =>
    Effect.gen(function* () {
      const { calls, results } = yield* batched(6, new Set([4]))
      assert.deepStrictEqual(
        results.map((result) => result._tag),
        ["Right", "Right", "Right", "Left", "Right", "Right"]
      )
      // Every other reply was saved (its last call succeeded); the batch with 4 was tried again item by item.
      const last = new Map(calls.map(([id, inTransaction]) => [id, inTransaction]))
      assert.strictEqual(last.size, 6)
      assert.isAbove(calls.length, 6)
    })
  )
})
