// The README's first program ("Use it in your project"), run by the consumer check as a user would: `node main.mjs`.
import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

// An actor whose state is the number of ticks so far; its timer sends it "tick" every second.
const Ticker = Actor.make()({
  preStart: (ctx) => Effect.as(Effect.orDie(ctx.timers.startTimerWithFixedDelay("tick", "tick", "1 second")), 0),
  receive: (_msg, _ctx, ticks) => Effect.as(Effect.log(`tick ${ticks + 1}`), ticks + 1)
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  yield* system.spawn(Ticker, "ticker")
  yield* Effect.sleep("2500 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "first" })))

Effect.runPromise(main)
