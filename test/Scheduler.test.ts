import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Option, Ref, TestClock } from "effect"
import { Actor, ActorSystem, EventStream, TimerError } from "tickwork"
import { TestProbe } from "tickwork/testkit"
import { captureLogs } from "./utils.js"

const SystemLive = ActorSystem.layer({ name: "scheduler" })

/** Forwards every message to the probe; fails on "crash". */
const Forwarder = (probe: TestProbe.TestProbe<string>) =>
  Actor.make<string>()({
    receive: (msg) => (msg === "crash" ? Effect.die("crash") : probe.ref.tell(msg))
  })

describe("system.scheduler", () => {
  it.effect("scheduleOnce sends the message once, after the delay, with the sender", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const replyTo = yield* TestProbe.make<string>()
      yield* system.scheduler.scheduleOnce("1 second", probe.ref, "wake-up", replyTo.ref)
      yield* probe.expectNoMessage("999 millis")
      yield* TestClock.adjust("1 millis")
      const received = yield* probe.expectReceived
      assert.strictEqual(received.message, "wake-up")
      assert.strictEqual(received.at, 1000)
      assert.strictEqual(received.sender, replyTo.ref)
      yield* probe.expectNoMessage("1 minute")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("scheduleOnce to an actor goes through its mailbox", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      const system = yield* ActorSystem.ActorSystem
      yield* system.scheduler.scheduleOnce("100 millis", target, "hello")
      yield* TestClock.adjust("100 millis")
      yield* probe.expectMessageEquals("hello")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("scheduleAtFixedRate sends on a fixed grid until cancelled", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      const handle = yield* system.scheduler.scheduleAtFixedRate("50 millis", "100 millis", target, "tick")
      yield* TestClock.adjust("360 millis")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.at),
        [50, 150, 250, 350]
      )
      assert.isTrue(yield* handle.cancel)
      assert.isTrue(yield* handle.isCancelled)
      assert.isFalse(yield* handle.cancel, "a second cancel stops nothing")
      yield* probe.expectNoMessage("1 second")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("scheduleOnceFunction and scheduleAtFixedRateFunction run the task", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const runs = yield* Ref.make<ReadonlyArray<string>>([])
      const record = (label: string) =>
        Effect.flatMap(
          Effect.clockWith((c) => c.currentTimeMillis),
          (t) => Ref.update(runs, (r) => [...r, `${label}@${t}`])
        )
      yield* system.scheduler.scheduleOnceFunction("30 millis", record("once"))
      const rate = yield* system.scheduler.scheduleAtFixedRateFunction("0 millis", "100 millis", record("rate"))
      yield* TestClock.adjust("250 millis")
      assert.deepStrictEqual(yield* Ref.get(runs), ["rate@0", "once@30", "rate@100", "rate@200"])
      assert.isTrue(yield* rate.cancel)
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* Ref.get(runs)).length, 4)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect(
    "Cancellable: a one-shot message is active until handled; cancel drops it; false after it was handled",
    () =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
        const handled = yield* system.scheduler.scheduleOnce("100 millis", target, "first")
        yield* TestClock.adjust("100 millis")
        yield* probe.expectMessageEquals("first")
        assert.isFalse(yield* handled.cancel, "fired and handled: nothing to stop")
        assert.isFalse(yield* handled.isCancelled)

        const pending = yield* system.scheduler.scheduleOnce("100 millis", target, "second")
        assert.isTrue(yield* pending.cancel)
        assert.isTrue(yield* pending.isCancelled)
        yield* probe.expectNoMessage("1 second")
      }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a one-shot message already queued behind a slow message is dropped when cancelled", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const Slow = Actor.make<string>()({
        receive: (msg) =>
          Effect.zipRight(probe.ref.tell(msg), msg === "slow" ? Effect.sleep("100 millis") : Effect.void)
      })
      const target = yield* ActorSystem.spawn(Slow, "slow")
      yield* target.tell("slow") // busy until 100
      const handle = yield* system.scheduler.scheduleOnce("10 millis", target, "scheduled")
      yield* TestClock.adjust("50 millis") // fired at 10, waiting in the mailbox
      assert.isTrue(yield* handle.cancel)
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["slow"]
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("equal deadlines fire in the order they were scheduled", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      for (const label of ["a", "b", "c", "d", "e"]) {
        yield* system.scheduler.scheduleOnce("100 millis", probe.ref, label)
      }
      yield* system.scheduler.scheduleOnce("50 millis", probe.ref, "early")
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["early", "a", "b", "c", "d", "e"]
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect(
    "a failing function task is logged at error level and published as SchedulerError; it keeps ticking",
    () => {
      const { layer, logs } = captureLogs()
      return Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const events = yield* TestProbe.make<EventStream.SchedulerError>()
        yield* system.eventStream.subscribe(events.ref, EventStream.SchedulerError)
        const runs = yield* Ref.make(0)
        const task = Effect.flatMap(
          Ref.updateAndGet(runs, (n) => n + 1),
          (n) =>
            n === 2 ? Effect.fail("second run failed") : n === 3 ? Effect.die(new Error("third run died")) : Effect.void
        )
        yield* system.scheduler.scheduleAtFixedRateFunction("100 millis", "100 millis", task)
        yield* TestClock.adjust("500 millis")
        assert.strictEqual(yield* Ref.get(runs), 5, "the schedule survived both failures")
        const published = yield* events.receiveAll
        assert.strictEqual(published.length, 2)
        assert.deepStrictEqual(Cause.failureOption(published[0]!.message.cause), Option.some("second run failed"))
        assert.isTrue(Cause.isDie(published[1]!.message.cause))
        const errors = logs.filter((l) => l.level === "ERROR" && l.message.includes("scheduled task failed"))
        assert.strictEqual(errors.length, 2)
        assert.isUndefined(errors[0]!.annotations.actor, "a task runs outside any actor")
      }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
    }
  )

  it.effect("a once function task that fails is reported too", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const events = yield* TestProbe.make<EventStream.SchedulerError>()
      yield* system.eventStream.subscribe(events.ref, EventStream.SchedulerError)
      yield* system.scheduler.scheduleOnceFunction("10 millis", Effect.fail("nope"))
      yield* TestClock.adjust("10 millis")
      const event = yield* events.expectMessage
      assert.deepStrictEqual(Cause.failureOption(event.cause), Option.some("nope"))
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("message schedules never publish SchedulerError: the target's supervision owns the failure", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const events = yield* TestProbe.make<EventStream.SchedulerError>()
      yield* system.eventStream.subscribe(events.ref, EventStream.SchedulerError)
      const probe = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      yield* system.scheduler.scheduleAtFixedRate("10 millis", "10 millis", target, "crash")
      yield* TestClock.adjust("50 millis")
      yield* events.expectNoMessage()
      // the target was restarted each time (guardian default) and still answers
      yield* target.tell("alive")
      yield* probe.expectMessageEquals("alive")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("runs of one function task never overlap: a run due while the previous runs starts right after it", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const starts = yield* Ref.make<ReadonlyArray<number>>([])
      const active = yield* Ref.make(0)
      const maxActive = yield* Ref.make(0)
      const task = Effect.gen(function* () {
        const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
        yield* Ref.update(starts, (s) => [...s, now])
        const n = yield* Ref.updateAndGet(active, (a) => a + 1)
        yield* Ref.update(maxActive, (m) => Math.max(m, n))
        yield* Effect.sleep("150 millis")
        yield* Ref.update(active, (a) => a - 1)
      })
      const handle = yield* system.scheduler.scheduleAtFixedRateFunction("100 millis", "100 millis", task)
      yield* TestClock.adjust("560 millis")
      yield* handle.cancel
      assert.strictEqual(yield* Ref.get(maxActive), 1)
      // due at 100, 200, 300, 400, 500; each run takes 150
      assert.deepStrictEqual(yield* Ref.get(starts), [100, 250, 400, 550])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a message to a stopped target goes to dead letters", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const letters = yield* TestProbe.make<EventStream.DeadLetter>()
      yield* system.eventStream.subscribe(letters.ref, EventStream.DeadLetter)
      const probe = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      yield* system.scheduler.scheduleOnce("100 millis", target, "too late")
      yield* system.stop(target)
      yield* TestClock.adjust("100 millis")
      const letter = yield* letters.expectMessage
      assert.strictEqual(letter.message, "too late")
      assert.strictEqual(letter.recipient, "/user/target")
      assert.strictEqual(letter.reason, "stopped")
      yield* probe.expectNoMessage()
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("message schedules survive the target's restart", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      yield* system.scheduler.scheduleAtFixedRate("100 millis", "100 millis", target, "tick")
      yield* TestClock.adjust("100 millis")
      yield* target.tell("crash")
      yield* TestClock.adjust("200 millis")
      assert.strictEqual((yield* probe.receiveAll).length, 3)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("unsafeScheduleOnce schedules at once, outside any effect; unsafeCancel cancels at once", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const replyTo = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      const kept = system.scheduler.unsafeScheduleOnce("1 second", probe.ref, "kept", replyTo.ref)
      const dropped = system.scheduler.unsafeScheduleOnce(500, target, "dropped")
      const toActor = system.scheduler.unsafeScheduleOnce("2 seconds", target, "to the actor")
      // armed before any effect ran: the engine holds all three
      assert.strictEqual((yield* system.stats).engineEntries, 3)
      assert.isTrue(dropped.unsafeCancel())
      assert.isFalse(dropped.unsafeCancel(), "a second cancel stops nothing")
      assert.isTrue(yield* dropped.isCancelled)
      assert.isFalse(yield* dropped.cancel)
      yield* TestClock.adjust("1 second")
      const received = yield* probe.expectReceived
      assert.deepStrictEqual([received.message, received.at, received.sender], ["kept", 1000, replyTo.ref])
      assert.isFalse(kept.unsafeCancel(), "a one-shot that ran has nothing left to cancel")
      yield* TestClock.adjust("1 second")
      yield* probe.expectMessageEquals("to the actor")
      assert.isFalse(toActor.unsafeCancel(), "handled by the target: done")
      yield* probe.expectNoMessage("1 minute")
      assert.strictEqual((yield* system.stats).timers, 0)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("unsafeScheduleOnce throws the typed error of scheduleOnce for a bad delay, and arms nothing", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      for (const delay of [-5, Number.NaN, Number.POSITIVE_INFINITY, "soon"] as const) {
        let thrown: unknown
        try {
          system.scheduler.unsafeScheduleOnce(delay as never, probe.ref, "x")
        } catch (error) {
          thrown = error
        }
        assert.instanceOf(thrown, TimerError.InvalidTimerDelay, String(delay))
        const failed = yield* Effect.flip(system.scheduler.scheduleOnce(delay as never, probe.ref, "x"))
        assert.deepStrictEqual(thrown, failed, "the same error as scheduleOnce's")
      }
      assert.strictEqual((yield* system.stats).engineEntries, 0)
      yield* system.shutdown
      const late = system.scheduler.unsafeScheduleOnce("1 second", probe.ref, "x")
      assert.isTrue(yield* late.isCancelled, "after shutdown: already cancelled")
      assert.isFalse(late.unsafeCancel())
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("bad input is a typed error", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const negative = yield* Effect.flip(system.scheduler.scheduleOnce(-5, probe.ref, "x"))
      assert.strictEqual(negative._tag, "InvalidTimerDelay")
      const zero = yield* Effect.flip(system.scheduler.scheduleAtFixedRate(0, 0, probe.ref, "x"))
      assert.strictEqual(zero._tag, "InvalidTimerInterval")
      const fnNegative = yield* Effect.flip(system.scheduler.scheduleAtFixedRateFunction("-1 seconds", 10, Effect.void))
      assert.strictEqual(fnNegative._tag, "InvalidTimerDelay")
      const fnZero = yield* Effect.flip(system.scheduler.scheduleAtFixedRateFunction(0, "0 millis", Effect.void))
      assert.strictEqual(fnZero._tag, "InvalidTimerInterval")
      assert.strictEqual((yield* system.stats).engineEntries, 0)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("schedules made after shutdown come back already cancelled", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const pending = yield* system.scheduler.scheduleAtFixedRate("1 second", "1 second", probe.ref, "x")
      yield* system.shutdown
      assert.isTrue(yield* pending.isCancelled, "shutdown cancels what was pending")
      assert.isFalse(yield* pending.cancel)
      const late = yield* system.scheduler.scheduleOnce("1 second", probe.ref, "x")
      assert.isTrue(yield* late.isCancelled)
      assert.isFalse(yield* late.cancel)
      const lateTask = yield* system.scheduler.scheduleOnceFunction("1 second", Effect.void)
      assert.isTrue(yield* lateTask.isCancelled)
      yield* probe.expectNoMessage("10 seconds")
      assert.deepStrictEqual(yield* system.stats, {
        actors: 0,
        fibers: 0,
        timers: 0,
        engineEntries: 0,
        engineRunning: false,
        engineRestarts: 0,
        deadLetters: 0
      })
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("scheduleWithCron sends at the expression's instants; references replace and cancel", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const target = yield* ActorSystem.spawn(Forwarder(probe), "target")
      // TestClock starts at 1970-01-01T00:00:00Z
      yield* system.scheduler.scheduleWithCron(target, "every-10s", "0/10 * * * * ?", {
        reference: "poll",
        timeZone: "UTC"
      })
      yield* TestClock.adjust("25 seconds")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => `${r.message}@${r.at}`),
        ["every-10s@10000", "every-10s@20000"]
      )
      // same reference: the old schedule is cancelled and replaced
      yield* system.scheduler.scheduleWithCron(target, "minute", "0 * * * * ?", { reference: "poll", timeZone: "UTC" })
      yield* TestClock.adjust("60 seconds")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => `${r.message}@${r.at}`),
        ["minute@60000"]
      )
      yield* system.scheduler.cancelSchedule("poll")
      yield* TestClock.adjust("5 minutes")
      yield* probe.expectNoMessage()
      const unknown = yield* Effect.flip(system.scheduler.cancelSchedule("poll"))
      assert.strictEqual(unknown._tag, "ScheduledReferenceNotFound")
      const invalid = yield* Effect.flip(system.scheduler.scheduleWithCron(target, "x", "0 0 * * *"))
      assert.strictEqual(invalid._tag, "InvalidCronExpression")
      // an expression whose instants are all past could never fire: a typed error, and nothing armed
      const past = yield* Effect.flip(
        system.scheduler.scheduleWithCron(target, "x", "0 0 0 1 1 ? 1970", { timeZone: "UTC", reference: "past" })
      )
      assert.strictEqual(past._tag, "InvalidCronExpression")
      assert.include(past.message, "no instant after 1970-01-01T00:06:25.000Z")
      assert.strictEqual((yield* system.stats).engineEntries, 0)
      assert.strictEqual(
        (yield* Effect.flip(system.scheduler.cancelSchedule("past")))._tag,
        "ScheduledReferenceNotFound"
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("scheduled ticks carry no log context from the code that scheduled them", () => {
    const { layer, logs } = captureLogs()
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const Logging = Actor.make<string>()({ receive: (msg) => Effect.logInfo(`got ${msg}`) })
      const target = yield* ActorSystem.spawn(Logging, "logging")
      yield* Effect.gen(function* () {
        yield* system.scheduler.scheduleOnce("10 millis", target, "tick")
        yield* system.scheduler.scheduleOnceFunction("10 millis", Effect.logInfo("task"))
        yield* target.tell("told")
      }).pipe(Effect.annotateLogs("tenant", "acme"), Effect.withLogSpan("request"))
      yield* TestClock.adjust("10 millis")
      const told = logs.find((l) => l.message === "got told")!
      assert.strictEqual(told.annotations.tenant, "acme", "a plain tell carries the sender's context")
      assert.deepStrictEqual(told.spans, ["request"])
      assert.strictEqual(told.annotations.actor, "/user/logging")
      const tick = logs.find((l) => l.message === "got tick")!
      assert.deepStrictEqual(tick.annotations, { actor: "/user/logging" })
      assert.deepStrictEqual(tick.spans, [])
      const task = logs.find((l) => l.message === "task")!
      assert.deepStrictEqual(task.annotations, {})
      assert.deepStrictEqual(task.spans, [])
    }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
  })
})
