import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Schedule, TestClock, type Tracer } from "effect"
import { Actor, ActorSystem, Schedules, Spot } from "tickwork"
import { systemOf } from "../src/internal/actorSystem.js"
import { type RecordedSpan, recordingTracer } from "./recordingTracer.js"

const traced = (tracer: Tracer.Tracer, options: Partial<ActorSystem.Options> = {}) =>
  Schedules.layer.pipe(
    Layer.provideMerge(ActorSystem.layer({ name: "traced", ...options })),
    Layer.provide(Layer.setTracer(tracer))
  )

type Tick = "tick"

describe("spans", () => {
  it.effect("a handled tick runs in a root span of its own, with tickwork's attributes; no parent leaks", () => {
    const { tracer, named } = recordingTracer()
    return Effect.gen(function* () {
      const Beat = Actor.make<Tick>()({ receive: () => Effect.void })
      const ref = yield* ActorSystem.spawn(Beat, "beat")
      const system = yield* ActorSystem.ActorSystem
      // armed inside a span of the caller's: the tick must not become its child
      yield* Effect.withSpan(system.scheduler.scheduleAtFixedRate("100 millis", "100 millis", ref, "tick"), "arming")
      yield* TestClock.adjust("250 millis")
      const spans = named("tickwork.scheduler_message")
      assert.strictEqual(spans.length, 2)
      const [first] = spans
      assert.isTrue(Option.isNone(first!.parent), "a root span")
      assert.deepStrictEqual(Object.fromEntries(first!.attributes), {
        "tickwork.system": "traced",
        "tickwork.timer.kind": "scheduler_message",
        "tickwork.owner": "/user/beat",
        "tickwork.timer.scheduled": 100,
        "tickwork.timer.lateness_ms": 0
      })
      assert.deepStrictEqual(first!.links, [], "no link unless asked for")
      assert.isTrue(first!.exit !== undefined && Exit.isSuccess(first!.exit), "ended with the handler")
      assert.strictEqual(systemOf(system)!.tracing.enabled, true)
    }).pipe(Effect.provide(traced(tracer)))
  })

  it.effect("linkToArming links each span to the span that armed its timer, as a link, never a parent", () => {
    const { tracer, named } = recordingTracer()
    return Effect.gen(function* () {
      const Armed = Actor.make<Tick>()({
        preStart: (ctx) =>
          Effect.withSpan(Effect.orDie(ctx.timers.startSingleTimer("once", "tick", "50 millis")), "preStart arming"),
        receive: () => Effect.void
      })
      yield* ActorSystem.spawn(Armed, "armed")
      yield* TestClock.adjust("100 millis")
      const [span] = named("tickwork.actor_timer")
      assert.isDefined(span)
      assert.isTrue(Option.isNone(span!.parent))
      assert.strictEqual(span!.attributes.get("tickwork.timer.key"), "once")
      assert.strictEqual(span!.links.length, 1)
      assert.strictEqual((span!.links[0]!.span as RecordedSpan).name, "preStart arming")
    }).pipe(Effect.provide(traced(tracer, { tracing: { linkToArming: true } })))
  })

  it.effect("a function task's span ends with its failure; a schedule's run counts its attempts", () => {
    const { tracer, named } = recordingTracer()
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      yield* system.scheduler.scheduleOnceFunction("10 millis", Effect.fail("boom"))
      const schedules = yield* Schedules.Schedules
      yield* schedules.create("flaky", Schedules.every("1 second"), Schedules.run(Effect.fail("down")), {
        retry: Schedule.recurs(2)
      })
      yield* TestClock.adjust("1 second")
      const [task] = named("tickwork.scheduler_function")
      assert.isTrue(task!.exit !== undefined && Exit.isFailure(task!.exit))
      assert.isTrue(Option.isNone(task!.parent))
      const [run] = named("tickwork.schedule")
      assert.strictEqual(run!.attributes.get("tickwork.timer.key"), "flaky")
      assert.strictEqual(run!.attributes.get("tickwork.schedule.attempts"), 3)
      assert.strictEqual(run!.attributes.get("tickwork.schedule.trigger"), "schedule")
      assert.strictEqual(run!.attributes.get("tickwork.timer.scheduled"), 1000)
      assert.isTrue(run!.exit !== undefined && Exit.isFailure(run!.exit))
    }).pipe(Effect.provide(traced(tracer)))
  })

  it.effect("dropped ticks make no span: they are counted on the next handled tick's span", () => {
    const { tracer, named, spans } = recordingTracer()
    return Effect.gen(function* () {
      const Slow = Actor.make<Tick>()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("fast", "tick", "10 millis")),
        receive: () => Effect.sleep("35 millis")
      }).pipe(Actor.withMailboxCapacity(1))
      yield* ActorSystem.spawn(Slow, "slow")
      yield* TestClock.adjust("100 millis")
      const ticks = named("tickwork.actor_timer")
      const dropped = ticks.map((span) => span.attributes.get("tickwork.timer.dropped") ?? 0) as Array<number>
      assert.isAbove(
        dropped.reduce((a, b) => a + b, 0),
        0
      )
      assert.strictEqual(spans.length, ticks.length, "no span of their own")
    }).pipe(Effect.provide(traced(tracer)))
  })

  it.effect("a Spot's ticks get spans through the same path", () => {
    const { tracer, named } = recordingTracer()
    return Effect.gen(function* () {
      yield* Spot.spawn<number>(
        {
          initialState: 0,
          onStart: (ctx) =>
            Effect.orDie(ctx.timers.start({ name: "round", period: "100 millis", handler: () => Effect.void }))
        },
        "room"
      )
      yield* TestClock.adjust("250 millis")
      const spans = named("tickwork.spot_timer")
      assert.strictEqual(spans.length, 2)
      assert.strictEqual(spans[0]!.attributes.get("tickwork.owner"), "/user/room")
    }).pipe(Effect.provide(traced(tracer)))
  })

  it.effect("no tracer installed (Effect's default): the system makes no span; spans: never turns them off", () => {
    const { tracer, spans } = recordingTracer()
    return Effect.gen(function* () {
      const plain = yield* Effect.provide(
        Effect.map(ActorSystem.ActorSystem, (system) => systemOf(system)!.tracing.enabled),
        ActorSystem.layer({ name: "plain" })
      )
      assert.isFalse(plain)
      yield* Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        assert.isFalse(systemOf(system)!.tracing.enabled)
        const Beat = Actor.make<Tick>()({ receive: () => Effect.void })
        const ref = yield* ActorSystem.spawn(Beat, "beat")
        yield* system.scheduler.scheduleOnce("10 millis", ref, "tick")
        yield* TestClock.adjust("20 millis")
      }).pipe(Effect.provide(traced(tracer, { tracing: { spans: "never" } })))
      assert.deepStrictEqual(
        spans.filter((span) => span.name.startsWith("tickwork.")),
        []
      )
    })
  })
})
