import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Layer, TestClock } from "effect"
import { ActorSystem } from "tickwork"
import { TestSystem } from "tickwork/testkit"
import { planOnGrid } from "../src/internal/spotTimer.js"
import * as OverrunPolicy from "../src/OverrunPolicy.js"
import * as Spot from "../src/Spot.js"
import * as SpotTimers from "../src/SpotTimers.js"
import * as Tick from "../src/Tick.js"
import * as Workers from "../src/Workers.js"
import { captureLogs, makeStallClock } from "./utils.js"

const SystemLive = TestSystem.layer({ name: "spots" })

/** The fields of a tick as numbers, in the order of the spec's table. */
interface Row {
  readonly scheduledIndex: number
  readonly deliveryIndex: number
  readonly scheduledTime: number
  readonly startTime: number
  readonly delay: number
  readonly skippedTicks: number
}

const row = (tick: Tick.Tick): Row => ({
  scheduledIndex: tick.scheduledIndex,
  deliveryIndex: tick.deliveryIndex,
  scheduledTime: tick.scheduledTime,
  startTime: tick.startTime,
  delay: Duration.toMillis(tick.delay),
  skippedTicks: tick.skippedTicks
})

/** [scheduledIndex, deliveryIndex, scheduledTime, startTime, delay, skippedTicks] */
const rows = (...table: ReadonlyArray<readonly [number, number, number, number, number, number]>): Array<Row> =>
  table.map(([scheduledIndex, deliveryIndex, scheduledTime, startTime, delay, skippedTicks]) => ({
    scheduledIndex,
    deliveryIndex,
    scheduledTime,
    startTime,
    delay,
    skippedTicks
  }))

/**
 * A Spot with one timer "t" registered at time 0, every `period` ms, whose handler takes `handlerMillis` of
 * TestClock time. Returns the ticks its handler saw.
 */
const timerSpot = (options: {
  readonly period?: number
  readonly handlerMillis: number
  readonly overrun?: OverrunPolicy.OverrunPolicy
}) =>
  Effect.gen(function* () {
    const ticks: Array<Tick.Tick> = []
    const spot = yield* Spot.spawn(
      {
        initialState: 0,
        onStart: (ctx) =>
          Effect.orDie(
            ctx.timers.start({
              name: "t",
              period: options.period ?? 100,
              overrun: options.overrun,
              handler: (tick) =>
                Effect.zipRight(
                  Effect.sync(() => ticks.push(tick)),
                  options.handlerMillis > 0 ? Effect.sleep(options.handlerMillis) : Effect.void
                )
            })
          )
      },
      "subject"
    )
    return { spot, ticks }
  })

/** Runs `f` on the Spot's queue and returns its exit. */
const exitOf = <S, A, E>(spot: Spot.Spot<S>, f: (ctx: Spot.SpotContext<S>) => Effect.Effect<A, E>) =>
  Effect.exit(spot.run(f))

