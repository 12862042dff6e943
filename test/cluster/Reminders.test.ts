import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Exit, Fiber, Layer, Metric, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain, Metrics, Passivation } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { TestCluster } from "tickwork/cluster/testkit"
import * as ReminderSql from "../../src/cluster/internal/reminderSql.js"
import { advance, describeStorages, pgUnavailable, startRunner } from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("Reminders", "the PostgreSQL table variant")

/** Commands for the grain under test: register, unregister and list its reminders; `Fired` is what they deliver. */
const Msg = Schema.Union(
  Schema.TaggedStruct("Fired", { label: Schema.String }),
  Schema.TaggedStruct("After", {
    name: Schema.String,
    label: Schema.String,
    delay: Schema.Number,
    period: Schema.optional(Schema.Number)
  }),
  Schema.TaggedStruct("Cron", { name: Schema.String, label: Schema.String, expression: Schema.String }),
  Schema.TaggedStruct("Unregister", { name: Schema.String }),
  Schema.TaggedStruct("List", {})
)
type Msg = typeof Msg.Type

/** A cluster grain kind that records lifecycle events and delivered reminders as "label@millis#activation". */
const makeSubject = () => {
  const events: Array<string> = []
  let activations = 0
  const grain = Grain.make<Msg>()({
    name: "reminded",
    passivation: Passivation.idle("10 seconds"),
    onActivate: () => Effect.sync(() => ++activations).pipe(Effect.tap((n) => events.push(`activate#${n}`))),
    onReceive: (ctx, n) => {
      const msg = ctx.message
      const answer = <A, E>(effect: Effect.Effect<A, E, Reminders.Reminders>) =>
        Effect.flatMap(Effect.either(effect), (result) =>
          ctx.reply(result._tag === "Left" ? (result.left as { _tag: string })._tag : "ok")
        )
      const run = (): Effect.Effect<unknown, never, Reminders.Reminders> => {
        switch (msg._tag) {
          case "Fired":
            return Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.sync(() => events.push(`${msg.label}@${now}#${n}`))
            )
          case "After":
            return answer(
              Reminders.register(
                ctx,
                msg.name,
                { _tag: "Fired", label: msg.label },
                Reminders.after(msg.delay, msg.period === undefined ? {} : { period: msg.period })
              )
            )
          case "Cron":
            return answer(
              Reminders.register(ctx, msg.name, { _tag: "Fired", label: msg.label }, Reminders.cron(msg.expression))
            )
          case "Unregister":
            return Effect.flatMap(Effect.orDie(Reminders.unregister(ctx, msg.name)), (existed) =>
              ctx.reply(String(existed))
            )
          case "List":
            return Effect.flatMap(Effect.orDie(Reminders.list(ctx)), (list) =>
              ctx.reply(list.map((r) => `${r.name}:${r.nextDue}`).join(","))
            )
        }
      }
      return Effect.as(run(), n)
    },
    onDeactivate: (_props, n) => Effect.sync(() => events.push(`deactivate#${n}`))
  })
  const kind = ClusterGrain.make(grain, { message: Msg, reply: Schema.String })
  return { events, kind }
}

const runnerOn = (kind: ClusterGrain.ClusterGrain<any, any, any, any>) =>
  ClusterGrain.layer([kind]).pipe(
    Layer.provideMerge(Reminders.layer()),
    Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
  )

/** Asks the grain under test (the runner of `TestCluster.layer` holds its shards: no clock to move). */
const ask = (kind: ClusterGrain.ClusterGrain<Msg, string, any, any>, message: Msg) =>
  ClusterGrain.ask(kind, "g", message, { timeout: "10 seconds" })

/** Failed storage operations of reminder deliveries tried again, so far (a global counter). */
const storageRetries = Metric.value(Metrics.scheduleEvents("storage_retry")).pipe(Effect.map((state) => state.count))

const fired = (events: ReadonlyArray<string>) => events.filter((e) => e.includes("@"))

