import { assert, describe, it } from "@effect/vitest"
import { DateTime, type Duration, Effect, Fiber, Layer, Metric, Option, Random, type Scope, TestClock } from "effect"
import { ActorSystem, Metrics } from "tickwork"
import { TestProbe, TestSystem } from "tickwork/testkit"
import * as Deadline from "../src/Deadline.js"
import * as Entity from "../src/Entity.js"
import * as EntityTimers from "../src/EntityTimers.js"
import * as GameClock from "../src/GameClock.js"
import { systemOf } from "../src/internal/actorSystem.js"
import { type CapturedLog, captureLogs, makeStallClock } from "./utils.js"

const SystemLive = TestSystem.layer({ name: "entity-timers" })

interface Model {
  readonly ticks: number
}

type Ctx = Entity.EntityContext<Model, Cmd>

type Cmd =
  | { readonly _tag: "Tick"; readonly label: string }
  | { readonly _tag: "Slow"; readonly label: string; readonly millis: number }
  | { readonly _tag: "Boom" }

const tick = (label: string): Cmd => ({ _tag: "Tick", label })

/** A kind whose commands report "<id>:<label>" to the probe. */
const makeKind = (
  probe: TestProbe.TestProbe<string>,
  timers: ReadonlyArray<EntityTimersDecl> = [],
  initialize?: (ctx: Ctx) => Effect.Effect<unknown, unknown>
) =>
  Entity.make<Model, Cmd>()({
    name: "Timed",
    initialize: (_id, ctx) =>
      Effect.as(initialize === undefined ? Effect.void : Effect.orDie(initialize(ctx)), { ticks: 0 }),
    commands: {
      Tick: (cmd, model, ctx) => Effect.as(probe.ref.tell(`${ctx.id}:${cmd.label}`), { ticks: model.ticks + 1 }),
      Slow: (cmd, model, ctx) =>
        probe.ref.tell(`${ctx.id}:${cmd.label}`).pipe(Effect.zipRight(Effect.sleep(cmd.millis)), Effect.as(model)),
      Boom: () => Effect.die("boom")
    },
    timers: timers.map((t) => ({
      name: t.name,
      interval: t.interval,
      initialDelay: t.initialDelay,
      run: (model: Model, ctx: Ctx) =>
        probe.ref
          .tell(`${ctx.id}:${t.name}`)
          .pipe(
            Effect.zipRight(t.slowMillis === undefined ? Effect.void : Effect.sleep(t.slowMillis)),
            Effect.as(model)
          )
    }))
  })

interface EntityTimersDecl {
  readonly name: string
  readonly interval: Duration.DurationInput
  readonly initialDelay?: Duration.DurationInput
  readonly slowMillis?: number
}

/** Runs `f` inside entity `id` and returns its result (or fails with its error). */
const inEntity = <A, E>(registry: Entity.EntityRegistry<Cmd>, id: string, f: (ctx: Ctx) => Effect.Effect<A, E>) =>
  TestSystem.inside(TestSystem.entity<Model, Cmd>(registry, id), f)

const arrivals = (probe: TestProbe.TestProbe<string>) =>
  Effect.map(probe.receiveAll, (all) => all.map((r) => `${r.message}@${r.at}`))

const firstArrivals = (probe: TestProbe.TestProbe<string>) =>
  Effect.map(probe.receiveAll, (all) => {
    const first = new Map<string, number>()
    for (const r of all) if (!first.has(r.message)) first.set(r.message, r.at)
    return first
  })

