import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect, Layer, Metric, Ref, Schedule, TestClock } from "effect"
import {
  Actor,
  type ActorRef,
  ActorSystem,
  Entity,
  Grain,
  Grains,
  Metrics,
  Passivation,
  Schedules,
  Spot,
  TimerError
} from "tickwork"
import { TestProbe } from "tickwork/testkit"
import { systemOf } from "../src/internal/actorSystem.js"
import { makeStallClock } from "./utils.js"

const SystemLive = ActorSystem.layer({ name: "schedules" })
const Live = Schedules.layer.pipe(Layer.provideMerge(SystemLive))

/** Runs the test against the `Schedules` service and the system. */
const withSchedules = <A, E>(body: (schedules: Schedules.SchedulesService) => Effect.Effect<A, E, any>) =>
  Effect.flatMap(Schedules.Schedules, body).pipe(Effect.provide(Live))

/** A task that records the (TestClock) times it ran at, and takes `millis` to run. */
const recorder = (millis = 0) =>
  Effect.map(Ref.make<ReadonlyArray<number>>([]), (runs) => ({
    runs,
    task: Effect.flatMap(
      Effect.clockWith((clock) => clock.currentTimeMillis),
      (now) =>
        Effect.zipRight(
          Ref.update(runs, (all) => [...all, now]),
          millis > 0 ? Effect.sleep(millis) : Effect.void
        )
    )
  }))

const Forwarder = (probe: TestProbe.TestProbe<string>) => Actor.make<string>()({ receive: (m) => probe.ref.tell(m) })

const events = (event: Parameters<typeof Metrics.scheduleEvents>[0]) =>
  Effect.map(Metric.value(Metrics.scheduleEvents(event)), (state) => state.count)

