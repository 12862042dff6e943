import { Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains } from "tickwork"

type CartMsg = { readonly _tag: "Add"; readonly item: string } | { readonly _tag: "Items" }

const Cart = Grain.make<CartMsg>()({
  name: "cart",
  // The state of an activation is what onActivate returns (here: the items, empty after each activation).
  onActivate: (props) => Effect.as(Effect.logInfo(`activate cart ${props.identity.key}`), [] as ReadonlyArray<string>),
  // onReceive maps (message, state) to the next state; one message at a time, never concurrently.
  onReceive: (ctx, items) => {
    switch (ctx.message._tag) {
      case "Add":
        return Effect.succeed([...items, ctx.message.item])
      case "Items":
        return Effect.as(ctx.reply(items), items)
    }
  },
  onDeactivate: (props, items) => Effect.logInfo(`deactivate cart ${props.identity.key} (${items.length} items)`)
})

// Register the kinds on an actor system; the layer's scope is the grains' lifetime.
const GrainsLive = Grains.layer([Cart]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "shop" })))

const main = Effect.gen(function* () {
  yield* Grains.tell(Cart, "alice", { _tag: "Add", item: "book" }) // activates cart/alice on demand
  yield* Grains.tell(Cart, "alice", { _tag: "Add", item: "pen" }) // the same activation
  yield* Grains.tell(Cart, "bob", { _tag: "Add", item: "lamp" }) // another identity, another activation
  const items = yield* Grains.ask<ReadonlyArray<string>, CartMsg>(Cart, "alice", { _tag: "Items" })
  yield* Effect.logInfo(`alice has ${items?.join(", ")}`)
  const grains = yield* Grains.Grains
  yield* Effect.logInfo(`activations: ${yield* grains.activations}`) // 2
}).pipe(Effect.provide(GrainsLive)) // closing the layer shuts the system down: both carts deactivate

// `npx tsx docs/examples/grains-quickstart.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
