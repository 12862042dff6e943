import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

type Msg = { readonly _tag: "Request" } | { readonly _tag: "Nudge" } | { readonly _tag: "Idle" }

// The state counts the idle periods in a row.
const Session = Actor.make<Msg>()({
  preStart: (ctx) => Effect.as(Effect.orDie(ctx.setReceiveTimeout("300 millis", { _tag: "Idle" })), 0),
  receive: (msg, ctx, idle) => {
    switch (msg._tag) {
      case "Request":
        return Effect.as(Effect.logInfo("request (user message: restarts the idle clock)"), 0)
      case "Nudge":
        return Effect.as(Effect.logInfo("nudge (scheduler tick: does not count as activity)"), idle)
      case "Idle":
        return idle + 1 < 2
          ? Effect.as(Effect.logInfo("idle for 300 ms"), idle + 1)
          : Effect.gen(function* () {
              yield* Effect.logInfo("idle twice in a row: closing the session")
              yield* ctx.cancelReceiveTimeout // stopping cancels it as well
              yield* ctx.stop(ctx.self)
              return idle + 1
            })
    }
  }
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const session = yield* system.spawn(Session, "session")
  yield* system.scheduler.scheduleOnce("400 millis", session, { _tag: "Nudge" })
  yield* Effect.sleep("200 millis")
  yield* session.tell({ _tag: "Request" }) // idle from 200 ms: timeouts at 500 and 800 ms
  yield* Effect.sleep("900 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "receive-timeout" })))

// `npx tsx docs/examples/receive-timeout.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
