/**
 * Storage conformance: the behaviours that depend on the runners' SQL storage, run against embedded SQLite and
 * against PostgreSQL. The PostgreSQL variant needs a server at TICKWORK_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test, trust auth); when none answers it is skipped with the reason printed.
 */
import { ClusterSchema, DeliverAt, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { SqlClient, type Statement } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import {
  Clock,
  Context,
  DateTime,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Option,
  PrimaryKey,
  Schema,
  Scope,
  TestClock,
  TestServices
} from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"
import * as Cron from "../../src/cluster/internal/cron.js"
import * as ReadLimit from "../../src/cluster/internal/readLimit.js"
import {
  advance as advanceClock,
  dropPrefixTables,
  freshPrefix,
  historyOf,
  iso,
  pgStorage,
  pgUnavailable,
  startRunner as startTestRunner,
  type TestRunner
} from "./conformance-helpers.js"
import { reminderCases } from "./conformance-reminders.js"
import { scheduleCases } from "./conformance-schedules.js"

const pgSkip = await pgUnavailable("conformance", "the PostgreSQL variant")

/** A fresh, private set of tables per test: SQLite in memory, or a new table prefix in the shared database. */
interface Backend {
  readonly name: string
  readonly skip: string | undefined
  readonly storage: ClusterRunner.Storage
  /** Real time each clock step waits for the storage to answer (see `advance`). */
  readonly settleMillis: number
  /** Drops what a test created under `prefix`. */
  readonly cleanup: (prefix: string) => Effect.Effect<void, unknown, SqlClient.SqlClient>
}

const backends: ReadonlyArray<Backend> = [
  {
    name: "sqlite",
    skip: undefined,
    storage: ClusterRunner.sqlite(":memory:"),
    settleMillis: 0,
    cleanup: () => Effect.void
  },
  {
    name: "pg",
    skip: pgSkip,
    storage: pgStorage,
    settleMillis: 10,
    cleanup: dropPrefixTables
  }
]

/** A message delivered at `at`, stored once per `id`. */
class Due extends Schema.Class<Due>("conformance/Due")({ id: Schema.String, at: Schema.Number }) {
  [PrimaryKey.symbol](): string {
    return this.id
  }
  [DeliverAt.symbol](): DateTime.DateTime {
    return DateTime.unsafeMake(this.at)
  }
}

/** A grain that records when its reminder reaches it. */
const woken: Array<[string, number]> = []
const AlarmMsg = Schema.TaggedStruct("Wake", {})
const AlarmGrain = ClusterGrain.make(
  Grain.make<typeof AlarmMsg.Type>()({
    name: "conformance-alarm",
    onReceive: (ctx) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => woken.push([ctx.identity.key, now])))
  }),
  { message: AlarmMsg }
)

