import { Effect, Layer } from "effect"
import { ActorSystem, Entity, GameClock } from "tickwork"

interface Model {
  readonly gold: number
}
type Command = { readonly _tag: "AddGold"; readonly amount: number }

const definition: Entity.Definition<Model, Command, never, never> = {
  name: "Player",
  initialize: () => Effect.succeed({ gold: 0 }),
  commands: { AddGold: (cmd, model) => Effect.succeed({ gold: model.gold + cmd.amount }) },
  // runs 250 ms every 100 ms: the invocations that come due meanwhile are dropped
  timers: [
    { name: "audit", interval: "100 millis", initialDelay: 0, run: (m) => Effect.as(Effect.sleep("250 millis"), m) }
  ]
}
const Player = Entity.make<Model, Command>()(definition)

// make never throws: the registry reports what it cannot use
const Broken = Entity.make<Model, Command>()({ ...definition, name: "Broken", mailboxCapacity: 0 })

const main = Effect.gen(function* () {
  const broken = yield* Effect.flip(Entity.makeRegistry(Broken))
  yield* Effect.logInfo(broken.message)

  const players = yield* Entity.makeRegistry(Player)
  const ids = new Map<string, string>()
  const missing = yield* Effect.flip(players.tell(ids.get("bob")!, { _tag: "AddGold", amount: 1 }))
  yield* Effect.logInfo(missing.message)
  // e.g. parsed from a request: not a command of the kind, so it is refused instead of failing the entity
  const typo = yield* Effect.flip(players.tell("alice", JSON.parse('{ "_tag": "AddGlod", "amount": 1 }')))
  yield* Effect.logInfo(typo.message)

  const far = yield* Effect.flip(GameClock.skip(2 ** 60))
  yield* Effect.logInfo(far.message)

  // alice's audit runs at 0 until 250: the invocations of 100 and 200 are dropped, and no run follows before she
  // sleeps: the drops are reported when she stops
  yield* players.tell("alice", { _tag: "AddGold", amount: 5 })
  yield* Effect.sleep("230 millis")
  yield* players.sleep("alice")
}).pipe(Effect.scoped, Effect.provide(Layer.merge(ActorSystem.layer({ name: "entities-bad-input" }), GameClock.layer)))

// `npx tsx docs/examples/entities-bad-input.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
