import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Actor, type ActorRef, ActorSystem, Entity, Grain, Grains, GrainTimers, Spot } from "tickwork"
import { TestProbe, TestSystem, TestTimers, TimerArbitraries } from "tickwork/testkit"

// ---------------------------------------------------------------- what we test: an actor, a grain, an entity

type Msg = { readonly _tag: "Start"; readonly listener: ActorRef.ActorRef<Event> } | { readonly _tag: "Beat" }
type Event = { readonly _tag: "Beat"; readonly n: number } | { readonly _tag: "Done" }
const Beat = Schema.TaggedStruct("Beat", { n: Schema.Number })

/** Beats every second to its listener, three times, then stops. */
const Heartbeat = Actor.make<Msg>()({
  preStart: () => Effect.succeed({ listener: undefined as ActorRef.ActorRef<Event> | undefined, n: 0 }),
  receive: (msg, ctx, state) => {
    if (msg._tag === "Start") {
      return Effect.as(Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", { _tag: "Beat" }, "1 second")), {
        ...state,
        listener: msg.listener
      })
    }
    const n = state.n + 1
    const told = state.listener?.tell({ _tag: "Beat", n }) ?? Effect.void
    if (n < 3) return Effect.as(told, { ...state, n })
    const done = state.listener?.tell({ _tag: "Done" }) ?? Effect.void
    return Effect.as(Effect.zipRight(Effect.zipRight(told, done), ctx.stop(ctx.self)), { ...state, n })
  }
})

/** Polls every 10 seconds once it is told to report. */
const Device = Grain.make<"poll" | "report">()({
  name: "device",
  onActivate: () => Effect.succeed({ polls: 0 }),
  onReceive: (ctx, state) =>
    ctx.message === "poll"
      ? Effect.succeed({ polls: state.polls + 1 })
      : Effect.as(Effect.orDie(ctx.schedule("poll", "10 seconds", GrainTimers.withTimerReference("poll"))), state)
})

type PlayerCmd = { readonly _tag: "Hit" }
const Player = Entity.make<{ readonly hp: number }, PlayerCmd>()({
  name: "Player",
  initialize: () => Effect.succeed({ hp: 10 }),
  commands: { Hit: (_cmd, model) => Effect.succeed({ hp: model.hp - 1 }) }
})

// ---------------------------------------------------------------- the tests

// One line of wiring: a system with grains on TestClock, a seeded Random, the timeline on.
const TestLive = TestSystem.layer({ grains: [Device] })