const Probe = Entity.make("ConformanceProbe", [
  Rpc.make("due", { payload: Due }).annotate(ClusterSchema.Persisted, true)
])

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(
    backend.skip === undefined ? `storage conformance: ${backend.name}` : `${backend.name} (skipped: ${backend.skip})`,
    () => {
      const advance = (seconds: number) => advanceClock(seconds, backend.settleMillis)
      /**
       * Moves the clock `seconds`, then on a second at a time while `fiber` runs, with a tenth of a second of real
       * time after each step (20 s of real time at most), and joins it: on a loaded machine a first send over
       * PostgreSQL can wait for the runner's shards longer than `seconds`, and a clock that stops before it is done
       * leaves the send waiting for a poll that never comes. Still running then, it is a failure that says so.
       */
      const joinAfter = <A, E>(fiber: Fiber.Fiber<A, E>, seconds: number) =>
        Effect.gen(function* () {
          yield* advance(seconds)
          for (let i = 0; i < 200 && Option.isNone(yield* Fiber.poll(fiber)); i++) {
            yield* advance(1)
            yield* TestServices.provideLive(Effect.sleep("100 millis"))
          }
          if (Option.isNone(yield* Fiber.poll(fiber))) {
            return yield* Effect.dieMessage(
              "the sends were not done after 200 more seconds of clock and 20 s of real time"
            )
          }
          return yield* Fiber.join(fiber)
        })

      /** The storage (fresh tables) and a way to start runners on it, each in its own scope. */
      const setup = Effect.gen(function* () {
        const prefix = freshPrefix("t")
        const storage = yield* Layer.build(ClusterRunner.layerStorage(backend.storage))
        yield* Effect.addFinalizer(() => Effect.orDie(backend.cleanup(prefix)).pipe(Effect.provide(storage)))
        const startRunner = (port: number, options?: Pick<ClusterRunner.TestOptions, "shardingConfig" | "readLimit">) =>
          startTestRunner(storage, port, { ...options, tablePrefix: prefix })
        return { storage, startRunner }
      })

      scheduleCases({ setup, advance })
      reminderCases({ setup, advance })

      it.scoped("cron: once per instant, recorded in storage", () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          const runner = yield* startRunner(1)
          const fired: Array<string> = []
          yield* ClusterScheduler.scheduleWithCron(
            "*/10 * * * * ?",
            (fire) => Effect.sync(() => fired.push(DateTime.formatIso(fire.instant))),
            ClusterScheduler.withTimerReference("once")
          ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
          yield* advance(45)
          const expected = [10, 20, 30, 40].map((s) => iso(s * 1000))
          assert.deepStrictEqual(fired, expected)
          assert.deepStrictEqual(yield* historyOf("once").pipe(Effect.provide(runner.context)), expected)
          // The cursor reads back as a number (a BIGINT is a string from PostgreSQL).
          const next = yield* ClusterScheduler.nextInstant("once").pipe(Effect.provide(runner.context))
          assert.deepStrictEqual(Option.map(next, DateTime.formatIso), Option.some(iso(50_000)))
          yield* Scope.close(runner.scope, Exit.void)
        })
      )

      it.scoped("cron: an instant's message comes ahead of it and execute starts at the instant", () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          const runner = yield* startRunner(1)
          const fires: Array<ClusterScheduler.Fire> = []
          yield* ClusterScheduler.scheduleWithCron(
            "*/10 * * * * ?",
            (fire) => Effect.sync(() => fires.push(fire)),
            ClusterScheduler.withTimerReference("ahead")
          ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
          yield* advance(11)
          assert.strictEqual(fires.length, 1)
          const settle = TestServices.provideLive(Effect.sleep("300 millis"))
          // Between the claim's time and the instant: read, and on PostgreSQL claimed (the row locked), not run.
          yield* TestClock.setTime(20_000 - Cron.CLAIM_AHEAD_MILLIS / 2)
          yield* settle
          assert.strictEqual(fires.length, 1)
          const sql = Context.get(runner.context, SqlClient.SqlClient)
          const { schedules } = yield* Effect.provide(Cron.tableNames, runner.context)
          const unlocked = yield* sql`
            SELECT reference FROM ${sql(schedules)} WHERE reference = 'ahead'
            ${backend.name === "pg" ? sql.literal("FOR UPDATE SKIP LOCKED") : sql.literal("")}`
          assert.strictEqual(unlocked.length, backend.name === "pg" ? 0 : 1)
          // At the instant it runs, without waiting for a read; recorded as fired at the instant.
          yield* TestClock.setTime(20_000)
          yield* settle
          assert.deepStrictEqual(
            fires.map((fire) => [DateTime.formatIso(fire.instant), Duration.toMillis(fire.late)]),
            [
              [iso(10_000), 0],
              [iso(20_000), 0]
            ]
          )
          const history = yield* ClusterScheduler.history("ahead").pipe(Effect.provide(runner.context))
          assert.deepStrictEqual(
            history.map((entry) => DateTime.toEpochMillis(entry.firedAt)),
            [10_000, 20_000]
          )
          yield* Scope.close(runner.scope, Exit.void)
        })
      )

      it.scoped("cron: once per instant across three runners while two leave", () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          const runners = yield* Effect.forEach([1, 2, 3], (port) => startRunner(port))
          const fired: Array<[string, number]> = []
          for (const runner of runners) {
            yield* ClusterScheduler.scheduleWithCron(
              "*/5 * * * * ?",
              (fire) => Effect.sync(() => fired.push([DateTime.formatIso(fire.instant), runner.port])),
              ClusterScheduler.withTimerReference("three")
            ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
          }
          yield* advance(16)
          yield* Scope.close(runners[0]!.scope, Exit.void)
          yield* advance(10)
          yield* Scope.close(runners[1]!.scope, Exit.void)
          yield* advance(10)
          const expected = Array.from({ length: 7 }, (_, i) => iso((i + 1) * 5000))
          assert.deepStrictEqual(
            fired.map(([instant]) => instant),
            expected
          )
          assert.deepStrictEqual(yield* historyOf("three").pipe(Effect.provide(runners[2]!.context)), expected)
          yield* Scope.close(runners[2]!.scope, Exit.void)
        })
      )

      it.scoped("cron: the SQL of execute commits once per instant and rolls back on failure", () =>
        Effect.gen(function* () {
          const { startRunner, storage } = yield* setup
          const runner = yield* startRunner(1)
          const sql = Context.get(storage, SqlClient.SqlClient)
          const table = `${(yield* ClusterRunner.Tables.pipe(Effect.provide(runner.context))).prefix}_ledger`
          yield* sql`CREATE TABLE ${sql(table)} (instant VARCHAR(40) PRIMARY KEY)`
          let attempts = 0
          yield* ClusterScheduler.scheduleWithCron(
            "*/10 * * * * ?",
            (fire) =>
              Effect.gen(function* () {
                attempts++
                yield* sql`INSERT INTO ${sql(table)} (instant) VALUES (${DateTime.formatIso(fire.instant)})`
                if (attempts === 2) return yield* Effect.fail("boom")
              }),
            ClusterScheduler.withTimerReference("ledger")
          ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
          yield* advance(35)
          const rows = yield* sql<{ readonly instant: string }>`SELECT instant FROM ${sql(table)} ORDER BY instant`
          assert.deepStrictEqual(
            rows.map((row) => row.instant),
            [iso(10_000), iso(30_000)]
          )
          const entries = yield* ClusterScheduler.history("ledger").pipe(Effect.provide(runner.context))
          assert.deepStrictEqual(
            entries.map((entry) => [DateTime.formatIso(entry.instant), entry.outcome]),
            [
              [iso(10_000), "ok"],
              [iso(20_000), "failed"],
              [iso(30_000), "ok"]
            ]
          )
          yield* Scope.close(runner.scope, Exit.void)
        })
      )

      it.scoped(
        "persisted delivery: due messages arrive on time (within one poll), once, across a runner restart",
        () =>
          Effect.gen(function* () {
            const { startRunner } = yield* setup
            const received: Array<[string, number]> = []
            const register = (runner: TestRunner) =>
              Layer.buildWithScope(
                Probe.toLayer({
                  due: (request) =>
                    Effect.flatMap(Clock.currentTimeMillis, (now) =>
                      Effect.sync(() => received.push([request.payload.id, now]))
                    )
                }),
                runner.scope
              ).pipe(Effect.provide(runner.context))
            const first = yield* startRunner(1)
            yield* register(first)
            const client = yield* Probe.client.pipe(Effect.provide(first.context))
            // Forked: a send to a shard this runner has not acquired yet retries every sendRetryInterval (clock time).
            const sends = yield* Effect.fork(
              Effect.all([
                client("a").due(new Due({ id: "a", at: 3_000 }), { discard: true }),
                client("b").due(new Due({ id: "b", at: 30_000 }), { discard: true }),
                // Sent twice: stored once.
                client("b").due(new Due({ id: "b", at: 30_000 }), { discard: true })
              ])
            )
            yield* joinAfter(sends, 5)
            assert.deepStrictEqual(
              received.map(([id]) => id),
              ["a"]
            )
            // The runner that stored "b" goes away; another one, started later, delivers it.
            yield* Scope.close(first.scope, Exit.void)
            yield* advance(5)
            const second = yield* startRunner(2)
            yield* register(second)
            yield* advance(19)
            assert.deepStrictEqual(
              received.map(([id]) => id),
              ["a"]
            )
            yield* advance(2)
            assert.deepStrictEqual(
              received.map(([id]) => id),
              ["a", "b"]
            )
            for (const [id, at] of received) {
              const due = id === "a" ? 3_000 : 30_000
              assert.isAtLeast(at, due)
              assert.isAtMost(at, due + 1_000)
            }
            yield* advance(5)
            assert.strictEqual(received.length, 2)
            yield* Scope.close(second.scope, Exit.void)
          })
      )

      describe("backlog: a runner reads at most readLimit unanswered requests at once", () => {
        /** A runner whose probe records each request it starts and holds it until `gate` opens; ten requests due at 3 s. */
        const gated = (readLimit: number | false) =>
          Effect.gen(function* () {
            const { startRunner } = yield* setup
            const started: Array<string> = []
            const gate = yield* Deferred.make<void>()
            const runner = yield* startRunner(1, { readLimit })
            // Closing waits for running handlers: a failed assertion must not leave them waiting.
            yield* Effect.addFinalizer(() =>
              Effect.zipRight(Deferred.succeed(gate, undefined), Scope.close(runner.scope, Exit.void))
            )
            yield* Layer.buildWithScope(
              Probe.toLayer({
                due: (request) =>
                  Effect.zipRight(
                    Effect.sync(() => started.push(request.payload.id)),
                    gate
                  )
              }),
              runner.scope
            ).pipe(Effect.provide(runner.context))
            const client = yield* Probe.client.pipe(Effect.provide(runner.context))
            const ids = Array.from({ length: 10 }, (_, i) => `p${String(i).padStart(2, "0")}`)
            // One after the other: stored in this order. Forked: the first waits for the runner's shards.
            const sends = yield* Effect.fork(
              Effect.forEach(ids, (id) => client(id).due(new Due({ id, at: 3_000 }), { discard: true }), {
                discard: true
              })
            )
            yield* joinAfter(sends, 5)
            /** Moves the clock a second at a time until `done` holds (at most `seconds`). */
            const until = (done: () => boolean, seconds: number) =>
              Effect.gen(function* () {
                for (let i = 0; i < seconds && !done(); i++) yield* advance(1)
              })
            return { started, gate, ids, until }
          })

        it.scoped("the claim marks at most its limit, the oldest first; a release takes the marks off", () =>
          Effect.gen(function* () {
            const { startRunner } = yield* setup
            const runner = yield* startRunner(1)
            yield* Layer.buildWithScope(Probe.toLayer({ due: () => Effect.void }), runner.scope).pipe(
              Effect.provide(runner.context)
            )
            const client = yield* Probe.client.pipe(Effect.provide(runner.context))
            // Due far ahead: no read of the runner takes them; the claims below pass a later "now".
            const ids = ["c0", "c1", "c2", "c3", "c4"]
            const sends = yield* Effect.fork(
              Effect.forEach(ids, (id) => client(id).due(new Due({ id, at: 1e12 }), { discard: true }), {
                discard: true
              })
            )
            yield* joinAfter(sends, 5)
            const sql = Context.get(runner.context, SqlClient.SqlClient).withoutTransforms()
            const { prefix } = Context.get(runner.context, ClusterRunner.Tables)
            const messages = sql(`${prefix}_messages`)
            const shards = (yield* sql<{ readonly shard_id: string }>`SELECT DISTINCT shard_id FROM ${messages}`).map(
              (row) => row.shard_id
            )
            /**
             * The probe ids (payload) of the messages `where` holds for, in send order: `rowid`, as the claim orders
             * them. Not `id`: a runner's snowflakes are not ordered across the moment it learns its machine id (seen
             * under load: c3's id below c2's, sent after it in the same millisecond).
             */
            const probeIds = (where: Statement.Fragment) =>
              Effect.map(
                sql<{ readonly payload: string }>`SELECT payload FROM ${messages} WHERE ${where} ORDER BY rowid`,
                (rows) => rows.map((row) => (JSON.parse(row.payload) as { id: string }).id)
              )
            const claim = ReadLimit.claimQuery(sql, prefix)
            const first = yield* claim(shards, 2e12, 2)
            assert.deepStrictEqual(yield* probeIds(sql.in("id", first.map(String))), ["c0", "c1"])
            assert.deepStrictEqual(yield* probeIds(sql`last_read IS NOT NULL`), ["c0", "c1"])
            const second = yield* claim(shards, 2e12, 2)
            assert.deepStrictEqual(yield* probeIds(sql.in("id", second.map(String))), ["c2", "c3"])
            // Not yet due at the runner's time: nothing.
            assert.deepStrictEqual(yield* claim(shards, 1e12 - 1, 2), [])
            yield* ReadLimit.releaseQuery(sql, prefix)(first.map(String))
            assert.deepStrictEqual(yield* probeIds(sql`last_read IS NOT NULL`), ["c2", "c3"])
            // Released, they are claimed again (the oldest first).
            const third = yield* claim(shards, 2e12, 10)
            assert.deepStrictEqual(yield* probeIds(sql.in("id", third.map(String))), ["c0", "c1", "c4"])
            yield* Scope.close(runner.scope, Exit.void)
          })
        )

        it.scoped("the oldest first, the next page as answers come", () =>
          Effect.gen(function* () {
            const { started, gate, ids, until } = yield* gated(4)
            yield* until(() => started.length >= 4, 5)
            assert.deepStrictEqual(started, ids.slice(0, 4))
            // Polls read nothing more while the four are unanswered.
            yield* advance(3)
            assert.deepStrictEqual(started, ids.slice(0, 4))
            yield* Deferred.succeed(gate, undefined)
            yield* until(() => started.length === ids.length, 20)
            assert.deepStrictEqual(started, ids)
          })
        )

        it.scoped("a request unanswered for 30 seconds stops counting", () =>
          Effect.gen(function* () {
            const { started, ids, until } = yield* gated(4)
            yield* until(() => started.length >= 4, 5)
            yield* advance(20)
            assert.strictEqual(started.length, 4)
            yield* until(() => started.length === 8, 10)
            assert.deepStrictEqual(started, ids.slice(0, 8))
          })
        )

        it.scoped("readLimit: false reads everything due at once", () =>
          Effect.gen(function* () {
            const { started, ids, until } = yield* gated(false)
            // All of them, none answered.
            yield* until(() => started.length === ids.length, 5)
            assert.deepStrictEqual(started, ids)
          })
        )
      })

      it.scoped.skipIf(backend.name !== "pg")(
        "reminders: a delivery's write commits without waiting for the WAL flush (the reply's commit makes it durable); registration waits",
        () =>
          Effect.gen(function* () {
            const { startRunner } = yield* setup
            woken.length = 0
            const runner = yield* startRunner(1)
            const sql = Context.get(runner.context, SqlClient.SqlClient)
            const { prefix } = Context.get(runner.context, ClusterRunner.Tables)
            const grains = yield* Layer.buildWithScope(
              ClusterGrain.layer([AlarmGrain]).pipe(
                Layer.provideMerge(Reminders.layer()),
                Layer.provideMerge(ActorSystem.layer({ name: "runner-1" }))
              ),
              runner.scope
            ).pipe(Effect.provide(runner.context))
            // What each write of a reminder row saw as its transaction's synchronous_commit, in order.
            yield* sql.unsafe(`CREATE TABLE "${prefix}_seen" (n SERIAL, op TEXT, setting TEXT)`)
            yield* sql.unsafe(`CREATE FUNCTION "${prefix}_seen"() RETURNS trigger LANGUAGE plpgsql AS
              'BEGIN INSERT INTO "${prefix}_seen" (op, setting) VALUES (TG_OP, current_setting(''synchronous_commit''));
               RETURN NULL; END'`)
            yield* sql.unsafe(`CREATE TRIGGER "${prefix}_seen" AFTER INSERT OR UPDATE OR DELETE
              ON "${prefix}_tickwork_reminders" FOR EACH ROW EXECUTE FUNCTION "${prefix}_seen"()`)
            const info = yield* Effect.fork(
              Reminders.registerFor(AlarmGrain, "w-1", "wal", { _tag: "Wake" }, Reminders.after("3 seconds")).pipe(
                Effect.provide(grains)
              )
            )
            yield* advance(2)
            yield* Fiber.join(info)
            yield* advance(3)
            assert.deepStrictEqual(
              woken.map(([key]) => key),
              ["w-1"]
            )
            const seen = yield* sql<{ readonly op: string; readonly setting: string }>`
              SELECT op, setting FROM ${sql(`${prefix}_seen`)} ORDER BY n`
            // The registration's insert waited for its commit to be durable; the one-shot's removal at its
            // delivery did not.
            assert.deepStrictEqual(
              seen.map(({ op, setting }) => `${op} ${setting}`),
              ["INSERT on", "DELETE off"]
            )
            yield* Scope.close(runner.scope, Exit.void)
          })
      )

      it.scoped("reminders: a registered reminder survives its runner and fires once, on time, on the next", () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          woken.length = 0
          const first = yield* startRunner(1)
          const withGrains = (runner: TestRunner) =>
            Layer.buildWithScope(
              ClusterGrain.layer([AlarmGrain]).pipe(
                // Its table takes the runner's prefix: <prefix>_tickwork_reminders.
                Layer.provideMerge(Reminders.layer()),
                Layer.provideMerge(ActorSystem.layer({ name: `runner-${runner.port}` }))
              ),
              runner.scope
            ).pipe(Effect.provide(runner.context))
          const grains = yield* withGrains(first)
          const info = yield* Effect.fork(
            Reminders.registerFor(AlarmGrain, "a-1", "wake", { _tag: "Wake" }, Reminders.after("20 seconds")).pipe(
              Effect.provide(grains)
            )
          )
          yield* advance(2)
          assert.strictEqual((yield* Fiber.join(info)).nextDue, 20_000)
          yield* Scope.close(first.scope, Exit.void)
          yield* advance(3)
          const second = yield* startRunner(2)
          yield* withGrains(second)
          yield* advance(14)
          assert.deepStrictEqual(woken, [])
          yield* advance(3)
          assert.deepStrictEqual(
            woken.map(([key]) => key),
            ["a-1"]
          )
          assert.isAtLeast(woken[0]![1], 20_000)
          assert.isAtMost(woken[0]![1], 21_000)
          yield* advance(5)
          assert.strictEqual(woken.length, 1)
          yield* Scope.close(second.scope, Exit.void)
        })
      )
    }
  )
}
