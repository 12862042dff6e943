import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Random, TestClock } from "effect"
import { ActorRef, ActorSystem, Deadline, Entity, EntityTimers, GameClock } from "tickwork"

interface Model {
  readonly polls: number
  readonly rewardAt: Deadline.Deadline
  readonly rewarded: boolean
}

type Command = { readonly _tag: "Reward" } | { readonly _tag: "Get"; readonly replyTo: ActorRef.ActorRef<Model> }

const Player = Entity.make<Model, Command>()({
  name: "Player",
  initialize: () => Effect.succeed({ polls: 0, rewardAt: Deadline.unsafeMake(86_400_000), rewarded: false }),
  onSessionStart: (model, ctx) =>
    Effect.as(ctx.checkDeadline({ deadline: (m) => m.rewardAt, onDue: () => ctx.send({ _tag: "Reward" }) }), model),
  commands: {
    Reward: (_cmd, model) => Effect.succeed({ ...model, rewarded: true }),
    Get: (cmd, model) => Effect.as(cmd.replyTo.tell(model), model)
  },
  timers: [
    { name: "count", interval: "60 seconds", run: (model) => Effect.succeed({ ...model, polls: model.polls + 1 }) },
    EntityTimers.pollDeadline<Model, Command>({
      interval: "60 seconds",
      deadline: (m) => (m.rewarded ? undefined : m.rewardAt),
      onDue: (_m, ctx) => ctx.send({ _tag: "Reward" })
    })
  ]
})

const getModel = (players: Entity.EntityRegistry<Command>, id: string) =>
  ActorRef.ask(players.ref(id), (replyTo: ActorRef.ActorRef<Model>) => ({ _tag: "Get", replyTo }) as const)

// A fresh system and game clock per test; it.effect provides the TestClock, the seed makes the first runs exact.
const Live = Layer.merge(ActorSystem.layer({ name: "test" }), GameClock.layer)

describe("Player", () => {
  it.effect("the first poll comes after interval × U[0.5, 1.5): U = 0.5 is exactly one interval", () =>
    Effect.gen(function* () {
      const players = yield* Entity.makeRegistry(Player)
      yield* players.startSession("p1")
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual((yield* getModel(players, "p1")).polls, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* getModel(players, "p1")).polls, 1)
    }).pipe(Effect.scoped, Effect.provide(Live), Effect.withRandom(Random.fixed([0.5])))
  )

  it.effect("a time skip past the deadline rewards an online player at once", () =>
    Effect.gen(function* () {
      const players = yield* Entity.makeRegistry(Player)
      yield* players.startSession("p1") // the reward is a day away: a one-shot is armed for it
      yield* GameClock.skip("1 day")
      yield* TestClock.adjust(0) // the re-armed one-shot fires on the driver's next turn
      assert.isTrue((yield* getModel(players, "p1")).rewarded)
      yield* players.sleep("p1")
      const system = yield* ActorSystem.ActorSystem
      assert.strictEqual((yield* system.stats).engineEntries, 0, "sleep leaves nothing scheduled")
    }).pipe(Effect.scoped, Effect.provide(Live), Effect.withRandom(Random.make("seed")))
  )
})
