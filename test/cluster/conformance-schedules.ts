/**
 * Conformance cases for operating cluster crons through `Schedules` (`ClusterSchedules`): run by conformance.test.ts
 * against each storage backend.
 */
import { SqlClient } from "@effect/sql"
import { assert, it } from "@effect/vitest"
import { Context, DateTime, Effect, Exit, Fiber, Layer, Metric, Schedule, Scope, TestClock } from "effect"
import { ActorSystem, Metrics, Schedules } from "tickwork"
import { ClusterRunner, ClusterScheduler, ClusterSchedules } from "tickwork/cluster"
import { iso, type TestRunner } from "./conformance-helpers.js"

export interface ScheduleCasesHost {
  readonly setup: Effect.Effect<
    {
      readonly storage: Context.Context<SqlClient.SqlClient>
      readonly startRunner: (
        port: number,
        options?: Pick<ClusterRunner.TestOptions, "shardingConfig">
      ) => Effect.Effect<TestRunner, unknown, Scope.Scope>
    },
    unknown,
    Scope.Scope
  >
  readonly advance: (seconds: number) => Effect.Effect<void>
}

/** What `execute` saw: the instant and trigger of each run. */
const recorder = (millis = 0) => {
  const runs: Array<string> = []
  return {
    runs,
    execute: (fire: ClusterScheduler.Fire) =>
      Effect.gen(function* () {
        runs.push(`${fire.trigger}@${DateTime.formatIso(fire.instant).slice(11, 19)}`)
        if (millis > 0) yield* Effect.sleep(millis)
      })
  }
}

const at = (seconds: number) => `${iso(seconds * 1000).slice(11, 19)}`

/** A runner with the system's `Schedules` over the cluster crons. */
const operated = (runner: TestRunner) =>
  Effect.map(
    Layer.buildWithScope(
      Layer.mergeAll(Schedules.layer, ClusterSchedules.layer).pipe(
        Layer.provideMerge(ActorSystem.layer({ name: `ops-${runner.port}` }))
      ),
      runner.scope
    ).pipe(Effect.provide(runner.context)),
    (context) => ({ ...runner, schedules: Effect.provide(Schedules.Schedules, context) })
  )

const schedule = (
  runner: TestRunner,
  reference: string,
  expression: string,
  execute: (fire: ClusterScheduler.Fire) => Effect.Effect<unknown, unknown>,
  policies?: Schedules.Policies
) =>
  ClusterScheduler.scheduleWithCron(
    expression,
    execute,
    ClusterScheduler.withTimerReference(reference),
    ...(policies === undefined ? [] : [ClusterScheduler.withPolicies(policies)])
  ).pipe(Effect.provide(runner.context), Scope.extend(runner.scope))

const count = (event: Parameters<typeof Metrics.scheduleEvents>[0]) =>
  Effect.map(Metric.value(Metrics.scheduleEvents(event)), (state) => state.count)