describe("Spot", () => {
  it.effect("runs submitted work one item at a time, in order, on its state", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: [] as ReadonlyArray<string> }, "log")
      for (const label of ["a", "b", "c"]) {
        yield* spot.submit((ctx) =>
          Effect.gen(function* () {
            yield* ctx.update((s) => [...s, `${label}:start`])
            yield* Effect.sleep("10 millis")
            yield* ctx.update((s) => [...s, `${label}:end`])
          })
        )
      }
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.state), [
        "a:start",
        "a:end",
        "b:start",
        "b:end",
        "c:start",
        "c:end"
      ])
      assert.strictEqual(yield* spot.run((ctx) => ctx.modify((s) => [s.length, []] as const)), 6)
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.state), [])
      assert.strictEqual(spot.path, "/user/log")
      assert.isTrue(Spot.isSpot(spot))
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("run returns the work's typed failure; submit logs it and the Spot goes on", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      yield* Effect.gen(function* () {
        const spot = yield* Spot.spawn({ initialState: 1 }, "failing")
        const failed = yield* Effect.flip(spot.run(() => Effect.fail("nope" as const)))
        assert.strictEqual(failed, "nope")
        yield* spot.submit(() => Effect.die("boom"))
        assert.strictEqual(yield* spot.run((ctx) => ctx.state), 1)
      }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
      assert.isTrue(logs.some((l) => l.level === "ERROR" && l.message.includes("work submitted to a Spot failed")))
    })
  )

  it.effect("onStart is the first item; a failing onStart stops the Spot", () =>
    Effect.gen(function* () {
      const started = yield* Spot.spawn({ initialState: "new", onStart: (ctx) => ctx.set("ready") }, "ok")
      yield* started.submit((ctx) => ctx.update((s) => `${s}+work`))
      assert.strictEqual(yield* started.run((ctx) => ctx.state), "ready+work")
      const { layer, logs } = captureLogs()
      const broken = yield* Spot.spawn({ initialState: 0, onStart: () => Effect.fail("no config") }, "broken").pipe(
        Effect.provide(layer)
      )
      yield* TestClock.adjust(0)
      const exit = yield* exitOf(broken, (ctx) => ctx.state)
      assert.deepStrictEqual(exit, Exit.fail(new Spot.SpotStopped({ path: "/user/broken" })))
      assert.isTrue(logs.some((l) => l.message.includes("Spot onStart failed")))
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("state is only reachable from the Spot's own work holding the turn", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 7 }, "guarded")
      // a worker call that touches Spot state dies instead of racing the Spot
      const fromWorker = yield* exitOf(spot, (ctx) => Workers.io(ctx.state).pipe(Spot.Async))
      assert.isTrue(Exit.isFailure(fromWorker) && Cause.isDie(fromWorker.cause))
      assert.include(Cause.pretty((fromWorker as Exit.Failure<unknown, unknown>).cause), "holds the turn")
      // a context leaked out of the Spot dies too
      const leaked = yield* spot.run((ctx) => Effect.succeed(ctx))
      const outside = yield* Effect.exit(leaked.state)
      assert.isTrue(Exit.isFailure(outside) && Cause.isDie(outside.cause))
      // awaiting its own queue would deadlock: it dies
      const self = yield* exitOf(spot, (ctx) => ctx.self.run(() => Effect.void))
      assert.include(Cause.pretty((self as Exit.Failure<unknown, unknown>).cause), "would wait for itself")
      // terminators outside a Spot die
      const terminator = yield* Effect.exit(Workers.io(Effect.void).pipe(Spot.Yield))
      assert.include(Cause.pretty((terminator as Exit.Failure<unknown, unknown>).cause), "Spot.Yield")
      assert.strictEqual(yield* spot.run((ctx) => ctx.state), 7)
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("Spot context", () => {
  class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}

  it.effect("run and submit work with the caller's services and log annotations; ticks get no log context", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      yield* Effect.gen(function* () {
        const spot = yield* Spot.spawn({ initialState: 0 }, "context")
        const greeting = yield* spot
          .run(() => Effect.zipRight(Effect.logInfo("in run"), Greeting))
          .pipe(Effect.provideService(Greeting, "hello"), Effect.annotateLogs("request", "r-1"))
        assert.strictEqual(greeting, "hello")
        yield* spot
          .run((ctx) =>
            ctx.timers.start({
              name: "t",
              period: 100,
              handler: () => Effect.flatMap(Greeting, (g) => Effect.logInfo(`tick says ${g}`))
            })
          )
          .pipe(Effect.provideService(Greeting, "from the registration"), Effect.annotateLogs("request", "r-2"))
        yield* TestClock.adjust("100 millis")
      }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
      const inRun = logs.find((l) => l.message === "in run")!
      assert.strictEqual(inRun.annotations.request, "r-1")
      assert.strictEqual(inRun.annotations.actor, "/user/context")
      const tick = logs.find((l) => l.message === "tick says from the registration")!
      assert.isUndefined(tick.annotations.request, "a tick carries no log context from the registration")
      assert.strictEqual(tick.annotations.actor, "/user/context")
    })
  )

  it.effect("waiting for its own Spot is refused instead of hanging", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "self-wait")
      // a worker call the turn holder awaits, asking its own Spot for work
      const fromWorker = yield* exitOf(spot, (ctx) => Workers.io(ctx.self.run(() => Effect.void)).pipe(Spot.Async))
      assert.include(Cause.pretty((fromWorker as Exit.Failure<unknown, unknown>).cause), "would wait for itself")
      // stop from inside: after the current item, without waiting for itself
      const result = yield* spot.run((ctx) => Effect.as(ctx.self.stop, "stopping"))
      assert.strictEqual(result, "stopping")
      yield* TestClock.adjust(0)
      assert.strictEqual((yield* Effect.flip(spot.run(() => Effect.void)))._tag, "SpotStopped")
    }).pipe(Effect.provide(SystemLive))
  )
})

/** Appends `what@time` to a Spot's state (a list of events), stamped with the Clock. */
const mark = (ctx: Spot.SpotContext<ReadonlyArray<string>>, what: string) =>
  Effect.flatMap(
    Effect.clockWith((c) => c.currentTimeMillis),
    (at) => ctx.update((s) => [...s, `${what}@${at}`])
  )

