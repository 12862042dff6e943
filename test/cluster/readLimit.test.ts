/**
 * The read limit (src/cluster/internal/readLimit.ts) over a scripted claim and storage: what a read claims, when the
 * next read is asked for, what counts as an answer. The conformance suite runs it on SQLite and PostgreSQL.
 */
import * as Message from "@effect/cluster/Message"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as Reply from "@effect/cluster/Reply"
import * as ShardId from "@effect/cluster/ShardId"
import * as Snowflake from "@effect/cluster/Snowflake"
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
  let polls = 0
  const readLimit = ReadLimit.makeWith(limit, (_shards, _now, room) =>
    Effect.sync(() => {
      claims.push(room)
      const ids: Array<Snowflake.Snowflake> = []
      while (ids.length < room && next <= backlog) ids.push(Snowflake.Snowflake(BigInt(next++)))
      return ids
    })
  )
  readLimit.attach(Effect.sync(() => polls++))
  const storage = readLimit.wrap({
    unprocessedMessagesById: (ids: Iterable<Snowflake.Snowflake>) =>
      Effect.succeed(Array.from(ids, (id) => request(id, answered)))
  } as unknown as MessageStorage.MessageStorage["Type"])
  const read = storage.unprocessedMessages([ShardId.make("default", 1)])
  return { readLimit, storage, read, claims, answered, polls: () => polls }
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

  it.effect("a request unanswered for 30 seconds stops counting", () =>
    Effect.gen(function* () {
      const { readLimit, read, claims } = scripted(2, 10)
      assert.strictEqual((yield* read).length, 2)
      yield* TestClock.adjust(ReadLimit.STALE_MILLIS - 1)
      assert.deepStrictEqual(yield* read, [])
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* read).length, 2)
      assert.strictEqual(readLimit.inFlight(), 2)
      assert.deepStrictEqual(claims, [2, 2])
    })
  )

  it.effect("envelopes (acknowledgements, interrupts) are handed on and not counted; no shards, no claim", () =>
    Effect.gen(function* () {
      const claims: Array<number> = []
      const readLimit = ReadLimit.makeWith(2, (_shards, _now, room) =>
        Effect.sync(() => {
          claims.push(room)
          return [Snowflake.Snowflake(1n)]
        })
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
