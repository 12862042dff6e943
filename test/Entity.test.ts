import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Fiber, Layer, TestClock } from "effect"
import { ActorRef, ActorSystem, EventStream } from "tickwork"
import { TestProbe, TestSystem } from "tickwork/testkit"
import * as Entity from "../src/Entity.js"
import { captureLogs } from "./utils.js"

const SystemLive = TestSystem.layer({ name: "entities" })

interface Model {
  readonly incarnation: number
  readonly gold: number
  readonly log: ReadonlyArray<string>
}

type Cmd =
  | { readonly _tag: "AddGold"; readonly amount: number }
  | { readonly _tag: "SlowAdd"; readonly amount: number; readonly millis: number }
  | { readonly _tag: "SleepNow" }
  | { readonly _tag: "SendSelf"; readonly amount: number }
  | { readonly _tag: "Boom" }

/** A player kind that reports its lifecycle to a probe as "<id>:<event>@<incarnation>". */
const makePlayer = (probe: TestProbe.TestProbe<string>, options: { readonly periodic?: boolean } = {}) => {
  const incarnations = new Map<string, number>()
  const note = (id: string, model: Model, event: string) => probe.ref.tell(`${id}:${event}@${model.incarnation}`)
  return Entity.make<Model, Cmd>()({
    name: "Player",
    initialize: (id) =>
      Effect.suspend(() => {
        const incarnation = (incarnations.get(id) ?? 0) + 1
        incarnations.set(id, incarnation)
        const model: Model = { incarnation, gold: 0, log: [] }
        return Effect.as(note(id, model, "initialize"), model)
      }),
    commands: {
      AddGold: (cmd, model) => Effect.succeed({ ...model, gold: model.gold + cmd.amount }),
      SlowAdd: (cmd, model) =>
        Effect.as(Effect.sleep(cmd.millis), { ...model, gold: model.gold + cmd.amount, log: [...model.log, "slow"] }),
      SleepNow: (_cmd, model, ctx) => Effect.as(ctx.sleep, model),
      SendSelf: (cmd, model, ctx) => Effect.as(ctx.send({ _tag: "AddGold", amount: cmd.amount }), model),
      Boom: () => Effect.die("boom")
    },
    onSessionStart: (model, ctx) =>
      Effect.as(note(ctx.id, model, "session"), { ...model, log: [...model.log, "session"] }),
    onShutdown: (model, ctx) => note(ctx.id, model, `shutdown(gold=${model.gold})`),
    timers: options.periodic === true ? [{ name: "poll", interval: "1 minute", run: (m) => Effect.succeed(m) }] : []
  })
}

/** The model of entity `id`, read in its mailbox order (it is woken if it sleeps). */
const getModel = (registry: Entity.EntityRegistry<Cmd>, id: string) =>
  TestSystem.inside(TestSystem.entity<Model, Cmd>(registry, id), (_ctx, model) => Effect.succeed(model))

