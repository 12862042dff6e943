// Grains on the cluster: a grain kind becomes a cluster entity with Schema-typed messages and replies.
// Runs on one in-process test runner (SQLite in memory) on the real clock: `npx tsx docs/examples/cluster-grains.ts`.
import { Effect, Layer, Schema } from "effect"
import { ActorSystem, Grain, GrainTimers } from "tickwork"
import { ClusterGrain, ClusterRunner } from "tickwork/cluster"

// Messages cross processes, so they are described by a Schema (its encoded form must be JSON).
const CartMsg = Schema.Union(
  Schema.TaggedStruct("Add", { item: Schema.String }),
  Schema.TaggedStruct("Items", {}),
  Schema.TaggedStruct("Expire", {})
)
type CartMsg = typeof CartMsg.Type

// The grain itself is an ordinary tickwork grain: same handlers, same timers.
const Cart = Grain.make<CartMsg>()({
  name: "cart",
  onActivate: (props) =>
    Effect.as(
      // A volatile, activation-scoped timer, exactly as in one process.
      Effect.orDie(props.scheduleOnce({ _tag: "Expire" }, "2 seconds", GrainTimers.withTimerReference("expire"))),
      [] as ReadonlyArray<string>
    ),
  onReceive: (ctx, items) => {
    switch (ctx.message._tag) {
      case "Add":
        return Effect.succeed([...items, ctx.message.item])
      case "Items":
        return Effect.as(ctx.reply(items), items)
      case "Expire":
        return Effect.as(Effect.logInfo(`cart ${ctx.identity.key} expired with ${items.length} items`), [])
    }
  }
})

// The cluster side: schemas for messages and replies, and the idle time before passivation.
const CartGrain = ClusterGrain.make(Cart, {
  message: CartMsg,
  reply: Schema.Array(Schema.String),
  maxIdleTime: "5 minutes"
})

// A runner hosts the kinds (ClusterGrain.layer) on Sharding (ClusterRunner) with a local ActorSystem.
const Runner = ClusterGrain.layer([CartGrain]).pipe(
  Layer.provideMerge(ClusterRunner.layerTest()),
  Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
)

const main = Effect.gen(function* () {
  yield* ClusterGrain.tell(CartGrain, "alice", { _tag: "Add", item: "book" })
  yield* ClusterGrain.tell(CartGrain, "alice", { _tag: "Add", item: "pen" })
  const items = yield* ClusterGrain.ask(CartGrain, "alice", { _tag: "Items" })
  yield* Effect.logInfo(`alice has ${items?.join(", ")}`)
  // A message that does not match the schema never leaves the process: a typed error.
  const bad = yield* Effect.flip(ClusterGrain.tell(CartGrain, "alice", { _tag: "Add", item: 42 } as never))
  yield* Effect.logInfo(`${bad._tag}: ${bad.message}`)
  yield* Effect.sleep("2500 millis") // the cart's timer fires
})

Effect.runPromise(main.pipe(Effect.provide(Runner)))