describe("declarative periodic timers", () => {
  it.effect("the first run is randomized within [interval/2, 3·interval/2) and differs between entities", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe, [{ name: "poll", interval: "60 seconds" }]))
      const ids = Array.from({ length: 40 }, (_, i) => `e${i}`)
      // all 40 entities start together, as after a wave of logins
      yield* Effect.forEach(ids, (id) => registry.tell(id, tick("start")), { discard: true })
      yield* TestClock.adjust(0)
      yield* probe.receiveAll
      yield* TestClock.adjust("90 seconds")
      const first = yield* firstArrivals(probe)
      assert.strictEqual(first.size, 40, "every entity polled once within 1.5 intervals")
      for (const at of first.values()) {
        assert.isAtLeast(at, 30_000)
        assert.isBelow(at, 90_000)
      }
      const distinct = new Set(first.values())
      assert.isAtLeast(distinct.size, 38, "start times are spread, not shared")
      const sorted = Array.from(first.values()).sort((a, b) => a - b)
      assert.isBelow(sorted[0]!, 45_000, "some in the first quarter")
      assert.isAtLeast(sorted[sorted.length - 1]!, 75_000, "some in the last quarter")
      // then a fixed grid: each entity's second poll is exactly one interval after its first
      yield* TestClock.adjust("60 seconds")
      const all = yield* probe.receiveAll
      for (const r of all) {
        const at = first.get(r.message)!
        if (at + 60_000 <= 150_000) assert.strictEqual(r.at, at + 60_000)
      }
      assert.strictEqual(all.length, sorted.filter((at) => at + 60_000 <= 150_000).length)
    }).pipe(Effect.scoped, Effect.provide(TestSystem.layer({ name: "entity-timers", seed: "spread" })))
  )

  it.effect("the bounds are exact: U = 0 gives interval/2, U → 1 stays below 3·interval/2", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe, [{ name: "poll", interval: "1 second" }]))
      yield* registry.tell("low", tick("start"))
      yield* TestClock.adjust(0)
      yield* registry.tell("high", tick("start"))
      yield* TestClock.adjust(0)
      yield* probe.receiveAll
      yield* TestClock.adjust("1500 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["low:poll@500", "high:poll@1499", "low:poll@1500"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestSystem.layer({ name: "entity-timers", random: Random.fixed([0, 0.999999]) }))
    )
  )

  it.effect("the same seed gives the same first delays (randomness comes from Effect's Random)", () =>
    Effect.gen(function* () {
      const run = Effect.suspend(() =>
        Effect.gen(function* () {
          const probe = yield* TestProbe.make<string>()
          const registry = yield* Entity.makeRegistry(makeKind(probe, [{ name: "poll", interval: "10 seconds" }]))
          for (const id of ["a", "b", "c", "d"]) {
            yield* registry.tell(id, tick("start"))
            yield* TestClock.adjust(0)
          }
          yield* probe.receiveAll
          yield* TestClock.adjust("15 seconds")
          return yield* arrivals(probe)
        }).pipe(Effect.scoped, Effect.provide(TestSystem.layer({ name: "entity-timers", seed: 42 })))
      )
      const first = yield* run
      const second = yield* Effect.zipRight(TestClock.setTime(0), run)
      assert.strictEqual(first.length, 4)
      assert.deepStrictEqual(first, second)
    })
  )

  it.effect("a fixed initial delay replaces the randomized one; then every interval", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(
        makeKind(probe, [
          { name: "now", interval: 100, initialDelay: 0 },
          { name: "later", interval: 100, initialDelay: 30 }
        ])
      )
      yield* registry.tell("e", tick("start"))
      yield* TestClock.adjust("250 millis")
      assert.deepStrictEqual(yield* arrivals(probe), [
        "e:start@0",
        "e:now@0",
        "e:later@30",
        "e:now@100",
        "e:later@130",
        "e:now@200",
        "e:later@230"
      ])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("a slow handler drops the missed invocations, with one warning that says how many", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      yield* Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const registry = yield* Entity.makeRegistry(
          makeKind(probe, [{ name: "slow", interval: 100, initialDelay: 100, slowMillis: 250 }])
        )
        yield* registry.tell("e", tick("start"))
        yield* TestClock.adjust("1 second")
        // due 100 runs until 350: 200 and 300 are dropped; 400 runs until 650: 500 and 600 dropped; ...
        assert.deepStrictEqual(yield* arrivals(probe), [
          "e:start@0",
          "e:slow@100",
          "e:slow@400",
          "e:slow@700",
          "e:slow@1000"
        ])
      }).pipe(Effect.scoped, Effect.provide(SystemLive), Effect.provide(layer))
      const warnings = logs.filter((l) => l.level === "WARN")
      assert.strictEqual(warnings.length, 3, "one warning per run that follows dropped invocations")
      for (const w of warnings) {
        assert.strictEqual(w.annotations.dropped, 2)
        assert.strictEqual(w.annotations.timer, "slow")
        assert.include(w.message, "dropped 2 missed invocations")
        assert.strictEqual(w.annotations.actor, "/user/Timed:e")
      }
    })
  )

  it.effect("after a paused process the missed invocations are dropped (no burst) and the phase is kept", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      const { clock, stall } = yield* makeStallClock
      const program = Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const registry = yield* Entity.makeRegistry(
          makeKind(probe, [{ name: "poll", interval: 100, initialDelay: 100 }])
        )
        yield* registry.tell("e", tick("start"))
        yield* TestClock.adjust("50 millis")
        yield* stall(380) // the process "pauses" 380 ms: the driver wakes at 480 instead of 100
        yield* TestClock.adjust("50 millis")
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.message),
          ["e:start", "e:poll"],
          "one invocation, not four"
        )
        yield* TestClock.adjust("20 millis") // system time 500: back on the grid (100 + k·100)
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.message),
          ["e:poll"]
        )
      })
      const system = Layer.scopedContext(Effect.withClock(Layer.build(SystemLive), clock))
      yield* program.pipe(Effect.scoped, Effect.provide(system), Effect.provide(layer))
      const warnings = logs.filter((l) => l.level === "WARN")
      assert.strictEqual(warnings.length, 1)
      assert.strictEqual(warnings[0]!.annotations.dropped, 3, "the grid points 200, 300 and 400 were missed")
    })
  )
})