describe("Entity registry", () => {
  it.effect("routing a message wakes the entity on demand; initialize runs once; commands run in order", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      assert.isFalse(yield* players.isAwake("p1"))
      yield* players.tell("p1", { _tag: "AddGold", amount: 2 })
      yield* players.tell("p1", { _tag: "AddGold", amount: 3 })
      assert.isTrue(yield* players.isAwake("p1"))
      const model = yield* getModel(players, "p1")
      assert.strictEqual(model.gold, 5)
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["p1:initialize@1"]
      )
      assert.strictEqual(players.ref("p1").path, "/user/Player:p1")
      assert.isTrue(Entity.isEntityRegistry(players))
      assert.isFalse(Entity.isEntityRegistry({}))
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("entities are independent; ids with '/' or '$' are fine", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.tell("a/b", { _tag: "AddGold", amount: 1 })
      yield* players.tell("$x", { _tag: "AddGold", amount: 7 })
      assert.strictEqual((yield* getModel(players, "a/b")).gold, 1)
      assert.strictEqual((yield* getModel(players, "$x")).gold, 7)
      assert.strictEqual((yield* players.stats).awake, 2)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("session start is an explicit message and wakes a sleeping entity", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.startSession("p1")
      assert.deepStrictEqual((yield* getModel(players, "p1")).log, ["session"])
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["p1:initialize@1", "p1:session@1"]
      )
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("sleep runs the shutdown hook and stops the actor; the next message wakes a new incarnation", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.tell("p1", { _tag: "AddGold", amount: 5 })
      yield* players.sleep("p1")
      assert.isFalse(yield* players.isAwake("p1"))
      assert.strictEqual((yield* system.stats).actors, 0)
      yield* players.sleep("p1") // a no-op for a sleeping entity
      assert.strictEqual((yield* getModel(players, "p1")).incarnation, 2)
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["p1:initialize@1", "p1:shutdown(gold=5)@1", "p1:initialize@2"]
      )
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("messages routed while the entity goes to sleep wait and wake a new incarnation; nothing is lost", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      const deadLetters = yield* TestProbe.make<EventStream.DeadLetter>()
      const system = yield* ActorSystem.ActorSystem
      yield* system.eventStream.subscribe(deadLetters.ref, EventStream.DeadLetter)
      // a slow command is running when the sleep is asked for; more commands arrive while the entity goes to sleep
      yield* players.tell("p1", { _tag: "SlowAdd", amount: 1, millis: 100 })
      yield* players.tell("p1", { _tag: "AddGold", amount: 10 }) // queued before the sleep: handled by incarnation 1
      const sleeping = yield* Effect.fork(players.sleep("p1"))
      yield* TestClock.adjust(0) // the sleep request is registered; the slow command is running
      yield* players.tell("p1", { _tag: "AddGold", amount: 100 }) // waits for incarnation 2
      yield* players.tell("p1", { _tag: "AddGold", amount: 1000 })
      assert.strictEqual((yield* players.stats).waiting, 2)
      yield* TestClock.adjust("100 millis")
      yield* sleeping
      const model = yield* getModel(players, "p1")
      assert.strictEqual(model.incarnation, 2)
      assert.strictEqual(model.gold, 1100)
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["p1:initialize@1", "p1:shutdown(gold=11)@1", "p1:initialize@2"]
      )
      assert.deepStrictEqual(yield* deadLetters.receiveAll, [])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("an entity can put itself to sleep; what is already queued is handled first", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.tell("p1", { _tag: "SlowAdd", amount: 1, millis: 50 })
      yield* players.tell("p1", { _tag: "SleepNow" })
      yield* players.tell("p1", { _tag: "AddGold", amount: 2 }) // queued before SleepNow runs: incarnation 1
      yield* TestClock.adjust("50 millis")
      assert.isFalse(yield* players.isAwake("p1"))
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["p1:initialize@1", "p1:shutdown(gold=3)@1"]
      )
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("a command an entity sends itself goes to the running actor, never through the registry", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.tell("p1", { _tag: "SendSelf", amount: 4 })
      // the self-sent command is queued behind the read that was already routed
      assert.strictEqual((yield* getModel(players, "p1")).gold, 0)
      assert.strictEqual((yield* getModel(players, "p1")).gold, 4)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("a failing handler restarts the entity (guardian default): initialize runs again", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe, { periodic: true }))
      yield* players.tell("p1", { _tag: "AddGold", amount: 5 })
      yield* players.tell("p1", { _tag: "Boom" })
      const model = yield* getModel(players, "p1")
      assert.strictEqual(model.incarnation, 2)
      assert.strictEqual(model.gold, 0)
      assert.strictEqual((yield* players.stats).timers, 1, "the old incarnation's timer is gone, the new one armed")
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 1)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("with guardian 'stop', a failed entity leaves the registry and the next message wakes it", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.tell("p1", { _tag: "Boom" })
      yield* TestClock.adjust(0)
      assert.isFalse(yield* players.isAwake("p1"))
      assert.strictEqual((yield* getModel(players, "p1")).incarnation, 2)
    }).pipe(Effect.scoped, Effect.provide(TestSystem.layer({ name: "stopping", system: { guardian: "stop" } })))
  )

  it.effect("closing the registry's scope stops every entity (onShutdown runs); the system is left empty", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      yield* Effect.gen(function* () {
        const players = yield* Entity.makeRegistry(makePlayer(probe, { periodic: true }))
        yield* players.tell("p1", { _tag: "AddGold", amount: 1 })
        yield* players.tell("p2", { _tag: "AddGold", amount: 2 })
        yield* TestClock.adjust(0)
        assert.strictEqual((yield* system.stats).engineEntries, 2)
        assert.strictEqual((yield* system.stats).timers, 2, "entity timers count in the system's stats")
      }).pipe(Effect.scoped)
      const stats = yield* system.stats
      assert.strictEqual(stats.actors, 0)
      assert.strictEqual(stats.timers, 0)
      assert.strictEqual(stats.engineEntries, 0)
      const messages = (yield* probe.receiveAll).map((r) => r.message)
      assert.includeMembers(messages, ["p1:shutdown(gold=1)@1", "p2:shutdown(gold=2)@1"])
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("every entity runs with the services the registry was made with, and its own log annotation", () => {
    class Region extends Context.Tag("test/Region")<Region, string>() {}
    const { layer, logs } = captureLogs()
    return Effect.gen(function* () {
      type Hello = { readonly _tag: "Hello" }
      const Greeter = Entity.make<number, Hello>()({
        name: "Greeter",
        initialize: () => Effect.succeed(0),
        commands: {
          Hello: (_cmd, model) =>
            Effect.as(
              Effect.flatMap(Region, (region) => Effect.logInfo(`hello from ${region}`)),
              model
            )
        }
      })
      const greeters = yield* Entity.makeRegistry(Greeter).pipe(Effect.provideService(Region, "eu"))
      // Each entity is spawned on a fiber of its own, all from the registry's runtime.
      yield* Effect.forEach(["g1", "g2"], (id) => greeters.tell(id, { _tag: "Hello" }), { discard: true })
      yield* TestClock.adjust(0)
      const hellos = logs.filter((log) => log.message.startsWith("hello"))
      assert.deepStrictEqual(
        hellos.map((log) => [log.message, log.annotations.actor]),
        [
          ["hello from eu", "/user/Greeter:g1"],
          ["hello from eu", "/user/Greeter:g2"]
        ]
      )
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(SystemLive, layer)))
  })

  it.effect("system shutdown runs the shutdown hooks and leaves no fiber, timer or engine entry", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const stats = yield* Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const players = yield* Entity.makeRegistry(makePlayer(probe, { periodic: true }))
        yield* players.tell("p1", { _tag: "AddGold", amount: 1 })
        yield* TestClock.adjust(0)
        yield* system.shutdown
        yield* players.tell("p2", { _tag: "AddGold", amount: 2 }) // after shutdown: a dead letter, no spawn
        yield* TestClock.adjust(0)
        assert.deepStrictEqual(yield* players.stats, { awake: 0, timers: 0, waiting: 0 })
        return yield* system.stats
      }).pipe(Effect.scoped, Effect.provide(SystemLive))
      assert.strictEqual(stats.fibers, 0)
      assert.strictEqual(stats.timers, 0)
      assert.strictEqual(stats.engineEntries, 0)
      assert.includeMembers(
        (yield* probe.receiveAll).map((r) => r.message),
        ["p1:shutdown(gold=1)@1"]
      )
    })
  )

  it.effect("a bad declarative timer fails makeRegistry with a typed error", () =>
    Effect.gen(function* () {
      const kind = (interval: number, initialDelay?: number) =>
        Entity.make<number, never>()({
          name: "Bad",
          initialize: () => Effect.succeed(0),
          commands: {},
          timers: [{ interval, initialDelay, run: (m) => Effect.succeed(m) }]
        })
      const zero = yield* Effect.flip(Entity.makeRegistry(kind(0)))
      assert.strictEqual(zero._tag, "InvalidTimerInterval")
      const nan = yield* Effect.flip(Entity.makeRegistry(kind(Number.NaN)))
      assert.strictEqual(nan._tag, "InvalidTimerInterval")
      const negativeDelay = yield* Effect.flip(Entity.makeRegistry(kind(1000, -1)))
      assert.strictEqual(negativeDelay._tag, "InvalidTimerDelay")
      const exit = yield* Effect.exit(Entity.makeRegistry(kind(1000, 0)))
      assert.isTrue(Exit.isSuccess(exit))
      // a bad mailbox capacity used to throw from Entity.make; now make never throws and makeRegistry fails typed
      const unbounded = Entity.make<number, never>()({
        name: "X",
        initialize: () => Effect.succeed(0),
        commands: {},
        mailboxCapacity: 0
      })
      const capacity = yield* Effect.flip(Entity.makeRegistry(unbounded))
      assert.strictEqual(capacity._tag, "InvalidEntityDefinition")
      assert.include(capacity.message, "invalid entity definition X (mailboxCapacity): must be a whole number >= 1")
      assert.isTrue(Entity.isEntity(kind(1)))
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("two systems, two registries: independent", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const run = Effect.gen(function* () {
        const players = yield* Entity.makeRegistry(makePlayer(probe))
        yield* players.tell("p1", { _tag: "AddGold", amount: 1 })
        return (yield* getModel(players, "p1")).gold
      }).pipe(Effect.scoped)
      const both = yield* Effect.all([
        Effect.provide(run, SystemLive),
        Effect.provide(run, Layer.fresh(TestSystem.layer({ name: "other" })))
      ])
      assert.deepStrictEqual(both, [1, 1])
    })
  )
})

