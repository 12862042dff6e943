import { assert, describe, it, makeMethods } from "@effect/vitest"
import { Cause, Effect, Exit, Random, TestClock } from "effect"
import { Actor, ActorSystem, Entity, Grain, Grains, GrainTimers, OverrunPolicy, Schedules, Spot } from "tickwork"
import { TestProbe, TestSystem } from "tickwork/testkit"
import { vi } from "vitest"

/**
 * Runs `body` as `it.effect` runs a test, through @effect/vitest's own runner (its `TestContext`, its `Cause` to error
 * step), and gives back what that runner throws: the error vitest prints for a failing test.
 */
const thrownByItEffect = (body: () => Effect.Effect<void, unknown>) =>
  Effect.promise(() => {
    let test: ((context: undefined) => Promise<unknown>) | undefined
    const register = (_name: string, _options: unknown, fn: (context: undefined) => Promise<unknown>) => {
      test = fn
    }
    makeMethods(register as never).effect("captured", body)
    return test!(undefined).then(
      () => undefined,
      (error: unknown) => error
    )
  })

/** The message of the defect `effect` dies with. */
const defectOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "expected the effect to fail")
    const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    return defect instanceof Error ? defect.message : String(defect)
  })

const Ticker = Actor.make<"tick" | "stop-beat">()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "tick", "1 second")),
  receive: (msg, ctx) => (msg === "stop-beat" ? Effect.asVoid(ctx.timers.cancel("beat")) : Effect.void)
})

const Device = Grain.make<"poll" | "report">()({
  name: "device",
  onActivate: () => Effect.succeed({ polls: 0 }),
  onReceive: (ctx, state) =>
    ctx.message === "poll"
      ? Effect.succeed({ polls: state.polls + 1 })
      : Effect.as(Effect.orDie(ctx.schedule("poll", "10 seconds", GrainTimers.withTimerReference("poll"))), state)
})

type PlayerCmd = { readonly _tag: "Hit" } | { readonly _tag: "Regen" }
interface PlayerModel {
  readonly hp: number
}
const Player = Entity.make<PlayerModel, PlayerCmd>()({
  name: "Player",
  initialize: () => Effect.succeed({ hp: 10 }),
  commands: {
    Hit: (_cmd, model, ctx) =>
      Effect.as(Effect.orDie(ctx.scheduleExecuteOnActorContext("5 seconds", Effect.void)), { hp: model.hp - 1 }),
    Regen: (_cmd, model) => Effect.succeed({ hp: model.hp + 1 })
  }
})

describe("TestSystem.layer", () => {
  it.effect("one line gives a system, grains and schedules on TestClock, with a seeded Random", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      yield* Grains.Grains
      yield* Schedules.Schedules
      assert.strictEqual(system.name, "test")
      const probe = yield* TestProbe.make<string>()
      yield* system.scheduler.scheduleOnce("1 second", probe.ref, "ping")
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* probe.expectReceived).at, 1000)
      const drawn = yield* Random.nextInt
      const expected = yield* Effect.withRandom(Random.nextInt, Random.make("tickwork"))
      assert.strictEqual(drawn, expected, "the test sees the seeded Random")
    }).pipe(Effect.provide(TestSystem.layer({ grains: [Device] })))
  )

  it.effect("a bad option fails the layer with the system's typed error", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.provide(ActorSystem.ActorSystem, TestSystem.layer({ name: "bad name!" })))
      assert.strictEqual(error._tag, "InvalidActorSystemOptions")
    })
  )
})

