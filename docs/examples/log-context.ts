import { Effect } from "effect"
import { Actor, ActorSystem, LogContext } from "tickwork"

type Msg = { readonly _tag: "Arm" } | { readonly _tag: "Sweep" }

// The state is the log context the sweep was armed under.
const Sweeper = Actor.make<Msg>()({
  preStart: () => Effect.succeed(LogContext.empty),
  receive: (msg, ctx, armedUnder) =>
    msg._tag === "Arm"
      ? Effect.gen(function* () {
          yield* Effect.logInfo("arming") // a plain tell carries the sender's annotations: tenant=acme
          yield* Effect.orDie(ctx.timers.startSingleTimer("sweep", { _tag: "Sweep" }, "100 millis"))
          return yield* LogContext.snapshot // kept on purpose, for the tick
        })
      : Effect.gen(function* () {
          yield* Effect.logInfo("sweeping") // a tick carries no context: only actor=/user/sweeper
          yield* LogContext.run(armedUnder, Effect.logInfo("sweeping, context restored")) // tenant=acme again
          return armedUnder
        })
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const sweeper = yield* system.spawn(Sweeper, "sweeper")
  yield* sweeper.tell({ _tag: "Arm" }).pipe(Effect.annotateLogs("tenant", "acme"))
  yield* Effect.sleep("300 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "log-context" })))

// `npx tsx docs/examples/log-context.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