describe("Spot terminators", () => {
  /**
   * Item A waits 100 ms on an I/O worker closed by `terminator`; item B is queued right behind A. Returns when each
   * step happened.
   */
  const race = (terminator: <A, E, R>(call: Workers.WorkerCall<A, E, R>) => Effect.Effect<A, E, R>) =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: [] as ReadonlyArray<string> }, "race")
      yield* spot.submit((ctx) =>
        Effect.gen(function* () {
          yield* mark(ctx, "A start")
          const value = yield* Workers.io(Effect.as(Effect.sleep("100 millis"), 42)).pipe(terminator)
          yield* mark(ctx, `A got ${value}`)
        })
      )
      yield* spot.submit((ctx) => mark(ctx, "B"))
      yield* TestClock.adjust("200 millis")
      return yield* spot.run((ctx) => ctx.state)
    }).pipe(Effect.provide(SystemLive))

  it.effect("Yield gives the turn back: the next queued item runs while the worker waits", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* race(Spot.Yield), ["A start@0", "B@0", "A got 42@100"])
    })
  )

  it.effect("Async holds the turn: the next queued item waits for the worker", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* race(Spot.Async), ["A start@0", "A got 42@100", "B@100"])
    })
  )

  it.effect("after Yield the continuation re-enters the queue behind work queued meanwhile", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: [] as ReadonlyArray<string> }, "requeue")
      yield* spot.submit((ctx) =>
        Effect.gen(function* () {
          yield* mark(ctx, "A start")
          yield* Workers.io(Effect.sleep("100 millis")).pipe(Spot.Yield)
          // B changed the state meanwhile: A reads the current state, not a copy from before the Yield
          yield* mark(ctx, `A resumed after ${(yield* ctx.state).length - 1} other`)
        })
      )
      // B holds the turn from 0 to 150: A's worker is done at 100, but A continues only after B
      yield* spot.submit((ctx) => Effect.zipRight(Effect.sleep("150 millis"), mark(ctx, "B end")))
      yield* TestClock.adjust("300 millis")
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.state), [
        "A start@0",
        "B end@150",
        "A resumed after 1 other@150"
      ])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("Submit returns at once; the call runs off the queue and its failure is logged", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      yield* Effect.gen(function* () {
        const spot = yield* Spot.spawn({ initialState: 0 }, "submit")
        let finished = -1
        const at = yield* spot.run(() =>
          Effect.gen(function* () {
            yield* Workers.io(
              Effect.zipRight(
                Effect.sleep("100 millis"),
                Effect.clockWith((c) => c.currentTimeMillis).pipe(Effect.map((t) => (finished = t)))
              )
            ).pipe(Spot.Submit)
            yield* Workers.io(Effect.fail("lost")).pipe(Spot.Submit)
            return yield* Effect.clockWith((c) => c.currentTimeMillis)
          })
        )
        assert.strictEqual(at, 0, "the item did not wait for its submitted calls")
        yield* TestClock.adjust("100 millis")
        assert.strictEqual(finished, 100)
      }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
      assert.isTrue(logs.some((l) => l.level === "ERROR" && l.message.includes("Spot.Submit: worker call io failed")))
    })
  )

  it.effect("worker calls see no Spot state but keep the caller's services; typed errors pass through", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "errors")
      const failed = yield* Effect.flip(spot.run(() => Workers.io(Effect.fail("io down" as const)).pipe(Spot.Yield)))
      assert.strictEqual(failed, "io down")
      const asyncFailed = yield* Effect.flip(spot.run(() => Workers.io(Effect.fail(1 as const)).pipe(Spot.Async)))
      assert.strictEqual(asyncFailed, 1)
      assert.strictEqual(yield* spot.run((ctx) => ctx.state), 0)
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("Spot timers", () => {
  it.effect("a timer ticks every period from registration, with exact tick fields", () =>
    Effect.gen(function* () {
      const { ticks } = yield* timerSpot({ handlerMillis: 0 })
      yield* TestClock.adjust("350 millis")
      assert.deepStrictEqual(
        ticks.map(row),
        rows([1, 1, 100, 100, 0, 0], [2, 2, 200, 200, 0, 0], [3, 3, 300, 300, 0, 0])
      )
      const first = ticks[0]!
      assert.strictEqual(first.name, "t")
      assert.deepStrictEqual(first.period, Duration.millis(100))
      assert.isTrue(Tick.isTick(first))
    }).pipe(Effect.provide(SystemLive))
  )

  // The same slow handler (250 ms for a 100 ms period) under each policy. Every delivered tick: scheduledIndex -
  // deliveryIndex = ticks dropped so far, delay = start - scheduled.
  it.effect("SkipLateTicks (default): one tick for the latest due time, the ones that went by are skipped", () =>
    Effect.gen(function* () {
      const { spot, ticks } = yield* timerSpot({ handlerMillis: 250 })
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(
        ticks.map(row),
        rows(
          [1, 1, 100, 100, 0, 0],
          [3, 2, 300, 350, 50, 1], // 200 went by
          [6, 3, 600, 600, 0, 2], // 400, 500 went by
          [8, 4, 800, 850, 50, 1] // 700 went by
        )
      )
      // the ticks that went by are counted as dropped ("missed"), per Spot and timer
      const counts = yield* TestSystem.counts(spot, "t")
      assert.strictEqual(counts.delivered, 4)
      assert.deepStrictEqual(counts.dropped, { stale: 0, mailbox_full: 0, owner_stopped: 0, missed: 4 })
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("CatchUpBounded(1) delivers at most one tick that went by, besides the current one", () =>
    Effect.gen(function* () {
      const { ticks } = yield* timerSpot({ handlerMillis: 250, overrun: OverrunPolicy.CatchUpBounded() })
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(
        ticks.map(row),
        rows(
          [1, 1, 100, 100, 0, 0],
          [2, 2, 200, 350, 150, 0], // at 350 only 200 went by (300 is current): within the limit
          [5, 3, 500, 600, 100, 2], // at 600, 300..500 went by: 300 and 400 dropped, 500 kept
          [7, 4, 700, 850, 150, 1] // at 850, 600 and 700 went by: 600 dropped
        )
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("CatchUpBounded(3) catches up more and stays within (limit + 1) periods of delay", () =>
    Effect.gen(function* () {
      const { ticks } = yield* timerSpot({ handlerMillis: 250, overrun: OverrunPolicy.CatchUpBounded(3) })
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(
        ticks.map(row).slice(0, 5),
        rows(
          [1, 1, 100, 100, 0, 0],
          [2, 2, 200, 350, 150, 0],
          [3, 3, 300, 600, 300, 0], // 300..500 went by: 3 <= limit, the oldest is delivered
          [5, 4, 500, 850, 350, 1], // 400..700 went by: 4 > 3, 400 dropped
          [8, 5, 800, 1100, 300, 2] // 600..1000 went by: 600 and 700 dropped
        )
      )
      for (const tick of ticks) assert.isBelow(Duration.toMillis(tick.delay), 400)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("DelayNextTick schedules the next tick one period after the handler ended", () =>
    Effect.gen(function* () {
      const { ticks } = yield* timerSpot({ handlerMillis: 250, overrun: OverrunPolicy.DelayNextTick })
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(
        ticks.map(row),
        rows([1, 1, 100, 100, 0, 0], [2, 2, 450, 450, 0, 0], [3, 3, 800, 800, 0, 0])
      )
    }).pipe(Effect.provide(SystemLive))
  )

  describe("behind a backed-up queue (a 500 ms item from 50 to 550, a 10 ms handler)", () => {
    const backedUp = (overrun: OverrunPolicy.OverrunPolicy) =>
      Effect.gen(function* () {
        const { spot, ticks } = yield* timerSpot({ handlerMillis: 10, overrun })
        yield* TestClock.adjust("50 millis")
        yield* spot.submit(() => Effect.sleep("500 millis"))
        yield* TestClock.adjust("600 millis") // 650
        return ticks.map(row)
      }).pipe(Effect.provide(SystemLive))

    it.effect("SkipLateTicks: one tick at 550 for 500, four skipped; back on the grid at 600", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(
          yield* backedUp(OverrunPolicy.SkipLateTicks),
          rows([5, 1, 500, 550, 50, 4], [6, 2, 600, 600, 0, 0])
        )
      })
    )

    it.effect("CatchUpBounded(2): 300, 400, 500 back to back from 550; 100 and 200 dropped", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(
          yield* backedUp(OverrunPolicy.CatchUpBounded(2)),
          rows([3, 1, 300, 550, 250, 2], [4, 2, 400, 560, 160, 0], [5, 3, 500, 570, 70, 0], [6, 4, 600, 600, 0, 0])
        )
      })
    )

    it.effect("DelayNextTick: the tick due at 100 starts at 550; the next one 100 after it ended", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* backedUp(OverrunPolicy.DelayNextTick), rows([1, 1, 100, 550, 450, 0]))
      })
    )
  })

  it.effect("after a process pause the policy sees how far behind the timer is when the tick starts", () =>
    Effect.gen(function* () {
      const { clock, stall } = yield* makeStallClock
      const run = (overrun: OverrunPolicy.OverrunPolicy) =>
        Effect.gen(function* () {
          const { ticks } = yield* timerSpot({ handlerMillis: 0, overrun })
          yield* TestClock.adjust("50 millis")
          yield* stall(350) // the process "pauses": the driver wakes at 450 instead of 100
          yield* TestClock.adjust("100 millis") // 500 on the system's clock
          return ticks.map(row)
        }).pipe(Effect.provide(Layer.scopedContext(Effect.withClock(Layer.build(SystemLive), clock))))
      assert.deepStrictEqual(
        yield* run(OverrunPolicy.SkipLateTicks),
        rows([4, 1, 400, 450, 50, 3], [5, 2, 500, 500, 0, 0])
      )
    })
  )

  it.effect("after a process pause CatchUpBounded(1) delivers the newest missed tick, then the current one", () =>
    Effect.gen(function* () {
      const { clock, stall } = yield* makeStallClock
      const ticks = yield* Effect.gen(function* () {
        const { ticks } = yield* timerSpot({ handlerMillis: 0, overrun: OverrunPolicy.CatchUpBounded(1) })
        yield* TestClock.adjust("50 millis")
        yield* stall(350)
        yield* TestClock.adjust("100 millis")
        return ticks.map(row)
      }).pipe(Effect.provide(Layer.scopedContext(Effect.withClock(Layer.build(SystemLive), clock))))
      assert.deepStrictEqual(ticks, rows([3, 1, 300, 450, 150, 2], [4, 2, 400, 450, 50, 0], [5, 3, 500, 500, 0, 0]))
    })
  )

  it.effect("a handler that yields keeps its turn semantics: other work runs, ticks never overlap", () =>
    Effect.gen(function* () {
      const events: Array<string> = []
      const at = Effect.clockWith((c) => c.currentTimeMillis)
      const spot = yield* Spot.spawn(
        {
          initialState: 0,
          onStart: (ctx) =>
            Effect.orDie(
              ctx.timers.start({
                name: "slow-io",
                period: 100,
                handler: (tick) =>
                  Effect.gen(function* () {
                    events.push(`tick ${tick.scheduledIndex} start@${yield* at}`)
                    yield* Workers.io(Effect.sleep("250 millis")).pipe(Spot.Yield)
                    events.push(`tick ${tick.scheduledIndex} end@${yield* at}`)
                  })
              })
            )
        },
        "yielding"
      )
      yield* TestClock.adjust("150 millis")
      yield* spot.submit(() => Effect.flatMap(at, (t) => Effect.sync(() => events.push(`work@${t}`))))
      yield* TestClock.adjust("300 millis") // 450
      assert.deepStrictEqual(events, ["tick 1 start@100", "work@150", "tick 1 end@350", "tick 3 start@350"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a failing handler is logged with the timer's name and the timer keeps its schedule", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      const starts: Array<number> = []
      yield* Effect.gen(function* () {
        yield* Spot.spawn(
          {
            initialState: 0,
            onStart: (ctx) =>
              Effect.orDie(
                ctx.timers.start({
                  name: "flaky",
                  period: 100,
                  handler: (tick) =>
                    Effect.zipRight(
                      Effect.sync(() => starts.push(tick.startTime)),
                      tick.scheduledIndex === 2 ? Effect.fail("bad tick") : Effect.void
                    )
                })
              )
          },
          "flaky"
        )
        yield* TestClock.adjust("400 millis")
      }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
      assert.deepStrictEqual(starts, [100, 200, 300, 400])
      const failure = logs.find((l) => l.message.includes("handler failed"))
      assert.isDefined(failure)
      assert.strictEqual(failure!.annotations.timer, "flaky")
    })
  )

  it.effect("registration errors are typed and register nothing", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "config")
      const start = (options: Partial<SpotTimers.TimerOptions<number>>) =>
        Effect.flip(
          spot.run((ctx) => ctx.timers.start({ name: "t", period: 100, handler: () => Effect.void, ...options }))
        )
      assert.strictEqual((yield* start({ period: 0 }))._tag, "InvalidTimerInterval")
      assert.strictEqual((yield* start({ period: -5 }))._tag, "InvalidTimerInterval")
      assert.strictEqual((yield* start({ period: "soon" as unknown as number }))._tag, "InvalidTimerInterval")
      for (const limit of [0, -1, 1.5, Number.NaN]) {
        const error = yield* start({ overrun: OverrunPolicy.CatchUpBounded(limit) })
        assert.strictEqual(error._tag, "InvalidOverrunPolicy")
        assert.include(error.message, `CatchUpBounded(${limit})`)
      }
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.timers.names), [])
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 0)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a name is unique while its timer is active; a cancelled name can be used again", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "names")
      const start = (handler: () => Effect.Effect<void>) =>
        spot.run((ctx) => ctx.timers.start({ name: "hb", period: 100, handler }))
      const handle = yield* start(() => Effect.void)
      assert.isTrue(yield* handle.isActive)
      const duplicate = yield* Effect.flip(start(() => Effect.void))
      assert.deepStrictEqual(duplicate, new SpotTimers.DuplicateTimerName({ spot: "/user/names", name: "hb" }))
      assert.isTrue(yield* handle.cancel)
      assert.isFalse(yield* handle.cancel)
      assert.isFalse(yield* handle.isActive)
      const again = yield* start(() => Effect.void)
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.timers.names), ["hb"])
      assert.isTrue(yield* spot.run((ctx) => ctx.timers.cancel("hb")))
      assert.isFalse(yield* again.isActive)
      assert.isFalse(yield* spot.run((ctx) => ctx.timers.isActive("hb")))
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("cancelling a timer drops its queued tick", () =>
    Effect.gen(function* () {
      const { spot, ticks } = yield* timerSpot({ handlerMillis: 0 })
      // an item holds the turn from 50 to 150; the tick of 100 waits behind it, and the item cancels the timer
      yield* TestClock.adjust("50 millis")
      yield* spot.submit((ctx) => Effect.zipRight(Effect.sleep("100 millis"), ctx.timers.cancel("t")))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(ticks, [])
      assert.strictEqual((yield* TestSystem.counts(spot, "t")).stale, 1)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("planOnGrid: the delivered index never lags more than the limit, whatever the lateness", () =>
    Effect.sync(() => {
      for (const limit of [0, 1, 2, 5]) {
        for (let nextIndex = 1; nextIndex <= 6; nextIndex++) {
          for (let now = nextIndex * 100; now < 1500; now += 7) {
            const { index, skipped } = planOnGrid(0, 100, nextIndex, limit, now)
            const lastDue = Math.floor(now / 100)
            assert.isAtLeast(index, nextIndex)
            assert.isAtMost(index, lastDue)
            assert.strictEqual(skipped, index - nextIndex, "everything before the delivered index is dropped")
            assert.isAtMost(lastDue - index, limit, "at most `limit` due ticks remain behind the current one")
            assert.isBelow(now - index * 100, (limit + 1) * 100)
            if (lastDue - nextIndex <= limit) assert.strictEqual(index, nextIndex, "within the limit nothing drops")
          }
        }
      }
      // fractional periods: 0.3 / 0.1 is 3 periods, not 2.999...
      assert.deepStrictEqual(planOnGrid(0, 0.1, 1, 0, 0.3), { index: 3, skipped: 2 })
    })
  )
})

describe("stopping a Spot", () => {
  it.effect("cancels its timers, drops queued ticks, fails queued work, interrupts yielded work, runs onStop", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      let finalState: number | undefined
      let interrupted = false
      const ticks: Array<number> = []
      const spot = yield* Spot.spawn(
        {
          initialState: 0,
          onStart: (ctx) =>
            Effect.orDie(
              Effect.all([
                ctx.timers.start({
                  name: "a",
                  period: 100,
                  handler: (t) => Effect.sync(() => ticks.push(t.startTime))
                }),
                ctx.timers.start({ name: "b", period: 30, handler: () => ctx.update((n) => n + 1) })
              ])
            ),
          onStop: (state) =>
            Effect.sync(() => {
              finalState = state
            })
        },
        "stopping"
      )
      yield* TestClock.adjust(0)
      assert.strictEqual((yield* system.stats).engineEntries, 2)
      assert.strictEqual((yield* system.stats).timers, 2, "Spot timers count in the system's stats")
      // a job that yields and waits for 10 s off the turn
      yield* spot.submit(() =>
        Workers.io(Effect.sleep("10 seconds")).pipe(
          Spot.Yield,
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              interrupted = true
            })
          )
        )
      )
      yield* TestClock.adjust("50 millis")
      // an item holds the turn from 50 to 150: tick a (100) and tick b (60, then 120 is not queued: one copy) wait
      yield* spot.submit(() => Effect.sleep("100 millis"))
      const queuedRun = yield* Effect.fork(spot.run((ctx) => ctx.state))
      yield* TestClock.adjust("60 millis") // 110
      const stopping = yield* Effect.fork(spot.stop)
      yield* TestClock.adjust("40 millis") // 150: the item ends, the Spot stops
      yield* stopping
      assert.deepStrictEqual(
        yield* Effect.exit(queuedRun.await.pipe(Effect.flatten)),
        Exit.fail(new Spot.SpotStopped({ path: "/user/stopping" }))
      )
      assert.isTrue(interrupted, "the yielded job and its worker call were interrupted")
      assert.strictEqual(finalState, 1, "b ran at 30 only: its 60 tick and a's 100 tick were dropped")
      assert.deepStrictEqual(ticks, [])
      assert.strictEqual((yield* TestSystem.counts(spot, "a")).dropped.owner_stopped, 1)
      assert.strictEqual((yield* TestSystem.counts(spot, "b")).dropped.owner_stopped, 1)
      const stats = yield* system.stats
      assert.strictEqual(stats.engineEntries, 0)
      assert.strictEqual(stats.timers, 0)
      assert.strictEqual(stats.actors, 0)
      const after = yield* Effect.flip(spot.run((ctx) => ctx.state))
      assert.strictEqual(after._tag, "SpotStopped")
      assert.strictEqual((yield* Effect.flip(spot.submit(() => Effect.void)))._tag, "SpotStopped")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(ticks, [])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("system shutdown stops every Spot and leaves no timer behind", () =>
    Effect.gen(function* () {
      let stopped = 0
      const ticks = yield* Effect.scoped(
        Effect.gen(function* () {
          const seen: Array<number> = []
          for (const name of ["one", "two"]) {
            yield* Spot.spawn(
              {
                initialState: 0,
                onStart: (ctx) =>
                  Effect.orDie(
                    ctx.timers.start({
                      name: "t",
                      period: 100,
                      handler: (t) => Effect.sync(() => seen.push(t.startTime))
                    })
                  ),
                onStop: () =>
                  Effect.sync(() => {
                    stopped++
                  })
              },
              name
            )
          }
          yield* TestClock.adjust("250 millis")
          return seen
        }).pipe(Effect.provide(SystemLive))
      )
      assert.deepStrictEqual(ticks, [100, 100, 200, 200])
      assert.strictEqual(stopped, 2)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(ticks.length, 4)
    })
  )

  it.effect("context.stop stops the Spot after the current item", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "self-stop")
      const result = yield* spot.run((ctx) => Effect.zipRight(ctx.stop, Effect.as(ctx.set(5), "finished")))
      assert.strictEqual(result, "finished")
      yield* TestClock.adjust(0)
      assert.strictEqual((yield* Effect.flip(spot.run((ctx) => ctx.state)))._tag, "SpotStopped")
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("Tick and OverrunPolicy values", () => {
  it.effect("Tick.make computes the delay; toJSON and toString are readable", () =>
    Effect.sync(() => {
      const tick = Tick.make({
        name: "regen",
        scheduledIndex: 5,
        deliveryIndex: 3,
        scheduledTime: 500,
        startTime: 620,
        skippedTicks: 2,
        period: "100 millis"
      })
      assert.strictEqual(Duration.toMillis(tick.delay), 120)
      assert.strictEqual(
        String(tick),
        "Tick(regen #5, delivery 3, scheduled 500, started 620, delay 120 ms, skipped 2, period 100 ms)"
      )
      assert.deepStrictEqual(JSON.parse(JSON.stringify(tick)), {
        _id: "Tick",
        name: "regen",
        scheduledIndex: 5,
        deliveryIndex: 3,
        scheduledTime: 500,
        startTime: 620,
        delayMillis: 120,
        skippedTicks: 2,
        periodMillis: 100
      })
      assert.isFalse(Tick.isTick({}))
    })
  )

  it.effect("policies are values with a guard and a readable form", () =>
    Effect.sync(() => {
      assert.strictEqual(String(OverrunPolicy.SkipLateTicks), "SkipLateTicks")
      assert.strictEqual(String(OverrunPolicy.CatchUpBounded()), "CatchUpBounded(1)")
      assert.strictEqual(String(OverrunPolicy.CatchUpBounded(4)), "CatchUpBounded(4)")
      assert.strictEqual(OverrunPolicy.DelayNextTick._tag, "DelayNextTick")
      assert.isTrue(OverrunPolicy.isOverrunPolicy(OverrunPolicy.DelayNextTick))
      assert.isFalse(OverrunPolicy.isOverrunPolicy({ _tag: "SkipLateTicks" }))
    })
  )
})

describe("bad input", () => {
  /** Runs `timers.start` with the given options in a fresh Spot; returns the error, after checking nothing started. */
  const startError = (options: unknown) =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "config")
      const error = yield* Effect.flip(spot.run((ctx) => ctx.timers.start(options as SpotTimers.TimerOptions<number>)))
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.timers.names), [], "nothing was registered")
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 0)
      yield* spot.stop
      return error as { readonly _tag: string; readonly message: string; readonly option?: string }
    })

  const valid = { name: "t", period: 100, handler: () => Effect.void }

  it.effect("a period below the engine's 1 ms resolution is InvalidTimerInterval", () =>
    Effect.gen(function* () {
      for (const period of [0.001, 0.5, "999 micros"]) {
        const error = yield* startError({ ...valid, period })
        assert.strictEqual(error._tag, "InvalidTimerInterval")
        assert.include(error.message, "must be at least 1 ms")
      }
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("an overrun policy that is not an OverrunPolicy is InvalidOverrunPolicy (was silently SkipLateTicks)", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        ["SkipLateTicks", 'invalid overrun policy "SkipLateTicks": it is not an OverrunPolicy'],
        ["DelayNextTick", 'invalid overrun policy "DelayNextTick"'],
        [
          { _tag: "CatchUpBounded", limit: 3 },
          'invalid overrun policy { _tag: "CatchUpBounded" }: it is not an OverrunPolicy'
        ],
        [null, "invalid overrun policy null"],
        [3, "invalid overrun policy 3: it is not an OverrunPolicy"],
        [
          OverrunPolicy.CatchUpBounded(0),
          "invalid overrun policy CatchUpBounded(0): the limit must be an integer >= 1"
        ],
        [OverrunPolicy.CatchUpBounded(1.5), "CatchUpBounded(1.5): the limit must be an integer >= 1, got 1.5"],
        [OverrunPolicy.CatchUpBounded(Number.NaN), "got NaN"],
        [OverrunPolicy.CatchUpBounded(Number.POSITIVE_INFINITY), "got Infinity"]
      ]
      for (const [overrun, message] of cases) {
        const error = yield* startError({ ...valid, overrun })
        assert.strictEqual(error._tag, "InvalidOverrunPolicy")
        assert.include(error.message, message)
      }
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a bad name, handler, unknown option or non-object options is InvalidTimerOptions naming it", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [{ ...valid, name: "" }, "name", 'must be a non-empty string, got ""'],
        [{ ...valid, name: "   " }, "name", "must be a non-empty string"],
        [{ ...valid, name: 7 }, "name", "got 7"],
        [{ ...valid, handler: undefined }, "handler", "must be a function (tick, context) => Effect, got undefined"],
        [{ ...valid, handler: Effect.void }, "handler", "got an Effect"],
        [{ ...valid, overun: OverrunPolicy.DelayNextTick }, "overun", "is not a Spot timer option"],
        [undefined, "options", "must be an object with name, period and handler, got undefined"],
        ["t", "options", 'got "t"']
      ]
      for (const [options, option, reason] of cases) {
        const error = yield* startError(options)
        assert.strictEqual(error._tag, "InvalidTimerOptions")
        assert.strictEqual(error.option, option)
        assert.include(error.message, `invalid timer option ${option} for Spot /user/config: `)
        assert.include(error.message, reason)
      }
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("spawn options it cannot use are InvalidSpotOptions and start nothing", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [undefined, "options", "must be an object such as { initialState: 0 }, got undefined"],
        [null, "options", "got null"],
        [{}, "initialState", "is required"],
        [
          { initialState: 0, onstart: () => Effect.void },
          "onstart",
          "is not a Spot option (initialState, onStart, onStop)"
        ],
        [{ initialState: 0, onStart: Effect.void }, "onStart", "must be a function returning an Effect, got an Effect"],
        [{ initialState: 0, onStop: "log" }, "onStop", 'got "log"']
      ]
      for (const [options, option, reason] of cases) {
        const error = yield* Effect.flip(Spot.spawn(options as Spot.Options<number>, "bad"))
        assert.strictEqual(error._tag, "InvalidSpotOptions")
        assert.strictEqual((error as Spot.InvalidSpotOptions).option, option)
        assert.include(error.message, `invalid Spot option ${option}: `)
        assert.include(error.message, reason)
      }
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).actors, 0, "no Spot was started")
      // an explicit undefined state is fine
      const spot = yield* Spot.spawn({ initialState: undefined }, "fine")
      assert.isUndefined(yield* spot.run((ctx) => ctx.state))
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("one Spot per name and system", () => {
  it.effect("a second Spot under a name in use is ActorNameTaken; the first one keeps answering", () =>
    Effect.gen(function* () {
      const first = yield* Spot.spawn({ initialState: 1 }, "config")
      const taken = yield* Effect.flip(Spot.spawn({ initialState: 2 }, "config"))
      assert.strictEqual(taken._tag, "ActorNameTaken")
      assert.strictEqual(yield* first.run((ctx) => ctx.state), 1)
    }).pipe(Effect.provide(SystemLive))
  )
})