/** The clock times at which reminders were delivered. */
const firedTimes = (events: ReadonlyArray<string>) => fired(events).map((e) => Number(e.split(/[@#]/)[1]))

/** Each time is at or after its due time and late by at most the storage poll interval (1 s). */
const assertOnTime = (times: ReadonlyArray<number>, dueOf: (i: number) => number) =>
  times.forEach((t, i) => {
    assert.isAtLeast(t, dueOf(i))
    assert.isAtMost(t, dueOf(i) + 1_000)
  })

/** A test on one runner (`TestCluster.layer`) with a fresh subject kind, the clock moved past zero first. */
const withSubject = <A, E>(
  body: (subject: ReturnType<typeof makeSubject>) => Effect.Effect<A, E, TestCluster.Services>
) => {
  const subject = makeSubject()
  return Effect.zipRight(TestClock.adjust(1), body(subject)).pipe(
    Effect.provide(TestCluster.layer({ kinds: [subject.kind] }))
  )
}

describe("Reminders", () => {
  it.effect("a reminder reactivates a passivated grain", () =>
    withSubject(({ events, kind }) =>
      Effect.gen(function* () {
        assert.strictEqual(yield* ask(kind, { _tag: "After", name: "wake", label: "wake", delay: 60_000 }), "ok")
        yield* advance(30)
        assert.deepStrictEqual(events, ["activate#1", "deactivate#1"])
        // The clock jumps to the occurrence (due at 60 001), delivered then, by a new activation.
        const step = yield* TestCluster.advanceToNext
        assert.deepStrictEqual(
          step.delivered.map((d) => [d.reference, d.run.instant, d.run.outcome]),
          [["reminded/g/wake", 60_001, "sent"]]
        )
        assert.deepStrictEqual(events.slice(2), ["activate#2", "wake@60001#2"])
        // A one-shot is gone once delivered.
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), "")
      })
    )
  )

  // Storage failing on the delivery path must not lose the occurrence: the runner's scan of the due reminders and the
  // delivery try storage again until it passes (each failure counted).
  it.effect("storage failing when an occurrence arrives: tried again until it is back, then delivered once", () =>
    withSubject(({ events, kind }) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const retriesBefore = yield* storageRetries
        assert.strictEqual(yield* ask(kind, { _tag: "After", name: "wake", label: "wake", delay: 10_000 }), "ok")
        // Reading the reminders fails (a view in the table's place, whose every read fails while it runs: a failure
        // SQLite's prepare cache does not keep).
        yield* sql`ALTER TABLE cluster_tickwork_reminders RENAME TO cluster_tickwork_reminders_away`
        yield* sql`CREATE VIEW cluster_tickwork_reminders AS
          SELECT * FROM cluster_tickwork_reminders_away WHERE json('storage is failing') IS NOT NULL`
        yield* advance(15)
        assert.deepStrictEqual(fired(events), [])
        assert.isAtLeast((yield* storageRetries) - retriesBefore, 3)
        yield* sql`DROP VIEW cluster_tickwork_reminders`
        yield* sql`ALTER TABLE cluster_tickwork_reminders_away RENAME TO cluster_tickwork_reminders`
        yield* advance(15)
        assert.deepStrictEqual(firedTimes(events).length, 1)
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), "")
        assert.strictEqual((yield* sql`SELECT name FROM cluster_tickwork_reminders`).length, 0)
      })
    )
  )

  it.effect(
    "storage failing after the grain handled an occurrence: the outcome is written later, not handed twice",
    () =>
      withSubject(({ events, kind }) =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const retriesBefore = yield* storageRetries
          assert.strictEqual(yield* ask(kind, { _tag: "After", name: "wake", label: "wake", delay: 10_000 }), "ok")
          // The one-shot's row cannot be removed once delivered (its final transaction fails).
          yield* sql`CREATE TRIGGER keep_reminders BEFORE DELETE ON cluster_tickwork_reminders
          BEGIN SELECT RAISE(ABORT, 'storage is failing'); END`
          yield* advance(15)
          assert.deepStrictEqual(firedTimes(events), [10_001])
          assert.isAtLeast((yield* storageRetries) - retriesBefore, 3)
          // The grain's other messages wait meanwhile (its entity handles one message at a time): storage is read here.
          const rows = () => sql`SELECT name FROM cluster_tickwork_reminders`
          assert.strictEqual((yield* rows()).length, 1)
          yield* sql`DROP TRIGGER keep_reminders`
          yield* advance(15)
          // Written once storage was back; the grain was not handed the occurrence again.
          assert.deepStrictEqual(firedTimes(events), [10_001])
          assert.strictEqual((yield* rows()).length, 0)
        })
      )
  )

  it.effect("a periodic reminder keeps its grid", () =>
    withSubject(({ events, kind }) =>
      Effect.gen(function* () {
        yield* ask(kind, { _tag: "After", name: "beat", label: "beat", delay: 15_000, period: 15_000 })
        yield* advance(62)
        const times = firedTimes(events)
        assert.strictEqual(times.length, 4)
        assertOnTime(times, (i) => 1 + 15_000 * (i + 1))
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), `beat:${1 + 15_000 * 5}`)
        // One more occurrence on demand (Orleans' FireReminder): delivered now, off the grid, which stays.
        const fired = yield* TestCluster.fireReminder(kind, "g", "beat")
        assert.deepStrictEqual(fired.message, { _tag: "Fired", label: "beat" })
        assert.strictEqual(fired.run.instant, 62_001)
        assert.deepStrictEqual(firedTimes(events).slice(4), [62_001])
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), `beat:${1 + 15_000 * 5}`)
      })
    )
  )

  it.effect("unregister stops a reminder, including an occurrence already persisted", () =>
    withSubject(({ events, kind }) =>
      Effect.gen(function* () {
        yield* ask(kind, { _tag: "After", name: "r", label: "r", delay: 5_000, period: 5_000 })
        yield* advance(3)
        assert.strictEqual(yield* ask(kind, { _tag: "Unregister", name: "r" }), "true")
        assert.strictEqual(yield* ask(kind, { _tag: "Unregister", name: "r" }), "false")
        yield* advance(30)
        assert.deepStrictEqual(fired(events), [])
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), "")
      })
    )
  )

  it.effect("re-registering a name replaces the reminder; the old occurrence is dropped", () =>
    withSubject(({ events, kind }) =>
      Effect.gen(function* () {
        yield* ask(kind, { _tag: "After", name: "r", label: "old", delay: 5_000 })
        yield* ask(kind, { _tag: "After", name: "r", label: "new", delay: 20_000 })
        yield* advance(30)
        assert.deepStrictEqual(
          fired(events).map((e) => e.split("@")[0]),
          ["new"]
        )
      })
    )
  )

  it.scoped("a registration the cluster refuses registers nothing and leaves the reminder it was to replace", () => {
    const { kind } = makeSubject()
    return Effect.gen(function* () {
      const base = yield* Layer.build(
        Reminders.layer().pipe(
          Layer.provideMerge(ClusterRunner.layerTest()),
          Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
        )
      )
      // The kind is hosted in a scope of its own, so the test can take it away from the runner (which owns every shard).
      const hosting = yield* Scope.make()
      yield* Layer.buildWithScope(ClusterGrain.layer([kind]), hosting).pipe(Effect.provide(base))
      yield* TestClock.adjust(1)
      /** Registers from outside the grain, moving the clock so the send can reach the runner's shards. */
      const register = (name: string, label: string, delay: number) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.fork(
            Reminders.registerFor(kind, "g", name, { _tag: "Fired", label }, Reminders.after(delay)).pipe(
              Effect.provide(base),
              Effect.either
            )
          )
          yield* advance(1)
          return yield* Fiber.join(fiber)
        })
      const names = Reminders.listFor(kind, "g").pipe(
        Effect.map((reminders) => reminders.map((r) => `${r.name}:${r.nextDue}`)),
        Effect.provide(base)
      )
      assert.strictEqual((yield* register("kept", "old", 10_000))._tag, "Right")
      assert.deepStrictEqual(yield* names, ["kept:10001"])
      yield* Scope.close(hosting, Exit.void)
      const refused = yield* register("kept", "new", 20_000)
      assert.strictEqual(refused._tag === "Left" ? refused.left._tag : "registered", "UnknownClusterGrainKind")
      const fresh = yield* register("fresh", "new", 20_000)
      assert.strictEqual(fresh._tag === "Left" ? fresh.left._tag : "registered", "UnknownClusterGrainKind")
      // The refused replacement left the reminder as it was; the refused new one is not listed.
      assert.deepStrictEqual(yield* names, ["kept:10001"])
    })
  })

  it.effect("list shows each reminder's next due time; registerFor / listFor / unregisterFor work from outside", () =>
    withSubject(({ kind }) =>
      Effect.gen(function* () {
        yield* ask(kind, { _tag: "After", name: "b", label: "b", delay: 2_000, period: 60_000 })
        const info = yield* Reminders.registerFor(
          kind,
          "g",
          "a",
          { _tag: "Fired", label: "a" },
          Reminders.cron("0 0 * * * ?")
        )
        assert.deepStrictEqual(info, {
          name: "a",
          nextDue: 3_600_000,
          periodMillis: undefined,
          cron: "0 0 * * * ?",
          timeZone: "UTC"
        })
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), "a:3600000,b:2001")
        const listed = yield* Reminders.listFor(kind, "g")
        assert.deepStrictEqual(
          listed.map((r) => [r.name, r.periodMillis]),
          [
            ["a", undefined],
            ["b", 60_000]
          ]
        )
        assert.isTrue(yield* Reminders.unregisterFor(kind, "g", "a"))
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), "b:2001")
      })
    )
  )

  it.effect("cron reminders fire at the expression's instants, in UTC by default", () =>
    withSubject(({ events, kind }) =>
      Effect.gen(function* () {
        assert.strictEqual(
          yield* ask(kind, { _tag: "Cron", name: "c", label: "c", expression: "*/20 * * * * ?" }),
          "ok"
        )
        yield* advance(61)
        const times = firedTimes(events)
        assert.strictEqual(times.length, 3)
        assertOnTime(times, (i) => 20_000 * (i + 1))
      })
    )
  )

  it.effect("bad input is a typed error and registers nothing", () =>
    withSubject(({ kind }) =>
      Effect.gen(function* () {
        assert.strictEqual(
          yield* ask(kind, { _tag: "After", name: "", label: "x", delay: 1_000 }),
          "InvalidReminderName"
        )
        // The reference "reminded/g/<name>" keys the state and history rows: at most 246 characters, escapes counted.
        assert.strictEqual(
          yield* ask(kind, { _tag: "After", name: "x".repeat(236), label: "x", delay: 1_000 }),
          "InvalidReminderName"
        )
        assert.strictEqual(
          yield* ask(kind, { _tag: "After", name: "/".repeat(79), label: "x", delay: 1_000 }),
          "InvalidReminderName"
        )
        assert.strictEqual(yield* ask(kind, { _tag: "After", name: "x".repeat(235), label: "x", delay: 1_000 }), "ok")
        assert.strictEqual(yield* ask(kind, { _tag: "Unregister", name: "x".repeat(235) }), "true")
        assert.strictEqual(
          yield* ask(kind, { _tag: "After", name: "p", label: "x", delay: 1_000, period: 0 }),
          "InvalidTimerInterval"
        )
        assert.strictEqual(
          yield* ask(kind, { _tag: "After", name: "p", label: "x", delay: 1_000, period: -5 }),
          "InvalidTimerInterval"
        )
        assert.strictEqual(yield* ask(kind, { _tag: "After", name: "d", label: "x", delay: -1 }), "InvalidTimerDelay")
        assert.strictEqual(
          yield* ask(kind, { _tag: "Cron", name: "c", label: "x", expression: "not a cron" }),
          "InvalidCronExpression"
        )
        assert.strictEqual(
          yield* ask(kind, { _tag: "Cron", name: "c", label: "x", expression: "0 0 0 1 1 ? 1970" }),
          "ReminderNeverFires"
        )
        const badMessage = yield* Effect.flip(
          Reminders.registerFor(kind, "g", "m", { _tag: "Fired", label: 7 } as unknown as Msg, Reminders.after(1_000))
        )
        assert.strictEqual(badMessage._tag, "InvalidGrainMessage")
        const badZone = yield* Effect.flip(
          Reminders.registerFor(
            kind,
            "g",
            "z",
            { _tag: "Fired", label: "z" },
            Reminders.cron("0 * * * * ?", { timeZone: "Mars/Olympus" })
          )
        )
        assert.strictEqual(badZone._tag, "InvalidCronExpression")
        assert.strictEqual(yield* ask(kind, { _tag: "List" }), "")
      })
    )
  )

  it.effect("missed while the whole cluster was down: fires once on recovery, then continues on the grid", () => {
    const { events, kind } = makeSubject()
    return Effect.gen(function* () {
      const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
      const start = Effect.gen(function* () {
        const runner = yield* startRunner(storage, 1)
        const grains = yield* Layer.buildWithScope(runnerOn(kind), runner.scope).pipe(Effect.provide(runner.context))
        return { scope: runner.scope, context: Context.merge(runner.context, grains) }
      })
      yield* TestClock.adjust(1)
      const first = yield* start
      // A runner takes a moment to acquire its shards.
      yield* advance(5)
      yield* Effect.provide(
        ask(kind, { _tag: "After", name: "beat", label: "beat", delay: 10_000, period: 10_000 }),
        first.context
      )
      const grid = (k: number) => 5_001 + 10_000 * k
      yield* advance(12)
      assert.strictEqual(fired(events).length, 1)
      yield* Scope.close(first.scope, Exit.void)
      // Down from ~17 s to ~60 s: the occurrences due at 25, 35, 45 and 55 s are missed.
      yield* advance(43)
      assert.strictEqual(fired(events).length, 1)
      const second = yield* start
      yield* advance(4)
      const times = () => firedTimes(events)
      // Once on recovery, not once per missed occurrence.
      assert.strictEqual(times().length, 2)
      assert.isAbove(times()[1]!, grid(5))
      yield* advance(20)
      // Then on the grid again: 65 001 and 75 001 (each within the 1 s poll interval).
      assert.strictEqual(times().length, 4)
      assertOnTime(times().slice(2), (i) => grid(6 + i))
      yield* Scope.close(second.scope, Exit.void)
    }).pipe(Effect.scoped)
  })
})