describe("TestSystem.inside", () => {
  it.effect("an actor: its context, in mailbox order; a failure is the caller's", () =>
    Effect.gen(function* () {
      const ref = yield* ActorSystem.spawn(Ticker, "ticker")
      assert.deepStrictEqual(yield* TestSystem.inside(ref, (ctx) => ctx.timers.activeKeys), ["beat"])
      const error = yield* Effect.flip(TestSystem.inside(ref, () => Effect.fail("nope" as const)))
      assert.strictEqual(error, "nope")
      assert.deepStrictEqual(yield* TestSystem.inside(ref, (ctx) => Effect.succeed(ctx.path)), "/user/ticker")
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("a stopped actor and a foreign ref answer with a defect that says so", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const ref = yield* system.spawn(Ticker, "ticker")
      yield* system.stop(ref)
      assert.include(yield* defectOf(TestSystem.inside(ref, () => Effect.void)), "has stopped")
      const probe = yield* TestProbe.make<string>()
      assert.include(yield* defectOf(TestSystem.inside(probe.ref, () => Effect.void)), "is not an actor of this system")
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("a grain: activated if needed, with its props and state", () =>
    Effect.gen(function* () {
      const device = TestSystem.grain(Device, "d-1")
      const state = yield* TestSystem.inside(device, (props, state) => Effect.succeed([props.identity.key, state]))
      assert.deepStrictEqual(state, ["d-1", { polls: 0 }])
      yield* Grains.tell(Device, "d-1", "poll")
      assert.deepStrictEqual(yield* TestSystem.inside(device, (_props, s) => Effect.succeed(s.polls)), 1)
      const unknown = Grain.make<string>()({ name: "unknown", onReceive: () => Effect.void })
      const error = yield* Effect.flip(TestSystem.inside(TestSystem.grain(unknown, "x"), () => Effect.void))
      assert.strictEqual(error._tag, "UnknownGrainKind")
    }).pipe(Effect.provide(TestSystem.layer({ grains: [Device] })))
  )

  it.effect("an entity: woken if it sleeps, with its context and model", () =>
    Effect.gen(function* () {
      const players = yield* TestSystem.entities(Player)
      // typed by the kind's model through the registry: no type argument, no cast
      const p1 = TestSystem.entity(players, "p-1")
      const hp: number = yield* TestSystem.inside(p1, (_ctx, model) => Effect.succeed(model.hp))
      assert.strictEqual(hp, 10)
      const fromContext: PlayerModel = yield* TestSystem.inside(p1, (ctx) => ctx.model)
      assert.deepStrictEqual(fromContext, { hp: 10 })
      yield* players.tell("p-1", { _tag: "Hit" })
      assert.strictEqual(yield* TestSystem.inside(p1, (_ctx, model) => Effect.succeed(model.hp)), 9)
      assert.strictEqual(yield* TestSystem.inside(p1, (ctx) => Effect.succeed(ctx.id)), "p-1")
      assert.include(
        yield* defectOf(TestSystem.inside(TestSystem.entity(players, ""), () => Effect.void)),
        'invalid id "" for entity kind Player'
      )
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("an entity reached through its kind: entities(kind) is started once per system; typed by the kind", () =>
    Effect.gen(function* () {
      const players = yield* TestSystem.entities(Player)
      assert.strictEqual(yield* TestSystem.entities(Player), players, "the same registry, not a second one")
      yield* players.tell("p-1", { _tag: "Hit" })
      const p1 = TestSystem.entity(Player, "p-1")
      const hp: number = yield* TestSystem.inside(p1, (_ctx, model) => Effect.succeed(model.hp))
      assert.strictEqual(hp, 9)
      yield* TestSystem.expectTimer(p1, "one-shot", { mode: "one-shot", dueIn: 5000 })
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* TestSystem.counts(p1)).delivered, 1, "the one-shot, counted for the entity")
      const Stranger = Entity.make<PlayerModel, PlayerCmd>()({
        name: "Stranger",
        initialize: () => Effect.succeed({ hp: 1 }),
        commands: { Hit: (_cmd, model) => Effect.succeed(model), Regen: (_cmd, model) => Effect.succeed(model) }
      })
      assert.include(
        yield* defectOf(TestSystem.inside(TestSystem.entity(Stranger, "s"), () => Effect.void)),
        "entity kind Stranger has no registry in this system: start it with TestSystem.entities(kind)"
      )
      yield* TestSystem.expectNoTimers(TestSystem.entity(Stranger, "s"))
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("entities(kind) refuses a definition it cannot use, with the registry's typed error", () =>
    Effect.gen(function* () {
      const Nameless = Entity.make<PlayerModel, PlayerCmd>()({
        name: "",
        initialize: () => Effect.succeed({ hp: 1 }),
        commands: { Hit: (_cmd, model) => Effect.succeed(model), Regen: (_cmd, model) => Effect.succeed(model) }
      })
      const error = yield* Effect.flip(TestSystem.entities(Nameless))
      assert.strictEqual(error._tag, "InvalidEntityDefinition")
      const again = yield* Effect.flip(TestSystem.entities(Nameless))
      assert.strictEqual(again._tag, "InvalidEntityDefinition", "a kind that failed is not remembered as started")
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("a Spot: its context", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 41 }, "spot")
      assert.strictEqual(yield* TestSystem.inside(spot, (ctx) => Effect.map(ctx.state, (n) => n + 1)), 42)
      yield* spot.stop
      assert.include(yield* defectOf(TestSystem.inside(spot, () => Effect.void)), "Spot /user/spot has stopped")
    }).pipe(Effect.provide(TestSystem.layer()))
  )
})

describe("TestSystem timers and their assertions", () => {
  it.effect("an actor's timers, listed and checked without a message", () =>
    Effect.gen(function* () {
      const ref = yield* ActorSystem.spawn(Ticker, "ticker")
      const [beat] = yield* TestSystem.timers(ref)
      assert.deepStrictEqual(beat, {
        key: "beat",
        kind: "actor_timer",
        mode: "fixed-rate",
        nextDue: 1000,
        intervalMillis: 1000,
        expression: undefined,
        message: "tick",
        paused: false
      })
      // TimerScheduled(key, msg, delay, mode)
      yield* TestSystem.expectTimer(ref, "beat", {
        mode: "fixed-rate",
        dueAt: 1000,
        dueIn: 1000,
        intervalMillis: 1000,
        message: "tick"
      })
      yield* TestClock.adjust("1500 millis")
      yield* TestSystem.expectTimer(ref, "beat", { dueAt: 2000, dueIn: 500 })
      yield* TestSystem.inside(ref, (ctx) => ctx.setReceiveTimeout("5 seconds", "stop-beat"))
      yield* TestSystem.expectTimer(ref, "receive-timeout", { mode: "receive-timeout", message: "stop-beat" })
      yield* TestSystem.inside(ref, (ctx) => ctx.cancelReceiveTimeout)
      yield* ref.tell("stop-beat")
      yield* TestClock.adjust(0)
      yield* TestSystem.expectNoTimer(ref, "beat")
      yield* TestSystem.expectNoTimers(ref)
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("a failing expectation says what differs and lists the owner's timers", () =>
    Effect.gen(function* () {
      const ref = yield* ActorSystem.spawn(Ticker, "ticker")
      const wrongMode = yield* defectOf(TestSystem.expectTimer(ref, "beat", { mode: "fixed-delay", dueAt: 2000 }))
      assert.include(
        wrongMode,
        'expected timer "beat" with mode fixed-delay but it is fixed-rate; due at 2000 but it is 1000'
      )
      assert.include(
        wrongMode,
        'actor /user/ticker holds:\n  - "beat" actor_timer fixed-rate, sends "tick", due at 1000 (in 1000 ms), every 1000 ms'
      )
      assert.include(
        yield* defectOf(TestSystem.expectTimer(ref, "beat", { message: "tock" })),
        'expected timer "beat" with message "tock" but it is "tick"'
      )
      assert.include(yield* defectOf(TestSystem.expectTimer(ref, "other")), 'expected a timer "other"')
      assert.include(yield* defectOf(TestSystem.expectNoTimer(ref, "beat")), 'expected no timer "beat"')
      assert.include(yield* defectOf(TestSystem.expectNoTimers(ref)), "expected no timers; actor /user/ticker holds")
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("a grain's timers (not its passivation check), an entity's, a Spot's and a named schedule's", () =>
    Effect.gen(function* () {
      const device = TestSystem.grain(Device, "d-1")
      yield* TestSystem.expectNoTimers(device) // not active: none, and not activated by looking
      assert.isFalse(yield* Effect.flatMap(Grains.Grains, (g) => g.isActive(Device, "d-1")))
      yield* Grains.tell(Device, "d-1", "report")
      yield* TestClock.adjust(0)
      yield* TestSystem.expectTimer(device, "poll", {
        mode: "interval",
        dueAt: 10_000,
        intervalMillis: 10_000,
        message: "poll"
      })
      assert.strictEqual((yield* TestSystem.timers(device)).length, 1)

      const players = yield* TestSystem.entities(Player)
      const p1 = TestSystem.entity(players, "p-1")
      yield* TestSystem.expectNoTimers(p1)
      yield* players.tell("p-1", { _tag: "Hit" })
      yield* TestClock.adjust(0)
      yield* TestSystem.expectTimer(p1, "one-shot", { mode: "one-shot", dueIn: 5000, message: undefined })
      yield* TestSystem.inside(p1, (ctx) => ctx.startPeriodicTimer("2 seconds", { _tag: "Regen" }))
      const periodic = (yield* TestSystem.timers(p1)).find((timer) => timer.mode === "periodic")
      assert.deepStrictEqual(periodic?.message, { _tag: "Regen" }, "an entity periodic timer's command")

      const spot = yield* Spot.spawn({ initialState: 0 }, "spot")
      yield* spot.run((ctx) =>
        Effect.orDie(
          ctx.timers.start({
            name: "frame",
            period: "50 millis",
            overrun: OverrunPolicy.DelayNextTick,
            handler: () => Effect.void
          })
        )
      )
      yield* TestSystem.expectTimer(spot, "frame", { mode: "DelayNextTick", intervalMillis: 50 })

      const schedules = yield* Schedules.Schedules
      const ref = yield* ActorSystem.spawn(Ticker, "ticker")
      yield* schedules.create("nightly", Schedules.cron("0 0 3 * * ?"), Schedules.send(ref, "tick"))
      yield* schedules.pause("nightly", "maintenance")
      yield* TestSystem.expectTimer(ref, "nightly", { mode: "cron", paused: true, expression: "0 0 3 * * ?" })
    }).pipe(Effect.provide(TestSystem.layer({ grains: [Device] })))
  )
})

describe("TestSystem time", () => {
  it.effect("advanceToNext jumps to the earliest timer of the system and reports what fired", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      yield* system.scheduler.scheduleOnceFunction("3 hours", Effect.void)
      yield* system.scheduler.scheduleOnceFunction("20 seconds", Effect.void)
      const first = yield* TestSystem.advanceToNext
      assert.strictEqual(first.now, 20_000)
      assert.deepStrictEqual(
        first.fired.map((line) => [line.at, line.kind]),
        [[20_000, "scheduler_function"]]
      )
      const second = yield* TestSystem.advanceToNext
      assert.strictEqual(second.now, 3 * 3_600_000, "a far timer (in a window of the engine) is found exactly")
      const idle = yield* TestSystem.advanceToNext
      assert.strictEqual(idle.now, 3 * 3_600_000, "nothing pending: the clock stays")
      assert.strictEqual(idle.fired.length, 0)
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("runUntilIdle runs every timer out; a periodic one makes it die at its bound", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      yield* system.scheduler.scheduleOnce("1 second", probe.ref, "a")
      yield* system.scheduler.scheduleOnce("1 hour", probe.ref, "b")
      const all = yield* TestSystem.runUntilIdle()
      assert.strictEqual(all.fired.length, 2)
      assert.strictEqual(all.now, 3_600_000)
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["a", "b"]
      )
      yield* ActorSystem.spawn(Ticker, "ticker")
      const message = yield* defectOf(TestSystem.runUntilIdle({ maxSteps: 5 }))
      assert.include(message, "runUntilIdle: still 1 timer(s) pending after 5 steps")
      assert.include(message, 'actor_timer "beat" of /user/ticker')
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("fireTimer runs a grain's timer now (Orleans' FireTimer); its schedule does not move", () =>
    Effect.gen(function* () {
      const device = TestSystem.grain(Device, "d-1")
      yield* Grains.tell(Device, "d-1", "report")
      yield* TestSystem.fireTimer(device, "poll")
      yield* TestSystem.fireTimer(device, "poll")
      assert.strictEqual(yield* TestSystem.inside(device, (_props, s) => Effect.succeed(s.polls)), 2)
      yield* TestSystem.expectTimer(device, "poll", { dueAt: 10_000 })
      const error = yield* Effect.flip(TestSystem.fireTimer(device, "nope"))
      assert.strictEqual(error._tag, "ScheduledReferenceNotFound")
    }).pipe(Effect.provide(TestSystem.layer({ grains: [Device] })))
  )
})

describe("TestSystem.counts", () => {
  it.effect("delivered, dropped by reason and stale, per owner and key, for this system only", () =>
    Effect.gen(function* () {
      const Slow = Actor.make<"tick" | "slow-then-cancel">()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "tick", "100 millis")),
        receive: (msg, ctx) =>
          msg === "slow-then-cancel"
            ? Effect.zipRight(Effect.sleep("250 millis"), ctx.timers.cancel("beat"))
            : Effect.void
      })
      const ref = yield* ActorSystem.spawn(Slow, "slow")
      yield* TestClock.adjust("50 millis")
      yield* ref.tell("slow-then-cancel") // busy 50..300: the ticks at 100, 200, 300 queue, then it cancels
      yield* TestClock.adjust("400 millis")
      const ofBeat = yield* TestSystem.counts(ref, "beat")
      assert.deepStrictEqual(ofBeat, {
        delivered: 0,
        dropped: { stale: 3, mailbox_full: 0, owner_stopped: 0, missed: 0 },
        stale: 3
      })
      assert.deepStrictEqual(yield* TestSystem.counts(ref), ofBeat, "every key of the owner")
      assert.strictEqual((yield* TestSystem.timeline()).filter((line) => line.event === "stale").length, 3)
      // a second system in the same process counts nothing of this one's
      const other = yield* Effect.provide(TestSystem.counts(), TestSystem.layer({ name: "other" }))
      assert.strictEqual(other.stale, 0)
      assert.strictEqual((yield* TestSystem.counts()).stale, 3)
    }).pipe(Effect.provide(TestSystem.layer()))
  )
})

describe("the timeline beside a failing test's error", () => {
  it.effect("the last lines, with virtual time, owner, key and reason, are appended to the assertion error", () =>
    Effect.gen(function* () {
      const failing = Effect.gen(function* () {
        yield* ActorSystem.spawn(Ticker, "ticker")
        yield* TestClock.adjust("2 seconds")
        assert.strictEqual(1, 2, "the tick never came")
      }).pipe(Effect.provide(TestSystem.layer({ printLines: 3 })))
      const message = yield* defectOf(failing)
      assert.include(message, "the tick never came")
      assert.include(message, "tickwork timeline (last 3 of")
      assert.include(message, '+2000ms  delivered actor_timer "beat" of /user/ticker')
      assert.include(message, '+2000ms  armed     actor_timer "beat" of /user/ticker (due +3000ms)')
    })
  )

  it.effect("a failing it.effect test: the error @effect/vitest throws (and vitest prints) carries the timeline", () =>
    Effect.gen(function* () {
      const thrown = yield* thrownByItEffect(() =>
        Effect.gen(function* () {
          yield* ActorSystem.spawn(Ticker, "ticker")
          yield* TestClock.adjust("2 seconds")
          assert.strictEqual(1, 2, "the tick never came")
        }).pipe(Effect.provide(TestSystem.layer({ printLines: 3 })))
      )
      assert.instanceOf(thrown, Error)
      const message = (thrown as Error).message
      assert.match(message, /^the tick never came/)
      assert.include(
        message,
        "\n\ntickwork timeline (last 3 of 7 events; virtual time since the system started):\n" +
          '   +2000ms  fired     actor_timer "beat" of /user/ticker\n' +
          '   +2000ms  armed     actor_timer "beat" of /user/ticker (due +3000ms)\n' +
          '   +2000ms  delivered actor_timer "beat" of /user/ticker'
      )
      // a passing test throws nothing and prints nothing
      const passed = yield* thrownByItEffect(() =>
        Effect.asVoid(ActorSystem.spawn(Ticker, "ticker")).pipe(Effect.provide(TestSystem.layer()))
      )
      assert.isUndefined(passed)
    })
  )

  it.effect("a failure that is not an Error (it cannot take the text): the timeline goes to stderr", () =>
    Effect.gen(function* () {
      const printed: Array<string> = []
      const spy = vi.spyOn(console, "error").mockImplementation((text: unknown) => {
        printed.push(String(text))
      })
      const thrown = yield* thrownByItEffect(() =>
        Effect.gen(function* () {
          yield* ActorSystem.spawn(Ticker, "ticker")
          yield* TestClock.adjust("1 second")
          return yield* Effect.fail("out of cheese")
        }).pipe(Effect.provide(TestSystem.layer({ printLines: 1 })))
      ).pipe(Effect.ensuring(Effect.sync(() => spy.mockRestore())))
      assert.strictEqual((thrown as Error).message, "out of cheese")
      assert.deepStrictEqual(printed, [
        "tickwork timeline (last 1 of 4 events; virtual time since the system started):\n" +
          '   +1000ms  delivered actor_timer "beat" of /user/ticker'
      ])
    })
  )

  it.effect("timeline(n) and formatTimeline(n) read it in a passing test", () =>
    Effect.gen(function* () {
      yield* ActorSystem.spawn(Ticker, "ticker")
      yield* TestClock.adjust("1 second")
      const lines = yield* TestSystem.timeline(2)
      assert.deepStrictEqual(
        lines.map((line) => [line.at, line.event, line.key, line.owner, line.due]),
        [
          [1000, "armed", "beat", "/user/ticker", 2000], // a fixed-rate timer re-arms first, then its tick is handled
          [1000, "delivered", "beat", "/user/ticker", undefined]
        ]
      )
      assert.strictEqual(
        yield* TestSystem.formatTimeline(1),
        '   +1000ms  delivered actor_timer "beat" of /user/ticker'
      )
    }).pipe(Effect.provide(TestSystem.layer()))
  )

  it.effect("a passing test prints nothing, and printLines 0 turns it off", () =>
    Effect.gen(function* () {
      const failing = Effect.die(new Error("plain")).pipe(Effect.provide(TestSystem.layer({ printLines: 0 })))
      assert.strictEqual(yield* defectOf(failing), "plain")
      const text = yield* TestSystem.formatTimeline().pipe(Effect.provide(TestSystem.layer()))
      assert.strictEqual(text, "")
    })
  )
})
