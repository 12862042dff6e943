import { assert, describe, it } from "@effect/vitest"
import { type Clock, Duration, Effect, Layer, Schedule, TestClock } from "effect"
import { Actor, type ActorRef, ActorSystem, type Timers } from "tickwork"
import { TestProbe, TestSystem } from "tickwork/testkit"
import { makeStallClock } from "./utils.js"

/** Ticks are forwarded to a probe with their label. */
type Msg = { readonly _tag: "Tick"; readonly label: string } | { readonly _tag: "Fail"; readonly afterMillis: number }

const tick = (label: string): Msg => ({ _tag: "Tick", label })

interface Options {
  /** How long a tick takes to handle (TestClock time). */
  readonly slowMillis?: number
  readonly preStart?: (ctx: Actor.ActorContext<Msg>) => Effect.Effect<void, unknown>
  readonly mailboxCapacity?: number
}

/** The actor under test: tells the probe "label@incarnation" for each tick. */
const TimerActor = (probe: TestProbe.TestProbe<string>, options: Options = {}) => {
  let incarnations = 0
  const actor = Actor.make<Msg>()({
    preStart: (ctx) =>
      Effect.tap(
        Effect.sync(() => ++incarnations),
        () => (options.preStart === undefined ? Effect.void : Effect.orDie(options.preStart(ctx)))
      ),
    receive: (msg, _ctx, incarnation) => {
      switch (msg._tag) {
        case "Tick":
          return probe.ref
            .tell(`${msg.label}@${incarnation}`)
            .pipe(
              Effect.zipRight(options.slowMillis === undefined ? Effect.void : Effect.sleep(options.slowMillis)),
              Effect.as(incarnation)
            )
        case "Fail":
          return Effect.zipRight(Effect.sleep(msg.afterMillis), Effect.die("boom"))
      }
    }
  })
  return options.mailboxCapacity === undefined ? actor : Actor.withMailboxCapacity(actor, options.mailboxCapacity)
}

/** Runs `f` inside the actor and returns its result (or fails with its error). */
const inActor = <A, E>(ref: ActorRef.ActorRef<Msg>, f: (timers: Timers.TimerScheduler<Msg>) => Effect.Effect<A, E>) =>
  TestSystem.inside(ref, (ctx) => f(ctx.timers))

const setup = (options: Options = {}) =>
  Effect.gen(function* () {
    const probe = yield* TestProbe.make<string>()
    const ref = yield* ActorSystem.spawn(TimerActor(probe, options), "subject")
    return { probe, ref }
  })

const labels = (probe: TestProbe.TestProbe<string>) =>
  Effect.map(probe.receiveAll, (all) => all.map((r) => `${r.message}:${r.at}`))

const SystemLive = TestSystem.layer({ name: "timers" })

