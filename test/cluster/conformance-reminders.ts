/**
 * Conformance cases for operating durable reminders through `Schedules` (`ClusterSchedules` with `Reminders`): run by
 * conformance.test.ts against each storage backend.
 */
import { assert, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Layer, Metric, Schedule, Schema, Scope } from "effect"
import { ActorSystem, Grain, Metrics, Schedules } from "tickwork"
import { ClusterGrain, ClusterSchedules, Reminders } from "tickwork/cluster"
import type { TestRunner } from "./conformance-helpers.js"
import type { ScheduleCasesHost } from "./conformance-schedules.js"

/** Occurrences counted missed, process-wide (`Metrics.scheduleEvents("missed")`). */
const missedCount = Effect.map(Metric.value(Metrics.scheduleEvents("missed")), (state) => state.count)

/** What the grains received: key and time, per test (cleared by each). */
const received: Array<[string, number]> = []
const BellMsg = Schema.TaggedStruct("Ring", {})
const BellGrain = ClusterGrain.make(
  Grain.make<typeof BellMsg.Type>()({
    name: "rem-bell",
    onReceive: (ctx) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => received.push([ctx.identity.key, now])))
  }),
  { message: BellMsg }
)

/** A runner hosting the bell grains, with reminders, and `Schedules` over the cluster crons and the reminders. */
const operated = (runner: TestRunner) =>
  Effect.map(
    Layer.buildWithScope(
      Layer.mergeAll(Schedules.layer, ClusterSchedules.layer, ClusterGrain.layer([BellGrain])).pipe(
        Layer.provideMerge(Reminders.layer()),
        Layer.provideMerge(ActorSystem.layer({ name: `rem-${runner.port}` }))
      ),
      runner.scope
    ).pipe(Effect.provide(runner.context)),
    (context) => ({
      ...runner,
      context,
      schedules: Effect.provide(Schedules.Schedules, context)
    })
  )

type Operated = Effect.Effect.Success<ReturnType<typeof operated>>

