import { assert, describe, it } from "@effect/vitest"
import { Cause, Data, Effect, Exit, Schema, TestClock } from "effect"
import { Actor, ActorSystem } from "tickwork"
import { TestProbe, TestSystem, TestTimers } from "tickwork/testkit"

/** The message of the defect `effect` dies with. */
const defectOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "expected the effect to fail")
    const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    return defect instanceof Error ? defect.message : String(defect)
  })

type Event = { readonly _tag: "Started"; readonly id: number } | { readonly _tag: "Tick"; readonly n: number }
const Started = Schema.TaggedStruct("Started", { id: Schema.Number })
const isTick = (e: Event): e is Extract<Event, { _tag: "Tick" }> => e._tag === "Tick"

/** Sends `messages` to the probe at the given times (millis from now). */
const sendAt = <A>(probe: TestProbe.TestProbe<A>, messages: ReadonlyArray<readonly [number, NoInfer<A>]>) =>
  Effect.flatMap(ActorSystem.ActorSystem, (system) =>
    Effect.forEach(messages, ([at, message]) => system.scheduler.scheduleOnce(at, probe.ref, message), {
      discard: true
    })
  )

const SystemLive = TestSystem.layer()

describe("TestProbe expectations by type, Schema and predicate", () => {
  it.effect("expectMessageType with a refinement or a Schema; expectMessageThat with a predicate", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<Event>()
      yield* sendAt(probe, [
        [0, { _tag: "Tick", n: 1 }],
        [0, { _tag: "Started", id: 7 }],
        [0, { _tag: "Tick", n: 2 }]
      ])
      const tick = yield* probe.expectMessageType(isTick)
      assert.strictEqual(tick.n, 1)
      const started = yield* probe.expectMessageType(Started)
      assert.strictEqual(started.id, 7)
      yield* probe.expectMessageThat((e) => e._tag === "Tick" && e.n === 2, "the second tick")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a message of another type fails with what was expected and what came", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<Event>()
      yield* sendAt(probe, [
        [0, { _tag: "Started", id: 1 }],
        [0, { _tag: "Tick", n: 1 }],
        [0, { _tag: "Tick", n: 5 }]
      ])
      assert.include(
        yield* defectOf(probe.expectMessageType(isTick)),
        'expected a message of the type isTick, got {"_tag":"Started","id":1} at 0'
      )
      assert.include(yield* defectOf(probe.expectMessageType(Started)), "expected a message of")
      assert.include(
        yield* defectOf(probe.expectMessageThat((e) => e._tag === "Tick" && e.n > 10, "a big tick")),
        'expected a big tick, got {"_tag":"Tick","n":5}'
      )
      assert.include(yield* defectOf(probe.expectMessage), "none arrived")
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("TestProbe with a time window", () => {
  it.effect("receiveMessage and expectMessageEquals move the clock up to the window", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      yield* sendAt(probe, [[2000, "late"]])
      assert.strictEqual(yield* probe.receiveMessage("5 seconds"), "late")
      assert.strictEqual(yield* TestTimers.now, 2000, "the clock stopped at the arrival, not at the window's end")
      yield* sendAt(probe, [[4000, "too late"]])
      assert.include(yield* defectOf(probe.expectMessageEquals("too late", "3 seconds")), "within 3s, none arrived")
      assert.strictEqual(yield* TestTimers.now, 5000)
      assert.strictEqual(yield* probe.receiveMessage("1 second"), "too late")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("expectMessageEquals and expectMessageAllOf compare by content: plain objects, arrays, Data", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<unknown>()
      yield* sendAt(probe, [
        [0, { _tag: "Beat", n: 1 }],
        [0, [1, { a: "x" }]],
        [0, { _tag: "Beat", n: 2 }],
        [0, Data.struct({ x: 1 })],
        [0, { _tag: "Beat", n: 3 }]
      ])
      yield* probe.expectMessageEquals({ _tag: "Beat", n: 1 })
      yield* probe.expectMessageEquals([1, { a: "x" }])
      yield* probe.expectMessageAllOf([Data.struct({ x: 1 }), { _tag: "Beat", n: 2 }])
      assert.include(
        yield* defectOf(probe.expectMessageEquals({ _tag: "Beat", n: 4 })),
        'expected {"_tag":"Beat","n":4}, got {"_tag":"Beat","n":3}'
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("within(min, max): the block took that much test-clock time, or it fails", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      yield* sendAt(probe, [[2000, "a"]])
      yield* TestProbe.within("2 seconds", "3 seconds", probe.receiveMessage("5 seconds"))
      yield* sendAt(probe, [[500, "b"]])
      assert.include(
        yield* defectOf(TestProbe.within("1 second", "3 seconds", probe.receiveMessage("5 seconds"))),
        "between 1000 and 3000 ms of test-clock time; it took 500 ms"
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("awaitAssert retries until the assertion holds, moving the clock between tries", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      let done = false
      yield* system.scheduler.scheduleOnceFunction(
        "1 second",
        Effect.sync(() => {
          done = true
        })
      )
      yield* TestProbe.awaitAssert(
        Effect.sync(() => assert.isTrue(done, "not yet")),
        "2 seconds"
      )
      assert.strictEqual(yield* TestTimers.now, 1000)
      assert.include(
        yield* defectOf(
          TestProbe.awaitAssert(
            Effect.sync(() => assert.isFalse(done, "still done")),
            "1 second"
          )
        ),
        "still done"
      )
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("TestProbe over several messages", () => {
  it.effect("expectMessageAllOf: any order; a missing or unexpected one is named", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<unknown>()
      yield* sendAt(probe, [
        [0, "b"],
        [10, Data.struct({ x: 1 })],
        [20, "a"]
      ])
      const all = yield* probe.expectMessageAllOf(["a", "b", Data.struct({ x: 1 })], "1 second")
      assert.strictEqual(all.length, 3)
      yield* sendAt(probe, [
        [0, "a"],
        [0, "c"]
      ])
      assert.include(
        yield* defectOf(probe.expectMessageAllOf(["a", "b"])),
        'expected all of ["a","b"] in any order, got ["a","c"]; missing ["b"]; unexpected ["c"]'
      )
      assert.deepStrictEqual(yield* probe.expectMessageAllOf([]), [])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("fishForMessage reads until the fisher completes; fail and an empty window fail the test", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<number>()
      yield* sendAt(probe, [
        [100, 1],
        [200, 2],
        [300, 3],
        [400, 4]
      ])
      const fished = yield* probe.fishForMessage("1 second", (n) => (n === 3 ? "complete" : "continue"))
      assert.deepStrictEqual(fished, [1, 2, 3])
      assert.include(
        yield* defectOf(probe.fishForMessage("1 second", (n) => (n === 4 ? "fail" : "continue"))),
        "the fisher failed on 4"
      )
      yield* sendAt(probe, [[100, 5]])
      assert.include(
        yield* defectOf(probe.fishForMessage("50 millis", () => "complete")),
        "no completing message within 50ms"
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("receiveWhile takes while the predicate holds, up to a count; the first other message stays", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<number>()
      yield* sendAt(probe, [
        [0, 1],
        [100, 2],
        [200, 30],
        [300, 4]
      ])
      assert.deepStrictEqual(yield* probe.receiveWhile((n) => n < 10, { within: "1 second" }), [1, 2])
      assert.strictEqual(yield* probe.expectMessage, 30)
      yield* sendAt(probe, [
        [0, 5],
        [0, 6]
      ])
      // 4 is due at +300 ms, after these two
      assert.deepStrictEqual(yield* probe.receiveWhile(() => true, { messages: 2 }), [5, 6])
      assert.strictEqual(yield* probe.receiveMessage("1 second"), 4)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("ignoreMessages drops what matches as it arrives, until ignoreNoMessages", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      yield* probe.ignoreMessages((m) => m.startsWith("heartbeat"))
      yield* sendAt(probe, [
        [0, "heartbeat 1"],
        [0, "work"],
        [0, "heartbeat 2"]
      ])
      assert.strictEqual(yield* probe.expectMessage, "work")
      yield* probe.expectNoMessage()
      yield* probe.ignoreNoMessages
      yield* sendAt(probe, [[0, "heartbeat 3"]])
      assert.strictEqual(yield* probe.expectMessage, "heartbeat 3")
    }).pipe(Effect.provide(SystemLive))
  )
})

describe("TestProbe.expectTerminated and ManualTime's names", () => {
  it.effect("watches an actor until it stops, moving the clock; one that lives on fails the test", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const SelfStopping = Actor.make<string>()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startSingleTimer("end", "stop", "2 seconds")),
        receive: (_msg, ctx) => ctx.stop(ctx.self)
      })
      const ref = yield* ActorSystem.spawn(SelfStopping, "mortal")
      yield* probe.expectTerminated(ref, "5 seconds")
      assert.strictEqual(yield* TestTimers.now, 2000)
      const Immortal = Actor.make<string>()({ receive: () => Effect.void })
      const other = yield* ActorSystem.spawn(Immortal, "immortal")
      assert.include(
        yield* defectOf(probe.expectTerminated(other, "1 second")),
        "expected /user/immortal to stop within 1s; it is still alive"
      )
      assert.include(yield* defectOf(probe.expectTerminated(probe.ref)), "cannot be watched")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("timePasses moves the clock; expectNoMessageFor checks several probes", () =>
    Effect.gen(function* () {
      const a = yield* TestProbe.make<string>("a")
      const b = yield* TestProbe.make<string>("b")
      yield* sendAt(a, [[3000, "a"]])
      yield* TestTimers.expectNoMessageFor("2999 millis", a, b)
      yield* TestTimers.timePasses("1 millis")
      assert.include(yield* defectOf(TestTimers.expectNoMessageFor("1 second", b, a)), 'expected no message, got "a"')
      yield* TestClock.adjust(0)
    }).pipe(Effect.provide(SystemLive))
  )
})
