import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, TestClock } from "effect"
import { Actor, type ActorRef, ActorSystem, Supervision } from "tickwork"
import { TestProbe } from "tickwork/testkit"

const SystemLive = ActorSystem.layer({ name: "supervision" })

type Msg =
  | { readonly _tag: "Add" }
  | { readonly _tag: "Report" }
  | { readonly _tag: "Fail"; readonly how: "error" | "defect" }
  | { readonly _tag: "SpawnChild"; readonly name: string }

/** Counts "Add"s; reports "count=n" and every hook to the probe. */
const Recorder = (probe: TestProbe.TestProbe<string>, label = "r"): Actor.Actor<Msg, number, string> =>
  Actor.make<Msg>()({
    preStart: () => Effect.as(probe.ref.tell(`${label}:preStart`), 0),
    receive: (msg, ctx, count) => {
      switch (msg._tag) {
        case "Add":
          return Effect.succeed(count + 1)
        case "Report":
          return Effect.as(probe.ref.tell(`${label}:count=${count}`), count)
        case "Fail":
          return msg.how === "error" ? Effect.fail("typed failure") : Effect.die(new Error("defect"))
        case "SpawnChild":
          return Effect.as(Effect.orDie(ctx.spawn(Recorder(probe, msg.name), msg.name)), count)
      }
    },
    postStop: (_ctx, count) => probe.ref.tell(`${label}:postStop(${count})`),
    preRestart: (_ctx, count, cause) =>
      probe.ref.tell(`${label}:preRestart(${count},${Cause.isDie(cause) ? "defect" : "error"})`),
    postRestart: (_ctx, count) => probe.ref.tell(`${label}:postRestart(${count})`)
  })

const messages = (probe: TestProbe.TestProbe<string>) =>
  Effect.map(probe.receiveAll, (all) => all.map((r) => r.message))

/** A parent that spawns one child named "child" with the given strategy and forwards messages to it. */
const Parent = (probe: TestProbe.TestProbe<string>, strategy: Supervision.SupervisorStrategy) =>
  Actor.make<Msg>()({
    preStart: (ctx) =>
      Effect.flatMap(Effect.orDie(ctx.spawn(Recorder(probe, "child"), "child")), (child) =>
        Effect.as(probe.ref.tell("parent:preStart"), child as ActorRef.ActorRef<Msg>)
      ),
    receive: (msg, _ctx, child) => Effect.as(child.tell(msg), child),
    postStop: () => probe.ref.tell("parent:postStop")
  }).pipe(Actor.withSupervisorStrategy(strategy))