describe("context.timers", () => {
  it.effect("startSingleTimer delivers once, exactly after the delay", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startSingleTimer("once", tick("a"), "1 second"))
      yield* probe.expectNoMessage("999 millis")
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(yield* labels(probe), ["a@1:1000"])
      yield* probe.expectNoMessage("10 seconds")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect(
    "a timer further away than JS timers can sleep (~24.8 days) fires on time; no sleep exceeds the limit",
    () =>
      Effect.gen(function* () {
        const testClock = yield* Effect.clock
        const sleeps: Array<number> = []
        // the live clock treats sleeps over 2^31 - 1 ms as infinite: the driver must sleep in steps
        const recording: Clock.Clock = Object.assign(Object.create(testClock), {
          sleep: (duration: Duration.Duration) => {
            sleeps.push(Duration.toMillis(duration))
            return testClock.sleep(duration)
          }
        })
        const system = Layer.scopedContext(Effect.withClock(Layer.build(SystemLive), recording))
        yield* Effect.gen(function* () {
          const { probe, ref } = yield* setup()
          yield* inActor(ref, (t) => t.startSingleTimer("far", tick("far"), "30 days"))
          yield* probe.expectNoMessage("29 days")
          yield* TestClock.adjust("1 day")
          assert.deepStrictEqual(yield* labels(probe), [`far@1:${30 * 86_400_000}`])
        }).pipe(Effect.provide(system))
        assert.isAbove(sleeps.length, 1)
        assert.isAtMost(Math.max(...sleeps), 2 ** 31 - 1)
      })
  )

  it.effect("startTimerWithFixedDelay: first tick after the interval, then every interval", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startTimerWithFixedDelay("hb", tick("hb"), "100 millis"))
      yield* TestClock.adjust("350 millis")
      assert.deepStrictEqual(yield* labels(probe), ["hb@1:100", "hb@1:200", "hb@1:300"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("initialDelay 0 fires at once, then on the interval", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startTimerWithFixedDelay("hb", tick("hb"), "100 millis", 0))
      yield* TestClock.adjust("250 millis")
      assert.deepStrictEqual(yield* labels(probe), ["hb@1:0", "hb@1:100", "hb@1:200"])
      yield* inActor(ref, (t) => t.startTimerAtFixedRate("fr", tick("fr"), "1 second", "0 millis"))
      assert.deepStrictEqual(yield* labels(probe), ["fr@1:250"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("startTimerAtFixedRate with an initial delay keeps the grid", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startTimerAtFixedRate("fr", tick("fr"), "100 millis", "30 millis"))
      yield* TestClock.adjust("300 millis")
      assert.deepStrictEqual(yield* labels(probe), ["fr@1:30", "fr@1:130", "fr@1:230"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("startTimerWithSchedule follows the schedule's delays and ends with it", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      const backoff = Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(3)))
      yield* inActor(ref, (t) => t.startTimerWithSchedule("backoff", tick("b"), backoff))
      assert.isTrue(yield* inActor(ref, (t) => t.isTimerActive("backoff")))
      yield* TestClock.adjust("10 seconds")
      // delays 100, 200, 400 from the start
      assert.deepStrictEqual(yield* labels(probe), ["b@1:100", "b@1:300", "b@1:700"])
      assert.isFalse(yield* inActor(ref, (t) => t.isTimerActive("backoff")))
      assert.deepStrictEqual(yield* inActor(ref, (t) => t.activeKeys), [])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("in its last tick's handler a schedule timer reads inactive, as a single timer does", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const Checker = Actor.make<string>()({
        preStart: (ctx) =>
          Effect.zipRight(
            ctx.timers.startSingleTimer("single", "single", "100 millis").pipe(Effect.orDie),
            ctx.timers.startTimerWithSchedule("sched", "sched", Schedule.spaced("100 millis").pipe(Schedule.upTo(250)))
          ),
        receive: (msg, ctx) =>
          Effect.flatMap(ctx.timers.isTimerActive(msg), (active) => probe.ref.tell(`${msg}:${active}`))
      })
      yield* ActorSystem.spawn(Checker, "checker")
      yield* TestClock.adjust("1 second")
      // the schedule gives up after 250 ms: its tick at 300 is its last
      assert.deepStrictEqual(yield* labels(probe), [
        "single:false:100",
        "sched:true:100",
        "sched:true:200",
        "sched:false:300"
      ])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a schedule that never waits fires at most once per millisecond, the engine's resolution", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startTimerWithSchedule("busy", tick("f"), Schedule.forever))
      yield* TestClock.adjust("300 millis")
      yield* inActor(ref, (t) => t.cancel("busy"))
      const ats = (yield* probe.receiveAll).map((r) => r.at)
      // at arming (0), then every millisecond up to 300
      assert.strictEqual(ats.length, 301)
      assert.deepStrictEqual(ats.slice(0, 3), [0, 1, 2])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("intervals below 1 ms are an InvalidTimerInterval for every periodic actor timer", () =>
    Effect.gen(function* () {
      const { ref } = yield* setup()
      for (const interval of [0.001, "500 micros", 0.999] as ReadonlyArray<Duration.DurationInput>) {
        const delay = yield* Effect.flip(inActor(ref, (t) => t.startTimerWithFixedDelay("d", tick("d"), interval)))
        const rate = yield* Effect.flip(inActor(ref, (t) => t.startTimerAtFixedRate("r", tick("r"), interval)))
        for (const error of [delay, rate]) {
          assert.strictEqual(error._tag, "InvalidTimerInterval")
          assert.include(error.message, "at least 1 ms")
        }
      }
      assert.deepStrictEqual(yield* inActor(ref, (t) => t.activeKeys), [])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("every member of ctx and ctx.timers works destructured, off its object", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const Child = Actor.make<string>()({ receive: () => Effect.void })
      const Detached = Actor.make<string>()({
        preStart: (ctx) =>
          Effect.gen(function* () {
            const { timers, spawn, stop, self, path, setReceiveTimeout, cancelReceiveTimeout } = ctx
            const { startSingleTimer, startTimerWithFixedDelay, startTimerAtFixedRate, startTimerWithSchedule } = timers
            const { cancel, cancelAll, isTimerActive, activeKeys } = timers
            yield* Effect.orDie(startSingleTimer("single", "single", "10 millis"))
            yield* Effect.orDie(startTimerWithFixedDelay("delay", "delay", "1 hour"))
            yield* Effect.orDie(startTimerAtFixedRate("rate", "rate", "1 hour"))
            yield* Effect.orDie(startTimerWithSchedule("schedule", "schedule", Schedule.spaced("1 hour")))
            assert.deepStrictEqual(yield* activeKeys, ["single", "delay", "rate", "schedule"])
            assert.isTrue(yield* cancel("delay"))
            assert.isFalse(yield* isTimerActive("delay"))
            yield* Effect.orDie(setReceiveTimeout("1 hour", "idle"))
            yield* cancelReceiveTimeout
            const child = yield* Effect.orDie(spawn(Child, "child"))
            yield* stop(child)
            yield* probe.ref.tell(`${path} ${self.path} ${ctx.children.length}`)
            yield* cancelAll
            assert.deepStrictEqual(yield* activeKeys, [])
          }),
        receive: (msg) => probe.ref.tell(msg)
      })
      yield* ActorSystem.spawn(Detached, "detached")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* labels(probe), ["/user/detached /user/detached 0:0"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("startTimerWithSchedule with a union of schedules ticks on both", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      const union = Schedule.spaced("300 millis").pipe(Schedule.union(Schedule.spaced("500 millis")))
      yield* inActor(ref, (t) => t.startTimerWithSchedule("u", tick("u"), union))
      yield* TestClock.adjust("1 second")
      // union: the shorter delay wins at each step
      assert.deepStrictEqual(yield* labels(probe), ["u@1:300", "u@1:600", "u@1:900"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("replace timer: the same key cancels the old timer, no double firing", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startTimerWithFixedDelay("t", tick("old"), "100 millis"))
      yield* TestClock.adjust("150 millis")
      yield* inActor(ref, (t) => t.startTimerWithFixedDelay("t", tick("new"), "100 millis"))
      yield* TestClock.adjust("300 millis")
      assert.deepStrictEqual(yield* labels(probe), ["old@1:100", "new@1:250", "new@1:350", "new@1:450"])
      assert.deepStrictEqual(yield* inActor(ref, (t) => t.activeKeys), ["t"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("cancel stops a timer and reports whether one was active", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startTimerWithFixedDelay("t", tick("t"), "100 millis"))
      yield* TestClock.adjust("100 millis")
      assert.isTrue(yield* inActor(ref, (t) => t.cancel("t")))
      assert.isFalse(yield* inActor(ref, (t) => t.cancel("t")))
      assert.isFalse(yield* inActor(ref, (t) => t.cancel("never-started")))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* labels(probe), ["t@1:100"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a single timer is active until its tick is handled, then cancel returns false", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startSingleTimer("once", tick("once"), "100 millis"))
      assert.isTrue(yield* inActor(ref, (t) => t.isTimerActive("once")))
      yield* TestClock.adjust("100 millis")
      yield* probe.expectMessageEquals("once@1")
      assert.isFalse(yield* inActor(ref, (t) => t.isTimerActive("once")))
      assert.isFalse(yield* inActor(ref, (t) => t.cancel("once")))
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("stale tick after cancel: a tick already queued is dropped, never handled", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startSingleTimer("once", tick("once"), "110 millis"))
      yield* TestClock.adjust("100 millis")
      // A 50 ms command runs from 100 to 150; the tick fires at 110 and waits behind it; then the command cancels.
      const cancelled = yield* Effect.fork(
        inActor(ref, (t) => Effect.zipRight(Effect.sleep("50 millis"), t.cancel("once")))
      )
      yield* TestClock.adjust("100 millis")
      assert.isTrue(yield* cancelled, "cancel returns true while the tick is queued but unhandled")
      yield* probe.expectNoMessage("1 second")
      assert.deepStrictEqual(yield* TestSystem.counts(ref, "once"), {
        delivered: 0,
        dropped: { stale: 1, mailbox_full: 0, owner_stopped: 0, missed: 0 },
        stale: 1
      })
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a replaced timer's queued tick is dropped; only the new timer's ticks arrive", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) => t.startSingleTimer("t", tick("old"), "110 millis"))
      yield* TestClock.adjust("100 millis")
      const replaced = yield* Effect.fork(
        inActor(ref, (t) =>
          Effect.zipRight(Effect.sleep("50 millis"), t.startSingleTimer("t", tick("new"), "100 millis"))
        )
      )
      yield* TestClock.adjust("300 millis")
      yield* replaced
      assert.deepStrictEqual(yield* labels(probe), ["new@1:250"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("discard timers from an old incarnation after restart", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup({
        // every incarnation starts its own timer
        preStart: (ctx) => ctx.timers.startTimerWithFixedDelay("hb", tick("hb"), "100 millis")
      })
      yield* TestClock.adjust("190 millis")
      assert.deepStrictEqual(yield* labels(probe), ["hb@1:100"])
      // A command runs from 190 to 210 and then fails; incarnation 1's tick of 200 is queued behind it.
      yield* ref.tell({ _tag: "Fail", afterMillis: 20 })
      yield* TestClock.adjust("310 millis") // 500
      // the queued tick is never handled; incarnation 2 started its own timer at 210
      assert.deepStrictEqual(yield* labels(probe), ["hb@2:310", "hb@2:410"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("all timers are cancelled when the actor stops", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      const system = yield* ActorSystem.ActorSystem
      yield* inActor(ref, (t) =>
        Effect.all([
          t.startTimerWithFixedDelay("a", tick("a"), "100 millis"),
          t.startTimerAtFixedRate("b", tick("b"), "100 millis"),
          t.startSingleTimer("c", tick("c"), "1 second")
        ])
      )
      assert.strictEqual((yield* system.stats).timers, 3)
      assert.strictEqual((yield* system.stats).engineEntries, 3)
      yield* system.stop(ref)
      const stats = yield* system.stats
      assert.strictEqual(stats.timers, 0)
      assert.strictEqual(stats.engineEntries, 0)
      yield* probe.expectNoMessage("5 seconds")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("cancelAll cancels every timer; activeKeys lists keys in start order", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup()
      yield* inActor(ref, (t) =>
        Effect.all([
          t.startTimerWithFixedDelay("b", tick("b"), "100 millis"),
          t.startSingleTimer("a", tick("a"), "1 second"),
          t.startTimerAtFixedRate("c", tick("c"), "100 millis")
        ])
      )
      assert.deepStrictEqual(yield* inActor(ref, (t) => t.activeKeys), ["b", "a", "c"])
      yield* inActor(ref, (t) => t.cancelAll)
      assert.deepStrictEqual(yield* inActor(ref, (t) => t.activeKeys), [])
      assert.isFalse(yield* inActor(ref, (t) => t.isTimerActive("a")))
      yield* probe.expectNoMessage("2 seconds")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("fixed-rate backlog under a slow handler is not compressed", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup({ slowMillis: 250 })
      yield* inActor(ref, (t) => t.startTimerAtFixedRate("fr", tick("fr"), "100 millis"))
      yield* TestClock.adjust("1 second")
      // ticks are sent at 100..1000 but each takes 250 ms: handling starts at 100, 350, 600, 850
      assert.deepStrictEqual(yield* labels(probe), ["fr@1:100", "fr@1:350", "fr@1:600", "fr@1:850"])
      // 6 ticks wait in the mailbox; every one of them is handled, 250 ms apart, none merged or skipped
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.at),
        [1100, 1350, 1600, 1850]
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("fixed delay under a slow handler: the delay is measured between sends, ticks queue up", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup({ slowMillis: 150 })
      yield* inActor(ref, (t) => t.startTimerWithFixedDelay("fd", tick("fd"), "100 millis"))
      yield* TestClock.adjust("700 millis")
      // sent at 100, 200, ... (Akka: not from the end of handling); handled 150 ms apart
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.at),
        [100, 250, 400, 550, 700]
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("after a stall, fixed rate sends the missed ticks at once; fixed delay does not catch up", () =>
    Effect.gen(function* () {
      const { clock, stall } = yield* makeStallClock
      const program = Effect.gen(function* () {
        const { probe, ref } = yield* setup()
        yield* inActor(ref, (t) =>
          Effect.all([
            t.startTimerAtFixedRate("rate", tick("rate"), "100 millis"),
            t.startTimerWithFixedDelay("delay", tick("delay"), "100 millis")
          ])
        )
        yield* TestClock.adjust("50 millis")
        yield* stall(350) // the process "pauses" 350 ms: the driver wakes at 450 instead of 100
        yield* TestClock.adjust("50 millis")
        const first = (yield* probe.receiveAll).map((r) => r.message)
        assert.strictEqual(first.filter((m) => m.startsWith("rate")).length, 4, "100, 200, 300, 400 at once")
        assert.strictEqual(first.filter((m) => m.startsWith("delay")).length, 1)
        yield* TestClock.adjust("150 millis") // system time 600
        const second = (yield* probe.receiveAll).map((r) => r.message)
        assert.strictEqual(second.filter((m) => m.startsWith("rate")).length, 2, "500 and 600: back on the grid")
        assert.strictEqual(second.filter((m) => m.startsWith("delay")).length, 1, "550: 100 after the late send")
      })
      // only the system (its timer driver) sees the stalling clock; the test keeps driving TestClock
      const system = Layer.scopedContext(Effect.withClock(Layer.build(SystemLive), clock))
      yield* program.pipe(Effect.provide(system))
    })
  )

  it.effect("bad input is a typed error and starts nothing", () =>
    Effect.gen(function* () {
      const { ref } = yield* setup()
      const negative = yield* Effect.flip(inActor(ref, (t) => t.startSingleTimer("x", tick("x"), -1)))
      assert.strictEqual(negative._tag, "InvalidTimerDelay")
      assert.strictEqual((negative as { delayMillis: number }).delayMillis, -1)
      const zero = yield* Effect.flip(inActor(ref, (t) => t.startTimerWithFixedDelay("x", tick("x"), 0)))
      assert.strictEqual(zero._tag, "InvalidTimerInterval")
      const negativeRate = yield* Effect.flip(
        inActor(ref, (t) => t.startTimerAtFixedRate("x", tick("x"), "-5 seconds"))
      )
      assert.strictEqual(negativeRate._tag, "InvalidTimerInterval")
      assert.strictEqual((negativeRate as { intervalMillis: number }).intervalMillis, -5000)
      const badInitial = yield* Effect.flip(
        inActor(ref, (t) => t.startTimerAtFixedRate("x", tick("x"), "1 second", Number.NaN))
      )
      assert.strictEqual(badInitial._tag, "InvalidTimerDelay")
      const infinite = yield* Effect.flip(inActor(ref, (t) => t.startSingleTimer("x", tick("x"), Infinity)))
      assert.strictEqual(infinite._tag, "InvalidTimerDelay")
      const nonsense = yield* Effect.flip(
        inActor(ref, (t) => t.startSingleTimer("x", tick("x"), "soon" as unknown as number))
      )
      assert.strictEqual(nonsense._tag, "InvalidTimerDelay")
      assert.deepStrictEqual(yield* inActor(ref, (t) => t.activeKeys), [])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a full bounded mailbox drops ticks (counted) and the timer keeps firing", () =>
    Effect.gen(function* () {
      const { probe, ref } = yield* setup({ slowMillis: 1000, mailboxCapacity: 2 })
      const full = Effect.map(TestSystem.counts(ref, "fr"), (counts) => counts.dropped.mailbox_full)
      yield* inActor(ref, (t) => t.startTimerAtFixedRate("fr", tick("fr"), "100 millis"))
      // handling starts at 100 and runs until 1100; the ticks of 200 and 300 fill the mailbox, 400..1000 are dropped
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* full, 7)
      yield* TestClock.adjust("1 second")
      // 1100: the queued 200 runs (until 2100); the 1100 tick takes the freed slot; the timer never stopped
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.at),
        [100, 1100]
      )
      assert.strictEqual(yield* full, 7 + 9)
    }).pipe(Effect.provide(SystemLive))
  )
})
