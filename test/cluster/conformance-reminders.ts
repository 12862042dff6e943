/**
 * Conformance cases for operating durable reminders through `Schedules` (`ClusterSchedules` with `Reminders`): run by
 * conformance.test.ts against each storage backend.
 */
import { assert, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Layer, Metric, Schedule, Schema, Scope } from "effect"
import { ActorSystem, Grain, Metrics, Schedules } from "tickwork"
import { ClusterGrain, ClusterSchedules, Reminders } from "tickwork/cluster"
import { updatesWithRace } from "../../src/cluster/internal/reminderSchedules.js"
import { meanwhile as meanwhileMoving, type TestRunner } from "./conformance-helpers.js"
import type { ScheduleCasesHost } from "./conformance-schedules.js"

/** A schedule event's count, process-wide (`Metrics.scheduleEvents(event)`). */
const eventCount = (event: Parameters<typeof Metrics.scheduleEvents>[0]) =>
  Effect.map(Metric.value(Metrics.scheduleEvents(event)), (state) => state.count)

/** Occurrences counted missed, process-wide (`Metrics.scheduleEvents("missed")`). */
const missedCount = eventCount("missed")

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

/**
 * What the flaky grains handled (key, time, the message's text), every attempt at it (key, time), and, per key, the
 * outcome each next attempt is to have (`"fail"` fails it; none left: it succeeds).
 */
const handled: Array<[string, number, string]> = []
const attempted: Array<[string, number]> = []
const plans = new Map<string, Array<"fail" | "ok">>()
const NoteMsg = Schema.Struct({ text: Schema.String })
const FlakyGrain = ClusterGrain.make(
  Grain.make<typeof NoteMsg.Type>()({
    name: "rem-flaky",
    onReceive: (ctx) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        attempted.push([ctx.identity.key, now])
        if (plans.get(ctx.identity.key)?.shift() === "fail") return yield* Effect.fail(new Error(`boom at ${now}`))
        handled.push([ctx.identity.key, now, ctx.message.text])
      })
  }),
  { message: NoteMsg }
)

/**
 * What the hooked grain runs while it handles an occurrence, per key (an unregistration, an operator's pause), before
 * it fails (message text `"fail"`) or succeeds; and the keys it handled.
 */
const hooks = new Map<string, Effect.Effect<unknown, unknown>>()
const hooked: Array<string> = []
const HookGrain = ClusterGrain.make(
  Grain.make<typeof NoteMsg.Type>()({
    name: "rem-hook",
    onReceive: (ctx) =>
      Effect.gen(function* () {
        hooked.push(ctx.identity.key)
        const hook = hooks.get(ctx.identity.key)
        if (hook !== undefined) yield* Effect.orDie(hook)
        if (ctx.message.text === "fail") return yield* Effect.fail(new Error("hooked failure"))
      })
  }),
  { message: NoteMsg }
)

/**
 * A runner with reminders and `Schedules` over the cluster crons and the reminders, hosting the bell and flaky grains
 * (unless `host` is false), with the reminders' failure `policies`.
 */
