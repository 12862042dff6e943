import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as Sharding from "@effect/cluster/Sharding"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, DateTime, Duration, Effect, Exit, Fiber, Layer, Option, Scope, TestClock, TestServices } from "effect"
import { GrainTimers } from "tickwork"
import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"
import { FirePayload, makeEntity, READ_AHEAD_MILLIS } from "../../src/cluster/internal/cron.js"
import * as CronMessages from "../../src/cluster/internal/cronMessages.js"
import { captureLogs } from "../utils.js"
import { advance, historyOf, iso, saveAsCluster, startRunner } from "./conformance-helpers.js"

/** The instants `scheduleWithCron` ran, as ISO strings, and an `execute` that records them. */
const recorder = () => {
  const fired: Array<string> = []
  const fires: Array<ClusterScheduler.Fire> = []
  return {
    fired,
    fires,
    execute: (fire: ClusterScheduler.Fire) =>
      Effect.sync(() => {
        fired.push(DateTime.formatIso(fire.instant))
        fires.push(fire)
      })
  }
}

describe("ClusterScheduler.scheduleWithCron", () => {
  it.scoped("fires once per instant, each at most one poll interval late, and records each in storage", () =>
    Effect.gen(function* () {
      const { execute, fired, fires } = recorder()
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        execute,
        ClusterScheduler.withTimerReference("every-10s")
      )
      yield* advance(65)
      const expected = [10, 20, 30, 40, 50, 60].map((s) => iso(s * 1000))
      assert.deepStrictEqual(fired, expected)
      assert.deepStrictEqual(yield* historyOf("every-10s"), expected)
      for (const fire of fires) {
        assert.isAtMost(fire.late.value._tag === "Millis" ? fire.late.value.millis : Number.POSITIVE_INFINITY, 1000)
        assert.isFalse(fire.misfired)
        assert.strictEqual(fire.reference, "every-10s")
      }
      const next = yield* ClusterScheduler.nextInstant("every-10s")
      assert.deepStrictEqual(Option.map(next, DateTime.formatIso), Option.some(iso(70_000)))
    }).pipe(Effect.provide(ClusterRunner.layerTest()))
  )

  it.scoped("accepts an effect as well as a function of the fire", () =>
    Effect.gen(function* () {
      let runs = 0
      yield* ClusterScheduler.scheduleWithCron(
        "*/5 * * * * ?",
        Effect.sync(() => runs++),
        ClusterScheduler.withTimerReference("plain")
      )
      yield* advance(21)
      assert.strictEqual(runs, 4)
    }).pipe(Effect.provide(ClusterRunner.layerTest()))
  )

  it.scoped("evaluates in UTC by default and in the zone given by withTimeZone", () =>
    Effect.gen(function* () {
      // 09:00 in Tokyo is 00:00 UTC. Each phase starts its own runner near the instant (TestClock jumps are costly
      // while a runner's loops are sleeping on it).
      const phase = (time: string) =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.parse(time))
          const utc = recorder()
          const tokyo = recorder()
          yield* Effect.gen(function* () {
            yield* ClusterScheduler.scheduleWithCron(
              "0 0 9 * * ?",
              utc.execute,
              ClusterScheduler.withTimerReference("utc")
            )
            yield* ClusterScheduler.scheduleWithCron(
              "0 0 9 * * ?",
              tokyo.execute,
              ClusterScheduler.withTimerReference("tokyo"),
              // The grain timer helper, as it is.
              GrainTimers.withTimeZone("Asia/Tokyo")
            )
            yield* advance(4)
          }).pipe(Effect.scoped, Effect.provide(ClusterRunner.layerTest()))
          return { utc: utc.fired, tokyo: tokyo.fired }
        })
      assert.deepStrictEqual(yield* phase("1970-01-01T08:59:58Z"), { utc: ["1970-01-01T09:00:00.000Z"], tokyo: [] })
      assert.deepStrictEqual(yield* phase("1970-01-01T23:59:58Z"), { utc: [], tokyo: ["1970-01-02T00:00:00.000Z"] })
    })
  )

  it.scoped("closing its scope stops the schedule on the runner; a later runner resumes it from storage", () =>
    Effect.gen(function* () {
      const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
      const first = recorder()
      const neighbour = recorder()
      const runner = yield* startRunner(storage, 1)
      const schedule = yield* Scope.make()
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        first.execute,
        ClusterScheduler.withTimerReference("scoped")
      ).pipe(Effect.provide(runner.context), Scope.extend(schedule))
      // Another schedule on the same runner, for the runner's lifetime.
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        neighbour.execute,
        ClusterScheduler.withTimerReference("neighbour")
      ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
      yield* advance(25)
      assert.deepStrictEqual(first.fired, [iso(10_000), iso(20_000)])
      yield* Scope.close(schedule, Exit.void)
      yield* advance(10)
      assert.deepStrictEqual(first.fired, [iso(10_000), iso(20_000)])
      // Only that schedule stopped: the runner goes on with the others.
      assert.deepStrictEqual(neighbour.fired, [iso(10_000), iso(20_000), iso(30_000)])
      // Registered again on the same runner (at run time): it goes on from its cursor, no instant run twice.
      const again = recorder()
      const reopened = yield* Scope.make()
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        again.execute,
        ClusterScheduler.withTimerReference("scoped")
      ).pipe(Effect.provide(runner.context), Scope.extend(reopened))
      yield* advance(1)
      assert.deepStrictEqual(again.fired, [iso(30_000)])
      yield* Scope.close(reopened, Exit.void)
      yield* Scope.close(runner.scope, Exit.void)
      yield* advance(10)
      // Another runner within the misfire threshold: the instants missed meanwhile run late, in order, once.
      const second = recorder()
      const next = yield* startRunner(storage, 2)
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        second.execute,
        ClusterScheduler.withTimerReference("scoped")
      ).pipe(Effect.provide(next.context), Scope.extend(next.scope))
      yield* advance(7)
      assert.deepStrictEqual(second.fired, [iso(40_000), iso(50_000)])
      assert.isTrue(second.fires.every((fire) => !fire.misfired))
      assert.deepStrictEqual(
        yield* historyOf("scoped").pipe(Effect.provide(storage)),
        [10, 20, 30, 40, 50].map((s) => iso(s * 1000))
      )
    })
  )

  it.scoped("after an outage longer than the misfire threshold: the pending instant runs once, then the grid", () =>
    Effect.gen(function* () {
      const { logs, layer } = captureLogs()
      const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
      const first = recorder()
      const before = yield* startRunner(storage, 1)
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        first.execute,
        ClusterScheduler.withTimerReference("outage"),
        ClusterScheduler.withMisfireThreshold("30 seconds")
      ).pipe(Effect.provide(before.context), Scope.extend(before.scope))
      yield* advance(15)
      yield* Scope.close(before.scope, Exit.void)
      // The whole cluster is down from 15 s to 100.5 s: instant 20 is 80.5 s late (> 30 s), 30..100 are missed.
      yield* TestClock.setTime(100_500)
      const second = recorder()
      // The runner's fibers (and so the schedule's handler) log through the logger they were built with.
      const after = yield* startRunner(storage, 2).pipe(Effect.provide(layer))
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        second.execute,
        ClusterScheduler.withTimerReference("outage"),
        ClusterScheduler.withMisfireThreshold("30 seconds")
      ).pipe(Effect.provide(after.context), Scope.extend(after.scope))
      yield* advance(21)
      assert.deepStrictEqual(first.fired, [iso(10_000)])
      assert.deepStrictEqual(second.fired, [iso(20_000), iso(110_000), iso(120_000)])
      assert.deepStrictEqual(
        second.fires.map((fire) => fire.misfired),
        [true, false, false]
      )
      const warning = logs.find((log) => log.level === "WARN" && log.message.includes("were missed"))
      assert.isDefined(warning)
      // 30, 40, ..., 100: eight instants skipped.
      assert.include(warning!.message, "8 instants after 1970-01-01T00:00:20.000Z")
      assert.include(warning!.message, "resumes at 1970-01-01T00:01:50.000Z")
    })
  )

  it.scoped("a defect in execute is recorded as failed and the schedule goes on", () =>
    Effect.gen(function* () {
      let runs = 0
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        Effect.suspend(() => {
          runs++
          return runs === 1 ? Effect.die(new Error("bug")) : Effect.void
        }),
        ClusterScheduler.withTimerReference("defect")
      )
      yield* advance(25)
      assert.strictEqual(runs, 2)
      const entries = yield* ClusterScheduler.history("defect")
      assert.deepStrictEqual(
        entries.map((entry) => entry.outcome),
        ["failed", "ok"]
      )
    }).pipe(Effect.provide(ClusterRunner.layerTest()))
  )
})

