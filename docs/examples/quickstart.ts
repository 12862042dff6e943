import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

type Msg = { readonly _tag: "Beat" } | { readonly _tag: "Report" }

// An actor's state is what its handlers return: here, the number of beats so far.
const Heart = Actor.make<Msg>()({
  preStart: (ctx) =>
    Effect.as(Effect.orDie(ctx.timers.startTimerWithFixedDelay("beat", { _tag: "Beat" }, "500 millis")), 0),
  receive: (msg, _ctx, beats) =>
    msg._tag === "Beat" ? Effect.succeed(beats + 1) : Effect.as(Effect.logInfo(`beats so far: ${beats}`), beats)
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const heart = yield* system.spawn(Heart, "heart")
  // The system scheduler targets any actor and outlives the actors themselves.
  yield* system.scheduler.scheduleAtFixedRate("1250 millis", "1 second", heart, { _tag: "Report" })
  yield* Effect.sleep("3500 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "quickstart" })))

// `npx tsx docs/examples/quickstart.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
