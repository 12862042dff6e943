import { Effect } from "effect"
import { Actor, ActorRef, ActorSystem, type TimerError } from "tickwork"

type Msg = { readonly _tag: "Configure"; readonly intervalMillis: number } | { readonly _tag: "Poll" }

const Poller = Actor.make<Msg>()({
  receive: (msg, ctx) =>
    msg._tag === "Poll"
      ? Effect.void
      : ctx.timers.startTimerWithFixedDelay("poll", { _tag: "Poll" }, msg.intervalMillis).pipe(
          // a typed error: handle it here, or let it fail the handler and reach supervision
          Effect.catchAll((error: TimerError.InvalidTimerInterval | TimerError.InvalidTimerDelay) =>
            Effect.logWarning(`configuration rejected: ${error.message}`)
          )
        )
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const poller = yield* system.spawn(Poller, "poller")
  yield* poller.tell({ _tag: "Configure", intervalMillis: 0 })

  // the system scheduler fails the same way, before anything is scheduled
  const negative = yield* Effect.flip(system.scheduler.scheduleOnce(-5, poller, { _tag: "Poll" }))
  yield* Effect.logWarning(`${negative._tag}: ${negative.message}`)

  // so does ask, for a timeout that is not a positive duration, before the question is sent
  const never = yield* Effect.flip(ActorRef.ask(poller, (): Msg => ({ _tag: "Poll" }), 0))
  yield* Effect.logWarning(`${never._tag}: ${never.message}`)

  // spawn errors are typed too: InvalidActorName, ActorNameTaken, ActorSystemTerminated
  const taken = yield* Effect.flip(system.spawn(Poller, "poller"))
  yield* Effect.logWarning(`${taken._tag}: ${taken.message}`)
  yield* Effect.sleep("50 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "bad-input" })))

// `npx tsx docs/examples/bad-input.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
