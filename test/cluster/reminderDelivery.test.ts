/**
 * Delivery of durable reminders from their rows (src/cluster/internal/reminderDispatch.ts, Reminders.ts): on SQLite
 * and PostgreSQL, a registration writes one row per reminder with its grain's shard and no message; the runner holding
 * the shard hands each occurrence to its grain at its instant; a batch of several statements is written whole or not
 * at all; a reminder on another runner's shard is delivered by that runner; a runner that leaves hands its reminders
 * to the shards' next owner; a row of the previous version (no shard, its occurrence a persisted message) is
 * delivered once by that message and from its row after; a runner not built by `ClusterRunner` delivers the same way.
 */
import * as EntityId from "@effect/cluster/EntityId"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Either, Exit, Fiber, Layer, Option, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain, Schedules } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { ReminderDelivery } from "../../src/cluster/internal/grainProtocol.js"
import { updatesWithRace } from "../../src/cluster/internal/reminderSchedules.js"
import {
  dropPrefixTables,
  failureTag,
  freshPrefix,
  pgStorage,
  pgUnavailable,
  refuseRows,
  rowCount,
  startRunner,
  type TestRunner
} from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("reminder delivery", "the PostgreSQL variant")

interface Backend {
  readonly name: string
  readonly skip: string | undefined
  readonly storage: ClusterRunner.Storage
  /** Real time each clock step waits for the storage to answer (see conformance-helpers' `advance`). */
  readonly settleMillis: number
  /**
   * The clock's step when delivery instants are checked, and the lateness allowed: PostgreSQL answers in real time,
   * so a delivery that a due time starts can end at a later step than the one that started it.
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

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(
    backend.skip === undefined ? `reminder delivery: ${backend.name}` : `${backend.name} (skipped: ${backend.skip})`,
    () => {
      const setup = Effect.gen(function* () {
        const prefix = freshPrefix("rd")
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
        "a batch is delivered: payload, due time, reactivation, replacement without a double; one row each, no message",
        () =>
          Effect.gen(function* () {
            const { prefix, start, storage } = yield* setup
            const { events, kind } = makeSubject(`rd-batch-${backend.name}`)
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
            // Delivered at their instants (armed by the runner holding the shard), each decoded with the kind's schema, each grain activated
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
            // What storage holds: the rows of the reminders still pending, each with its grain's shard; no message.
            const sql = Context.get(storage, SqlClient.SqlClient).withoutTransforms()
            const rows = yield* sql<{ readonly grain_key: string; readonly shard_id: string }>`
              SELECT grain_key, shard_id FROM ${sql(`${prefix}_tickwork_reminders`)} ORDER BY grain_key`
            const sharding = Context.get(runner.context, Sharding.Sharding)
            assert.deepStrictEqual(
              rows.map((row) => [row.grain_key, row.shard_id]),
              ["b", "c"].map((key) => [key, sharding.getShardId(EntityId.make(key), "default").toString()])
            )
            const [messages] = yield* sql<{
              readonly n: unknown
            }>`SELECT COUNT(*) AS n FROM ${sql(`${prefix}_messages`)}`
            assert.strictEqual(Number(messages!.n), 0)
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "occurrences of one grain handed over together: one whose reminder the grain unregistered while handling an earlier one is dropped",
        () =>
          Effect.gen(function* () {
            const { start } = yield* setup
            const events: Array<string> = []
            // Each of the two reminders, delivered, unregisters the other: whichever comes first, the other is gone.
            const kind = ClusterGrain.make(
              Grain.make<Msg>()({
                name: `rd-cancel-${backend.name}`,
                onReceive: (ctx) =>
                  Effect.zipRight(
                    Effect.sync(() => events.push(ctx.message.label)),
                    Effect.orDie(Reminders.unregister(ctx, ctx.message.label === "x" ? "y" : "x"))
                  )
              }),
              { message: Msg }
            )
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            yield* Reminders.registerManyFor(kind, [
              { key: "g", name: "x", message: wake("x"), schedule: Reminders.after("3 seconds") },
              { key: "g", name: "y", message: wake("y"), schedule: Reminders.after("3 seconds") }
            ]).pipe(Effect.provide(grains))
            yield* advanceTo(6_000, backend.settleMillis, backend.step)
            assert.strictEqual(events.length, 1, events.join(", "))
            assert.deepStrictEqual(yield* Reminders.listFor(kind, "g").pipe(Effect.provide(grains)), [])
            yield* Scope.close(runner.scope, Exit.void)
          })
      )

      it.scoped("an occurrence due within a poll interval on this runner's shard arrives at its instant", () =>
        Effect.gen(function* () {
          const { start } = yield* setup
          const { events, kind } = makeSubject(`rd-soon-${backend.name}`)
          // A 10-second poll: on time can only come from the arming of what this runner wrote itself, not from a scan.
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
        "an occurrence on another runner's shard is found by that runner's scan and delivered there at its instant",
        () =>
          Effect.gen(function* () {
            const { start } = yield* setup
            const { events, kind } = makeSubject(`rd-remote-${backend.name}`)
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
            // Registered through runner 1: due after runner 2's next scan, which arms it, so it arrives on time.
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
            const { kind } = makeSubject(`rd-large-${backend.name}`)
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            yield* TestClock.adjust(1)
            const count = (table: string) => rowCount(storage, `${prefix}_${table}`)
            // More than one statement on either storage (500 rows on SQLite, 1,000 on PostgreSQL). Fewer than 2,048 a
            // clock millisecond: the runner's Snowflake generator (the generations) repeats its ids past 4,096 in a
            // millisecond while the clock stands still (as TestClock's does).
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
            {
              // Storage refuses the last row (a trigger): the last statement of the batch fails, and the statements
              // before it are rolled back with it.
              yield* TestClock.adjust(1)
              yield* refuseRows(
                Context.get(storage, SqlClient.SqlClient),
                `${prefix}_tickwork_reminders`,
                "grain_key",
                "refused"
              )
              const refused = yield* Effect.either(
                Reminders.registerManyFor(
                  kind,
                  batch(1_501, () => "refused")
                ).pipe(Effect.provide(grains))
              )
              assert.strictEqual(refused._tag === "Left" ? refused.left._tag : "registered", "ReminderStorageError")
              assert.strictEqual(yield* count("tickwork_reminders"), 1_501)
            }
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "a large batch (on PostgreSQL a statement per 1,000, each chunk checked while the one before is written): all " +
          "or none, the first bad registration's error, the later of two registrations wins, text kept as it is",
        () =>
          Effect.gen(function* () {
            const { prefix, start, storage } = yield* setup
            const { kind } = makeSubject(`rd-chunks-${backend.name}`)
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            yield* TestClock.adjust(1)
            const sql = Context.get(storage, SqlClient.SqlClient).withoutTransforms()
            const table = `${prefix}_tickwork_reminders`
            const count = rowCount(storage, table)
            const batch = (n: number): Array<Reminders.Registration<Msg>> =>
              Array.from({ length: n }, (_, i) => ({
                key: `p${i % 40}`,
                name: `r${i}`,
                message: wake("w", i),
                schedule: Reminders.after("1 day")
              }))
            const failureOf = (registrations: ReadonlyArray<Reminders.Registration<Msg>>) =>
              failureTag(Reminders.registerManyFor(kind, registrations).pipe(Effect.provide(grains)))
            {
              // A bad registration in the last chunk: the statements of the chunks before it are rolled back.
              const rows = batch(1_200)
              rows[1_199] = { ...rows[1_199]!, schedule: Reminders.after(-1) }
              assert.strictEqual(yield* failureOf(rows), "InvalidTimerDelay")
              assert.strictEqual(yield* count, 0)
            }
            yield* Effect.scoped(
              Effect.gen(function* () {
                // Storage refuses a row of the second chunk: nothing is written.
                yield* refuseRows(Context.get(storage, SqlClient.SqlClient), table, "grain_key", "refused")
                yield* TestClock.adjust(1)
                const rows = batch(2_500)
                rows[1_050] = { ...rows[1_050]!, key: "refused" }
                assert.strictEqual(yield* failureOf(rows), "ReminderStorageError")
                assert.strictEqual(yield* count, 0)
                // With a bad registration after it, the batch fails with that one's error, as it does when every
                // registration is checked before anything is written.
                yield* TestClock.adjust(1)
                rows[2_200] = { ...rows[2_200]!, name: "" }
                assert.strictEqual(yield* failureOf(rows), "InvalidReminderName")
                assert.strictEqual(yield* count, 0)
              })
            )
            // Written whole: of two registrations of one reminder in different chunks the later wins; keys, names,
            // messages and time zones with the characters of array literals and JSON are kept.
            yield* TestClock.adjust(1)
            const now = yield* Clock.currentTimeMillis
            const odd = ["{a,b}", 'q"uote', "back\\slash", "NULL", " spaced ", "ünïcødé ✓", '\\"', "a/b%c"]
            const rows = batch(1_500)
            rows[10] = { key: "dup", name: "same", message: wake("first"), schedule: Reminders.after("1 hour") }
            rows[1_200] = { key: "dup", name: "same", message: wake("second"), schedule: Reminders.after("2 hours") }
            odd.forEach((text, j) => {
              rows[500 + j] = {
                key: text,
                name: text,
                message: wake(text, j),
                schedule: Reminders.after("1 hour", { period: `${j + 1} hours` })
              }
            })
            rows[600] = {
              ...rows[600]!,
              key: "cron",
              schedule: Reminders.cron("0 0 12 * * ?", { timeZone: "Europe/Berlin" })
            }
            const infos = yield* Reminders.registerManyFor(kind, rows).pipe(Effect.provide(grains))
            assert.strictEqual(infos.length, 1_500)
            assert.deepStrictEqual(
              [infos[10]!.nextDue, infos[1_200]!.nextDue, infos[1_499]!.nextDue],
              [now + 3_600_000, now + 7_200_000, now + 86_400_000]
            )
            assert.strictEqual(yield* count, 1_499)
            const listed = (key: string) => Reminders.listFor(kind, key).pipe(Effect.provide(grains))
            assert.deepStrictEqual(
              (yield* listed("dup")).map((info) => [info.name, info.nextDue]),
              [["same", now + 7_200_000]]
            )
            for (const [j, text] of odd.entries()) {
              assert.deepStrictEqual(yield* listed(text), [
                {
                  name: text,
                  nextDue: now + 3_600_000,
                  periodMillis: (j + 1) * 3_600_000,
                  cron: undefined,
                  timeZone: undefined
                }
              ])
            }
            const [cron] = yield* listed("cron")
            assert.deepStrictEqual([cron?.cron, cron?.timeZone], ["0 0 12 * * ?", "Europe/Berlin"])
            const messages = yield* sql<{ readonly grain_key: string; readonly message: string }>`
              SELECT grain_key, message FROM ${sql(table)} WHERE name = grain_key`
            assert.deepStrictEqual(
              messages.map((row) => [row.grain_key, JSON.parse(row.message)]).sort(),
              odd.map((text, j) => [text, wake(text, j)]).sort()
            )
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "a runner that leaves with occurrences armed: the shard's next owner delivers them, each once",
        () =>
          Effect.gen(function* () {
            const { start } = yield* setup
            const { events, kind } = makeSubject(`rd-leave-${backend.name}`)
            const a = yield* start(1)
            const onA = yield* withGrains(a, kind)
            yield* TestClock.adjust(1)
            yield* Reminders.registerManyFor(
              kind,
              Array.from({ length: 20 }, (_, i) => ({
                key: `k${i}`,
                name: "r",
                message: wake("r", i),
                schedule: Reminders.after("1500 millis")
              }))
            ).pipe(Effect.provide(onA))
            yield* advanceTo(1_000, backend.settleMillis, backend.step)
            // Armed on runner 1, which leaves before they are due.
            yield* Scope.close(a.scope, Exit.void)
            assert.deepStrictEqual(events, [])
            const b = yield* start(2)
            yield* withGrains(b, kind)
            yield* advanceTo(20_000, backend.settleMillis)
            const delivered = events.filter((event) => !event.startsWith("+")).map((event) => event.split("@")[0])
            assert.deepStrictEqual(delivered.sort(), Array.from({ length: 20 }, (_, i) => `k${i}:r/${i}`).sort())
            yield* Scope.close(b.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "a row of the previous version (no shard, its occurrence a persisted message): delivered once by the message, then from its row",
        () =>
          Effect.gen(function* () {
            const { prefix, start, storage } = yield* setup
            const { events, kind } = makeSubject(`rd-legacy-${backend.name}`)
            const sql = Context.get(storage, SqlClient.SqlClient).withoutTransforms()
            const table = sql(`${prefix}_tickwork_reminders`)
            // The table as the previous version made it, with one periodic reminder due at 2 s, every 3 s.
            yield* sql`CREATE TABLE ${table} (kind TEXT NOT NULL, grain_key TEXT NOT NULL, name TEXT NOT NULL,
              generation TEXT NOT NULL, message TEXT NOT NULL, next_due BIGINT NOT NULL, period_millis BIGINT, cron TEXT,
              time_zone TEXT, PRIMARY KEY (kind, grain_key, name))`
            yield* sql`INSERT INTO ${table} (kind, grain_key, name, generation, message, next_due, period_millis)
              VALUES (${kind.name}, 'old', 'tick', '7', ${JSON.stringify(wake("legacy"))}, 2000, 3000)`
            const runner = yield* start(1)
            const grains = yield* withGrains(runner, kind)
            // Its occurrence, stored by the previous version as a persisted message of the grain. The send waits for
            // the runner's shards, which a loaded machine can leave unassigned until the clock moves: forked, and
            // joined while the clock moves in small steps (before the occurrence's due time).
            const client = yield* Effect.provide(kind.entity.client, runner.context)
            const send = yield* Effect.fork(
              client("old")
                .Remind(new ReminderDelivery({ name: "tick", generation: "7", due: 2_000 }), { discard: true })
                .pipe(Effect.provide(runner.context))
            )
            for (let at = 100; at < 2_000 && Option.isNone(yield* Fiber.poll(send)); at += 100) {
              yield* advanceTo(at, backend.settleMillis, 100)
            }
            assert.isTrue(Option.isSome(yield* Fiber.poll(send)), "the previous version's message was not stored")
            yield* Fiber.join(send)
            yield* advanceTo(9_000, backend.settleMillis, backend.step)
            assert.deepStrictEqual(
              events.filter((event) => !event.startsWith("+")).map((event) => event.split("@")[0]),
              ["old:legacy/0", "old:legacy/0", "old:legacy/0"]
            )
            const [row] = yield* sql<{ readonly shard_id: string | null; readonly next_due: unknown }>`
              SELECT shard_id, next_due FROM ${table}`
            const sharding = Context.get(runner.context, Sharding.Sharding)
            assert.strictEqual(row!.shard_id, sharding.getShardId(EntityId.make("old"), "default").toString())
            assert.strictEqual(Number(row!.next_due), 11_000)
            assert.strictEqual((yield* Reminders.listFor(kind, "old").pipe(Effect.provide(grains))).length, 1)
            yield* Scope.close(runner.scope, Exit.void)
          }),
        60_000
      )

      it.scoped(
        "a backlog larger than a page: every overdue occurrence delivered, each once",
        () =>
          Effect.gen(function* () {
            const { start } = yield* setup
            const { events, kind } = makeSubject(`rd-backlog-${backend.name}`)
            const a = yield* start(1)
            const onA = yield* withGrains(a, kind)
            yield* TestClock.adjust(1)
            const n = 2_500
            for (let from = 0; from < n; from += 500) {
              yield* Reminders.registerManyFor(
                kind,
                Array.from({ length: 500 }, (_, j) => ({
                  key: `k${(from + j) % 250}`,
                  name: `r${from + j}`,
                  message: wake("r", from + j),
                  schedule: Reminders.after("2 seconds")
                }))
              ).pipe(Effect.provide(onA))
              yield* TestClock.adjust(1)
            }
            // Nobody there when they come due: a new runner starts over all of them overdue.
            yield* Scope.close(a.scope, Exit.void)
            yield* advanceTo(30_000, backend.settleMillis)
            const b = yield* start(2)
            yield* withGrains(b, kind)
            const deliveredNow = () =>
              events.filter((event) => !event.startsWith("+")).map((event) => event.split("@")[0]!)
            // PostgreSQL answers in real time: the clock moves a second per 100 ms of real time until all are in.
            for (let round = 0; round < 600 && deliveredNow().length < n; round++) {
              yield* TestClock.adjust(1_000)
              yield* settle(backend.settleMillis === 0 ? 0 : 100)
            }
            yield* settle(backend.settleMillis * 10)
            const delivered = deliveredNow()
            assert.strictEqual(delivered.length, n)
            assert.strictEqual(new Set(delivered).size, n)
            yield* Scope.close(b.scope, Exit.void)
          }),
        120_000
      )
    }
  )
}

describe("reminders on a runner not built by ClusterRunner", () => {
  /** @effect/cluster's own layers over an in-memory SQLite: the reminders are delivered from their rows all the same. */
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

  it.scoped("a reminder is written as its row and delivered at its instant", () =>
    Effect.gen(function* () {
      const { base, events, kind } = yield* build("custom-sent")
      // Registration needs the runner to hold the grain's shard: it runs while the clock moves.
      const registered = yield* Effect.fork(
        Reminders.registerFor(kind, "a", "r", wake("a"), Reminders.after("3 seconds")).pipe(Effect.provide(base))
      )
      yield* advanceTo(2_001, 0)
      const info = yield* Fiber.join(registered)
      const sql = Context.get(base, SqlClient.SqlClient).withoutTransforms()
      const [messages] = yield* sql<{ readonly n: unknown }>`SELECT COUNT(*) AS n FROM cluster_messages`
      assert.strictEqual(Number(messages!.n), 0)
      yield* advanceTo(5_001, 0)
      assert.deepStrictEqual(
        events.map((event) => event.split("@")[0]),
        ["+a", "a:a/0"]
      )
      // Armed by the scan before it (a window of two polls), delivered at its instant.
      assert.strictEqual(Number(events[1]!.split("@")[1]), info.nextDue)
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
      // Nothing raced: the update is written.
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
