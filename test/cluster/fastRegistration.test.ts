/**
 * Registration's write path (src/cluster/internal/occurrenceSql.ts): on a runner built by `ClusterRunner`, a
 * registration writes each reminder's row and its first occurrence together, the occurrences inserted straight into
 * @effect/cluster's messages table. On SQLite and PostgreSQL: those occurrences are delivered as sent ones; the rows
 * are the very rows `SqlMessageStorage.saveRequest` writes (a change of @effect/cluster's format fails here); and
 * `SqlMessageStorage` reads them back.
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import * as ShardId from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as RpcClient from "@effect/rpc/RpcClient"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Either, Exit, Fiber, Layer, Option, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain, Schedules } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { ReminderDelivery } from "../../src/cluster/internal/grainProtocol.js"
import * as Occurrences from "../../src/cluster/internal/occurrenceSql.js"
import { updatesWithRace } from "../../src/cluster/internal/reminderSchedules.js"
import {
  dropPrefixTables,
  freshPrefix,
  pgStorage,
  pgUnavailable,
  refuseEntity,
  saveAsCluster,
  startRunner,
  type TestRunner
} from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("fast registration", "the PostgreSQL variant")

interface Backend {
  readonly name: string
  readonly skip: string | undefined
  readonly storage: ClusterRunner.Storage
  /** Real time each clock step waits for the storage to answer (see conformance-helpers' `advance`). */
  readonly settleMillis: number
  /**
   * The clock's step when delivery instants are checked, and the lateness allowed: PostgreSQL answers in real time,
   * so a storage read that an armed time starts can end at a later step than the one that started it.
   */
  readonly step: number
  readonly lateness: number
  readonly cleanup: (prefix: string) => Effect.Effect<void, unknown, SqlClient.SqlClient>
}

const backends: ReadonlyArray<Backend> = [
  {
    name: "sqlite",
    skip: undefined,
    storage: ClusterRunner.sqlite(":memory:"),
    settleMillis: 0,
    step: 1_000,
    lateness: 0,
    cleanup: () => Effect.void
  },
  {
    name: "pg",
    skip: pgSkip,
    storage: pgStorage,
    settleMillis: 10,
    step: 100,
    lateness: 300,
    cleanup: dropPrefixTables
  }
]

const Msg = Schema.TaggedStruct("Wake", { label: Schema.String, n: Schema.Number })
type Msg = typeof Msg.Type
const wake = (label: string, n = 0): Msg => ({ _tag: "Wake", label, n })

/** A kind that records "key:label/n@millis" for each delivered message, and "+key" for each activation. */
const makeSubject = (name: string) => {
  const events: Array<string> = []
  const kind = ClusterGrain.make(
    Grain.make<Msg>()({
      name,
      onActivate: (ctx) => Effect.asVoid(Effect.sync(() => events.push(`+${ctx.identity.key}`))),
      onReceive: (ctx) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            events.push(`${ctx.identity.key}:${ctx.message.label}/${ctx.message.n}@${now}`)
          })
        )
    }),
    { message: Msg }
  )
  return { events, kind }
}

/** Lets the runner's fibers finish what a clock step started; on PostgreSQL also waits for its answers. */
const settle = (millis: number) =>
  Effect.zipRight(
    Effect.repeatN(Effect.yieldNow(), 200),
    millis > 0 ? Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis))) : Effect.void
  )

/** Moves the clock to `millis`, in steps of at most `step` ms, settling after each. */
const advanceTo = (millis: number, settleMillis: number, step = 1_000) =>
  Effect.gen(function* () {
    for (;;) {
      const now = yield* Clock.currentTimeMillis
      if (now >= millis) return
      yield* TestClock.adjust(Math.min(step, millis - now))
      yield* settle(settleMillis)
    }
  })

interface MessageRow {
  readonly [column: string]: unknown
}

