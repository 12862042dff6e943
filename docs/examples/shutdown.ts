import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

type Msg = { readonly _tag: "Tick" } | { readonly _tag: "LongJob" }

const Busy = Actor.make<Msg>()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startTimerWithFixedDelay("tick", { _tag: "Tick" }, "1 second")),
  receive: (msg) =>
    msg._tag === "Tick"
      ? Effect.void
      : Effect.sleep("1 minute").pipe(Effect.onInterrupt(() => Effect.logInfo("long job interrupted by shutdown"))),
  postStop: () => Effect.logInfo("postStop still runs")
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const busy = yield* system.spawn(Busy, "busy")
  yield* system.scheduler.scheduleAtFixedRateFunction("1 second", "1 second", Effect.void)
  yield* busy.tell({ _tag: "LongJob" })
  yield* Effect.sleep("100 millis")
  yield* Effect.logInfo(`before: ${JSON.stringify(yield* system.stats)}`)
  // The layer does this when its scope closes; calling it here lets us look at what is left.
  yield* system.shutdown
  yield* Effect.logInfo(`after:  ${JSON.stringify(yield* system.stats)}`)
  const spawnAfter = yield* Effect.flip(system.spawn(Busy, "late"))
  yield* Effect.logInfo(`spawn after shutdown: ${spawnAfter._tag}`)
}).pipe(Effect.provide(ActorSystem.layer({ name: "shutdown" })))

// `npx tsx docs/examples/shutdown.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