describe("programmatic periodic timers", () => {
  it.effect("startPeriodicTimer(interval, command): the interval is the initial delay", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(
        makeKind(probe, [], (ctx) => ctx.startPeriodicTimer("1 second", tick("t")))
      )
      yield* registry.tell("e", tick("start"))
      yield* TestClock.adjust("3500 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:start@0", "e:t@1000", "e:t@2000", "e:t@3000"])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("startPeriodicTimer(initialDelay, interval, command)", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(
        makeKind(probe, [], (ctx) => ctx.startPeriodicTimer("200 millis", "1 second", tick("t")))
      )
      yield* registry.tell("e", tick("start"))
      yield* TestClock.adjust("2500 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:start@0", "e:t@200", "e:t@1200", "e:t@2200"])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("startRandomizedPeriodicTimer draws the first delay from Random, then keeps the interval", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(
        makeKind(probe, [], (ctx) => ctx.startRandomizedPeriodicTimer("1 second", tick("t")))
      )
      yield* registry.tell("e", tick("start"))
      yield* TestClock.adjust("3 seconds")
      // U = 0.25: 500 + 0.25·1000
      assert.deepStrictEqual(yield* arrivals(probe), ["e:start@0", "e:t@750", "e:t@1750", "e:t@2750"])
    }).pipe(Effect.scoped, Effect.provide(TestSystem.layer({ name: "entity-timers", random: Random.fixed([0.25]) })))
  )

  it.effect("timer commands are handled by the command handlers; the handle cancels the timer", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const handle = yield* inEntity(registry, "e", (ctx) => ctx.startPeriodicTimer(0, 100, tick("t")))
      yield* TestClock.adjust("250 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:t@0", "e:t@100", "e:t@200"])
      const counts = yield* TestSystem.counts(TestSystem.entity(registry, "e"))
      assert.strictEqual(counts.delivered, 3, "counted as the entity's ticks")
      assert.isTrue(yield* handle.cancel)
      assert.isFalse(yield* handle.cancel)
      assert.isTrue(yield* handle.isCancelled)
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* arrivals(probe), [])
      assert.strictEqual((yield* registry.stats).timers, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("bad input is a typed error and arms nothing", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const flip = <A, E>(f: (ctx: Ctx) => Effect.Effect<A, E>) => Effect.flip(inEntity(registry, "e", f))
      const zero = yield* flip((ctx) => ctx.startPeriodicTimer(0, tick("x")))
      assert.strictEqual(zero._tag, "InvalidTimerInterval")
      const negative = yield* flip((ctx) => ctx.startRandomizedPeriodicTimer("-1 second", tick("x")))
      assert.strictEqual(negative._tag, "InvalidTimerInterval")
      const nan = yield* flip((ctx) => ctx.startPeriodicTimer(Number.NaN, tick("x")))
      assert.strictEqual(nan._tag, "InvalidTimerInterval")
      const badDelay = yield* flip((ctx) => ctx.startPeriodicTimer(-5, 100, tick("x")))
      assert.strictEqual(badDelay._tag, "InvalidTimerDelay")
      const badOneShot = yield* flip((ctx) => ctx.scheduleExecuteOnActorContext(-1, Effect.void))
      assert.strictEqual(badOneShot._tag, "InvalidTimerDelay")
      const nanOneShot = yield* flip((ctx) => ctx.scheduleExecuteOnActorContext(Number.NaN, Effect.void))
      assert.strictEqual(nanOneShot._tag, "InvalidTimerDelay")
      const badTime = yield* flip((ctx) => ctx.scheduleExecuteOnActorContextAt(Number.NaN, Effect.void))
      assert.strictEqual(badTime._tag, "InvalidDeadline")
      const infinite = yield* flip((ctx) => ctx.scheduleExecuteOnActorContextAt(Number.POSITIVE_INFINITY, Effect.void))
      assert.strictEqual(infinite._tag, "InvalidDeadline")
      assert.strictEqual((yield* registry.stats).timers, 0)
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )
})