describe("bad input", () => {
  const valid = {
    name: "Bad",
    initialize: () => Effect.succeed(0),
    commands: { Ping: (_cmd: unknown, n: number) => Effect.succeed(n + 1) }
  }
  type Ping = { readonly _tag: "Ping" }
  const definitionError = (fields: Record<string, unknown>) =>
    Effect.flip(
      Entity.makeRegistry(
        Entity.make<number, Ping>()({ ...valid, ...fields } as unknown as Entity.Definition<number, Ping, never, never>)
      )
    )

  it.effect(
    "a definition makeRegistry cannot use is InvalidEntityDefinition naming the field (make never throws)",
    () =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [Record<string, unknown>, string, string]> = [
          [{ name: "" }, "name", 'must be a non-empty string, got ""'],
          [{ name: " " }, "name", "must be a non-empty string"],
          [{ name: 3 }, "name", "got 3"],
          [{ initialize: Effect.succeed(0) }, "initialize", "must be a function returning an Effect, got an Effect"],
          [{ commands: undefined }, "commands", "must be an object with one handler per command tag, got undefined"],
          [{ commands: { Ping: "pong" } }, "commands.Ping", 'must be a function returning an Effect, got "pong"'],
          [{ onSessionStart: 1 }, "onSessionStart", "got 1"],
          [{ onShutdown: Effect.void }, "onShutdown", "got an Effect"],
          [{ timers: {} }, "timers", "must be an array of periodic timers, got an object"],
          [{ timers: [null] }, "timers[0]", "must be an object such as { interval, run }, got null"],
          [{ timers: [{ interval: 1000 }] }, "timers[0].run", "must be a function returning an Effect, got undefined"],
          [
            { timers: [{ name: "", interval: 1000, run: Effect.succeed }] },
            "timers[0].name",
            "must be a non-empty string"
          ],
          [{ mailboxCapacity: 0 }, "mailboxCapacity", "must be a whole number >= 1, got 0"],
          [{ mailboxCapacity: 2.5 }, "mailboxCapacity", "got 2.5"]
        ]
        for (const [fields, field, reason] of cases) {
          const error = yield* definitionError(fields)
          assert.strictEqual(error._tag, "InvalidEntityDefinition")
          assert.strictEqual((error as Entity.InvalidEntityDefinition).field, field)
          assert.include(error.message, `(${field}): `)
          assert.include(error.message, reason)
        }
        const notAKind = yield* Effect.flip(
          Entity.makeRegistry({ name: "Fake" } as unknown as Entity.Entity<number, Ping, never, never>)
        )
        assert.include(notAKind.message, "an object is not an entity kind: make one with Entity.make")
        const system = yield* ActorSystem.ActorSystem
        assert.strictEqual((yield* system.stats).actors, 0)
      }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("an id that is not a non-empty string is InvalidEntityId: nothing is routed, nothing wakes", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registry = yield* Entity.makeRegistry(makePlayer(probe))
      for (const id of [undefined, 42, "", null]) {
        const told = yield* Effect.flip(registry.tell(id as string, { _tag: "AddGold", amount: 1 }))
        assert.strictEqual(told._tag, "InvalidEntityId")
        assert.include(told.message, "an entity id must be a non-empty string")
        assert.strictEqual((yield* Effect.flip(registry.startSession(id as string)))._tag, "InvalidEntityId")
        assert.strictEqual((yield* Effect.flip(registry.sleep(id as string)))._tag, "InvalidEntityId")
        assert.isFalse(yield* registry.isAwake(id as string))
      }
      const told = yield* Effect.flip(registry.tell(42 as unknown as string, { _tag: "AddGold", amount: 1 }))
      assert.strictEqual(told.message, "invalid id 42 for entity kind Player: an entity id must be a non-empty string")
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(yield* registry.stats, { awake: 0, timers: 0, waiting: 0 })
      assert.deepStrictEqual(yield* probe.receiveAll, [])
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect(
    "a message that is not a command of the kind is InvalidCommand at tell (it used to restart the entity)",
    () =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const registry = yield* Entity.makeRegistry(makePlayer(probe))
        yield* registry.tell("p1", { _tag: "AddGold", amount: 5 })
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ _tag: "AddGlod", amount: 1 }, 'invalid command "AddGlod" for entity kind Player: the kind has no handler'],
          [{ _tag: "toString" }, 'invalid command "toString"'],
          [
            { amount: 1 },
            "invalid command an object for entity kind Player: a command must be an object with a string _tag"
          ],
          [undefined, "invalid command undefined"],
          ["AddGold", 'invalid command "AddGold" for entity kind Player: a command must be an object']
        ]
        for (const [command, message] of cases) {
          const error = yield* Effect.flip(registry.tell("p1", command as Cmd))
          assert.strictEqual(error._tag, "InvalidCommand")
          assert.include(error.message, message)
        }
        assert.include(
          (yield* Effect.flip(registry.tell("p1", { _tag: "Nope" } as never))).message,
          "(its commands: AddGold"
        )
        // the entity kept its model: no restart happened
        assert.strictEqual((yield* getModel(registry, "p1")).gold, 5)
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.message),
          ["p1:initialize@1"]
        )
      }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("through a ref, what cannot be routed is a dead letter, and an ask fails with AskUndeliverable", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<EventStream.DeadLetter>()
      yield* system.eventStream.subscribe(probe.ref, EventStream.DeadLetter)
      const registry = yield* Entity.makeRegistry(makePlayer(yield* TestProbe.make<string>()))
      yield* registry.ref("p1").tell({ _tag: "Nope" } as never)
      yield* registry.ref(undefined as unknown as string).tell({ _tag: "AddGold", amount: 1 })
      const letters = yield* probe.receiveAll
      assert.deepStrictEqual(
        letters.map((r) => r.message.message),
        [{ _tag: "Nope" }, { _tag: "AddGold", amount: 1 }]
      )
      const asked = yield* Effect.flip(ActorRef.ask(registry.ref(""), () => ({ _tag: "AddGold", amount: 1 }) as const))
      assert.strictEqual(asked._tag, "AskUndeliverable")
      assert.isFalse(yield* registry.isAwake("p1"), "nothing woke")
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )
})