describe("ClusterScheduler with a long execute (SQLite's single connection)", () => {
  it.scoped(
    "an execute longer than the shard lock expiration runs once and completes: its SQL committed once, no shard lost",
    () =>
      Effect.gen(function* () {
        const { logs, layer } = captureLogs()
        const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
        // The runner's fibers (the lock refresh among them) log through the logger they were built with.
        const runner = yield* startRunner(storage, 1).pipe(Effect.provide(layer))
        const sql = Context.get(storage, SqlClient.SqlClient)
        yield* sql`CREATE TABLE long_effects (instant TEXT NOT NULL)`
        const events: Array<string> = []
        yield* ClusterScheduler.scheduleWithCron(
          "*/30 * * * * ?",
          (fire) => {
            const instant = DateTime.formatIso(fire.instant).slice(11, 19)
            return Effect.gen(function* () {
              events.push(`start ${instant}`)
              yield* sql`INSERT INTO long_effects (instant) VALUES (${instant})`
              // Longer than the lock refresh interval (3 s) and the lock expiration (10 s): the run's transaction
              // holds the runner's one SQLite connection all along.
              yield* Effect.sleep("15 seconds")
              events.push(`end ${instant}`)
            }).pipe(Effect.onInterrupt(() => Effect.sync(() => events.push(`interrupted ${instant}`))))
          },
          ClusterScheduler.withTimerReference("long")
        ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
        yield* advance(50)
        assert.deepStrictEqual(events, ["start 00:00:30", "end 00:00:30"])
        const rows = yield* sql<{ readonly instant: string }>`SELECT instant FROM long_effects`
        assert.deepStrictEqual(
          rows.map((row) => row.instant),
          ["00:00:30"]
        )
        assert.deepStrictEqual(yield* historyOf("long").pipe(Effect.provide(storage)), [iso(30_000)])
        // The runner kept its shards: its lock refresh was not starved by the run's transaction.
        assert.isUndefined(logs.find((log) => log.message.includes("Shard lock storage is unhealthy")))
        // And the schedule goes on: the next instant runs too.
        yield* advance(30)
        assert.deepStrictEqual(events, ["start 00:00:30", "end 00:00:30", "start 00:01:00", "end 00:01:00"])
        yield* Scope.close(runner.scope, Exit.void)
      })
  )
  it.scoped(
    "a long execute that fails, on one of two runners: run once, its SQL rolled back, recorded failed; the other schedule's instants each once",
    () =>
      Effect.gen(function* () {
        const { logs, layer } = captureLogs()
        const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
        const runners = [
          yield* startRunner(storage, 1).pipe(Effect.provide(layer)),
          yield* startRunner(storage, 2).pipe(Effect.provide(layer))
        ]
        const sql = Context.get(storage, SqlClient.SqlClient)
        yield* sql`CREATE TABLE failed_effects (instant TEXT NOT NULL)`
        const events: Array<string> = []
        const ticks: Array<string> = []
        for (const runner of runners) {
          yield* ClusterScheduler.scheduleWithCron(
            "0/30 * * * * ?",
            (fire) => {
              const instant = DateTime.formatIso(fire.instant).slice(11, 19)
              return Effect.gen(function* () {
                events.push(`start ${instant}`)
                yield* sql`INSERT INTO failed_effects (instant) VALUES (${instant})`
                // The lock refreshes made meanwhile ran inside this attempt's savepoint: its rollback takes them back.
                yield* Effect.sleep("15 seconds")
                events.push(`fail ${instant}`)
                return yield* Effect.fail("boom")
              }).pipe(Effect.onInterrupt(() => Effect.sync(() => events.push(`interrupted ${instant}`))))
            },
            ClusterScheduler.withTimerReference("long-failing")
          ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
          yield* ClusterScheduler.scheduleWithCron(
            "* * * * * ?",
            (fire) => Effect.sync(() => ticks.push(DateTime.formatIso(fire.instant))),
            ClusterScheduler.withTimerReference("every-second")
          ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
        }
        yield* advance(80)
        assert.deepStrictEqual(events, ["start 00:00:30", "fail 00:00:30", "start 00:01:00", "fail 00:01:00"])
        assert.deepStrictEqual(yield* sql`SELECT instant FROM failed_effects`, [])
        const history = yield* ClusterScheduler.history("long-failing").pipe(Effect.provide(runners[0]!.context))
        assert.deepStrictEqual(
          history.map((entry) => entry.outcome),
          ["failed", "failed"]
        )
        // Every second from 1 on once, none missing (those due during a long run run when it ends, in order).
        assert.isAtLeast(ticks.length, 60)
        assert.deepStrictEqual(
          ticks,
          Array.from({ length: ticks.length }, (_, i) => iso((i + 1) * 1000))
        )
        assert.isUndefined(logs.find((log) => log.message.includes("Shard lock storage is unhealthy")))
        for (const runner of runners) yield* Scope.close(runner.scope, Exit.void)
      })
  )
})

describe("ClusterScheduler bad input", () => {
  const layer = ClusterRunner.layerTest()

  it.scoped("no reference: MissingCronReference", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ClusterScheduler.scheduleWithCron("0 * * * * ?", Effect.void))
      assert.strictEqual(error._tag, "MissingCronReference")
      assert.include(error.message, "withTimerReference")
      // Options without a reference do not count as one.
      const again = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron("0 * * * * ?", Effect.void, ClusterScheduler.withTimeZone("UTC"))
      )
      assert.strictEqual(again._tag, "MissingCronReference")
    }).pipe(Effect.provide(layer))
  )

  it.scoped("a bad expression or zone: InvalidCronExpression naming the field", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron("0 0 25 * * ?", Effect.void, ClusterScheduler.withTimerReference("x"))
      )
      assert.strictEqual(error._tag, "InvalidCronExpression")
      assert.strictEqual(error._tag === "InvalidCronExpression" ? error.field : undefined, "hours")
      const zone = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron(
          "0 0 1 * * ?",
          Effect.void,
          ClusterScheduler.withTimerReference("x"),
          ClusterScheduler.withTimeZone("Mars/Olympus")
        )
      )
      assert.strictEqual(zone._tag, "InvalidCronExpression")
      assert.include(zone.message, "Mars/Olympus")
      const empty = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron("", Effect.void, ClusterScheduler.withTimerReference("x"))
      )
      assert.strictEqual(empty._tag, "InvalidCronExpression")
    }).pipe(Effect.provide(layer))
  )

  it.scoped("a bad reference or threshold: InvalidClusterCronOptions naming each issue", () =>
    Effect.gen(function* () {
      const empty = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron("0 * * * * ?", Effect.void, ClusterScheduler.withTimerReference(""))
      )
      assert.strictEqual(empty._tag, "InvalidClusterCronOptions")
      assert.include(empty.message, "1-100 characters")
      const both = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron(
          "0 * * * * ?",
          Effect.void,
          ClusterScheduler.withTimerReference("r".repeat(101)),
          ClusterScheduler.withMisfireThreshold("forever" as never)
        )
      )
      assert.strictEqual(both._tag, "InvalidClusterCronOptions")
      assert.deepStrictEqual(both._tag === "InvalidClusterCronOptions" ? both.issues.length : 0, 2)
      const control = yield* Effect.flip(
        ClusterScheduler.scheduleWithCron("0 * * * * ?", Effect.void, ClusterScheduler.withTimerReference("a\nb"))
      )
      assert.include(control.message, "control characters")
    }).pipe(Effect.provide(layer))
  )

  it.scoped(
    "the same reference twice on one runner while the first one's scope is open: InvalidClusterCronOptions; once closed, it registers again",
    () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        yield* ClusterScheduler.scheduleWithCron(
          "0 * * * * ?",
          Effect.void,
          ClusterScheduler.withTimerReference("twice")
        ).pipe(Scope.extend(scope))
        const error = yield* Effect.flip(
          ClusterScheduler.scheduleWithCron("0 0 * * * ?", Effect.void, ClusterScheduler.withTimerReference("twice"))
        )
        assert.strictEqual(error._tag, "InvalidClusterCronOptions")
        assert.include(error.message, "already registered on this runner")
        yield* Scope.close(scope, Exit.void)
        yield* ClusterScheduler.scheduleWithCron(
          "0 0 * * * ?",
          Effect.void,
          ClusterScheduler.withTimerReference("twice")
        )
        // Bad policies: a typed error naming the policy.
        const policy = yield* Effect.flip(
          ClusterScheduler.scheduleWithCron(
            "0 0 * * * ?",
            Effect.void,
            ClusterScheduler.withTimerReference("policy"),
            ClusterScheduler.withPolicies({ overlap: "sometimes" as never })
          )
        )
        assert.strictEqual(policy._tag, "InvalidSchedulePolicy")
        assert.include(policy.message, "overlap")
        // Another reference is fine.
        yield* ClusterScheduler.scheduleWithCron(
          "0 0 * * * ?",
          Effect.void,
          ClusterScheduler.withTimerReference("once")
        )
      }).pipe(Effect.provide(layer))
  )
})