describe("one-shots: scheduleExecuteOnActorContext", () => {
  it.effect("runs the effect once after the delay, on the entity's context, serialized with commands", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      yield* inEntity(registry, "e", (ctx) =>
        ctx.scheduleExecuteOnActorContext(
          "1 second",
          Effect.flatMap(ctx.model, (m) => probe.ref.tell(`once after ${m.ticks} ticks`))
        )
      )
      yield* registry.tell("e", { _tag: "Slow", label: "slow", millis: 1500 }) // 0..1500: the one-shot waits
      yield* registry.tell("e", tick("a")) // queued before the one-shot fired: handled first
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:slow@0", "e:a@1500", "once after 1 ticks@1500"])
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(yield* arrivals(probe), [])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("a time already past (or a zero delay) runs at once", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      yield* TestClock.adjust("5 seconds")
      yield* inEntity(registry, "e", (ctx) =>
        Effect.all([
          ctx.scheduleExecuteOnActorContext(DateTime.unsafeMake(1000), probe.ref.tell("past DateTime")),
          ctx.scheduleExecuteOnActorContextAt(4000, probe.ref.tell("past millis")),
          ctx.scheduleExecuteOnActorContext(Deadline.unsafeMake(5000), probe.ref.tell("deadline now")),
          ctx.scheduleExecuteOnActorContext(0, probe.ref.tell("zero delay"))
        ])
      )
      assert.deepStrictEqual(yield* arrivals(probe), [
        "past DateTime@5000",
        "past millis@5000",
        "deadline now@5000",
        "zero delay@5000"
      ])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("absolute times: DateTime, epoch millis and Deadline", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      yield* inEntity(registry, "e", (ctx) =>
        Effect.all([
          ctx.scheduleExecuteOnActorContext(DateTime.unsafeMake(3000), probe.ref.tell("DateTime")),
          ctx.scheduleExecuteOnActorContextAt(1000, probe.ref.tell("millis")),
          ctx.scheduleExecuteOnActorContext(Deadline.unsafeMake(2000), probe.ref.tell("Deadline"))
        ])
      )
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(yield* arrivals(probe), ["millis@1000", "Deadline@2000", "DateTime@3000"])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("cancellation before start prevents the run; after the start it returns false", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const pending = yield* inEntity(registry, "e", (ctx) =>
        ctx.scheduleExecuteOnActorContext("1 second", probe.ref.tell("never"))
      )
      const ran = yield* inEntity(registry, "e", (ctx) =>
        ctx.scheduleExecuteOnActorContext("100 millis", probe.ref.tell("ran"))
      )
      assert.strictEqual((yield* registry.stats).timers, 2)
      assert.isTrue(yield* pending.cancel)
      assert.isTrue(yield* pending.isCancelled)
      assert.isFalse(yield* pending.cancel, "cancel twice: false")
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(yield* arrivals(probe), ["ran@100"])
      assert.isFalse(yield* ran.cancel, "already started")
      assert.isFalse(yield* ran.isCancelled)
      assert.strictEqual((yield* registry.stats).timers, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("unsafeCancel cancels periodic timers and one-shots at once, as cancel does", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const periodic = yield* inEntity(registry, "e", (ctx) => ctx.startPeriodicTimer(100, 100, tick("t")))
      const oneShot = yield* inEntity(registry, "e", (ctx) =>
        ctx.scheduleExecuteOnActorContext("150 millis", probe.ref.tell("never"))
      )
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:t@100"])
      assert.isTrue(periodic.unsafeCancel())
      assert.isTrue(oneShot.unsafeCancel())
      assert.isFalse(periodic.unsafeCancel(), "cancel twice: false")
      assert.isFalse(oneShot.unsafeCancel(), "cancel twice: false")
      assert.isTrue(yield* periodic.isCancelled)
      assert.isTrue(yield* oneShot.isCancelled)
      assert.strictEqual((yield* registry.stats).timers, 0)
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* arrivals(probe), [])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("the registry counts the timers its entities hold, through cancels, runs, sleep and cancels twice", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const timers = Effect.map(registry.stats, (stats) => stats.timers)
      const a1 = yield* inEntity(registry, "a", (ctx) => ctx.startPeriodicTimer(100, 100, tick("a1")))
      yield* inEntity(registry, "a", (ctx) => ctx.startPeriodicTimer(100, 100, tick("a2")))
      yield* inEntity(registry, "b", (ctx) => ctx.scheduleExecuteOnActorContext("50 millis", probe.ref.tell("b ran")))
      yield* inEntity(registry, "b", (ctx) => ctx.startPeriodicTimer(100, 100, tick("b1")))
      assert.strictEqual(yield* timers, 4)
      assert.isTrue(a1.unsafeCancel())
      assert.isFalse(a1.unsafeCancel())
      assert.strictEqual(yield* timers, 3, "a cancelled timer is no longer held, and only once")
      yield* TestClock.adjust("50 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["b ran@50"])
      assert.strictEqual(yield* timers, 2, "a one-shot that ran is no longer held")
      yield* registry.sleep("a")
      assert.strictEqual(yield* timers, 1, "sleep lets go of the sleeping entity's timers")
      yield* registry.sleep("b")
      assert.strictEqual(yield* timers, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("a one-shot cancelled while it waits in the mailbox never runs", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const handle = yield* inEntity(registry, "e", (ctx) =>
        ctx.scheduleExecuteOnActorContext("100 millis", probe.ref.tell("never"))
      )
      yield* registry.tell("e", { _tag: "Slow", label: "slow", millis: 500 })
      yield* TestClock.adjust("200 millis") // fired at 100, queued behind the slow command
      assert.isTrue(yield* handle.cancel)
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:slow@0"])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("a failing one-shot goes through the entity's supervision", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      let inits = 0
      const registry = yield* Entity.makeRegistry(
        makeKind(probe, [], () =>
          Effect.sync(() => {
            inits++
          })
        )
      )
      yield* inEntity(registry, "e", (ctx) => ctx.scheduleExecuteOnActorContext(10, Effect.fail("boom")))
      yield* TestClock.adjust("10 millis")
      assert.strictEqual(inits, 2, "restarted: initialize ran again")
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )
})

describe("checkDeadline", () => {
  it.effect("due: onDue runs now; ahead: a one-shot re-checks the model at the deadline; undefined: nothing", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      let deadline: Deadline.Deadline | undefined = Deadline.unsafeMake(0)
      const check = inEntity(registry, "e", (ctx) =>
        ctx.checkDeadline({
          deadline: () => deadline,
          onDue: (model) => probe.ref.tell(`due with ${model.ticks} ticks`)
        })
      )
      assert.isTrue(Option.isNone(yield* check))
      assert.deepStrictEqual(yield* arrivals(probe), ["due with 0 ticks@0"])
      deadline = undefined
      assert.isTrue(Option.isNone(yield* check))
      deadline = Deadline.unsafeMake(1_000)
      const armed = yield* check
      assert.isTrue(Option.isSome(armed))
      // the deadline moves later before the one-shot fires: the re-check finds it ahead and arms again
      deadline = Deadline.unsafeMake(3_000)
      yield* TestClock.adjust("1 second")
      yield* registry.tell("e", tick("a"))
      assert.deepStrictEqual(yield* arrivals(probe), ["e:a@1000"])
      assert.strictEqual((yield* registry.stats).timers, 1)
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(yield* arrivals(probe), ["due with 1 ticks@3000"])
      assert.strictEqual((yield* registry.stats).timers, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )
})

describe("drops are always reported", () => {
  const missedCount = Effect.map(Metric.value(Metrics.ticksDropped("missed")), (state) => state.count)

  const warningsIn = (logs: ReadonlyArray<CapturedLog>) =>
    logs.filter((l) => l.level === "WARN" && l.message.includes("missed invocation"))

  /** Runs `body` in a system whose logs are captured; the drop warnings and the drops counted meanwhile. */
  const reported = <A, E>(
    body: (
      logs: ReadonlyArray<CapturedLog>
    ) => Effect.Effect<A, E, ActorSystem.ActorSystem | Scope.Scope | TestSystem.TestSystem>
  ) =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      const before = yield* missedCount
      yield* body(logs).pipe(Effect.scoped, Effect.provide(SystemLive), Effect.provide(layer))
      return { warnings: warningsIn(logs), counted: (yield* missedCount) - before }
    })

  /** Entity "e" with a declarative timer due every 100 ms from 100 whose run takes 250 ms: 200 and 300 are missed. */
  const slowEntity = Effect.gen(function* () {
    const probe = yield* TestProbe.make<string>()
    const registry = yield* Entity.makeRegistry(
      makeKind(probe, [{ name: "slow", interval: 100, initialDelay: 100, slowMillis: 250 }])
    )
    yield* registry.tell("e", tick("start"))
    return { probe, registry }
  })

  it.effect("drops followed by a run: the run reports them, and they are counted as ticksDropped('missed')", () =>
    Effect.gen(function* () {
      const before = yield* missedCount
      const { counted, warnings } = yield* reported((logs) =>
        Effect.gen(function* () {
          const { registry } = yield* slowEntity
          yield* TestClock.adjust("399 millis")
          assert.strictEqual((yield* missedCount) - before, 2, "200 and 300, counted as they were dropped")
          const counts = yield* TestSystem.counts(TestSystem.entity(registry, "e"), "slow")
          assert.deepStrictEqual([counts.delivered, counts.dropped.missed], [1, 2], "and in the system's counts")
          assert.deepStrictEqual(warningsIn(logs), [], "not reported yet: no run since")
          yield* TestClock.adjust("1 millis")
        })
      )
      assert.strictEqual(counted, 2)
      assert.strictEqual(warnings.length, 1, "reported once, by the run of 400")
      assert.include(warnings[0]!.message, 'periodic timer "slow" dropped 2 missed invocations (')
    })
  )

  it.effect("drops not followed by a run are reported when the entity sleeps", () =>
    Effect.gen(function* () {
      const { counted, warnings } = yield* reported(() =>
        Effect.gen(function* () {
          const { probe, registry } = yield* slowEntity
          yield* TestClock.adjust("250 millis") // the run of 100 lasts until 350: 200 is dropped, then 300
          const sleeping = yield* Effect.fork(registry.sleep("e")) // handled after that run, before the next
          yield* TestClock.adjust("100 millis")
          yield* Fiber.join(sleeping)
          assert.isFalse(yield* registry.isAwake("e"))
          assert.deepStrictEqual(
            (yield* probe.receiveAll).map((r) => r.message),
            ["e:start", "e:slow"]
          )
        })
      )
      assert.strictEqual(counted, 2)
      assert.strictEqual(warnings.length, 1, "reported once, at the stop")
      assert.include(
        warnings[0]!.message,
        'periodic timer "slow" dropped 2 missed invocations before its entity stopped'
      )
      assert.strictEqual(warnings[0]!.annotations.dropped, 2)
      assert.strictEqual(warnings[0]!.annotations.timer, "slow")
      assert.strictEqual(warnings[0]!.annotations.actor, "/user/Timed:e")
    })
  )

  it.effect("drops not followed by a run are reported when the timer is cancelled (cancel and unsafeCancel)", () =>
    Effect.gen(function* () {
      const { counted, warnings } = yield* reported(() =>
        Effect.gen(function* () {
          const probe = yield* TestProbe.make<string>()
          const registry = yield* Entity.makeRegistry(makeKind(probe))
          const slow: Cmd = { _tag: "Slow", label: "s", millis: 250 }
          const first = yield* inEntity(registry, "a", (ctx) => ctx.startPeriodicTimer(100, 100, slow))
          const second = yield* inEntity(registry, "b", (ctx) => ctx.startPeriodicTimer(100, 100, slow))
          yield* TestClock.adjust("360 millis") // each ran 100..350 and dropped 200 and 300
          assert.isTrue(yield* first.cancel)
          assert.isTrue(second.unsafeCancel()) // from outside a fiber: logged on a fiber of the registry's
          assert.isFalse(yield* first.cancel, "a second cancel reports nothing")
          yield* TestClock.adjust("1 second")
        })
      )
      assert.strictEqual(counted, 4)
      assert.deepStrictEqual(
        warnings.map((w) => [w.annotations.actor, w.annotations.dropped]),
        [
          ["/user/Timed:a", 2],
          ["/user/Timed:b", 2]
        ]
      )
      for (const w of warnings) assert.include(w.message, "dropped 2 missed invocations before it was cancelled")
    })
  )

  it.effect("the testkit's timeline counts missed invocations per entity and timer", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const timeline = systemOf(system)!.recordTimeline(100)
      yield* slowEntity
      yield* TestClock.adjust("400 millis")
      assert.strictEqual(timeline.countsOf("/user/Timed:e", "slow").missed, 2)
      assert.strictEqual(
        timeline.lines().filter((line) => line.event === "dropped" && line.detail === "missed").length,
        2
      )
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("drops not followed by a run are reported when the entity restarts after a failure", () =>
    Effect.gen(function* () {
      const { warnings } = yield* reported(() =>
        Effect.gen(function* () {
          const { registry } = yield* slowEntity
          yield* TestClock.adjust("250 millis")
          yield* registry.tell("e", { _tag: "Boom" }) // handled at 350, before the run of 400: a restart
          yield* TestClock.adjust("100 millis")
        })
      )
      assert.isAtLeast(warnings.length, 1)
      assert.include(
        warnings[0]!.message,
        'periodic timer "slow" dropped 2 missed invocations before its entity stopped'
      )
    })
  )
})

describe("bad input", () => {
  /** A registry of the test kind, and `flip(f)`: the error of `f` run inside entity "e". */
  const setup = Effect.gen(function* () {
    const probe = yield* TestProbe.make<string>()
    const registry = yield* Entity.makeRegistry(makeKind(probe))
    const flip = <A, E>(f: (ctx: Ctx) => Effect.Effect<A, E>) => Effect.flip(inEntity(registry, "e", f))
    return { probe, registry, flip }
  })

  it.effect("intervals below the engine's 1 ms resolution are InvalidTimerInterval for every periodic timer", () =>
    Effect.gen(function* () {
      const { flip, probe, registry } = yield* setup
      const cases = [
        flip((ctx) => ctx.startPeriodicTimer(0.001, tick("x"))),
        flip((ctx) => ctx.startPeriodicTimer(0, 0.5, tick("x"))),
        flip((ctx) => ctx.startRandomizedPeriodicTimer(0.001, tick("x"))),
        flip((ctx) => ctx.startRandomizedPeriodicTimer("999 micros", tick("x"))),
        Effect.flip(Entity.makeRegistry(makeKind(probe, [{ name: "fast", interval: 0.001 }]))),
        Effect.flip(Entity.makeRegistry(makeKind(probe, [{ name: "fast", interval: 0.5, initialDelay: 0 }])))
      ]
      for (const attempt of cases) {
        const error = yield* attempt
        assert.strictEqual(error._tag, "InvalidTimerInterval")
        assert.include(error.message, "must be at least 1 ms, the timer engine's resolution")
      }
      assert.strictEqual((yield* registry.stats).timers, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("at the 1 ms minimum the randomized first delay stays within [1, 2) ms: never 0", () =>
    Effect.gen(function* () {
      const { probe, registry } = yield* setup
      for (const id of ["low", "high"]) {
        yield* inEntity(registry, id, (ctx) => ctx.startRandomizedPeriodicTimer(1, tick("t")))
      }
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(yield* arrivals(probe), [], "nothing at 0 ms")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* arrivals(probe), ["low:t@1", "high:t@1"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestSystem.layer({ name: "entity-timers", random: Random.fixed([0, 0.999999]) }))
    )
  )

  it.effect("a periodic timer whose command has no handler is InvalidCommand (it used to fail at every tick)", () =>
    Effect.gen(function* () {
      const { flip, registry } = yield* setup
      const periodic = yield* flip((ctx) => ctx.startPeriodicTimer("1 second", { _tag: "Tock" } as unknown as Cmd))
      assert.strictEqual(periodic._tag, "InvalidCommand")
      assert.include(periodic.message, 'invalid command "Tock" for entity kind Timed: the kind has no handler for it')
      const randomized = yield* flip((ctx) => ctx.startRandomizedPeriodicTimer("1 second", undefined as unknown as Cmd))
      assert.strictEqual(randomized._tag, "InvalidCommand")
      assert.include(randomized.message, "a command must be an object with a string _tag")
      assert.strictEqual((yield* registry.stats).timers, 0)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect(
    "a one-shot whose effect is not an Effect is InvalidTimerTarget; a string or object delay InvalidTimerDelay",
    () =>
      Effect.gen(function* () {
        const { flip, registry } = yield* setup
        const notAnEffect = () => Effect.void
        const relative = yield* flip((ctx) => ctx.scheduleExecuteOnActorContext(10, notAnEffect as never))
        assert.strictEqual(relative._tag, "InvalidTimerTarget")
        assert.include(relative.message, "invalid timer target a function: the task must be an Effect")
        const absolute = yield* flip((ctx) => ctx.scheduleExecuteOnActorContextAt(10, Promise.resolve() as never))
        assert.strictEqual(absolute._tag, "InvalidTimerTarget")
        for (const at of ["soon", {}]) {
          const error = yield* flip((ctx) =>
            ctx.scheduleExecuteOnActorContext(at as Duration.DurationInput, Effect.void)
          )
          assert.strictEqual(error._tag, "InvalidTimerDelay")
          assert.include(error.message, "is not a duration")
        }
        assert.strictEqual((yield* registry.stats).timers, 0)
      }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("checkDeadline: a deadline that is not a usable time is InvalidDeadline; epoch millis are a time", () =>
    Effect.gen(function* () {
      const { probe, registry } = yield* setup
      const check = (value: unknown) =>
        inEntity(registry, "e", (ctx) =>
          ctx.checkDeadline({ deadline: () => value as Deadline.Deadline, onDue: () => probe.ref.tell("due") })
        )
      for (const [value, reason] of [
        ["tomorrow", '"tomorrow" is not a DateTime, a Deadline or epoch millis'],
        [Number.NaN, "is not a time"],
        [2 ** 60, "is outside the range a DateTime can represent"]
      ] as const) {
        const error = yield* Effect.flip(check(value))
        assert.strictEqual(error._tag, "InvalidDeadline")
        assert.include(error.message, reason)
      }
      assert.strictEqual((yield* registry.stats).timers, 0, "no one-shot armed at NaN")
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 0)
      // epoch millis in the model work as a deadline
      assert.isTrue(Option.isSome(yield* check(500)))
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["due@500"])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("pollDeadline: a deadline that is not a usable time fails the run (supervision), never 'not due'", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      const probe = yield* TestProbe.make<string>()
      yield* Effect.gen(function* () {
        // two kinds: one definition per kind name and system
        const kind = (name: string, deadline: unknown) =>
          Entity.make<Model, Cmd>()({
            name,
            initialize: () => Effect.succeed({ ticks: 0 }),
            commands: {
              Tick: (_cmd, model) => Effect.succeed(model),
              Slow: (_cmd, model) => Effect.succeed(model),
              Boom: (_cmd, model) => Effect.succeed(model)
            },
            timers: [
              EntityTimers.pollDeadline<Model, Cmd>({
                name: "poll",
                interval: 100,
                initialDelay: 100,
                deadline: () => deadline as Deadline.Deadline,
                onDue: (_model, ctx) => probe.ref.tell(`${ctx.id}:due`)
              })
            ]
          })
        const good = yield* Entity.makeRegistry(kind("Poller", 150))
        yield* good.tell("millis", tick("start"))
        const bad = yield* Entity.makeRegistry(kind("BadPoller", "soon"))
        yield* bad.tell("garbage", tick("start"))
        yield* TestClock.adjust("250 millis")
        assert.deepStrictEqual(yield* arrivals(probe), ["millis:due@200"])
      }).pipe(Effect.scoped, Effect.provide(SystemLive), Effect.provide(layer))
      const failed = logs.filter((l) => l.level === "ERROR" && l.annotations.actor === "/user/BadPoller:garbage")
      assert.isAtLeast(failed.length, 1, "the failing poll reached supervision")
    })
  )
})

describe("game clock", () => {
  const Live = Layer.merge(SystemLive, GameClock.layer)

  it.effect("a time skip past an absolute one-shot's deadline fires it promptly", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      yield* inEntity(registry, "e", (ctx) =>
        Effect.all([
          ctx.scheduleExecuteOnActorContextAt(DateTime.unsafeMake("1970-01-01T01:00:00Z"), probe.ref.tell("1h")),
          ctx.scheduleExecuteOnActorContextAt(2 * 3_600_000, probe.ref.tell("2h")),
          ctx.scheduleExecuteOnActorContext("90 minutes", probe.ref.tell("relative 90m"))
        ])
      )
      yield* TestClock.adjust("1 second")
      yield* GameClock.skip("1 hour") // game time 01:00:01: the 1h one-shot is overdue
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(yield* arrivals(probe), ["1h@1000"])
      yield* GameClock.skip("59 minutes") // game time 01:59:01: the 2h one-shot is 59 s away (real time)
      yield* TestClock.adjust("58 seconds")
      assert.deepStrictEqual(yield* arrivals(probe), [])
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* arrivals(probe), ["2h@60000"])
      // a relative delay is real time: a skip does not move it
      yield* TestClock.adjust("88 minutes")
      assert.deepStrictEqual(yield* arrivals(probe), [])
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* arrivals(probe), ["relative 90m@5400000"])
      assert.strictEqual((yield* registry.stats).timers, 0)
    }).pipe(Effect.scoped, Effect.provide(Live))
  )

  it.effect("the entity reads game time; an absolute time already past after a skip runs at once", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      yield* GameClock.skip("1 day")
      const now = yield* inEntity(registry, "e", (ctx) => ctx.currentTimeMillis)
      assert.strictEqual(now, 86_400_000)
      const utc = yield* inEntity(registry, "e", (ctx) => ctx.now)
      assert.strictEqual(DateTime.formatIso(utc), "1970-01-02T00:00:00.000Z")
      yield* inEntity(registry, "e", (ctx) => ctx.scheduleExecuteOnActorContextAt(3_600_000, probe.ref.tell("past")))
      assert.deepStrictEqual(yield* arrivals(probe), ["past@0"])
    }).pipe(Effect.scoped, Effect.provide(Live))
  )

  it.effect("skipping never touches periodic timers (real time): no drop, no extra run", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      yield* Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const registry = yield* Entity.makeRegistry(
          makeKind(probe, [{ name: "poll", interval: 100, initialDelay: 100 }])
        )
        yield* registry.tell("e", tick("start"))
        yield* TestClock.adjust("150 millis")
        yield* GameClock.skip("1 day")
        yield* TestClock.adjust("100 millis")
        assert.deepStrictEqual(yield* arrivals(probe), ["e:start@0", "e:poll@100", "e:poll@200"])
      }).pipe(Effect.scoped, Effect.provide(Live), Effect.provide(layer))
      assert.strictEqual(logs.filter((l) => l.level === "WARN").length, 0)
    })
  )

  it.effect("a cancelled absolute one-shot is not re-armed by a skip", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe))
      const handle = yield* inEntity(registry, "e", (ctx) =>
        ctx.scheduleExecuteOnActorContextAt(60_000, probe.ref.tell("never"))
      )
      assert.isTrue(yield* handle.cancel)
      yield* GameClock.skip("1 hour")
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(yield* arrivals(probe), [])
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 0)
    }).pipe(Effect.scoped, Effect.provide(Live))
  )
})

describe("entity timers and the lifecycle", () => {
  it.effect("timers never wake a sleeping entity: sleep cancels them all", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(
        makeKind(probe, [{ name: "poll", interval: "1 second" }], (ctx) =>
          Effect.all([
            ctx.startPeriodicTimer("1 second", tick("t")),
            ctx.scheduleExecuteOnActorContext("5 seconds", probe.ref.tell("one-shot")),
            ctx.scheduleExecuteOnActorContextAt(10_000, probe.ref.tell("absolute"))
          ])
        )
      )
      yield* registry.tell("e", tick("start"))
      yield* TestClock.adjust(0)
      assert.strictEqual((yield* registry.stats).timers, 4)
      assert.strictEqual((yield* system.stats).engineEntries, 4)
      yield* registry.sleep("e")
      assert.deepStrictEqual(yield* registry.stats, { awake: 0, timers: 0, waiting: 0 })
      const stats = yield* system.stats
      assert.strictEqual(stats.timers, 0)
      assert.strictEqual(stats.engineEntries, 0)
      yield* probe.receiveAll
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* arrivals(probe), [])
      assert.isFalse(yield* registry.isAwake("e"), "nothing woke it")
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("shutdown leaves nothing scheduled", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const stats = yield* Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const registry = yield* Entity.makeRegistry(
          makeKind(probe, [{ name: "poll", interval: "1 second" }], (ctx) =>
            Effect.all([
              ctx.startRandomizedPeriodicTimer("1 second", tick("t")),
              ctx.scheduleExecuteOnActorContextAt(10_000, probe.ref.tell("absolute"))
            ])
          )
        )
        for (const id of ["a", "b", "c"]) yield* registry.tell(id, tick("start"))
        yield* TestClock.adjust("1500 millis")
        assert.strictEqual((yield* system.stats).engineEntries, 9)
        yield* system.shutdown
        return yield* system.stats
      }).pipe(Effect.scoped, Effect.provide(Layer.merge(SystemLive, GameClock.layer)))
      assert.strictEqual(stats.timers, 0)
      assert.strictEqual(stats.engineEntries, 0)
      assert.strictEqual(stats.fibers, 0)
    })
  )

  it.effect("a restart cancels the old incarnation's timers; its queued ticks are stale", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makeKind(probe, [], (ctx) => ctx.startPeriodicTimer(100, tick("t"))))
      yield* registry.tell("e", tick("start"))
      yield* TestClock.adjust("150 millis")
      assert.deepStrictEqual(yield* arrivals(probe), ["e:start@0", "e:t@100"])
      // a command runs 150..250 and then fails; the tick of 200 waits behind it and must not run
      yield* inEntity(registry, "e", () => Effect.void)
      yield* registry.tell("e", { _tag: "Slow", label: "slow", millis: 100 })
      yield* registry.tell("e", { _tag: "Boom" })
      yield* TestClock.adjust("100 millis") // 250: restart; the new incarnation's timer starts at 250
      yield* TestClock.adjust("150 millis") // 400
      assert.deepStrictEqual(yield* arrivals(probe), ["e:slow@150", "e:t@350"])
      assert.strictEqual((yield* registry.stats).timers, 1)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )
})