describe("one registry per kind and system", () => {
  type CounterCmd =
    | { readonly _tag: "Add"; readonly amount: number }
    | { readonly _tag: "Get"; readonly replyTo: ActorRef.ActorRef<number> }
  const makeCounter = () =>
    Entity.make<number, CounterCmd>()({
      name: "Counter",
      initialize: () => Effect.succeed(0),
      commands: {
        Add: (cmd, n) => Effect.succeed(n + cmd.amount),
        Get: (cmd, n) => Effect.as(cmd.replyTo.tell(n), n)
      }
    })
  const get = (replyTo: ActorRef.ActorRef<number>): CounterCmd => ({ _tag: "Get", replyTo })

  /** Asks entity `id` of `registry` for its count, on virtual time: None when no answer came within a second. */
  const countWithin = (registry: Entity.EntityRegistry<CounterCmd>, id: string) =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(Effect.either(ActorRef.ask(registry.ref(id), get, "1 second")))
      yield* TestClock.adjust("2 seconds")
      const answer = yield* Fiber.join(fiber)
      return Either.getOrUndefined(answer)
    })

  it.effect("a second makeRegistry of the same kind gives the same registry, which reaches every entity", () =>
    Effect.gen(function* () {
      const Counter = makeCounter()
      const first = yield* Entity.makeRegistry(Counter)
      yield* first.tell("c1", { _tag: "Add", amount: 3 })
      const second = yield* Entity.makeRegistry(Counter)
      assert.strictEqual(yield* countWithin(second, "c1"), 3)
      assert.isTrue(second === first, "the same registry")
      yield* second.tell("c1", { _tag: "Add", amount: 4 })
      assert.strictEqual(yield* countWithin(first, "c1"), 7)
      assert.strictEqual(
        yield* TestSystem.inside(TestSystem.entity<number, CounterCmd>(second, "c1"), (_ctx, n) => Effect.succeed(n)),
        7
      )
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("another definition under a kind name that has a registry is InvalidEntityDefinition (name)", () =>
    Effect.gen(function* () {
      const first = yield* Entity.makeRegistry(makeCounter())
      yield* first.tell("c1", { _tag: "Add", amount: 1 })
      const error = yield* Effect.flip(Entity.makeRegistry(makeCounter()))
      assert.strictEqual(error._tag, "InvalidEntityDefinition")
      if (error._tag !== "InvalidEntityDefinition") return
      assert.strictEqual(error.kind, "Counter")
      assert.strictEqual(error.field, "name")
      assert.include(error.message, "already has a registry in ActorSystem entities")
      // the first registry is untouched
      assert.strictEqual(yield* countWithin(first, "c1"), 1)
    }).pipe(Effect.scoped, Effect.provide(SystemLive))
  )

  it.effect("the registry lives until the last scope that made it closes; then the name is free again", () =>
    Effect.gen(function* () {
      const Counter = makeCounter()
      const outer = yield* Entity.makeRegistry(Counter)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const inner = yield* Entity.makeRegistry(Counter)
          yield* inner.tell("c1", { _tag: "Add", amount: 2 })
        })
      )
      // the inner scope has closed: the outer scope still holds the registry, and the entity kept its model
      assert.isTrue(yield* outer.isAwake("c1"))
      assert.strictEqual(yield* countWithin(outer, "c1"), 2)
    }).pipe(
      Effect.scoped,
      Effect.zipRight(
        // every scope has closed: the name takes another definition, whose entities start afresh
        Effect.scoped(
          Effect.gen(function* () {
            const again = yield* Entity.makeRegistry(makeCounter())
            assert.strictEqual(yield* countWithin(again, "c1"), 0)
          })
        )
      ),
      Effect.provide(SystemLive)
    )
  )

  it.effect("a registry is per system: the same kind in two systems runs two registries", () =>
    Effect.gen(function* () {
      const Counter = makeCounter()
      const inSystem = (name: string) =>
        Effect.flatMap(Layer.build(ActorSystem.layer({ name })), (system) =>
          Effect.provide(Entity.makeRegistry(Counter), system)
        )
      const a = yield* inSystem("a")
      const b = yield* inSystem("b")
      assert.isTrue(a !== b, "two registries")
      yield* a.tell("c1", { _tag: "Add", amount: 5 })
      assert.strictEqual(yield* countWithin(a, "c1"), 5)
      assert.strictEqual(yield* countWithin(b, "c1"), 0)
    }).pipe(Effect.scoped)
  )
})