describe("with TestSystem", () => {
  it.effect("timers are checked without a message (BehaviorTestKit's TimerScheduled)", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<Event>()
      const heartbeat = yield* ActorSystem.spawn(Heartbeat, "heartbeat")
      yield* TestSystem.expectNoTimers(heartbeat)
      yield* heartbeat.tell({ _tag: "Start", listener: probe.ref })
      yield* TestSystem.expectTimer(heartbeat, "beat", {
        message: { _tag: "Beat" },
        mode: "fixed-rate",
        dueIn: 1000,
        intervalMillis: 1000
      })
      // Akka's expectMessageType, with a Schema; the probe moves the clock up to 2 s for it
      const beat = yield* probe.expectMessageType(Beat, "2 seconds")
      assert.strictEqual(beat.n, 1)
      // Akka's fishForMessage: read until "Done"
      yield* probe.fishForMessage("5 seconds", (e) => (e._tag === "Done" ? "complete" : "continue"))
      yield* probe.expectTerminated(heartbeat)
      yield* TestSystem.expectNoTimers(heartbeat)
    }).pipe(Effect.provide(TestLive))
  )

  it.effect("inside a grain, an entity, a Spot; a grain's timer fired on demand (Orleans' FireTimer)", () =>
    Effect.gen(function* () {
      const device = TestSystem.grain(Device, "d-1")
      yield* Grains.tell(Device, "d-1", "report")
      yield* TestSystem.expectTimer(device, "poll", { mode: "interval", dueAt: 10_000 })
      yield* TestSystem.fireTimer(device, "poll")
      assert.strictEqual(yield* TestSystem.inside(device, (_props, state) => Effect.succeed(state.polls)), 1)

      const players = yield* TestSystem.entities(Player)
      yield* players.tell("p-1", { _tag: "Hit" })
      // an entity by its kind, as a grain: `model` is typed by Player's model
      const hp = yield* TestSystem.inside(TestSystem.entity(Player, "p-1"), (_ctx, model) => Effect.succeed(model.hp))
      assert.strictEqual(hp, 9)

      const lobby = yield* Spot.spawn({ initialState: ["ann"] }, "lobby")
      assert.deepStrictEqual(yield* TestSystem.inside(lobby, (ctx) => ctx.state), ["ann"])
    }).pipe(Effect.provide(TestLive))
  )

  it.effect("time jumps to the next timer (Temporal's time skipping); counts are this system's own", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      yield* system.scheduler.scheduleOnce("3 hours", probe.ref, "nightly")
      const step = yield* TestSystem.advanceToNext
      assert.strictEqual(step.now, 3 * 60 * 60 * 1000)
      assert.strictEqual(step.fired.length, 1)
      yield* probe.expectMessageEquals("nightly")
      assert.strictEqual((yield* TestSystem.counts()).delivered, 1)
      yield* TestTimers.expectNoMessageFor("1 minute", probe) // ManualTime's expectNoMessageFor
    }).pipe(Effect.provide(TestLive))
  )

  it.effect("TimerCancelled, inside an actor, counts per owner and key, the timeline in a passing test", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<Event>()
      const heartbeat = yield* ActorSystem.spawn(Heartbeat, "heartbeat")
      yield* heartbeat.tell({ _tag: "Start", listener: probe.ref })
      // what BehaviorTestKit's run gives: the actor's own context, in its mailbox order (after Start)
      assert.deepStrictEqual(yield* TestSystem.inside(heartbeat, (ctx) => ctx.timers.activeKeys), ["beat"])
      yield* TestTimers.timePasses("3 seconds") // ManualTime's timePasses
      // TimerCancelled: it stopped after three beats, and its timer went with it
      yield* TestSystem.expectNoTimer(heartbeat, "beat")
      const beats = yield* TestSystem.counts(heartbeat, "beat")
      assert.deepStrictEqual([beats.delivered, beats.stale], [3, 0])
      // the timeline a failing test prints beside its error, read in a passing one
      const cancels = (yield* TestSystem.timeline()).filter((line) => line.event === "cancelled" && line.key === "beat")
      assert.deepStrictEqual(
        cancels.map((line) => [line.at, line.owner]),
        [[3000, "/user/heartbeat"]]
      )
    }).pipe(Effect.provide(TestLive))
  )

  it.effect("more of Akka's TestProbe: ignoreMessages, expectMessageAllOf, within, receiveWhile, awaitAssert", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      // Akka's ignoreMsg: the noise every 100 ms is dropped as it arrives
      yield* probe.ignoreMessages((message) => message === "noise")
      yield* system.scheduler.scheduleAtFixedRate("100 millis", "100 millis", probe.ref, "noise")
      yield* system.scheduler.scheduleOnce("1 second", probe.ref, "b")
      yield* system.scheduler.scheduleOnce("1 second", probe.ref, "a")
      // both, in any order; within(min, max): the expectation moved the clock exactly 1 s (it stops once met)
      yield* TestProbe.within("1 second", "1 second", probe.expectMessageAllOf(["a", "b"], "3 seconds"))
      // receiveWhile: the x's, up to the first other message, which stays unread
      yield* system.scheduler.scheduleOnce("100 millis", probe.ref, "x1")
      yield* system.scheduler.scheduleOnce("200 millis", probe.ref, "x2")
      yield* system.scheduler.scheduleOnce("300 millis", probe.ref, "end")
      const xs = yield* probe.receiveWhile((message) => message.startsWith("x"), { within: "1 second" })
      assert.deepStrictEqual(xs, ["x1", "x2"])
      assert.strictEqual(yield* probe.receiveMessage(), "end")
      // awaitAssert: tried again, the clock moving to the next timer between tries, until it holds
      const flushed: Array<number> = []
      yield* system.scheduler.scheduleOnceFunction("2 seconds", TestTimers.now.pipe(Effect.map((t) => flushed.push(t))))
      yield* TestProbe.awaitAssert(
        Effect.sync(() => assert.strictEqual(flushed.length, 1)),
        "5 seconds"
      )
      yield* probe.ignoreNoMessages
    }).pipe(Effect.provide(TestLive))
  )

  // A property test: for any delay fast-check picks, the message arrives exactly once.
  it.effect.prop(
    "a single timer fires once, whatever came before it",
    [TimerArbitraries.duration({ max: 10_000 })],
    ([delay]) =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        yield* system.scheduler.scheduleOnce(delay, probe.ref, "once")
        yield* TestSystem.runUntilIdle()
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.message),
          ["once"]
        )
      }).pipe(Effect.provide(TestSystem.layer())),
    { fastCheck: { numRuns: 10 } }
  )
})