/** The reminders table's SQL, on embedded SQLite and on PostgreSQL (a private table per run there). */
describeStorages("reminders table", pgSkip, (_name, storage) => {
  it.scoped(
    "upsert replaces by (kind, key, name); advance and remove respect the generation; BIGINTs read back as numbers",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tableName = `tickwork_reminders_test_${Date.now()}_${Math.floor(Math.random() * 1e6)}`
        yield* Effect.addFinalizer(() => Effect.ignore(sql`DROP TABLE IF EXISTS ${sql(tableName)}`))
        const table = yield* ReminderSql.make(sql, tableName)
        const due = 1_700_000_000_000
        yield* table.upsert("k", "a", {
          name: "n",
          generation: "1",
          message: "{}",
          nextDue: due,
          periodMillis: 5_000,
          cron: undefined,
          timeZone: undefined
        })
        const replaced = {
          name: "n",
          generation: "2",
          message: '{"_tag":"x"}',
          nextDue: due + 1,
          periodMillis: undefined,
          cron: "0 * * * * ?",
          timeZone: "UTC"
        }
        yield* table.upsert("k", "a", replaced)
        assert.deepStrictEqual(yield* table.get("k", "a", "n"), replaced)
        yield* table.advance("k", "a", "n", "1", due + 99, "default:1")
        assert.strictEqual((yield* table.get("k", "a", "n"))?.nextDue, due + 1)
        yield* table.advance("k", "a", "n", "2", due + 60_000, "default:1")
        assert.deepStrictEqual(
          (yield* table.list("k", "a")).map((row) => row.nextDue),
          [due + 60_000]
        )
        assert.deepStrictEqual(yield* table.list("k", "b"), [])
        assert.isFalse(yield* table.remove("k", "a", "n", "1"))
        assert.isTrue(yield* table.remove("k", "a", "n"))
        assert.isUndefined(yield* table.get("k", "a", "n"))
      }).pipe(
        // The table is dropped before the storage closes: a finalizer outside this scope would find the pool
        // closed (and, ignored, leave one table per run behind in PostgreSQL).
        Effect.scoped,
        Effect.provide(ClusterRunner.layerStorage(storage))
      )
  )
})