/** Every column of the Remind requests in `<prefix>_messages`, as plain values, oldest first. */
const messageRows = (prefix: string) =>
  Effect.gen(function* () {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const rows =
      yield* sql<MessageRow>`SELECT * FROM ${sql(`${prefix}_messages`)} WHERE tag = 'Remind' ORDER BY id`.pipe(
        Effect.provideService(SqlClient.SafeIntegers, true)
      )
    return rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([column, value]) => [column, typeof value === "bigint" ? String(value) : value])
      )
    )
  })

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(
    backend.skip === undefined
      ? `registration write path: ${backend.name}`
      : `${backend.name} (skipped: ${backend.skip})`,
    () => {
      const setup = Effect.gen(function* () {
        const prefix = freshPrefix("f")
        const storage = yield* Layer.build(ClusterRunner.layerStorage(backend.storage))
        yield* Effect.addFinalizer(() => Effect.orDie(backend.cleanup(prefix)).pipe(Effect.provide(storage)))
        const start = (port: number, shardingConfig?: ClusterRunner.TestOptions["shardingConfig"]) =>
          startRunner(storage, port, { tablePrefix: prefix, ...(shardingConfig ? { shardingConfig } : {}) })
        return { prefix, storage, start }
      })

      const withGrains = (runner: TestRunner, kind: ClusterGrain.ClusterGrain<Msg, any, any, any>) =>
        Layer.buildWithScope(
          ClusterGrain.layer([kind]).pipe(
            Layer.provideMerge(Reminders.layer()),
            Layer.provideMerge(ActorSystem.layer({ name: `runner-${runner.port}` }))
          ),
          runner.scope
        ).pipe(Effect.provide(runner.context))

      it.scoped(
        "a batch is delivered as sent occurrences: payload, due time, reactivation, replacement without a double",
        () =>
          Effect.gen(function* () {
            const { start } = yield* setup
            const { events, kind } = makeSubject(`fast-batch-${backend.name}`)
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            yield* TestClock.adjust(1)
            const infos = yield* Reminders.registerManyFor(kind, [
              { key: "a", name: "once", message: wake("once", 1.5), schedule: Reminders.after("3 seconds") },
              {
                key: "b",
                name: "every",
                message: wake("every"),
                schedule: Reminders.after("2 seconds", { period: "4 seconds" })
              },
              { key: "c", name: "cron", message: wake("cron"), schedule: Reminders.cron("*/5 * * * * ?") },
              { key: "d", name: "replaced", message: wake("old"), schedule: Reminders.after("6 seconds") }
            ]).pipe(Effect.provide(grains))
            assert.deepStrictEqual(
              infos.map((info) => info.nextDue),
              [3_001, 2_001, 5_000, 6_001]
            )
            // Registered from outside: no grain was activated by registering.
            assert.deepStrictEqual(events, [])
            // Replaced before it is due: only the new one is delivered, once.
            yield* Reminders.registerManyFor(kind, [
              { key: "d", name: "replaced", message: wake("new"), schedule: Reminders.after("6500 millis") }
            ]).pipe(Effect.provide(grains))
            yield* advanceTo(11_000, backend.settleMillis, backend.step)
            // Delivered at their instants (local arming), each decoded with the kind's schema, each grain activated
            // by its first occurrence (and kept active since).
            const check = (key: string, expected: ReadonlyArray<string>) => {
              const seen = events.filter((event) => event.startsWith(`+${key}`) || event.startsWith(`${key}:`))
              assert.strictEqual(seen.length, expected.length, `${key}: ${seen.join(", ")}`)
              seen.forEach((event, i) => {
                const [what, at] = event.split("@")
                const [want, due] = expected[i]!.split("@")
                assert.strictEqual(what, want, `${key}: ${seen.join(", ")}`)
                if (due === undefined) return
                assert.isAtLeast(Number(at), Number(due), event)
                assert.isAtMost(Number(at), Number(due) + backend.lateness, event)
              })
            }
            check("a", ["+a", "a:once/1.5@3001"])
            check("b", ["+b", "b:every/0@2001", "b:every/0@6001", "b:every/0@10001"])
            check("c", ["+c", "c:cron/0@5000", "c:cron/0@10000"])
            check("d", ["+d", "d:new/0@6501"])
            assert.strictEqual(events.length, 11)
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "the write path is taken only while the messages table has exactly @effect/cluster's columns; else a send",
        () =>
          Effect.gen(function* () {
            const { prefix, start } = yield* setup
            const { events, kind } = makeSubject(`fast-drift-${backend.name}`)
            const runner = yield* start(1)
            const writerOf = Effect.flatMap(Effect.all([Sharding.Sharding, SqlClient.SqlClient]), ([sharding, sql]) =>
              Occurrences.make(sharding, sql)
            ).pipe(Effect.provide(runner.context))
            assert.isDefined(yield* writerOf)
            const sql = (yield* Effect.provide(SqlClient.SqlClient, runner.context)).withoutTransforms()
            // A column this version does not know of (another @effect/cluster format): the write path steps aside.
            yield* sql`ALTER TABLE ${sql(`${prefix}_messages`)} ADD COLUMN drift TEXT`
            assert.isUndefined(yield* writerOf)
            // Registration still works, through Sharding's own send.
            const grains = yield* withGrains(runner, kind)
            const fiber = yield* Effect.fork(
              Reminders.registerFor(kind, "x", "r", wake("sent"), Reminders.after("2 seconds")).pipe(
                Effect.provide(grains)
              )
            )
            yield* advanceTo(1_000, backend.settleMillis, backend.step)
            yield* Fiber.join(fiber)
            yield* advanceTo(4_000, backend.settleMillis, backend.step)
            assert.deepStrictEqual(
              events.map((event) => event.split("@")[0]),
              ["+x", "x:sent/0"]
            )
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped("an occurrence due within a poll interval on this runner's shard arrives at its instant", () =>
        Effect.gen(function* () {
          const { start } = yield* setup
          const { events, kind } = makeSubject(`fast-soon-${backend.name}`)
          // A 10-second poll: on time can only come from the read the registration triggers and its arming scan.
          const runner = yield* start(1, { entityMessagePollInterval: "10 seconds" })
          const grains = yield* withGrains(runner, kind)
          yield* advanceTo(11_000, backend.settleMillis)
          const [info] = yield* Reminders.registerManyFor(kind, [
            { key: "s", name: "soon", message: wake("soon"), schedule: Reminders.after("700 millis") }
          ]).pipe(Effect.provide(grains))
          yield* settle(backend.settleMillis)
          yield* advanceTo(info!.nextDue + backend.lateness, backend.settleMillis, 100)
          assert.deepStrictEqual(
            events.map((event) => event.split("@")[0]),
            ["+s", "s:soon/0"]
          )
          const at = Number(events[1]!.split("@")[1])
          assert.isAtLeast(at, info!.nextDue)
          assert.isAtMost(at, info!.nextDue + backend.lateness)
          yield* Scope.close(runner.scope, Exit.void)
        })
      )

      it.scoped(
        "an occurrence on another runner's shard is read by that runner and armed after its own poll",
        () =>
          Effect.gen(function* () {
            const { start } = yield* setup
            const { events, kind } = makeSubject(`fast-remote-${backend.name}`)
            const poll = { entityMessagePollInterval: "5 seconds" } as const
            const a = yield* start(1, poll)
            const b = yield* start(2, poll)
            const onA = yield* withGrains(a, kind)
            yield* withGrains(b, kind)
            // Both runners up and the shards shared out.
            yield* advanceTo(20_000, backend.settleMillis)
            const sharding = Context.get(a.context, Sharding.Sharding)
            const keys = Array.from({ length: 200 }, (_, i) => `k${i}`)
            const remote = keys.filter((key) => !sharding.hasShardId(sharding.getShardId(key as never, "default")))
            assert.isAbove(remote.length, 0, "runner 2 holds some shards")
            const key = remote[0]!
            // Registered through runner 1: due after runner 2's next poll, which arms it, so it arrives on time.
            const [later] = yield* Reminders.registerManyFor(kind, [
              { key, name: "later", message: wake("later"), schedule: Reminders.after("12 seconds") }
            ]).pipe(Effect.provide(onA))
            yield* advanceTo(later!.nextDue + 6_000, backend.settleMillis, backend.step)
            assert.deepStrictEqual(
              events.map((event) => event.split("@")[0]),
              [`+${key}`, `${key}:later/0`]
            )
            const at = Number(events[1]!.split("@")[1])
            assert.isAtLeast(at, later!.nextDue)
            assert.isAtMost(at, later!.nextDue + backend.lateness)
            yield* Scope.close(a.scope, Exit.void)
            yield* Scope.close(b.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "a batch of several statements is written whole, or not at all when a row is refused",
        () =>
          Effect.gen(function* () {
            const { prefix, start, storage } = yield* setup
            const { kind } = makeSubject(`fast-large-${backend.name}`)
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            yield* TestClock.adjust(1)
            const count = (table: string) =>
              Effect.flatMap(
                SqlClient.SqlClient,
                (sql) => sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(`${prefix}_${table}`)}`
              ).pipe(
                Effect.map((rows) => Number(rows[0]!.n)),
                Effect.provide(storage)
              )
            // More than one statement holds on either storage (500 rows on SQLite, 1,000 on PostgreSQL). Fewer than
            // 2,048 a clock millisecond: the runner's Snowflake generator repeats its ids past 4,096 in a millisecond
            // while the clock stands still (as TestClock's does).
            const batch = (n: number, lastKey: (i: number) => string) =>
              Array.from({ length: n }, (_, i) => ({
                key: i === n - 1 ? lastKey(i) : `g${i % 50}`,
                name: `r${i}`,
                message: wake("w", i),
                schedule: Reminders.after("1 day")
              }))
            yield* Reminders.registerManyFor(
              kind,
              batch(1_501, (i) => `g${i}`)
            ).pipe(Effect.provide(grains))
            assert.strictEqual(yield* count("tickwork_reminders"), 1_501)
            assert.strictEqual(yield* count("messages"), 1_501)
            if (backend.name === "pg") {
              // Storage refuses the last occurrence (a trigger): the last statement of the batch fails, and the
              // statements before it are rolled back with it.
              yield* TestClock.adjust(1)
              yield* refuseEntity(Context.get(storage, SqlClient.SqlClient), prefix, "refused")
              const refused = yield* Effect.either(
                Reminders.registerManyFor(
                  kind,
                  batch(1_501, () => "refused")
                ).pipe(Effect.provide(grains))
              )
              assert.strictEqual(refused._tag === "Left" ? refused.left._tag : "registered", "ReminderStorageError")
              assert.strictEqual(yield* count("tickwork_reminders"), 1_501)
              assert.strictEqual(yield* count("messages"), 1_501)
            }
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "format: each occurrence row is the row SqlMessageStorage.saveRequest writes for it, and reads back",
        () =>
          Effect.gen(function* () {
            const { prefix, start, storage } = yield* setup
            const { kind } = makeSubject(`fast-format-${backend.name}`)
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            yield* TestClock.adjust(1)
            // A key long enough that the primary key is stored as its SHA-256.
            const long = "x".repeat(210)
            const registrations = [
              { key: "plain", name: "r", message: wake("p"), schedule: Reminders.after("1 hour") },
              { key: long, name: "r", message: wake("l"), schedule: Reminders.after("2 hours", { period: "1 hour" }) }
            ]
            yield* Reminders.registerManyFor(kind, registrations).pipe(Effect.provide(grains))
            // Under a request header of the caller's, which a send would carry too.
            yield* Reminders.registerManyFor(kind, [
              { key: "headed", name: "r", message: wake("h"), schedule: Reminders.after("3 hours") }
            ]).pipe(Effect.provide(grains), RpcClient.withHeaders({ "x-tenant": "t1" }))
            const written = yield* messageRows(prefix).pipe(Effect.provide(storage))
            assert.strictEqual(written.length, 3)
            assert.strictEqual((written.find((row) => row.entity_id === long)!.message_id as string).length, 64)

            // The same requests saved by @effect/cluster itself, with the same ids, replace them: every column agrees.
            const messageStorage = Context.get(runner.context, MessageStorage.MessageStorage)
            const sql = Context.get(storage, SqlClient.SqlClient).withoutTransforms()
            for (const row of written) {
              yield* sql`DELETE FROM ${sql(`${prefix}_messages`)} WHERE id = ${row.id as string}`
              const payload = Schema.decodeUnknownSync(ReminderDelivery)(JSON.parse(row.payload as string))
              const saved = yield* saveAsCluster(messageStorage, row, kind.entity, "Remind", payload)
              assert.strictEqual(saved._tag, "Success")
            }
            const resaved = yield* messageRows(prefix).pipe(Effect.provide(storage))
            const comparable = (rows: ReadonlyArray<MessageRow>) =>
              rows.map(({ last_read: _, rowid: __, ...columns }) => columns)
            assert.deepStrictEqual(comparable(resaved), comparable(written))
            assert.deepStrictEqual(JSON.parse(written[2]!.headers as string), { "x-tenant": "t1" })

            // And @effect/cluster's own storage reads them back as requests of the kind's Remind RPC, once due.
            yield* Scope.close(runner.scope, Exit.void)
            yield* TestClock.adjust("4 hours")
            const reader = yield* Layer.build(
              SqlMessageStorage.layerWith({ prefix }).pipe(
                Layer.provide(ShardingConfig.layer()),
                Layer.provide(Snowflake.layerGenerator)
              )
            ).pipe(Effect.provide(storage))
            const read = yield* Context.get(reader, MessageStorage.MessageStorage).unprocessedMessages(
              written.map((row) => ShardId.ShardId.fromString(row.shard_id as string))
            )
            const requests = read.flatMap((message) => (message._tag === "IncomingRequest" ? [message.envelope] : []))
            assert.strictEqual(requests.length, 3)
            for (const envelope of requests) {
              const row = written.find((r) => r.id === String(envelope.requestId))!
              assert.strictEqual(envelope.tag, "Remind")
              assert.strictEqual(envelope.address.entityType, kind.entity.type)
              assert.strictEqual(envelope.address.entityId, row.entity_id)
              assert.strictEqual(envelope.address.shardId.toString(), row.shard_id)
              const rpc = kind.entity.protocol.requests.get("Remind")!
              const delivery = Schema.decodeUnknownSync(rpc.payloadSchema as Schema.Schema<ReminderDelivery, unknown>)(
                envelope.payload
              )
              assert.strictEqual(delivery.name, "r")
              assert.strictEqual(delivery.due, Number(row.deliver_at))
            }
          })
      )
    }
  )
}

describe("registration on a runner not built by ClusterRunner", () => {
  /** @effect/cluster's own layers over an in-memory SQLite: registration cannot know its storage, so it sends. */
  const customRunner = Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(Layer.merge(SqlMessageStorage.layer, SqlRunnerStorage.layer)),
    Layer.provide(RunnerHealth.layerNoop),
    Layer.provide(
      ShardingConfig.layer({
        runnerAddress: Option.some(RunnerAddress.make("custom", 1)),
        entityMessagePollInterval: "1 second"
      })
    ),
    Layer.provideMerge(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
  )

  const build = (name: string) =>
    Effect.gen(function* () {
      const subject = makeSubject(name)
      const base = yield* Layer.build(
        Reminders.layer().pipe(
          Layer.provideMerge(ActorSystem.layer({ name: "custom" })),
          Layer.provideMerge(customRunner)
        )
      )
      yield* Layer.buildWithScope(ClusterGrain.layer([subject.kind]), yield* Effect.scope).pipe(Effect.provide(base))
      yield* TestClock.adjust(1)
      return { ...subject, base }
    })

  it.scoped("the first occurrence is sent through the cluster, then delivered", () =>
    Effect.gen(function* () {
      const { base, events, kind } = yield* build("custom-sent")
      // A send waits for the runner to hold the grain's shard: it runs while the clock moves.
      const registered = yield* Effect.fork(
        Reminders.registerFor(kind, "a", "r", wake("a"), Reminders.after("3 seconds")).pipe(Effect.provide(base))
      )
      yield* advanceTo(2_001, 0)
      yield* Fiber.join(registered)
      const sql = Context.get(base, SqlClient.SqlClient).withoutTransforms()
      const [sent] = yield* sql<{ readonly trace_id: string | null }>`SELECT trace_id FROM cluster_messages
        WHERE tag = 'Remind' AND entity_id = 'a'`
      // A send carries its client span's trace; an occurrence written with its row carries none.
      assert.isNotNull(sent!.trace_id)
      yield* advanceTo(5_001, 0)
      // No local arming here: delivered at the first poll after its instant.
      assert.deepStrictEqual(
        events.map((event) => event.split("@")[0]),
        ["+a", "a:a/0"]
      )
      assert.isAtLeast(Number(events[1]!.split("@")[1]), 3_001)
      assert.isAtMost(Number(events[1]!.split("@")[1]), 4_001)
    })
  )

  it.scoped("an update racing an unregistration or a new registration writes nothing here too (row, then send)", () =>
    Effect.gen(function* () {
      const { base, events, kind } = yield* build("custom-race")
      const race = updatesWithRace.get(Context.get(base, Reminders.Reminders).schedules)!
      const inBackground = <A, E>(effect: Effect.Effect<A, E>, until: number) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.fork(Effect.either(effect))
          yield* advanceTo(until, 0)
          return yield* Fiber.join(fiber)
        })
      for (const key of ["g", "h", "i"]) {
        yield* inBackground(
          Reminders.registerFor(kind, key, "r", wake(key), Reminders.after("30 seconds")).pipe(Effect.provide(base)),
          (yield* Clock.currentTimeMillis) + 1_000
        )
      }
      const every = { spec: Schedules.every("5 seconds") }
      const gone = yield* inBackground(
        race("custom-race/g/r", Reminders.unregisterFor(kind, "g", "r").pipe(Effect.provide(base)), every),
        4_000
      )
      assert.deepStrictEqual(Either.isLeft(gone) ? gone.left._tag : "updated", "ScheduledReferenceNotFound")
      const again = yield* inBackground(
        race(
          "custom-race/h/r",
          Reminders.registerFor(kind, "h", "r", wake("h2"), Reminders.after("40 seconds")).pipe(Effect.provide(base)),
          every
        ),
        5_000
      )
      assert.deepStrictEqual(Either.isLeft(again) ? again.left._tag : "updated", "ScheduleStorageError")
      // Nothing raced: the update is written, then its occurrence sent.
      const updated = yield* inBackground(race("custom-race/i/r", Effect.void, every), 6_000)
      assert.isTrue(Either.isRight(updated))
      const listed = yield* Effect.forEach(["g", "h", "i"], (key) =>
        Reminders.listFor(kind, key).pipe(Effect.provide(base))
      )
      assert.deepStrictEqual(
        listed.map((rows) => rows.map((row) => row.periodMillis ?? "once")),
        [[], ["once"], [5_000]]
      )
      yield* advanceTo(12_500, 0)
      // Only the updated one's occurrences so far: none for "g" (gone), "h" keeps its 40 s.
      assert.deepStrictEqual(
        events.filter((event) => !event.startsWith("+")).map((event) => event.split("@")[0]),
        ["i:i/0"]
      )
    })
  )
})
