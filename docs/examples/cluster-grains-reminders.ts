// Durable reminders: a persisted reminder reactivates a passivated grain when due.
// Runs on a TestClock moved by hand (one in-process runner, SQLite in memory):
// `npx tsx docs/examples/cluster-grains-reminders.ts`.
import { Clock, Effect, Layer, Schema, TestClock, TestContext } from "effect"
import { ActorSystem, Grain, Passivation } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"

const SubscriptionMsg = Schema.Union(
  Schema.TaggedStruct("Subscribe", {}),
  Schema.TaggedStruct("Renew", {}),
  Schema.TaggedStruct("Cancel", {})
)
type SubscriptionMsg = typeof SubscriptionMsg.Type

const log = (text: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.logInfo(`[t=${Math.round(now / 1000)}s] ${text}`))

const Subscription = Grain.make<SubscriptionMsg>()({
  name: "subscription",
  passivation: Passivation.idle("10 seconds"),
  onActivate: (props) => log(`activate ${props.identity.key}`),
  onReceive: (ctx) => {
    switch (ctx.message._tag) {
      case "Subscribe":
        // Persisted: it outlives this activation, passivation and restarts. First due in 30 s, then every 30 s.
        return Effect.asVoid(
          Effect.orDie(
            Reminders.register(ctx, "renew", { _tag: "Renew" }, Reminders.after("30 seconds", { period: "30 seconds" }))
          )
        )
      case "Renew":
        return log(`renew ${ctx.identity.key}`)
      case "Cancel":
        return Effect.asVoid(Effect.orDie(Reminders.unregister(ctx, "renew")))
    }
  },
  onDeactivate: (props) => log(`passivate ${props.identity.key}`)
})

const SubscriptionGrain = ClusterGrain.make(Subscription, { message: SubscriptionMsg })

// Reminders.layer goes below ClusterGrain.layer: the host delivers reminders of its kinds through it.
const Runner = ClusterGrain.layer([SubscriptionGrain]).pipe(
  Layer.provideMerge(Reminders.layer()),
  Layer.provideMerge(ClusterRunner.layerTest()),
  Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
)

/** Moves the test clock a second at a time, so the runner's storage polls run along the way. */
const advance = (seconds: number) => Effect.repeatN(TestClock.adjust("1 second"), seconds - 1)

const main = Effect.gen(function* () {
  yield* TestClock.adjust(1) // lets the runner take its shards
  yield* ClusterGrain.tell(SubscriptionGrain, "sub-1", { _tag: "Subscribe" })
  yield* advance(65) // passivates after ~10-20 s idle; the reminder reactivates it at 30 s and 60 s
  const [reminder] = yield* Reminders.listFor(SubscriptionGrain, "sub-1")
  yield* log(`next renewal due at t=${Math.round((reminder?.nextDue ?? 0) / 1000)}s`)
  yield* ClusterGrain.tell(SubscriptionGrain, "sub-1", { _tag: "Cancel" })
  yield* advance(40) // no more renewals
})

Effect.runPromise(main.pipe(Effect.provide(Runner), Effect.provide(TestContext.TestContext)))
