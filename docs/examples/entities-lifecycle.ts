import { Effect } from "effect"
import { ActorRef, ActorSystem, Entity } from "tickwork"

interface Model {
  readonly gold: number
}

type Command =
  | { readonly _tag: "AddGold"; readonly amount: number }
  | { readonly _tag: "GetGold"; readonly replyTo: ActorRef.ActorRef<number> }

const Player = Entity.make<Model, Command>()({
  name: "Player",
  // runs when a routed message finds the entity asleep
  initialize: (id) => Effect.as(Effect.logInfo(`${id}: initialize`), { gold: 0 }),
  onSessionStart: (model, ctx) => Effect.as(Effect.logInfo(`${ctx.id}: session start`), model),
  // runs when the entity goes to sleep (or the system shuts down), after its timers are cancelled
  onShutdown: (model, ctx) => Effect.logInfo(`${ctx.id}: shutdown with ${model.gold} gold (persist it here)`),
  commands: {
    AddGold: (cmd, model) => Effect.succeed({ gold: model.gold + cmd.amount }),
    GetGold: (cmd, model) => Effect.as(cmd.replyTo.tell(model.gold), model)
  }
})

const main = Effect.gen(function* () {
  const players = yield* Entity.makeRegistry(Player)
  yield* players.startSession("alice") // wakes alice: initialize, then the session start
  yield* players.tell("alice", { _tag: "AddGold", amount: 10 })
  // sleep after the queued messages; a message routed meanwhile waits and wakes a new incarnation
  const sleeping = yield* Effect.fork(players.sleep("alice"))
  yield* Effect.yieldNow() // let the sleep request go out
  yield* players.tell("alice", { _tag: "AddGold", amount: 5 }) // waits, then wakes alice again
  yield* sleeping
  const gold = yield* ActorRef.ask(players.ref("alice"), (replyTo: ActorRef.ActorRef<number>) => ({
    _tag: "GetGold" as const,
    replyTo
  }))
  yield* Effect.logInfo(`alice, second incarnation: ${gold} gold (the first 10 were not persisted in this example)`)
}).pipe(Effect.scoped, Effect.provide(ActorSystem.layer({ name: "lifecycle" })))

// `npx tsx docs/examples/entities-lifecycle.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