describe("ClusterScheduler on several runners (one process, TestClock)", () => {
  /** Three runners without sockets over one in-memory SQLite storage, each in its own scope. */
  const threeRunners = Effect.gen(function* () {
    const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
    return yield* Effect.forEach([1, 2, 3], (port) => startRunner(storage, port))
  })

  it.scoped("a runner that leaves in the middle of execute: the instant runs again elsewhere, committed once", () =>
    Effect.gen(function* () {
      const runners = yield* threeRunners
      const sql = yield* SqlClient.SqlClient.pipe(Effect.provide(runners[0]!.context))
      yield* sql`CREATE TABLE effects (instant TEXT NOT NULL, runner INTEGER NOT NULL)`
      const started: Array<[string, number]> = []
      for (const runner of runners) {
        yield* ClusterScheduler.scheduleWithCron(
          "*/10 * * * * ?",
          (fire) =>
            Effect.gen(function* () {
              const instant = DateTime.formatIso(fire.instant)
              started.push([instant, runner.port])
              yield* sql`INSERT INTO effects (instant, runner) VALUES (${instant}, ${runner.port})`
              // The first attempt at 20 s never finishes: its runner is shut down under it.
              if (instant === iso(20_000) && started.filter(([i]) => i === instant).length === 1) {
                yield* Effect.never
              }
            }),
          ClusterScheduler.withTimerReference("interrupted")
        ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))
      }
      yield* advance(21)
      const [, stuckOn] = started.find(([instant]) => instant === iso(20_000))!
      const stuck = runners.find((runner) => runner.port === stuckOn)!
      // Shutting the runner down waits for the handler up to entityTerminationTimeout (10 s), then interrupts it.
      const closing = yield* Effect.fork(Scope.close(stuck.scope, Exit.void))
      yield* advance(15)
      yield* Fiber.join(closing)
      yield* advance(20)
      const attempts = started.filter(([instant]) => instant === iso(20_000))
      assert.strictEqual(attempts.length, 2)
      assert.notStrictEqual(attempts[1]![1], stuckOn)
      const effects = yield* sql<{ readonly instant: string }>`SELECT instant FROM effects ORDER BY instant`
      assert.deepStrictEqual(
        effects.map((row) => row.instant),
        [10, 20, 30, 40, 50].map((s) => iso(s * 1000))
      )
    })
  )
})

