import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Schema, TestClock } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"
import { type RecordedSpan, recordingTracer } from "../recordingTracer.js"
import { advance } from "./conformance-helpers.js"

/** True when `span` descends from `ancestor` through its parents. */
const descendsFrom = (span: RecordedSpan, ancestor: RecordedSpan): boolean => {
  let parent = span.parent
  while (Option.isSome(parent)) {
    if (parent.value === ancestor) return true
    parent = parent.value._tag === "Span" ? parent.value.parent : Option.none()
  }
  return false
}

describe("cluster spans", () => {
  it.scoped(
    "each cluster cron instant runs in a root span of its own, with runner, reference, instant and lateness",
    () => {
      const { tracer, named } = recordingTracer()
      return Effect.gen(function* () {
        // registered inside a span of the caller's: its instants must not become its children
        yield* Effect.withSpan(
          ClusterScheduler.scheduleWithCron(
            "*/10 * * * * ?",
            Effect.withSpan(Effect.void, "inside execute"),
            ClusterScheduler.withTimerReference("traced-cron")
          ),
          "registering"
        )
        yield* advance(25)
        const spans = named("tickwork.cluster_cron")
        assert.strictEqual(spans.length, 2)
        const [first, second] = spans
        for (const span of spans) assert.isTrue(Option.isNone(span.parent), "a root span")
        const attributes = Object.fromEntries(first!.attributes)
        const lateness = attributes["tickwork.timer.lateness_ms"] as number
        assert.isAtLeast(lateness, 0)
        assert.isAtMost(lateness, 1_000)
        assert.match(String(attributes["tickwork.runner"]), /^[^:]+:\d+$/)
        assert.deepStrictEqual(attributes, {
          "tickwork.runner": attributes["tickwork.runner"],
          "tickwork.timer.kind": "cluster_cron",
          "tickwork.timer.key": "traced-cron",
          "tickwork.timer.scheduled": 10_000,
          "tickwork.timer.lateness_ms": lateness,
          "tickwork.cron.attempts": 1
        })
        assert.strictEqual(second!.attributes.get("tickwork.timer.scheduled"), 20_000)
        assert.deepStrictEqual(first!.links, [])
        // what execute does is inside the instant's span (through the instant's SQL transaction)
        const inside = named("inside execute")
        assert.strictEqual(inside.length, 2)
        assert.isTrue(descendsFrom(inside[0]!, first!))
        assert.isTrue(descendsFrom(inside[1]!, second!))
        assert.strictEqual(named("registering").length, 1)
      }).pipe(Effect.provide(ClusterRunner.layerTest()), Effect.withTracer(tracer))
    }
  )

  it.scoped("a schedule registered where no tracer is installed makes no instant span", () => {
    const { tracer, named, spans } = recordingTracer()
    return Effect.gen(function* () {
      let runs = 0
      yield* ClusterScheduler.scheduleWithCron(
        "*/10 * * * * ?",
        Effect.sync(() => runs++),
        ClusterScheduler.withTimerReference("untraced-cron")
      ).pipe(Effect.withTracer(Effect.runSync(Effect.tracer)))
      yield* advance(25)
      assert.strictEqual(runs, 2)
      assert.deepStrictEqual(named("tickwork.cluster_cron"), [])
      assert.isAbove(spans.length, 0, "the tracer is installed around the runner, and records its other spans")
    }).pipe(Effect.provide(ClusterRunner.layerTest()), Effect.withTracer(tracer))
  })

  describe("reminders", () => {
    const Msg = Schema.Union(Schema.TaggedStruct("Arm", {}), Schema.TaggedStruct("Fired", {}))
    type Msg = typeof Msg.Type

    const makeKind = (name: string, fired: Array<number> = []) =>
      ClusterGrain.make(
        Grain.make<Msg>()({
          name,
          onReceive: (ctx) =>
            ctx.message._tag === "Arm"
              ? Effect.asVoid(
                  Effect.orDie(
                    Reminders.register(
                      ctx,
                      "ping",
                      { _tag: "Fired" },
                      Reminders.after("1 second", { period: "2 seconds" })
                    )
                  )
                )
              : Effect.sync(() => fired.push(1))
        }),
        { message: Msg }
      )

    const runner = (kind: ClusterGrain.Any, options: Partial<ActorSystem.Options> = {}) =>
      ClusterGrain.layer([kind]).pipe(
        Layer.provideMerge(Reminders.layer()),
        Layer.provideMerge(ActorSystem.layer({ name: "runner", ...options })),
        Layer.provideMerge(ClusterRunner.layerTest())
      )

    /** Arms the reminder from inside a span of the caller's, then lets three occurrences come. */
    const armAndWait = (kind: ClusterGrain.ClusterGrain<Msg, void, unknown, unknown>) =>
      Effect.gen(function* () {
        yield* TestClock.adjust(1)
        const armed = yield* Effect.fork(Effect.withSpan(ClusterGrain.ask(kind, "g", { _tag: "Arm" }), "arming"))
        yield* TestClock.adjust(0)
        yield* Fiber.join(armed)
        yield* advance(6)
      })

    it.scoped("each delivered occurrence runs in a root span of its own, with system, runner, grain and name", () => {
      const { tracer, named } = recordingTracer()
      const kind = makeKind("traced-reminded")
      return Effect.gen(function* () {
        yield* armAndWait(kind)
        const spans = named("tickwork.reminder")
        assert.strictEqual(spans.length, 3)
        const arming = named("arming")[0]!
        for (const span of spans) {
          assert.isTrue(Option.isNone(span.parent), "a root span")
          assert.isFalse(descendsFrom(span, arming))
        }
        const attributes = Object.fromEntries(spans[0]!.attributes)
        const scheduled = attributes["tickwork.timer.scheduled"] as number
        const lateness = attributes["tickwork.timer.lateness_ms"] as number
        assert.strictEqual(scheduled, 1_001)
        assert.isAtLeast(lateness, 0)
        assert.isAtMost(lateness, 1_000)
        assert.strictEqual(typeof attributes["tickwork.reminder.generation"], "string")
        assert.deepStrictEqual(attributes, {
          "tickwork.system": "runner",
          "tickwork.timer.kind": "reminder",
          "tickwork.owner": "traced-reminded/g",
          "tickwork.timer.key": "ping",
          "tickwork.timer.scheduled": scheduled,
          "tickwork.timer.lateness_ms": lateness,
          "tickwork.runner": attributes["tickwork.runner"],
          "tickwork.reminder.generation": attributes["tickwork.reminder.generation"]
        })
        assert.deepStrictEqual(
          spans.map((span) => span.attributes.get("tickwork.timer.scheduled")),
          [1_001, 3_001, 5_001]
        )
      }).pipe(Effect.provide(runner(kind)), Effect.withTracer(tracer))
    })

    it.scoped("an actor system with spans off makes no reminder span, with a tracer installed", () => {
      const { tracer, named } = recordingTracer()
      const fired: Array<number> = []
      const kind = makeKind("untraced-reminded", fired)
      return Effect.gen(function* () {
        yield* armAndWait(kind)
        assert.strictEqual(fired.length, 3, "the occurrences were delivered")
        assert.strictEqual(named("arming").length, 1)
        assert.deepStrictEqual(named("tickwork.reminder"), [])
      }).pipe(Effect.provide(runner(kind, { tracing: { spans: "never" } })), Effect.withTracer(tracer))
    })
  })
})