describe("Supervision", () => {
  it.effect("restart: preRestart on the old state, fresh state from preStart, postRestart; the mailbox is kept", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const ref = yield* ActorSystem.spawn(Recorder(probe), "r")
      yield* ref.tell({ _tag: "Add" })
      yield* ref.tell({ _tag: "Add" })
      yield* ref.tell({ _tag: "Fail", how: "defect" })
      yield* ref.tell({ _tag: "Add" }) // queued behind the failure: handled by the new incarnation
      yield* ref.tell({ _tag: "Report" })
      assert.deepStrictEqual(yield* messages(probe), [
        "r:preStart",
        "r:preRestart(2,defect)",
        "r:preStart",
        "r:postRestart(0)",
        "r:count=1"
      ])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("typed failures are supervised like defects", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const ref = yield* ActorSystem.spawn(Recorder(probe), "r")
      yield* ref.tell({ _tag: "Fail", how: "error" })
      assert.deepStrictEqual(yield* messages(probe), [
        "r:preStart",
        "r:preRestart(0,error)",
        "r:preStart",
        "r:postRestart(0)"
      ])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("resume keeps the state and drops only the failing message", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const parent = yield* ActorSystem.spawn(Parent(probe, Supervision.resume), "parent")
      yield* parent.tell({ _tag: "Add" })
      yield* parent.tell({ _tag: "Fail", how: "error" })
      yield* parent.tell({ _tag: "Add" })
      yield* parent.tell({ _tag: "Report" })
      const all = yield* messages(probe)
      assert.include(all, "child:count=2")
      assert.notInclude(all.join(" "), "preRestart")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("stop: the child's postStop runs and later messages are dead letters", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const system = yield* ActorSystem.ActorSystem
      const parent = yield* ActorSystem.spawn(Parent(probe, Supervision.stop), "parent")
      yield* parent.tell({ _tag: "Add" })
      yield* parent.tell({ _tag: "Fail", how: "defect" })
      yield* parent.tell({ _tag: "Report" })
      const all = yield* messages(probe)
      assert.include(all, "child:postStop(1)")
      assert.notInclude(all, "child:count=1")
      assert.strictEqual((yield* system.stats).actors, 1)
      assert.strictEqual((yield* system.stats).deadLetters, 1)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("restart limits: past maxRestarts within the window the child is stopped", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const strategy = Supervision.restart({ maxRestarts: 2, within: "1 minute" })
      const parent = yield* ActorSystem.spawn(Parent(probe, strategy), "parent")
      for (let i = 0; i < 2; i++) yield* parent.tell({ _tag: "Fail", how: "defect" })
      assert.strictEqual((yield* messages(probe)).filter((m) => m === "child:postRestart(0)").length, 2)
      yield* parent.tell({ _tag: "Fail", how: "defect" })
      assert.include(yield* messages(probe), "child:postStop(0)")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("restart limits count only failures inside the window", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const strategy = Supervision.restart({ maxRestarts: 1, within: "1 second" })
      const parent = yield* ActorSystem.spawn(Parent(probe, strategy), "parent")
      yield* parent.tell({ _tag: "Fail", how: "defect" })
      yield* TestClock.adjust("1 second")
      yield* parent.tell({ _tag: "Fail", how: "defect" }) // the first restart is out of the window
      yield* parent.tell({ _tag: "Report" })
      const all = yield* messages(probe)
      assert.strictEqual(all.filter((m) => m === "child:postRestart(0)").length, 2)
      assert.include(all, "child:count=0")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a decider chooses by cause", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const strategy = Supervision.decider((cause) => (Cause.isFailType(cause) ? "resume" : "restart"))
      const parent = yield* ActorSystem.spawn(Parent(probe, strategy), "parent")
      yield* parent.tell({ _tag: "Add" })
      yield* parent.tell({ _tag: "Fail", how: "error" })
      yield* parent.tell({ _tag: "Report" })
      assert.include(yield* messages(probe), "child:count=1")
      yield* parent.tell({ _tag: "Fail", how: "defect" })
      yield* parent.tell({ _tag: "Report" })
      assert.include(yield* messages(probe), "child:count=0")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("escalate: the child stops and the parent fails with its cause (the guardian restarts the parent)", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const parent = yield* ActorSystem.spawn(Parent(probe, Supervision.escalate), "parent")
      yield* parent.tell({ _tag: "Add" })
      yield* parent.tell({ _tag: "Fail", how: "defect" })
      const all = yield* messages(probe)
      // the child stops; the parent's default preRestart is its postStop; its new incarnation builds a new child
      assert.deepStrictEqual(all.slice(2), [
        "child:postStop(1)",
        "parent:postStop",
        "parent:preStart",
        "child:preStart"
      ])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a failing preStart stops the actor without postStop", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const Broken = Actor.make<string>()({
        preStart: () => Effect.fail("no config"),
        receive: () => Effect.void,
        postStop: () => probe.ref.tell("postStop")
      })
      const ref = yield* system.spawn(Broken, "broken")
      yield* ref.tell("hello")
      yield* probe.expectNoMessage()
      assert.strictEqual((yield* system.stats).actors, 0)
      assert.strictEqual((yield* system.stats).deadLetters, 1)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("restart stops the children of the failed incarnation", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const ref = yield* ActorSystem.spawn(Recorder(probe, "top"), "top")
      yield* ref.tell({ _tag: "SpawnChild", name: "kid" })
      yield* ref.tell({ _tag: "Fail", how: "defect" })
      const all = yield* messages(probe)
      assert.isBelow(all.indexOf("kid:postStop(0)"), all.indexOf("top:preRestart(0,defect)"))
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("the guardian option 'stop' stops failing top-level actors", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const system = yield* ActorSystem.ActorSystem
      const ref = yield* ActorSystem.spawn(Recorder(probe), "r")
      yield* ref.tell({ _tag: "Fail", how: "defect" })
      assert.deepStrictEqual(yield* messages(probe), ["r:preStart", "r:postStop(0)"])
      assert.strictEqual((yield* system.stats).actors, 0)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "guarded", guardian: "stop" })))
  )

  it.effect("children stop before their parent, when the parent is stopped", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const system = yield* ActorSystem.ActorSystem
      const parent = yield* ActorSystem.spawn(Parent(probe, Supervision.restart()), "parent")
      yield* probe.receiveAll
      yield* system.stop(parent)
      assert.deepStrictEqual(yield* messages(probe), ["child:postStop(0)", "parent:postStop"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a handler that throws instead of returning an effect is supervised like a defect", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      let starts = 0
      const Throwing = Actor.make<string>()({
        preStart: () => {
          starts++
          if (starts === 3) throw new Error("preStart threw")
          return Effect.void
        },
        receive: (msg) => {
          if (msg === "throw") throw new Error("receive threw")
          return probe.ref.tell(msg)
        },
        postStop: () => {
          throw new Error("postStop threw")
        }
      })
      const system = yield* ActorSystem.ActorSystem
      const ref = yield* system.spawn(Throwing, "throwing")
      yield* ref.tell("throw") // restart 1 (preStart #2)
      yield* ref.tell("after")
      yield* probe.expectMessageEquals("after")
      yield* ref.tell("throw") // restart: preStart #3 throws, the actor stops
      yield* TestClock.adjust(0)
      assert.strictEqual(starts, 3)
      assert.strictEqual((yield* system.stats).actors, 0)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("bad strategy limits and capacities fail the spawn with InvalidActorDefinition; nothing throws", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const Plain = Actor.make<string>()({ receive: () => Effect.void })
      const bad: ReadonlyArray<readonly [Actor.Actor<string>, string]> = [
        [Actor.withSupervisorStrategy(Plain, Supervision.restart({ maxRestarts: -1 })), "maxRestarts must be"],
        [Actor.withSupervisorStrategy(Plain, Supervision.restart({ maxRestarts: 1.5 })), "maxRestarts must be"],
        [Actor.withSupervisorStrategy(Plain, Supervision.restart({ maxRestarts: Number.NaN })), "maxRestarts must be"],
        [Actor.withSupervisorStrategy(Plain, Supervision.restart({ within: -1 })), "within must be"],
        [Actor.withSupervisorStrategy(Plain, Supervision.restart({ within: Number.NaN })), "within must be"],
        [Actor.withSupervisorStrategy(Plain, Supervision.restart({ within: "soon" as "1 second" })), "within must be"],
        [Actor.withSupervisorStrategy(Plain, {} as Supervision.SupervisorStrategy), "decide must be a function"],
        [Actor.withMailboxCapacity(Plain, 0), "mailboxCapacity must be"],
        [Actor.withMailboxCapacity(Plain, -1), "mailboxCapacity must be"],
        [Actor.withMailboxCapacity(Plain, 1.5), "mailboxCapacity must be"],
        [
          Actor.make<string>()({ receive: () => Effect.void, mailboxCapacity: "5" as unknown as number }),
          "mailboxCapacity"
        ],
        [{} as Actor.Actor<string>, "is not an actor: make one with Actor.make"],
        [undefined as unknown as Actor.Actor<string>, "undefined is not an actor"],
        [
          Actor.make<string>()({ receive: undefined as unknown as () => Effect.Effect<void> }),
          "receive must be a function"
        ]
      ]
      for (const [actor, reason] of bad) {
        const error = yield* Effect.flip(system.spawn(actor, "bad"))
        assert.strictEqual(error._tag, "InvalidActorDefinition", reason)
        assert.include(error.message, reason)
        assert.include(error.message, 'cannot spawn actor "bad"')
      }
      for (const name of [42, {}, null]) {
        const error = yield* Effect.flip(system.spawn(Plain, name as unknown as string))
        assert.strictEqual(error._tag, "InvalidActorName")
        assert.include(error.message, "must be a string")
      }
      assert.strictEqual((yield* system.stats).actors, 0)
      // the same definitions with good values spawn
      yield* system.spawn(Actor.withSupervisorStrategy(Plain, Supervision.restart({ maxRestarts: 0, within: 1 })), "ok")
      yield* system.spawn(Actor.withMailboxCapacity(Plain, Number.POSITIVE_INFINITY), "unbounded")
      assert.strictEqual((yield* system.stats).actors, 2)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a decider that throws or answers nonsense stops the child, with both causes logged", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      for (const decide of [
        () => {
          throw new Error("decider bug")
        },
        () => "explode" as Supervision.Directive
      ]) {
        // the parent forwards every message to its child
        const Parent = Actor.make<Msg>()({
          preStart: (ctx) => Effect.orDie(ctx.spawn(Recorder(probe, "child"), "child")),
          receive: (msg, _ctx, child) => Effect.as(child.tell(msg), child),
          supervisorStrategy: Supervision.decider(decide)
        })
        const parent = yield* ActorSystem.spawn(Parent)
        yield* probe.expectMessageEquals("child:preStart")
        yield* parent.tell({ _tag: "Fail", how: "defect" })
        yield* probe.expectMessageEquals("child:postStop(0)")
        yield* probe.expectNoMessage("1 second")
      }
    }).pipe(Effect.provide(SystemLive))
  )
})