describe("Schedules", () => {
  it.effect("create: an interval schedule sends on its grid; list and history show it", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
        const created = yield* schedules.create("report", Schedules.every("100 millis"), Schedules.send(target, "r"))
        assert.strictEqual(created.nextFire, 100)
        assert.strictEqual(created.owner, "/user/target")
        assert.strictEqual(created.kind, "interval")
        assert.strictEqual(created.intervalMillis, 100)
        assert.strictEqual(created.state, "active")
        yield* TestClock.adjust("350 millis")
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.at),
          [100, 200, 300]
        )
        const info = yield* schedules.get("report")
        assert.strictEqual(info.nextFire, 400)
        assert.deepStrictEqual(info.lastRun, {
          instant: 300,
          trigger: "schedule",
          start: 300,
          end: 300,
          outcome: "sent",
          lateness: 0,
          attempts: 1
        })
        assert.strictEqual((yield* schedules.history("report")).length, 3)
        assert.deepStrictEqual(
          (yield* schedules.list()).map((s) => s.reference),
          ["report"]
        )
      })
    )
  )

  it.effect("create: a cron task runs at its instants with the creator's services", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const { runs, task } = yield* recorder()
        yield* schedules.create("every-2s", Schedules.cron("*/2 * * * * ?", { timeZone: "UTC" }), Schedules.run(task))
        yield* TestClock.adjust("7 seconds")
        assert.deepStrictEqual(yield* Ref.get(runs), [2000, 4000, 6000])
        const info = yield* schedules.get("every-2s")
        assert.strictEqual(info.kind, "cron")
        assert.strictEqual(info.owner, "task")
        assert.strictEqual(info.expression, "*/2 * * * * ?")
        assert.strictEqual(info.timeZone, "UTC")
        assert.strictEqual(info.lastRun?.outcome, "succeeded")
      })
    )
  )

  it.effect("create is idempotent: the same reference again makes no second schedule and keeps its pause", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const { runs, task } = yield* recorder()
        yield* schedules.create("job", Schedules.every("1 second"), Schedules.run(task))
        yield* TestClock.adjust("1500 millis")
        yield* schedules.pause("job", "maintenance")
        yield* schedules.create("job", Schedules.every("1 second"), Schedules.run(task))
        assert.strictEqual((yield* schedules.list()).length, 1)
        assert.strictEqual((yield* schedules.get("job")).state, "paused")
        yield* TestClock.adjust("5 seconds")
        assert.deepStrictEqual(yield* Ref.get(runs), [1000])
      })
    )
  )

  it.effect("pause stops the firing with a note; resume goes on from the next instant, not replaying the pause", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const { runs, task } = yield* recorder()
        const pauses = yield* events("paused")
        yield* schedules.create("job", Schedules.every("1 second"), Schedules.run(task))
        yield* TestClock.adjust("2500 millis")
        const paused = yield* schedules.pause("job", "upstream is down", { by: "ada" })
        assert.strictEqual(paused.state, "paused")
        assert.deepStrictEqual(paused.pause, { note: "upstream is down", by: "ada", at: 2500 })
        assert.isUndefined(paused.nextFire)
        assert.deepStrictEqual(
          (yield* schedules.list({ state: "paused" })).map((s) => s.reference),
          ["job"]
        )
        assert.strictEqual((yield* events("paused")) - pauses, 1)
        yield* TestClock.adjust("5 seconds") // 7500: the instants 3000..7000 pass while paused
        const resumed = yield* schedules.resume("job")
        assert.strictEqual(resumed.state, "active")
        assert.isUndefined(resumed.pause)
        assert.strictEqual(resumed.nextFire, 8000)
        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual(yield* Ref.get(runs), [1000, 2000, 8000])
      })
    )
  )

  it.effect("trigger runs once now without moving the grid", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
        yield* schedules.create("ping", Schedules.every("1 second"), Schedules.send(target, "ping"))
        yield* TestClock.adjust("300 millis")
        yield* schedules.trigger("ping")
        assert.strictEqual((yield* schedules.get("ping")).nextFire, 1000)
        yield* TestClock.adjust("700 millis")
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.at),
          [300, 1000]
        )
        const history = yield* schedules.history("ping")
        assert.deepStrictEqual(
          history.map((run) => [run.trigger, run.instant]),
          [
            ["manual", 300],
            ["schedule", 1000]
          ]
        )
        // a paused schedule can be triggered too; the grid stays paused
        yield* schedules.pause("ping", "quiet")
        yield* schedules.trigger("ping")
        yield* probe.expectMessageEquals("ping")
        assert.isUndefined((yield* schedules.get("ping")).nextFire)
      })
    )
  )

  describe("a trigger (or an instant) during a running instant, under each overlap policy", () => {
    const overlapping = (overlap: Schedules.Overlap) =>
      withSchedules((schedules) =>
        Effect.gen(function* () {
          const { runs, task } = yield* recorder(250)
          yield* schedules.create("slow", Schedules.every("1 second"), Schedules.run(task), { overlap })
          yield* TestClock.adjust("1000 millis") // the instant at 1000 runs until 1250
          yield* TestClock.adjust("50 millis")
          yield* schedules.trigger("slow") // at 1050
          yield* TestClock.adjust("50 millis")
          yield* schedules.trigger("slow") // at 1100
          yield* TestClock.adjust("2 seconds")
          return { runs: yield* Ref.get(runs), history: yield* schedules.history("slow") }
        })
      )

    it.effect("skip: the triggers are dropped and recorded as skipped", () =>
      Effect.gen(function* () {
        const { runs, history } = yield* overlapping("skip")
        assert.deepStrictEqual(runs, [1000, 2000, 3000])
        assert.deepStrictEqual(
          history.filter((run) => run.outcome === "skipped").map((run) => run.instant),
          [1050, 1100]
        )
      })
    )

    it.effect("bufferOne: the latest trigger runs after the run in flight", () =>
      Effect.gen(function* () {
        const { runs, history } = yield* overlapping("bufferOne")
        assert.deepStrictEqual(runs, [1000, 1250, 2000, 3000])
        assert.strictEqual(history.find((run) => run.start === 1250)?.instant, 1100)
      })
    )

    it.effect("bufferAll: both triggers run, one after the other", () =>
      Effect.gen(function* () {
        const { runs } = yield* overlapping("bufferAll")
        assert.deepStrictEqual(runs, [1000, 1250, 1500, 2000, 3000])
      })
    )

    it.effect("allowAll: each trigger runs at once, beside the run in flight", () =>
      Effect.gen(function* () {
        const { runs } = yield* overlapping("allowAll")
        assert.deepStrictEqual(runs, [1000, 1050, 1100, 2000, 3000])
      })
    )
  })

  it.effect("update changes the expression between two instants: no duplicate, no lost instant", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const { runs, task } = yield* recorder()
        yield* schedules.create("tick", Schedules.cron("*/10 * * * * ?", { timeZone: "UTC" }), Schedules.run(task))
        yield* TestClock.adjust("10 seconds") // ran at 10 s
        // the new expression also has an instant at 10 s (already run) and at 15 s (still ahead)
        const updated = yield* schedules.update("tick", { spec: Schedules.cron("*/5 * * * * ?", { timeZone: "UTC" }) })
        assert.strictEqual(updated.nextFire, 15_000)
        yield* TestClock.adjust("11 seconds")
        assert.deepStrictEqual(yield* Ref.get(runs), [10_000, 15_000, 20_000])
        // an interval's update starts its new grid from the last run
        yield* schedules.update("tick", { spec: Schedules.every("3 seconds") })
        assert.strictEqual((yield* schedules.get("tick")).nextFire, 24_000)
        // policies alone leave the instants where they were
        yield* schedules.update("tick", { policies: { overlap: "skip" } })
        const info = yield* schedules.get("tick")
        assert.strictEqual(info.nextFire, 24_000)
        assert.strictEqual(info.policies.overlap, "skip")
      })
    )
  )

  describe("misfire after a simulated outage (the process stalls 5.5 s), under each policy", () => {
    const afterOutage = (policies: Schedules.Policies) =>
      Effect.gen(function* () {
        const { clock, stall } = yield* makeStallClock
        const { runs, task } = yield* recorder()
        const program = Effect.gen(function* () {
          const schedules = yield* Schedules.Schedules
          yield* schedules.create("job", Schedules.every("1 second"), Schedules.run(task), policies)
          yield* TestClock.adjust("1500 millis") // ran at 1000
          yield* stall(5500) // system time 7000: the instants 2000..7000 are missed
          yield* TestClock.adjust("500 millis") // the driver wakes at (system) 7500
          yield* TestClock.adjust("1 second")
          return { runs: yield* Ref.get(runs), history: yield* schedules.history("job") }
        })
        const system = Layer.scopedContext(Effect.withClock(Layer.build(Live), clock))
        return yield* program.pipe(Effect.provide(system))
      })

    it.effect("no policy (the default): every missed instant runs, as a fixed-rate timer catches up", () =>
      Effect.gen(function* () {
        const { runs } = yield* afterOutage({})
        assert.deepStrictEqual(runs, [1000, 7500, 7500, 7500, 7500, 7500, 7500, 8000])
      })
    )

    it.effect("skipMissed: none of them runs; one history entry says how many were missed", () =>
      Effect.gen(function* () {
        const { runs, history } = yield* afterOutage({ misfire: Schedules.skipMissed, grace: "200 millis" })
        assert.deepStrictEqual(runs, [1000, 8000])
        const missed = history.find((run) => run.outcome === "missed")!
        assert.strictEqual(missed.instant, 2000)
        assert.include(missed.detail!, "6 instants missed by more than the grace window (200 ms)")
      })
    )

    it.effect("runOnce: one run now for all of them", () =>
      Effect.gen(function* () {
        const { runs, history } = yield* afterOutage({ misfire: Schedules.runOnce, grace: "200 millis" })
        assert.deepStrictEqual(runs, [1000, 7500, 8000])
        assert.include(history.find((run) => run.outcome === "missed")!.detail!, "5 instants missed")
      })
    )

    it.effect("runAll(max): the latest max run now, the older ones are recorded as missed", () =>
      Effect.gen(function* () {
        const { runs, history } = yield* afterOutage({ misfire: Schedules.runAll(3), grace: "200 millis" })
        assert.deepStrictEqual(runs, [1000, 7500, 7500, 7500, 8000])
        const ran = history.filter((run) => run.outcome === "succeeded").map((run) => run.instant)
        assert.deepStrictEqual(ran, [1000, 5000, 6000, 7000, 8000])
      })
    )
  })

  it.effect("retry, then pause after N failed instants in a row, with a note saying why", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const attempts = yield* Ref.make(0)
        const failing = Effect.zipRight(
          Ref.update(attempts, (n) => n + 1),
          Effect.fail("downstream unavailable")
        )
        const retriesBefore = yield* events("retry")
        yield* schedules.create("sync", Schedules.every("1 minute"), Schedules.run(failing), {
          retry: Schedule.exponential("1 second").pipe(Schedule.intersect(Schedule.recurs(2))),
          pauseAfterFailures: 2
        })
        yield* TestClock.adjust("1 minute")
        yield* TestClock.adjust("10 seconds") // retried at +1 s and +3 s
        const first = (yield* schedules.history("sync"))[0]!
        assert.strictEqual(first.outcome, "failed")
        assert.strictEqual(first.attempts, 3)
        assert.strictEqual(first.end, 63_000)
        assert.strictEqual((yield* schedules.get("sync")).state, "active")
        yield* TestClock.adjust("1 minute")
        const info = yield* schedules.get("sync")
        assert.strictEqual(info.state, "paused")
        assert.strictEqual(info.pause?.by, "tickwork")
        assert.include(info.pause!.note, "paused after 2 failed runs in a row; the last: downstream unavailable")
        assert.strictEqual(yield* Ref.get(attempts), 6)
        assert.strictEqual((yield* events("retry")) - retriesBefore, 4)
        yield* TestClock.adjust("10 minutes")
        assert.strictEqual(yield* Ref.get(attempts), 6, "paused: no more runs")
      })
    )
  )

  it.effect("remove stops the schedule and drops its message still waiting in the mailbox", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const Slow = Actor.make<string>()({
          receive: (m) => Effect.zipRight(probe.ref.tell(m), Effect.sleep("500 millis"))
        })
        const target = yield* ActorSystem.spawn(Slow, "slow")
        yield* schedules.create("ping", Schedules.every("100 millis"), Schedules.send(target, "ping"))
        yield* TestClock.adjust("250 millis") // the first is handled (until 600), the second waits
        yield* schedules.remove("ping")
        yield* TestClock.adjust("2 seconds")
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.at),
          [100]
        )
        const gone = yield* Effect.flip(schedules.get("ping"))
        assert.strictEqual(gone._tag, "ScheduledReferenceNotFound")
        assert.strictEqual((yield* Effect.flip(schedules.remove("ping")))._tag, "ScheduledReferenceNotFound")
        assert.strictEqual((yield* Effect.flip(schedules.pause("ping", "x")))._tag, "ScheduledReferenceNotFound")
        assert.strictEqual((yield* Effect.flip(schedules.trigger("ping")))._tag, "ScheduledReferenceNotFound")
      })
    )
  )

  it.effect("a named cron of the system scheduler is a schedule too: listed, paused, removed", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        yield* system.scheduler.scheduleWithCron(probe.ref, "beat", "* * * * * ?", { reference: "beat" })
        const [info] = yield* schedules.list({ kind: "cron" })
        assert.strictEqual(info?.reference, "beat")
        assert.strictEqual(info?.owner, probe.ref.path)
        yield* TestClock.adjust("2 seconds")
        assert.strictEqual((yield* probe.receiveAll).length, 2)
        yield* schedules.pause("beat", "hush")
        yield* TestClock.adjust("3 seconds")
        yield* probe.expectNoMessage()
        yield* system.scheduler.cancelSchedule("beat")
        assert.deepStrictEqual(yield* schedules.list(), [])
      })
    )
  )

  it.effect("bad input is a typed error, and creates nothing", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const ok = Schedules.send(probe.ref, "x")
        const tags = (effect: Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>) =>
          Effect.map(Effect.flip(effect), (e) => `${e._tag}: ${e.message}`)
        const cases: ReadonlyArray<readonly [Effect.Effect<unknown, { _tag: string; message: string }>, string]> = [
          [schedules.create("", Schedules.every("1 second"), ok), "InvalidTimerReference"],
          [schedules.create("a", Schedules.every(0.5), ok), "InvalidTimerInterval"],
          [schedules.create("a", Schedules.every("soon" as "1 second"), ok), "InvalidTimerInterval"],
          [schedules.create("a", Schedules.cron("30 2"), ok), "InvalidCronExpression"],
          [schedules.create("a", Schedules.cron("0 0 0 1 1 ? 1970", { timeZone: "UTC" }), ok), "no instant after"],
          [schedules.create("a", {} as Schedules.Spec, ok), "InvalidSchedulePolicy: invalid schedule policy spec"],
          [
            schedules.create("a", Schedules.every("1 second"), Schedules.send(undefined as never, "x")),
            "InvalidTimerTarget"
          ],
          [
            schedules.create("a", Schedules.every("1 second"), Schedules.run(42 as never)),
            "the task must be an Effect"
          ],
          [
            schedules.create("a", Schedules.every("1 second"), ok, { overlap: "sometimes" as Schedules.Overlap }),
            "policy overlap"
          ],
          [schedules.create("a", Schedules.every("1 second"), ok, { misfire: Schedules.runAll(0) }), "max"],
          [schedules.create("a", Schedules.every("1 second"), ok, { grace: -1 }), "policy grace"],
          [schedules.create("a", Schedules.every("1 second"), ok, { retry: 3 as never }), "policy retry"],
          [schedules.create("a", Schedules.every("1 second"), ok, { pauseAfterFailures: 0 }), "pauseAfterFailures"],
          [schedules.create("a", Schedules.every("1 second"), ok, { history: 1.5 }), "policy history"],
          [schedules.create("a", Schedules.every("1 second"), ok, { often: true } as never), "not a schedule policy"]
        ]
        for (const [attempt, expected] of cases) assert.include(yield* tags(attempt), expected)
        assert.deepStrictEqual(yield* schedules.list(), [])
        yield* schedules.create("a", Schedules.every("1 second"), ok)
        assert.include(yield* tags(schedules.update("a", { spec: Schedules.every(0) })), "InvalidTimerInterval")
        assert.include(yield* tags(schedules.update("a", { policies: { overlap: 1 as never } })), "policy overlap")
        assert.strictEqual((yield* schedules.get("a")).intervalMillis, 1000, "a refused update changes nothing")
      })
    )
  )

  it.effect("the service's members work destructured, and metrics count triggers", () =>
    withSchedules(({ create, trigger, list }) =>
      Effect.gen(function* () {
        const before = yield* events("triggered")
        const { task, runs } = yield* recorder()
        yield* create("solo", Schedules.every("1 hour"), Schedules.run(task))
        yield* trigger("solo")
        yield* TestClock.adjust("1 millis")
        assert.deepStrictEqual(yield* Ref.get(runs), [0])
        assert.strictEqual((yield* events("triggered")) - before, 1)
        assert.strictEqual((yield* list()).length, 1)
      })
    )
  )

  it.effect("timersOf lists an owner's timers without sending it a message", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const Busy = Actor.make<string>()({
          preStart: (ctx) =>
            Effect.orDie(
              Effect.all([
                ctx.timers.startSingleTimer("once", "once", "1 minute"),
                ctx.timers.startTimerAtFixedRate("rate", "rate", "1 second"),
                ctx.timers.startTimerWithSchedule("backoff", "b", Schedule.exponential("100 millis")),
                ctx.setReceiveTimeout("30 seconds", "idle")
              ])
            ),
          receive: () => Effect.void
        })
        const ref = yield* ActorSystem.spawn(Busy, "busy")
        yield* TestClock.adjust("1 millis")
        assert.deepStrictEqual(yield* schedules.timersOf(ref), [
          {
            key: "once",
            kind: "actor_timer",
            mode: "single",
            nextDue: 60_000,
            intervalMillis: undefined,
            expression: undefined
          },
          {
            key: "rate",
            kind: "actor_timer",
            mode: "fixed-rate",
            nextDue: 1000,
            intervalMillis: 1000,
            expression: undefined
          },
          {
            key: "backoff",
            kind: "actor_timer",
            mode: "schedule",
            nextDue: 100,
            intervalMillis: undefined,
            expression: undefined
          },
          {
            key: "receive-timeout",
            kind: "receive_timeout",
            mode: "receive-timeout",
            nextDue: 30_000,
            intervalMillis: 30_000,
            expression: undefined
          }
        ])
        const probe = yield* TestProbe.make<string>()
        const notAnActor = yield* Effect.flip(schedules.timersOf(probe.ref))
        assert.strictEqual(notAnActor._tag, "InvalidTimerTarget")
        const system = yield* ActorSystem.ActorSystem
        yield* system.stop(ref)
        assert.deepStrictEqual(yield* schedules.timersOf(ref), [])
      })
    )
  )

  it.effect("timersOf shows the timers a grain, a Spot and an entity keep on their actors", () =>
    withSchedules((schedules) =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        yield* Spot.spawn<number>(
          {
            initialState: 0,
            onStart: (ctx) =>
              Effect.orDie(ctx.timers.start({ name: "round", period: "300 millis", handler: () => Effect.void }))
          },
          "room"
        )
        const Player = Entity.make<number, { readonly _tag: "Poll" }>()({
          name: "Player",
          initialize: (_id, ctx) => Effect.as(Effect.orDie(ctx.startPeriodicTimer("5 seconds", { _tag: "Poll" })), 0),
          commands: { Poll: (_cmd, n) => Effect.succeed(n + 1) }
        })
        const players = yield* Entity.makeRegistry(Player)
        yield* players.tell("alice", { _tag: "Poll" })
        yield* TestClock.adjust("1 millis")
        const byPath = (path: string) =>
          Effect.suspend(() => {
            const cell = Array.from(systemOf(system)!.actorCells).find((c) => c.path === path)!
            return schedules.timersOf(cell.ref)
          })
        assert.deepStrictEqual(yield* byPath("/user/room"), [
          {
            key: "round",
            kind: "spot_timer",
            mode: "SkipLateTicks",
            nextDue: 300,
            intervalMillis: 300,
            expression: undefined
          }
        ])
        const [alice] = Array.from(systemOf(system)!.actorCells).filter((c) => c.path.includes("alice"))
        assert.deepStrictEqual(yield* schedules.timersOf(alice!.ref), [
          {
            key: "Poll",
            kind: "entity_timer",
            mode: "periodic",
            nextDue: 5000,
            intervalMillis: 5000,
            expression: undefined
          }
        ])
      }).pipe(Effect.scoped)
    )
  )

  it.effect("timersOf shows a grain activation's timers", () =>
    Effect.gen(function* () {
      const Feed = Grain.make<"go">()({
        name: "feed",
        passivation: Passivation.never,
        onActivate: (props) =>
          Effect.orDie(
            Effect.zipRight(
              props.schedule("go", "200 millis", { reference: "poll" }),
              props.scheduleWithCron("go", "0 0 * * * ?", { reference: "hourly", timeZone: "UTC" })
            )
          ),
        onReceive: () => Effect.void
      })
      yield* Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const schedules = yield* Schedules.Schedules
        yield* Grains.tell(Feed, "f-1", "go")
        yield* TestClock.adjust("1 millis")
        const cell = Array.from(systemOf(system)!.actorCells).find((c) => c.path.includes("f-1"))!
        assert.deepStrictEqual(yield* schedules.timersOf(cell.ref), [
          {
            key: "poll",
            kind: "grain_timer",
            mode: "interval",
            nextDue: 200,
            intervalMillis: 200,
            expression: undefined
          },
          {
            key: "hourly",
            kind: "grain_timer",
            mode: "cron",
            nextDue: 3_600_000,
            intervalMillis: undefined,
            expression: "0 0 * * * ?"
          }
        ])
      }).pipe(Effect.provide(Grains.layer([Feed]).pipe(Layer.provideMerge(Live))))
    })
  )

  it.effect("shutdown cancels every schedule: no timer, fiber or entry is left", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const schedules = yield* Schedules.Schedules
      const probe: ActorRef.ActorRef<string> = (yield* TestProbe.make<string>()).ref
      yield* schedules.create("a", Schedules.every("1 second"), Schedules.send(probe, "a"))
      yield* schedules.create("b", Schedules.cron("* * * * * ?"), Schedules.run(Effect.void))
      assert.strictEqual((yield* system.stats).timers, 2)
      yield* system.shutdown
      const stats = yield* system.stats
      assert.deepStrictEqual([stats.timers, stats.engineEntries, stats.fibers], [0, 0, 0])
      assert.deepStrictEqual(yield* schedules.list(), [])
    }).pipe(Effect.provide(Live))
  )

  it.effect(
    "backfill runs each instant of a range, oldest first, without moving the grid; a bad range is a typed error",
    () =>
      withSchedules((schedules) =>
        Effect.gen(function* () {
          const { runs, task } = yield* recorder()
          yield* schedules.create("every-second", Schedules.every("1 second"), Schedules.run(task))
          yield* TestClock.adjust("2500 millis")
          assert.strictEqual(yield* schedules.backfill("every-second", -3000, 1500), 1)
          yield* TestClock.adjust("0 millis")
          assert.deepStrictEqual(yield* Ref.get(runs), [1000, 2000, 2500])
          const history = yield* schedules.history("every-second")
          assert.deepStrictEqual(
            history.map((run) => [run.instant, run.trigger]),
            [
              [1000, "schedule"],
              [2000, "schedule"],
              [1000, "backfill"]
            ]
          )
          assert.strictEqual((yield* schedules.get("every-second")).nextFire, 3000)
          const cron = yield* schedules.create("cron", Schedules.cron("*/10 * * * * ?"), Schedules.run(Effect.void))
          assert.strictEqual(cron.nextFire, 10_000)
          assert.strictEqual(yield* schedules.backfill("cron", DateTime.unsafeMake(0), DateTime.unsafeMake(30_000)), 4)
          const reversed = yield* Effect.flip(schedules.backfill("cron", 10_000, 0))
          assert.strictEqual(reversed._tag, "InvalidSchedulePolicy")
          const tooMany = yield* Effect.flip(schedules.backfill("every-second", 0, 1e9))
          assert.include(tooMany.message, "more than 10000")
          const notNumbers = yield* Effect.flip(schedules.backfill("cron", "yesterday" as never, 0))
          assert.include(notNumbers.message, "DateTimes or epoch millis")
          const missing = yield* Effect.flip(schedules.backfill("nope", 0, 1))
          assert.strictEqual(missing._tag, "ScheduledReferenceNotFound")
        })
      )
  )

  it.scoped(
    "a schedule source (the cluster's) is listed beside the local schedules and steered through the service",
    () =>
      Effect.gen(function* () {
        const schedules = yield* Schedules.Schedules
        const paused: Array<string> = []
        const info = (reference: string): Schedules.ScheduleInfo => ({
          reference,
          kind: "cluster-cron",
          owner: "cluster",
          expression: "0 * * * * ?",
          intervalMillis: undefined,
          timeZone: "UTC",
          state: paused.includes(reference) ? "paused" : "active",
          pause: undefined,
          nextFire: undefined,
          lastRun: undefined,
          policies: { misfire: Schedules.runOnce, graceMillis: 0, overlap: "skip", retry: false, pauseAfterFailures: 1 }
        })
        const keeps = (reference: string) =>
          reference === "remote"
            ? Effect.succeed(info(reference))
            : Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference }))
        const down = new TimerError.ScheduleStorageError({ operation: "history", reference: "remote", reason: "down" })
        const source: Schedules.ScheduleSource = {
          name: "fake",
          list: () => Effect.succeed([info("remote")]),
          get: keeps,
          pause: (reference) =>
            Effect.flatMap(keeps(reference), () => {
              paused.push(reference)
              return keeps(reference)
            }),
          resume: keeps,
          trigger: (reference) => Effect.asVoid(keeps(reference)),
          update: keeps,
          remove: (reference) => Effect.asVoid(keeps(reference)),
          history: (reference) => Effect.flatMap(keeps(reference), () => Effect.fail(down)),
          backfill: (reference) => Effect.as(keeps(reference), 7)
        }
        yield* schedules.create("local", Schedules.every("1 second"), Schedules.run(Effect.void))
        yield* Schedules.addSource(source)
        assert.deepStrictEqual(
          (yield* schedules.list()).map((s) => [s.reference, s.kind]),
          [
            ["local", "interval"],
            ["remote", "cluster-cron"]
          ]
        )
        assert.strictEqual((yield* schedules.pause("remote", "maintenance")).state, "paused")
        assert.deepStrictEqual(paused, ["remote"])
        // a local reference stays local
        assert.strictEqual((yield* schedules.pause("local", "too")).kind, "interval")
        assert.strictEqual(yield* schedules.backfill("remote", 0, 1), 7)
        assert.strictEqual((yield* Effect.flip(schedules.history("remote")))._tag, "ScheduleStorageError")
        const missing = yield* Effect.flip(schedules.get("nowhere"))
        assert.strictEqual(missing._tag, "ScheduledReferenceNotFound")
      }).pipe(Effect.provide(Live))
  )

  it.effect("a source leaves the service when its scope closes", () =>
    Effect.gen(function* () {
      const schedules = yield* Schedules.Schedules
      const source: Schedules.ScheduleSource = {
        name: "empty",
        list: () => Effect.die("listed after its scope closed"),
        get: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        pause: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        resume: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        trigger: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        update: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        remove: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        history: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference })),
        backfill: (reference) => Effect.fail(new TimerError.ScheduledReferenceNotFound({ reference }))
      }
      yield* Effect.scoped(Schedules.addSource(source))
      assert.deepStrictEqual(yield* schedules.list(), [])
    }).pipe(Effect.provide(Live))
  )
})