const operated = (
  runner: TestRunner,
  options: { readonly host?: boolean; readonly policies?: Reminders.Options["policies"] } = {}
) =>
  Effect.map(
    Layer.buildWithScope(
      Layer.mergeAll(
        Schedules.layer,
        ClusterSchedules.layer,
        options.host === false ? Layer.empty : ClusterGrain.layer([BellGrain, FlakyGrain, HookGrain])
      ).pipe(
        Layer.provideMerge(Reminders.layer(options.policies === undefined ? {} : { policies: options.policies })),
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
  /** `effect` while this backend's clock moves one second (conformance-helpers' `meanwhile`). */
  const meanwhile = <A, E>(effect: Effect.Effect<A, E>) => meanwhileMoving(effect, advance(1))
  /** Registers a reminder (the send waits for the shard: the clock must move meanwhile). */
  const register = (runner: Operated, key: string, name: string, schedule: Reminders.ReminderSchedule) =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Reminders.registerFor(BellGrain, key, name, { _tag: "Ring" }, schedule).pipe(Effect.provide(runner.context))
      )
      yield* advance(1)
      return yield* Fiber.join(fiber)
    })

  /** Registers a reminder of a flaky grain, its message `{ text }`. */
  const registerFlaky = (
    runner: Operated,
    key: string,
    name: string,
    text: string,
    schedule: Reminders.ReminderSchedule
  ) =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Reminders.registerFor(FlakyGrain, key, name, { text }, schedule).pipe(Effect.provide(runner.context))
      )
      yield* advance(1)
      return yield* Fiber.join(fiber)
    })

  /** When the grain `key` received its reminders, in seconds, each checked to be at most one poll after `due`. */
  const deliveries = (
    key: string,
    due: ReadonlyArray<number>,
    from: ReadonlyArray<[string, number, ...Array<unknown>]> = received
  ) => {
    const seconds = from.filter(([k]) => k === key).map(([, at]) => at / 1000)
    assert.strictEqual(seconds.length, due.length, `deliveries ${seconds} for ${due}`)
    seconds.forEach((at, i) => {
      assert.isAtLeast(at, due[i]!, `deliveries ${seconds} for ${due}`)
      assert.isAtMost(at, due[i]! + 1, `deliveries ${seconds} for ${due}`)
    })
  }

  it.scoped(
    "reminders in Schedules: list with filters, get, unknown and malformed references, backfill refused, a cron update keeps the zone",
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
        // A cron spec without a zone keeps the reminder's zone (02:30 in Berlin is 01:30 UTC in January 1970).
        const rezoned = yield* meanwhile(
          schedules.update("rem-bell/k2/nightly", { spec: Schedules.cron("0 30 2 * * ?") })
        )
        assert.deepStrictEqual(
          [rezoned.expression, rezoned.timeZone, rezoned.intervalMillis, rezoned.nextFire],
          ["0 30 2 * * ?", "Europe/Berlin", undefined, 90 * 60 * 1000]
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

  it.scoped("reminders in Schedules: the history keeps the newest runs, as many as its policy says", () =>
    Effect.gen(function* () {
      const { startRunner } = yield* setup
      received.length = 0
      const runner = yield* operated(yield* startRunner(1))
      yield* register(runner, "h", "tick", Reminders.after("2 seconds", { period: "2 seconds" }))
      const schedules = yield* runner.schedules
      yield* schedules.update("rem-bell/h/tick", { policies: { history: 3 } })
      yield* advance(11)
      deliveries("h", [2, 4, 6, 8, 10, 12])
      const instants = (yield* schedules.history("rem-bell/h/tick")).map((run) => run.instant)
      assert.deepStrictEqual(instants, [8_000, 10_000, 12_000])
      // Shorter: the next run leaves only the newest.
      yield* schedules.update("rem-bell/h/tick", { policies: { history: 1 } })
      yield* advance(2)
      const last = yield* schedules.history("rem-bell/h/tick")
      assert.deepStrictEqual(
        last.map((run) => run.instant),
        [14_000]
      )
      yield* Scope.close(runner.scope, Exit.void)
    })
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
          for (const policies of [
            { overlap: "skip" },
            { retry: Schedule.forever },
            { misfire: "sometimes" },
            { pauseAfterFailures: 0 }
          ]) {
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

  it.scoped(
    "reminders in Schedules: update changes the spec between two occurrences, in place: the old grid's occurrence is dropped, none duplicated or lost",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        handled.length = 0
        const runner = yield* operated(yield* startRunner(1))
        const schedules = yield* runner.schedules
        const ref = "rem-flaky/u/tick"
        yield* registerFlaky(runner, "u", "tick", "hello", Reminders.after("10 seconds", { period: "10 seconds" }))
        yield* advance(11)
        deliveries("u", [10], handled)
        // Bad specs are the typed errors of a registration, and change nothing.
        const bad: ReadonlyArray<readonly [unknown, string]> = [
          [Schedules.every(0), "InvalidTimerInterval"],
          [Schedules.every("0.5 millis"), "InvalidTimerInterval"],
          [Schedules.every("1 second", { first: -1 }), "InvalidTimerDelay"],
          [Schedules.cron("0 0 25 * * ?"), "InvalidCronExpression"],
          [Schedules.cron("0 0 * * * ?", { timeZone: "Mars/Olympus_Mons" }), "InvalidCronExpression"],
          [Schedules.cron("0 0 0 1 1 ? 1970"), "InvalidCronExpression"],
          [{ _tag: "Weekly" }, "InvalidSchedulePolicy"]
        ]
        for (const [spec, tag] of bad) {
          const error = yield* Effect.flip(schedules.update(ref, { spec: spec as Schedules.Spec }))
          assert.strictEqual(error._tag, tag, JSON.stringify(spec))
        }
        const before = yield* schedules.get(ref)
        assert.deepStrictEqual([before.intervalMillis, before.expression, before.nextFire], [10_000, undefined, 20_000])
        // At ~12 s, every 7 seconds from 7.5 s on: the next is 19.5 s. The occurrence persisted for 20 s is stale: it
        // arrives in the same poll, before the new one, and is dropped (its generation is no longer the reminder's).
        const updated = yield* meanwhile(
          schedules.update(ref, { spec: Schedules.every("7 seconds", { first: "7500 millis" }) })
        )
        assert.deepStrictEqual(
          [updated.intervalMillis, updated.expression, updated.nextFire],
          [7_000, undefined, 19_500]
        )
        yield* advance(9)
        deliveries("u", [10, 19.5], handled)
        // Paused, then a cron at ~22 s: it stays paused, and resume goes on from the new spec's 30 s (26.5 s is stale).
        yield* schedules.pause(ref, "moving it")
        const cronned = yield* meanwhile(schedules.update(ref, { spec: Schedules.cron("*/15 * * * * ?") }))
        assert.deepStrictEqual(
          [cronned.state, cronned.expression, cronned.timeZone, cronned.intervalMillis, cronned.nextFire],
          ["paused", "*/15 * * * * ?", "UTC", undefined, undefined]
        )
        assert.strictEqual((yield* schedules.resume(ref)).nextFire, 30_000)
        yield* advance(14)
        deliveries("u", [10, 19.5, 30], handled)
        // The same reminder: one row, its message as registered, its history whole.
        assert.deepStrictEqual(
          handled.map(([, , text]) => text),
          ["hello", "hello", "hello"]
        )
        const rows = yield* Reminders.listFor(FlakyGrain, "u").pipe(Effect.provide(runner.context))
        assert.deepStrictEqual(
          rows.map((row) => [row.name, row.cron, row.periodMillis, row.nextDue]),
          [["tick", "*/15 * * * * ?", undefined, 45_000]]
        )
        assert.deepStrictEqual(
          (yield* schedules.history(ref)).map((run) => [run.instant, run.outcome]),
          [
            [10_000, "sent"],
            [19_500, "sent"],
            [30_000, "sent"]
          ]
        )
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: update and trigger work from a runner that does not host the grain kind",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        handled.length = 0
        const host = yield* operated(yield* startRunner(1))
        yield* registerFlaky(host, "far", "tick", "from afar", Reminders.after("20 seconds", { period: "20 seconds" }))
        // A runner with no shards and no ClusterGrain.layer: it steers the reminder through storage.
        const other = yield* operated(yield* startRunner(2, { shardingConfig: { assignedShardGroups: [] } }), {
          host: false
        })
        const schedules = yield* other.schedules
        const ref = "rem-flaky/far/tick"
        const updated = yield* meanwhile(schedules.update(ref, { spec: Schedules.every("5 seconds") }))
        assert.strictEqual(updated.nextFire, 6_000)
        yield* advance(4)
        deliveries("far", [6], handled)
        // The trigger at ~6 s: once now, outside the grid.
        yield* meanwhile(schedules.trigger(ref))
        yield* advance(5)
        deliveries("far", [6, 6, 11], handled)
        assert.deepStrictEqual(
          (yield* schedules.history(ref)).map((run) => [run.instant, run.trigger]),
          [
            [6_000, "schedule"],
            [6_000, "manual"],
            [11_000, "schedule"]
          ]
        )
        assert.deepStrictEqual(
          handled.map(([, , text]) => text),
          ["from afar", "from afar", "from afar"]
        )
        yield* Scope.close(other.scope, Exit.void)
        yield* Scope.close(host.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: an update whose occurrence cannot be sent changes nothing, and says why",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        const host = yield* operated(yield* startRunner(1))
        yield* registerFlaky(host, "stuck", "tick", "kept", Reminders.after("20 seconds", { period: "20 seconds" }))
        yield* Scope.close(host.scope, Exit.void)
        // The only runner now owns every shard and does not host the kind: nothing could deliver the new occurrence.
        const lone = yield* operated(yield* startRunner(2), { host: false })
        yield* advance(3)
        const schedules = yield* lone.schedules
        const error = yield* Effect.flip(
          meanwhile(schedules.update("rem-flaky/stuck/tick", { spec: Schedules.every("5 seconds") }))
        )
        assert.strictEqual(error._tag, "ScheduleStorageError")
        assert.include(error.message, "no ClusterGrain.layer on it registers the kind")
        const after = yield* schedules.get("rem-flaky/stuck/tick")
        assert.deepStrictEqual([after.intervalMillis, after.nextFire], [20_000, 20_000])
        // A trigger there says the same.
        const refused = yield* Effect.flip(meanwhile(schedules.trigger("rem-flaky/stuck/tick")))
        assert.include(refused.message, "no ClusterGrain.layer on it registers the kind")
        yield* Scope.close(lone.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: updated while no runner hosts the grain, the old schedule's occurrence is dropped as stale on recovery",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        handled.length = 0
        const host = yield* operated(yield* startRunner(1))
        yield* registerFlaky(host, "gap", "tick", "still", Reminders.after("20 seconds", { period: "20 seconds" }))
        const other = yield* operated(yield* startRunner(2, { shardingConfig: { assignedShardGroups: [] } }), {
          host: false
        })
        const schedules = yield* other.schedules
        // The host goes away at ~1 s; the reminder moves to every 5 s (next 6 s) while its 20 s occurrence waits.
        yield* Scope.close(host.scope, Exit.void)
        const updated = yield* meanwhile(schedules.update("rem-flaky/gap/tick", { spec: Schedules.every("5 seconds") }))
        assert.strictEqual(updated.nextFire, 6_000)
        yield* advance(23)
        // A host again at ~25 s: both occurrences are due; the old one (older in storage) is dropped, the new one is
        // delivered once for all that passed (runOnce), and the grid goes on from 6 s (26 s or 31 s next, by when the
        // new host took the shard).
        const back = yield* operated(yield* startRunner(3))
        yield* advance(8)
        const history = yield* schedules.history("rem-flaky/gap/tick")
        assert.deepStrictEqual(history[0], { ...history[0]!, instant: 6_000, outcome: "sent" })
        assert.isAtLeast(history.length, 2)
        for (const run of history) {
          assert.strictEqual((run.instant - 6_000) % 5_000, 0, `${run.instant} is on the new grid`)
          assert.strictEqual(run.outcome, "sent")
        }
        assert.deepStrictEqual(
          handled.map(([key, , text]) => [key, text]),
          history.map(() => ["gap", "still"])
        )
        yield* Scope.close(back.scope, Exit.void)
        yield* Scope.close(other.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: a failed occurrence is retried under the code's Schedule; pauseAfterFailures pauses it, saying why",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        handled.length = 0
        attempted.length = 0
        const runner = yield* operated(yield* startRunner(1), {
          policies: (reminder) =>
            reminder.name === "flaky"
              ? {
                  retry: Schedule.spaced("1 second").pipe(Schedule.intersect(Schedule.recurs(2))),
                  pauseAfterFailures: 2
                }
              : undefined
        })
        const schedules = yield* runner.schedules
        const ref = "rem-flaky/f/flaky"
        // 10 s: fails once, then succeeds; 20 s: fails 3 times; 30 s: succeeds (the count starts again);
        // 40 s and 50 s fail 3 times each: paused after the second; 60 s passes while paused.
        plans.set("f", ["fail", "ok", "fail", "fail", "fail", "ok", ...Array(6).fill("fail")])
        yield* registerFlaky(runner, "f", "flaky", "try", Reminders.after("10 seconds", { period: "10 seconds" }))
        const info = yield* schedules.get(ref)
        assert.deepStrictEqual([info.policies.retry, info.policies.pauseAfterFailures], [true, 2])
        const retriesBefore = yield* eventCount("retry")
        const pausesBefore = yield* eventCount("paused_on_failure")
        yield* advance(64)
        deliveries("f", [11, 30], handled)
        assert.deepStrictEqual(
          attempted.filter(([key]) => key === "f").map(([, at]) => Math.floor(at / 1000)),
          [10, 11, 20, 21, 22, 30, 40, 41, 42, 50, 51, 52]
        )
        const history = yield* schedules.history(ref)
        assert.deepStrictEqual(
          history.map((run) => [run.instant, run.outcome, run.attempts]),
          [
            [10_000, "sent", 2],
            [20_000, "failed", 3],
            [30_000, "sent", 1],
            [40_000, "failed", 3],
            [50_000, "failed", 3],
            [60_000, "skipped", 0]
          ]
        )
        assert.include(history[1]!.detail, "boom at 22000")
        assert.strictEqual((yield* eventCount("retry")) - retriesBefore, 7)
        assert.strictEqual((yield* eventCount("paused_on_failure")) - pausesBefore, 1)
        const paused = yield* schedules.get(ref)
        assert.deepStrictEqual([paused.state, paused.pause?.by, paused.nextFire], ["paused", "tickwork", undefined])
        assert.include(paused.pause?.note, "paused after 2 failed occurrences in a row")
        assert.include(paused.pause?.note, "boom at 52000")
        // Resume starts the count again; an operator's limit (stored) comes before the code's.
        yield* schedules.resume(ref)
        const stricter = yield* schedules.update(ref, { policies: { pauseAfterFailures: 1 } })
        assert.strictEqual(stricter.policies.pauseAfterFailures, 1)
        plans.set("f", ["fail", "fail", "fail"])
        yield* advance(10)
        assert.strictEqual((yield* schedules.get(ref)).state, "paused")
        // Without a retry from the code: one attempt, a failure counted all the same.
        plans.set("g", ["fail"])
        yield* registerFlaky(runner, "g", "plain", "once", Reminders.after("5 seconds", { period: "1 hour" }))
        yield* schedules.update("rem-flaky/g/plain", { policies: { pauseAfterFailures: 1 } })
        yield* advance(6)
        const plain = yield* schedules.get("rem-flaky/g/plain")
        assert.deepStrictEqual(
          [plain.state, plain.policies.retry, plain.lastRun?.outcome, plain.lastRun?.attempts],
          ["paused", false, "failed", 1]
        )
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders: Reminders.layer's policies must be a function (InvalidSchedulePolicy); a bad answer is logged and not used",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        handled.length = 0
        const runner = yield* startRunner(1)
        const error = yield* Layer.build(Reminders.layer({ policies: { retry: Schedule.forever } as never })).pipe(
          Effect.provide(runner.context),
          Effect.flip
        )
        assert.deepStrictEqual(
          [error._tag, (error as { policy?: string }).policy],
          ["InvalidSchedulePolicy", "policies"]
        )
        // A limit below 1, an unknown policy: the occurrence is delivered without them (and the error logged).
        const operatedRunner = yield* operated(runner, {
          policies: (reminder) =>
            (reminder.key === "b1" ? { pauseAfterFailures: 0 } : { overlap: "skip" }) as Reminders.ReminderPolicies
        })
        const schedules = yield* operatedRunner.schedules
        for (const key of ["b1", "b2"]) {
          plans.set(key, ["fail"])
          yield* registerFlaky(operatedRunner, key, "bad", "x", Reminders.after("5 seconds", { period: "1 hour" }))
        }
        yield* advance(6)
        for (const key of ["b1", "b2"]) {
          const info = yield* schedules.get(`rem-flaky/${key}/bad`)
          assert.deepStrictEqual(
            [info.state, info.policies.retry, info.policies.pauseAfterFailures, info.lastRun?.outcome],
            ["active", false, undefined, "failed"]
          )
        }
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders in Schedules: an update racing an unregistration or a new registration writes nothing (typed errors)",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        received.length = 0
        const runner = yield* operated(yield* startRunner(1))
        const service = yield* Effect.provide(Reminders.Reminders, runner.context)
        const race = updatesWithRace.get(service.schedules)!
        const bell = (key: string) =>
          Reminders.registerFor(BellGrain, key, "tick", { _tag: "Ring" }, Reminders.after("30 seconds"))
        yield* register(runner, "gone", "tick", Reminders.after("30 seconds"))
        yield* register(runner, "again", "tick", Reminders.after("30 seconds"))
        // Unregistered between the update's read and its write: not resurrected, and the policies are not written.
        const gone = yield* meanwhile(
          race(
            "rem-bell/gone/tick",
            Reminders.unregisterFor(BellGrain, "gone", "tick").pipe(Effect.provide(runner.context)),
            { spec: Schedules.every("5 seconds"), policies: { pauseAfterFailures: 3 } }
          ).pipe(Effect.flip)
        )
        assert.strictEqual(gone._tag, "ScheduledReferenceNotFound")
        assert.deepStrictEqual(yield* Reminders.listFor(BellGrain, "gone").pipe(Effect.provide(runner.context)), [])
        // Registered again meanwhile (due at 60 s): the newer registration stays as it is.
        const again = yield* meanwhile(
          race("rem-bell/again/tick", bell("again").pipe(Effect.provide(runner.context)), {
            spec: Schedules.every("5 seconds"),
            policies: { pauseAfterFailures: 3 }
          }).pipe(Effect.flip)
        )
        assert.deepStrictEqual(
          [again._tag, (again as { reason?: string }).reason?.includes("registered again")],
          ["ScheduleStorageError", true]
        )
        const [kept] = yield* Reminders.listFor(BellGrain, "again").pipe(Effect.provide(runner.context))
        assert.strictEqual(kept?.periodMillis, undefined)
        // The policies were written first (a spec that then fails leaves them, as a retried update would write
        // them): the newer registration has them.
        const schedules = yield* runner.schedules
        const info = yield* schedules.get("rem-bell/again/tick")
        assert.deepStrictEqual([info.intervalMillis, info.policies.pauseAfterFailures], [undefined, 3])
        assert.isAtLeast(kept!.nextDue, 30_000)
        yield* advance(65)
        // Only the newer registration's one occurrence: no 5 s grid from the update, none for "gone".
        deliveries("again", [kept!.nextDue / 1000])
        deliveries("gone", [])
        // Registered again, the reminder that was unregistered has none of the failed update's policies.
        yield* register(runner, "gone", "tick", Reminders.after("30 seconds"))
        assert.strictEqual((yield* schedules.get("rem-bell/gone/tick")).policies.pauseAfterFailures, undefined)
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "reminders: an occurrence whose reminder is unregistered or paused while the grain handles it re-creates nothing",
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        hooked.length = 0
        hooks.clear()
        const runner = yield* operated(yield* startRunner(1), {
          policies: (reminder) => (reminder.kind === "rem-hook" ? { pauseAfterFailures: 1 } : undefined)
        })
        const schedules = yield* runner.schedules
        const registerHook = (key: string, text: string, schedule: Reminders.ReminderSchedule) =>
          Effect.gen(function* () {
            const fiber = yield* Effect.fork(
              Reminders.registerFor(HookGrain, key, "tick", { text }, schedule).pipe(Effect.provide(runner.context))
            )
            yield* advance(1)
            return yield* Fiber.join(fiber)
          })
        const unregister = (key: string) =>
          Reminders.unregisterFor(HookGrain, key, "tick").pipe(Effect.provide(runner.context))
        // Unregistered by the grain's handler: after a success, a failure (which would pause it), a manual trigger.
        yield* registerHook("u-ok", "ok", Reminders.after("5 seconds", { period: "1 hour" }))
        yield* registerHook("u-fail", "fail", Reminders.after("5 seconds"))
        yield* registerHook("m-ok", "ok", Reminders.after("1 hour"))
        // Paused by an operator while the grain fails on it: the operator's pause stays, no pause on failure counted.
        yield* registerHook("p-fail", "fail", Reminders.after("5 seconds", { period: "1 hour" }))
        for (const key of ["u-ok", "u-fail", "m-ok"]) hooks.set(key, unregister(key))
        hooks.set("p-fail", schedules.pause("rem-hook/p-fail/tick", "operator hold", { by: "ada" }))
        const pausedBefore = yield* eventCount("paused_on_failure")
        const trigger = yield* Effect.fork(schedules.trigger("rem-hook/m-ok/tick"))
        yield* advance(8)
        yield* Fiber.join(trigger)
        assert.deepStrictEqual([...hooked].sort(), ["m-ok", "p-fail", "u-fail", "u-ok"])
        assert.strictEqual(yield* eventCount("paused_on_failure"), pausedBefore)
        const paused = yield* schedules.get("rem-hook/p-fail/tick")
        assert.deepStrictEqual([paused.state, paused.pause?.note, paused.pause?.by], ["paused", "operator hold", "ada"])
        hooks.clear()
        // Registered again, each starts afresh: no history, not paused (no state was written after the unregistration).
        for (const key of ["u-ok", "u-fail", "m-ok"]) {
          yield* registerHook(key, "ok", Reminders.after("1 hour"))
          const info = yield* schedules.get(`rem-hook/${key}/tick`)
          assert.deepStrictEqual([info.state, info.lastRun, info.pause], ["active", undefined, undefined], key)
          assert.deepStrictEqual(yield* schedules.history(`rem-hook/${key}/tick`), [], key)
        }
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    'reminders: fractional milliseconds (after(1.5), "100 micros", a fractional period) round up to whole ones',
    () =>
      Effect.gen(function* () {
        const { startRunner } = yield* setup
        received.length = 0
        const runner = yield* operated(yield* startRunner(1))
        const now = yield* Clock.currentTimeMillis
        const [a, b, c] = [
          yield* Reminders.registerFor(BellGrain, "f1", "tick", { _tag: "Ring" }, Reminders.after(1.5)).pipe(
            Effect.provide(runner.context)
          ),
          yield* Reminders.registerFor(BellGrain, "f2", "tick", { _tag: "Ring" }, Reminders.after("100 micros")).pipe(
            Effect.provide(runner.context)
          ),
          yield* Reminders.registerFor(
            BellGrain,
            "f3",
            "tick",
            { _tag: "Ring" },
            Reminders.at(now + 1000.25, { period: "2000.5 millis" })
          ).pipe(Effect.provide(runner.context))
        ]
        assert.deepStrictEqual([a.nextDue - now, b.nextDue - now, c.nextDue - now, c.periodMillis], [2, 1, 1001, 2001])
        // As stored: whole milliseconds read back.
        for (const key of ["f1", "f2", "f3"]) {
          const [listed] = yield* Reminders.listFor(BellGrain, key).pipe(Effect.provide(runner.context))
          assert.isTrue(Number.isInteger(listed!.nextDue), `${key}: ${listed!.nextDue}`)
        }
        yield* advance(4)
        deliveries("f1", [now / 1000])
        deliveries("f2", [now / 1000])
        deliveries("f3", [(now + 1001) / 1000, (now + 3002) / 1000])
        const [next] = yield* Reminders.listFor(BellGrain, "f3").pipe(Effect.provide(runner.context))
        assert.strictEqual(next!.nextDue, now + 5003)
        yield* Scope.close(runner.scope, Exit.void)
      }),
    { timeout: 120_000 }
  )
}