export const scheduleCases = ({ setup, advance }: ScheduleCasesHost) => {
  it.scoped(
    "cluster cron: a pause is stored, seen by every runner, and survives a restart; resume goes on from now",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        const one = yield* operated(yield* startRunner(1))
        const two = yield* operated(yield* startRunner(2))
        const seen = recorder()
        yield* schedule(one, "report", "*/10 * * * * ?", seen.execute)
        yield* schedule(two, "report", "*/10 * * * * ?", seen.execute)
        yield* advance(15)
        assert.deepStrictEqual(seen.runs, [`schedule@${at(10)}`])
        const pausesBefore = yield* count("paused")
        const paused = yield* Effect.flatMap(two.schedules, (s) =>
          s.pause("report", "warehouse migration", { by: "ada" })
        )
        assert.strictEqual(paused.state, "paused")
        assert.strictEqual(yield* count("paused"), pausesBefore + 1)
        // The other runner sees it, and lists it beside its local schedules.
        const listed = yield* Effect.flatMap(one.schedules, (s) => s.list({ kind: "cluster-cron" }))
        assert.deepStrictEqual(
          listed.map((info) => [
            info.reference,
            info.owner,
            info.state,
            info.pause?.note,
            info.pause?.by,
            info.nextFire
          ]),
          [["report", "cluster", "paused", "warehouse migration", "ada", undefined]]
        )
        yield* advance(20)
        assert.deepStrictEqual(seen.runs, [`schedule@${at(10)}`])
        // Every runner restarts: the pause holds.
        yield* Scope.close(one.scope, Exit.void)
        yield* Scope.close(two.scope, Exit.void)
        const three = yield* operated(yield* startRunner(3))
        yield* schedule(three, "report", "*/10 * * * * ?", seen.execute)
        yield* advance(10)
        const after = yield* Effect.flatMap(three.schedules, (s) => s.get("report"))
        assert.strictEqual(after.state, "paused")
        assert.strictEqual(after.pause?.note, "warehouse migration")
        assert.deepStrictEqual(seen.runs, [`schedule@${at(10)}`])
        // Resume: from the next instant after now (~46 s), none of those passed while paused.
        const resumed = yield* Effect.flatMap(three.schedules, (s) => s.resume("report"))
        assert.strictEqual(resumed.state, "active")
        yield* advance(8)
        assert.deepStrictEqual(seen.runs, [`schedule@${at(10)}`, `schedule@${at(50)}`])
        const history = yield* Effect.flatMap(three.schedules, (s) => s.history("report"))
        assert.deepStrictEqual(
          history.map((run) => [run.instant, run.trigger, run.outcome, run.attempts]),
          [
            [10_000, "schedule", "succeeded", 1],
            [50_000, "schedule", "succeeded", 1]
          ]
        )
        yield* Scope.close(three.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "cluster cron: an execute longer than the shard lock expiration runs once, committed once, and no runner loses its shards",
    () =>
      Effect.gen(function* () {
        const { startRunner, storage } = yield* setup
        const runners = [yield* startRunner(1), yield* startRunner(2)]
        const sql = Context.get(storage, SqlClient.SqlClient)
        const prefix = (yield* ClusterRunner.Tables.pipe(Effect.provide(runners[0]!.context))).prefix
        const effects = sql(`${prefix}_long_effects`)
        yield* sql`CREATE TABLE ${effects} (instant TEXT NOT NULL)`
        const events: Array<string> = []
        const short = recorder()
        for (const runner of runners) {
          yield* schedule(runner, "long", "0/30 * * * * ?", (fire) => {
            const instant = at(DateTime.toEpochMillis(fire.instant) / 1000)
            return Effect.gen(function* () {
              events.push(`start ${instant}`)
              yield* sql`INSERT INTO ${effects} (instant) VALUES (${instant})`
              // Longer than the lock refresh interval (3 s) and the lock expiration (10 s).
              yield* Effect.sleep("15 seconds")
              events.push(`end ${instant}`)
            }).pipe(Effect.onInterrupt(() => Effect.sync(() => events.push(`interrupted ${instant}`))))
          })
          // Another schedule meanwhile: on SQLite its instants wait for the connection, then run, each once.
          yield* schedule(runner, "short", "0/5 * * * * ?", short.execute)
        }
        yield* advance(52)
        assert.deepStrictEqual(events, [`start ${at(30)}`, `end ${at(30)}`])
        const rows = yield* sql<{ readonly instant: string }>`SELECT instant FROM ${effects}`
        assert.deepStrictEqual(
          rows.map((row) => row.instant),
          [at(30)]
        )
        const history = yield* ClusterScheduler.history("long").pipe(Effect.provide(runners[0]!.context))
        assert.deepStrictEqual(
          history.map((entry) => [DateTime.formatIso(entry.instant), entry.outcome]),
          [[iso(30_000), "ok"]]
        )
        assert.deepStrictEqual(
          short.runs,
          [5, 10, 15, 20, 25, 30, 35, 40, 45, 50].map((s) => `schedule@${at(s)}`)
        )
        for (const runner of runners) yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  for (const overlap of ["skip", "bufferOne", "bufferAll", "allowAll"] as const) {
    it.scoped(
      `cluster cron: a trigger during a running instant, overlap ${overlap}`,
      () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          const runner = yield* operated(yield* startRunner(1))
          // Runs of 5 s, longer than the shard lock refresh interval (3 s).
          const seen = recorder(5000)
          yield* schedule(runner, "slow", "0/30 * * * * ?", seen.execute, { overlap })
          yield* advance(31)
          assert.deepStrictEqual(seen.runs, [`schedule@${at(30)}`])
          // Two triggers while the run of 30 goes on (it started at 30 or 31, and takes 5 s).
          const schedules = yield* runner.schedules
          const first = yield* Effect.fork(schedules.trigger("slow"))
          yield* Effect.yieldNow()
          const second = yield* Effect.fork(schedules.trigger("slow"))
          yield* advance(20)
          yield* Fiber.join(first)
          yield* Fiber.join(second)
          const manual = seen.runs.filter((run) => run.startsWith("manual"))
          const history = yield* schedules.history("slow")
          const skipped = history.filter((run) => run.outcome === "skipped")
          switch (overlap) {
            case "skip":
              assert.deepStrictEqual(manual, [])
              assert.strictEqual(skipped.length, 2)
              assert.include(skipped[0]!.detail, "overlap: skip")
              break
            case "bufferOne":
              assert.strictEqual(manual.length, 1)
              assert.strictEqual(skipped.length, 1)
              assert.include(skipped[0]!.detail, "bufferOne")
              break
            case "bufferAll":
            case "allowAll":
              assert.strictEqual(manual.length, 2)
              assert.strictEqual(skipped.length, 0)
          }
          // The grid did not move: the next instant is still 60.
          assert.strictEqual((yield* schedules.get("slow")).nextFire, 60_000)
          assert.deepStrictEqual(
            history.filter((run) => run.trigger === "manual" && run.outcome === "succeeded").length,
            manual.length
          )
          yield* Scope.close(runner.scope, Exit.void)
        }),
      { timeout: 120_000 }
    )
  }

  it.scoped(
    "cluster cron: update changes the expression between two instants, no duplicate and none lost",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        const runner = yield* operated(yield* startRunner(1))
        const seen = recorder()
        yield* schedule(runner, "changing", "*/10 * * * * ?", seen.execute)
        yield* advance(15)
        const schedules = yield* runner.schedules
        const updated = yield* schedules.update("changing", {
          spec: Schedules.cron("*/4 * * * * ?"),
          policies: { pauseAfterFailures: 3 }
        })
        assert.strictEqual(updated.expression, "*/4 * * * * ?")
        assert.strictEqual(updated.nextFire, 16_000)
        assert.strictEqual(updated.policies.pauseAfterFailures, 3)
        yield* advance(10)
        assert.deepStrictEqual(
          seen.runs,
          [10, 16, 20, 24].map((s) => `schedule@${at(s)}`)
        )
        // An update that keeps an instant both expressions share, already run, does not run it again.
        yield* schedules.update("changing", { spec: Schedules.cron("*/12 * * * * ?") })
        yield* advance(13)
        assert.deepStrictEqual(
          seen.runs,
          [10, 16, 20, 24, 36].map((s) => `schedule@${at(s)}`)
        )
        // Bad input: typed errors that change nothing.
        const interval = yield* Effect.flip(schedules.update("changing", { spec: Schedules.every("1 minute") }))
        assert.strictEqual(interval._tag, "InvalidSchedulePolicy")
        const expression = yield* Effect.flip(schedules.update("changing", { spec: Schedules.cron("0 0 25 * * ?") }))
        assert.strictEqual(expression._tag, "InvalidCronExpression")
        const retry = yield* Effect.flip(schedules.update("changing", { policies: { retry: Schedule.recurs(1) } }))
        assert.strictEqual(retry._tag, "InvalidSchedulePolicy")
        const overlap = yield* Effect.flip(schedules.update("changing", { policies: { overlap: "often" as never } }))
        assert.strictEqual(overlap._tag, "InvalidSchedulePolicy")
        const missing = yield* Effect.flip(schedules.update("nowhere", { spec: Schedules.cron("* * * * * ?") }))
        assert.strictEqual(missing._tag, "ScheduledReferenceNotFound")
        assert.strictEqual((yield* schedules.get("changing")).expression, "*/12 * * * * ?")
        // Remove: gone from every runner's view and stops firing; registering it again brings it back.
        yield* schedules.remove("changing")
        assert.strictEqual((yield* Effect.flip(schedules.get("changing")))._tag, "ScheduledReferenceNotFound")
        assert.strictEqual((yield* Effect.flip(schedules.history("changing")))._tag, "ScheduledReferenceNotFound")
        yield* advance(15)
        assert.strictEqual(seen.runs.length, 5)
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  for (const [label, misfire, expected, missed] of [
    ["runOnce", Schedules.runOnce, [20], 3],
    ["skipMissed", Schedules.skipMissed, [], 4],
    ["runAll(2)", Schedules.runAll(2), [40, 50], 2]
  ] as const) {
    it.scoped(
      `cluster cron: misfire after an outage, ${label}`,
      () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          const seen = recorder()
          const policies: Schedules.Policies = { misfire, grace: "5 seconds" }
          const before = yield* startRunner(1)
          yield* schedule(before, "outage", "*/10 * * * * ?", seen.execute, policies)
          yield* advance(15)
          yield* Scope.close(before.scope, Exit.void)
          // The whole cluster is down from 15 s to 55.5 s: 20, 30, 40 and 50 are more than 5 s late.
          yield* TestClock.setTime(55_500)
          const missedBefore = yield* count("missed")
          const after = yield* operated(yield* startRunner(2))
          yield* schedule(after, "outage", "*/10 * * * * ?", seen.execute, policies)
          yield* advance(8)
          assert.deepStrictEqual(
            seen.runs,
            [10, ...expected, 60].map((s) => `schedule@${at(s)}`)
          )
          assert.strictEqual((yield* count("missed")) - missedBefore, missed)
          const history = yield* Effect.flatMap(after.schedules, (s) => s.history("outage"))
          const entry = history.find((run) => run.outcome === "missed")
          assert.include(entry?.detail, `${missed} instants`)
          yield* Scope.close(after.scope, Exit.void)
        }),
      { timeout: 120_000 }
    )
  }

  it.scoped(
    "cluster cron: a failed instant is retried, then the schedule pauses after N failures in a row",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        const runner = yield* operated(yield* startRunner(1))
        let attempts = 0
        const pausedBefore = yield* count("paused_on_failure")
        const retriesBefore = yield* count("retry")
        yield* schedule(
          runner,
          "flaky",
          "*/10 * * * * ?",
          () =>
            Effect.suspend(() => {
              attempts++
              return Effect.fail(`attempt ${attempts} failed`)
            }),
          { retry: Schedule.recurs(2), pauseAfterFailures: 2 }
        )
        yield* advance(35)
        assert.strictEqual(attempts, 6)
        const schedules = yield* runner.schedules
        const info = yield* schedules.get("flaky")
        assert.strictEqual(info.state, "paused")
        assert.strictEqual(info.pause?.by, "tickwork")
        assert.include(info.pause?.note, "paused after 2 failed runs in a row")
        assert.include(info.pause?.note, "attempt 6 failed")
        assert.isTrue(info.policies.retry)
        assert.strictEqual((yield* count("paused_on_failure")) - pausedBefore, 1)
        assert.strictEqual((yield* count("retry")) - retriesBefore, 4)
        const history = yield* schedules.history("flaky")
        assert.deepStrictEqual(
          history.map((run) => [run.instant, run.outcome, run.attempts]),
          [
            [10_000, "failed", 3],
            [20_000, "failed", 3]
          ]
        )
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "cluster cron: backfill runs each instant of a range once, in order, without moving the grid",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        const runner = yield* operated(yield* startRunner(1))
        const seen = recorder()
        yield* schedule(runner, "backfilled", "*/10 * * * * ?", seen.execute)
        yield* advance(15)
        const schedules = yield* runner.schedules
        assert.strictEqual(yield* schedules.backfill("backfilled", 0, 20_000), 3)
        yield* advance(3)
        assert.deepStrictEqual(seen.runs, [
          `schedule@${at(10)}`,
          `backfill@${at(0)}`,
          `backfill@${at(10)}`,
          `backfill@${at(20)}`
        ])
        assert.strictEqual((yield* schedules.get("backfilled")).nextFire, 20_000)
        const backfilled = (yield* schedules.history("backfilled")).filter((run) => run.trigger === "backfill")
        assert.deepStrictEqual(
          backfilled.map((run) => [run.instant, run.outcome]),
          [
            [0, "succeeded"],
            [10_000, "succeeded"],
            [20_000, "succeeded"]
          ]
        )
        const reversed = yield* Effect.flip(schedules.backfill("backfilled", 20_000, 0))
        assert.strictEqual(reversed._tag, "InvalidSchedulePolicy")
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "cluster cron: unknown references are ScheduledReferenceNotFound; storage failures are ScheduleStorageError",
    () =>
      Effect.gen(function* () {
        const { startRunner, storage } = yield* setup
        const runner = yield* operated(yield* startRunner(1))
        yield* schedule(runner, "kept", "0 0 * * * ?", () => Effect.void)
        yield* advance(2)
        const schedules = yield* runner.schedules
        for (const missing of [
          schedules.get("nowhere"),
          schedules.pause("nowhere", "note"),
          schedules.resume("nowhere"),
          schedules.trigger("nowhere"),
          schedules.remove("nowhere"),
          schedules.history("nowhere"),
          schedules.backfill("nowhere", 0, 1)
        ]) {
          assert.strictEqual((yield* Effect.flip(missing))._tag, "ScheduledReferenceNotFound")
        }
        // The runs table goes away: reading the history is a typed storage error, not a defect.
        const sql = Context.get(storage, SqlClient.SqlClient)
        const prefix = (yield* ClusterRunner.Tables.pipe(Effect.provide(runner.context))).prefix
        yield* sql`DROP TABLE ${sql(`${prefix}_tickwork_schedule_runs`)}`
        const failed = yield* Effect.flip(schedules.history("kept"))
        assert.strictEqual(failed._tag, "ScheduleStorageError")
        assert.include(failed.message, "history")
        assert.strictEqual((yield* Effect.flip(schedules.list()))._tag, "ScheduleStorageError")
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )
}
