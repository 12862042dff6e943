import { Effect } from "effect"
import { Actor, type ActorRef, ActorSystem, Supervision } from "tickwork"

type Msg = { readonly _tag: "Work" } | { readonly _tag: "Crash" }

let incarnations = 0

// Every incarnation starts its own timer; the state is the incarnation number.
const Worker = Actor.make<Msg>()({
  preStart: (ctx) =>
    Effect.as(Effect.orDie(ctx.timers.startTimerAtFixedRate("work", { _tag: "Work" }, "100 millis")), ++incarnations),
  receive: (msg, _ctx, n) =>
    msg._tag === "Work"
      ? Effect.as(Effect.logInfo(`tick handled by incarnation ${n}`), n)
      : // ticks of this incarnation queue up behind the crash and are dropped after the restart
        Effect.zipRight(Effect.sleep("250 millis"), Effect.die(`incarnation ${n} crashed`)),
  preRestart: (_ctx, n) => Effect.logInfo(`preRestart of incarnation ${n}: its timers are already cancelled`),
  postRestart: (_ctx, n) => Effect.logInfo(`postRestart: incarnation ${n} runs with a fresh timer`),
  postStop: (_ctx, n) => Effect.logInfo(`postStop of incarnation ${n}`)
})

// The parent supervises the worker: restart, at most twice a minute; the third failure stops it.
const Parent = Actor.make<Msg>()({
  preStart: (ctx) => ctx.spawn(Worker, "worker").pipe(Effect.orDie),
  receive: (msg, _ctx, worker: ActorRef.ActorRef<Msg>) => Effect.as(worker.tell(msg), worker)
}).pipe(Actor.withSupervisorStrategy(Supervision.restart({ maxRestarts: 2, within: "1 minute" })))

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const parent = yield* system.spawn(Parent, "parent")
  for (let i = 0; i < 3; i++) {
    yield* Effect.sleep("250 millis")
    yield* parent.tell({ _tag: "Crash" })
    yield* Effect.sleep("300 millis")
  }
  yield* Effect.logInfo(`live actors: ${(yield* system.stats).actors}`) // 1: only the parent
}).pipe(Effect.provide(ActorSystem.layer({ name: "supervision" })))

// `npx tsx docs/examples/supervision.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