export const reminderCases = ({ setup, advance }: ScheduleCasesHost) => {
  /** Registers a reminder (the send waits for the shard: the clock must move meanwhile). */
  const register = (runner: Operated, key: string, name: string, schedule: Reminders.ReminderSchedule) =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Reminders.registerFor(BellGrain, key, name, { _tag: "Ring" }, schedule).pipe(Effect.provide(runner.context))
      )
      yield* advance(1)
      return yield* Fiber.join(fiber)
    })

  /** When the grain `key` received its reminders, in seconds, each checked to be at most one poll after `due`. */
  const deliveries = (key: string, due: ReadonlyArray<number>) => {
    const seconds = received.filter(([k]) => k === key).map(([, at]) => at / 1000)
    assert.strictEqual(seconds.length, due.length, `deliveries ${seconds} for ${due}`)
    seconds.forEach((at, i) => {
      assert.isAtLeast(at, due[i]!, `deliveries ${seconds} for ${due}`)
      assert.isAtMost(at, due[i]! + 1, `deliveries ${seconds} for ${due}`)
    })
  }

  it.scoped(
    "reminders in Schedules: list with filters, get, unknown and malformed references, update and backfill refused",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        received.length = 0
        const runner = yield* operated(yield* startRunner(1))
        yield* register(runner, "k/1", "tick", Reminders.after("10 seconds", { period: "10 seconds" }))
        yield* register(runner, "k2", "nightly", Reminders.cron("0 0 2 * * ?", { timeZone: "Europe/Berlin" }))
        const schedules = yield* runner.schedules
        const all = yield* schedules.list({ kind: "reminder" })
        assert.deepStrictEqual(
          all.map((info) => [
            info.reference,
            info.kind,
            info.owner,
            info.intervalMillis,
            info.expression,
            info.timeZone,
            info.state,
            info.nextFire
          ]),
          [
            ["rem-bell/k%2F1/tick", "reminder", "rem-bell/k%2F1", 10_000, undefined, undefined, "active", 10_000],
            [
              "rem-bell/k2/nightly",
              "reminder",
              "rem-bell/k2",
              undefined,
              "0 0 2 * * ?",
              "Europe/Berlin",
              "active",
              1_000 * 60 * 60
            ]
          ]
        )
        // Without a filter they are listed too; the other kinds' filters leave them out.
        assert.strictEqual((yield* schedules.list()).filter((info) => info.kind === "reminder").length, 2)
        assert.deepStrictEqual(yield* schedules.list({ kind: "cluster-cron" }), [])
        assert.deepStrictEqual(yield* schedules.list({ kind: "interval" }), [])
        assert.deepStrictEqual(
          (yield* schedules.list({ owner: "rem-bell/k2" })).map((info) => info.reference),
          ["rem-bell/k2/nightly"]
        )
        assert.deepStrictEqual(yield* schedules.list({ kind: "reminder", state: "paused" }), [])
        const got = yield* schedules.get("rem-bell/k%2F1/tick")
        assert.strictEqual(got.policies.overlap, "bufferAll")
        for (const reference of ["rem-bell/k2/none", "rem-bell/k2", "nope", "a/b/c/d", "rem-bell//tick", "x/%E0/y"]) {
          for (const operation of [
            schedules.get(reference),
            schedules.pause(reference, "n"),
            schedules.resume(reference),
            schedules.trigger(reference),
            schedules.remove(reference),
            schedules.history(reference)
          ] as ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }>>) {
            const exit = yield* Effect.exit(operation)
            assert.deepStrictEqual(
              Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : exit._tag,
              "ScheduledReferenceNotFound",
              reference
            )
          }
        }
        const update = yield* Effect.flip(schedules.update("rem-bell/k2/nightly", { spec: Schedules.every("1 hour") }))
        assert.deepStrictEqual(
          [update._tag, (update as { policy?: string }).policy],
          ["InvalidSchedulePolicy", "update"]
        )
        const backfill = yield* Effect.flip(schedules.backfill("rem-bell/k2/nightly", 0, 10_000))
        assert.deepStrictEqual(
          [backfill._tag, (backfill as { policy?: string }).policy],
          ["InvalidSchedulePolicy", "backfill"]
        )
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: a pause is stored and survives a restart; resume fires from the next occurrence after now",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        received.length = 0
        const one = yield* operated(yield* startRunner(1))
        yield* register(one, "p", "tick", Reminders.after("10 seconds", { period: "10 seconds" }))
        yield* advance(11)
        deliveries("p", [10])
        const paused = yield* Effect.flatMap(one.schedules, (s) =>
          s.pause("rem-bell/p/tick", "billing freeze", { by: "ada" })
        )
        assert.deepStrictEqual(
          [paused.state, paused.pause?.note, paused.pause?.by, paused.nextFire],
          ["paused", "billing freeze", "ada", undefined]
        )
        yield* advance(10)
        deliveries("p", [10])
        // The runner goes away; another one starts on the same storage: the pause holds.
        yield* Scope.close(one.scope, Exit.void)
        const two = yield* operated(yield* startRunner(2))
        const seen = yield* Effect.flatMap(two.schedules, (s) => s.get("rem-bell/p/tick"))
        assert.deepStrictEqual([seen.state, seen.pause?.note], ["paused", "billing freeze"])
        yield* advance(15)
        deliveries("p", [10])
        // Resume at ~37 s: the next delivery is the grid's 40, none of those that passed while paused.
        const resumed = yield* Effect.flatMap(two.schedules, (s) => s.resume("rem-bell/p/tick"))
        assert.strictEqual(resumed.state, "active")
        assert.strictEqual(resumed.nextFire, 40_000)
        yield* advance(5)
        deliveries("p", [10, 40])
        const history = yield* Effect.flatMap(two.schedules, (s) => s.history("rem-bell/p/tick"))
        assert.deepStrictEqual(
          history.map((run) => [run.instant, run.trigger, run.outcome]),
          [
            [10_000, "schedule", "sent"],
            [20_000, "schedule", "skipped"],
            [30_000, "schedule", "skipped"],
            [40_000, "schedule", "sent"]
          ]
        )
        assert.include(history[1]!.detail, "billing freeze")
        for (const run of [history[0]!, history[3]!]) {
          assert.isAtLeast(run.start!, run.instant)
          assert.isAtLeast(run.end!, run.start!)
          assert.strictEqual(run.lateness, run.start! - run.instant)
          assert.isAtMost(run.lateness!, 1_000)
          assert.strictEqual(run.attempts, 1)
        }
        assert.deepStrictEqual(
          (yield* Effect.flatMap(two.schedules, (s) => s.get("rem-bell/p/tick"))).lastRun?.instant,
          40_000
        )
        yield* Scope.close(two.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: trigger delivers once now without moving the grid, also while paused; remove stops it",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        received.length = 0
        const runner = yield* operated(yield* startRunner(1))
        yield* register(runner, "t", "tick", Reminders.after("30 seconds", { period: "30 seconds" }))
        const schedules = yield* runner.schedules
        yield* advance(4)
        const trigger = yield* Effect.fork(schedules.trigger("rem-bell/t/tick"))
        yield* advance(2)
        yield* Fiber.join(trigger)
        deliveries("t", [5])
        assert.strictEqual((yield* schedules.get("rem-bell/t/tick")).nextFire, 30_000)
        yield* advance(25)
        deliveries("t", [5, 30])
        // A trigger reaches the grain while paused (the operator asked for it); the grid's occurrences do not.
        yield* schedules.pause("rem-bell/t/tick", "hold")
        const again = yield* Effect.fork(schedules.trigger("rem-bell/t/tick"))
        yield* advance(2)
        yield* Fiber.join(again)
        deliveries("t", [5, 30, 32])
        const history = yield* schedules.history("rem-bell/t/tick")
        assert.deepStrictEqual(
          history.map((run) => [run.trigger, run.outcome]),
          [
            ["manual", "sent"],
            ["schedule", "sent"],
            ["manual", "sent"]
          ]
        )
        // Remove: gone from every view, its history too, and it fires no more.
        yield* schedules.remove("rem-bell/t/tick")
        assert.deepStrictEqual(yield* schedules.list({ kind: "reminder" }), [])
        assert.deepStrictEqual(
          (yield* Effect.flip(schedules.history("rem-bell/t/tick")))._tag,
          "ScheduledReferenceNotFound"
        )
        assert.deepStrictEqual(yield* Reminders.listFor(BellGrain, "t").pipe(Effect.provide(runner.context)), [])
        yield* schedules.resume("rem-bell/t/tick").pipe(Effect.flip)
        yield* advance(40)
        deliveries("t", [5, 30, 32])
        // Registered again, it starts afresh: not paused, no history.
        yield* register(runner, "t", "tick", Reminders.after("10 seconds"))
        const fresh = yield* schedules.get("rem-bell/t/tick")
        assert.deepStrictEqual([fresh.state, fresh.lastRun], ["active", undefined])
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  for (const misfire of ["skipMissed", "runAll(2)"] as const) {
    it.scoped(
      `reminders in Schedules: misfire after an outage, ${misfire} (stored with update); bad policies are typed errors`,
      () =>
        Effect.gen(function* () {
          const { startRunner } = yield* setup
          received.length = 0
          const one = yield* operated(yield* startRunner(1))
          yield* register(one, "m", "tick", Reminders.after("10 seconds", { period: "10 seconds" }))
          const schedules = yield* one.schedules
          for (const policies of [{ overlap: "skip" }, { retry: Schedule.forever }, { misfire: "sometimes" }]) {
            const error = yield* Effect.flip(schedules.update("rem-bell/m/tick", { policies } as never))
            assert.strictEqual(error._tag, "InvalidSchedulePolicy")
          }
          const updated = yield* schedules.update("rem-bell/m/tick", {
            policies: {
              misfire: misfire === "skipMissed" ? Schedules.skipMissed : Schedules.runAll(2),
              grace: "2 seconds"
            }
          })
          assert.deepStrictEqual(
            [updated.policies.misfire._tag, updated.policies.graceMillis],
            [misfire === "skipMissed" ? "SkipMissed" : "RunAll", 2_000]
          )
          yield* advance(11)
          deliveries("m", [10])
          const missedBefore = yield* missedCount
          // Every runner is down from ~12 s to ~47 s: the occurrences of 20, 30 and 40 pass.
          yield* Scope.close(one.scope, Exit.void)
          yield* advance(35)
          const two = yield* operated(yield* startRunner(2))
          yield* advance(7)
          const history = yield* Effect.flatMap(two.schedules, (s) => s.history("rem-bell/m/tick"))
          assert.deepStrictEqual(
            history.map((run) => [run.instant, run.outcome]),
            misfire === "skipMissed"
              ? [
                  [10_000, "sent"],
                  [20_000, "missed"],
                  [50_000, "sent"]
                ]
              : [
                  [10_000, "sent"],
                  [20_000, "missed"],
                  [30_000, "sent"],
                  [40_000, "sent"],
                  [50_000, "sent"]
                ]
          )
          assert.include(history[1]!.detail, misfire === "skipMissed" ? "3 occurrence(s) missed" : "1 occurrence(s)")
          assert.strictEqual(received.length, misfire === "skipMissed" ? 2 : 4)
          assert.strictEqual((yield* missedCount) - missedBefore, misfire === "skipMissed" ? 3 : 1)
          yield* Scope.close(two.scope, Exit.void)
        }),
      { timeout: 120_000 }
    )
  }
}