describe("ClusterScheduler's next instant, written with the instant's transaction", () => {
  /** Every column of the cron's fire requests in `cluster_messages`, as plain values, oldest first. */
  const fireRows = Effect.gen(function* () {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const rows = yield* sql<
      Record<string, unknown>
    >`SELECT * FROM cluster_messages WHERE tag = 'fire' ORDER BY id`.pipe(
      Effect.provideService(SqlClient.SafeIntegers, true)
    )
    return rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([column, value]) => [column, typeof value === "bigint" ? String(value) : value])
      )
    )
  })

  it.scoped("format: the row is the one SqlMessageStorage.saveRequest writes for the same request", () =>
    Effect.gen(function* () {
      const { execute, fired } = recorder()
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        execute,
        ClusterScheduler.withTimerReference("written")
      )
      yield* advance(11)
      assert.deepStrictEqual(fired, [iso(10_000)])
      // The message of 20 s, written by the instant of 10 s (the one of 10 s was sent by the singleton's start).
      const written = (yield* fireRows).filter((row) => row.entity_id === iso(20_000))
      assert.strictEqual(written.length, 1)
      const row = written[0]!
      // Delivered ahead of its instant: the handler waits for the instant itself.
      assert.strictEqual(Number(row.deliver_at), 20_000 - READ_AHEAD_MILLIS)
      assert.strictEqual(Number(row.processed), 0)

      // The same request saved by @effect/cluster itself, with the same id, replaces it: every column agrees.
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql`DELETE FROM cluster_messages WHERE id = ${row.id as string}`
      const entity = makeEntity("written")
      const saved = yield* saveAsCluster(
        yield* MessageStorage.MessageStorage,
        row,
        entity,
        "fire",
        new FirePayload({ instant: 20_000, generation: Number(JSON.parse(row.payload as string).generation) })
      )
      assert.strictEqual(saved._tag, "Success")
      const resaved = (yield* fireRows).filter((r) => r.entity_id === iso(20_000))
      const comparable = (rows: ReadonlyArray<Record<string, unknown>>) =>
        rows.map(({ last_read: _, ...columns }) => columns)
      assert.deepStrictEqual(comparable(resaved), comparable(written))
      // And it is delivered at its instant, as a sent one.
      yield* advance(10)
      assert.deepStrictEqual(fired, [iso(10_000), iso(20_000)])
    }).pipe(Effect.provide(ClusterRunner.layerTest()))
  )

  it.scoped("an instant's message is read ahead of it; execute starts at the instant, not before", () =>
    Effect.gen(function* () {
      const { execute, fired, fires } = recorder()
      yield* ClusterScheduler.scheduleWithCron("*/10 * * * * ?", execute, ClusterScheduler.withTimerReference("ahead"))
      yield* advance(11)
      assert.deepStrictEqual(fired, [iso(10_000)])
      const settle = TestServices.provideLive(Effect.sleep(200))
      // Between the message's delivery time and its instant: the message is read (claimed), execute has not run.
      yield* TestClock.setTime(20_000 - READ_AHEAD_MILLIS / 2)
      yield* settle
      const row = (yield* fireRows).find((r) => r.entity_id === iso(20_000))!
      assert.isNotNull(row.last_read)
      assert.strictEqual(Number(row.processed), 0)
      assert.deepStrictEqual(fired, [iso(10_000)])
      yield* TestClock.setTime(20_000 - 1)
      yield* settle
      assert.deepStrictEqual(fired, [iso(10_000)])
      // At the instant: it runs without waiting for a read.
      yield* TestClock.setTime(20_000)
      yield* settle
      assert.deepStrictEqual(fired, [iso(10_000), iso(20_000)])
      assert.deepStrictEqual(
        fires.map((fire) => Duration.toMillis(fire.late)),
        [0, 0]
      )
    }).pipe(Effect.provide(ClusterRunner.layerTest()))
  )

  it.scoped(
    "the write is taken only while the messages table has exactly @effect/cluster's columns; else the next is sent",
    () =>
      Effect.gen(function* () {
        const writerOf = Effect.flatMap(Effect.all([Sharding.Sharding, SqlClient.SqlClient]), ([sharding, sql]) =>
          CronMessages.make(sharding, sql, makeEntity("drift") as never)
        )
        assert.isDefined(yield* writerOf)
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        yield* sql`ALTER TABLE cluster_messages ADD COLUMN drift TEXT`
        assert.isUndefined(yield* writerOf)
        const { execute, fired } = recorder()
        yield* ClusterScheduler.scheduleWithCron(
          "*/10 * * * * ?",
          execute,
          ClusterScheduler.withTimerReference("drift")
        )
        yield* advance(31)
        assert.deepStrictEqual(
          fired,
          [10, 20, 30].map((s) => iso(s * 1000))
        )
      }).pipe(Effect.provide(ClusterRunner.layerTest()))
  )
})
