// Type-checked in the consumer (nodenext, strict, no skipLibCheck, no @types/node): the single-process entry points.
import { Effect } from "effect"
import { Actor, ActorSystem, type Workers } from "tickwork"
import { TestProbe, TestTimers } from "tickwork/testkit"

type Msg = { readonly _tag: "Beat" }

export const Heart = Actor.make<Msg>()({
  preStart: (ctx) =>
    Effect.as(Effect.orDie(ctx.timers.startTimerWithFixedDelay("beat", { _tag: "Beat" }, "500 millis")), 0),
  receive: (_msg, _ctx, beats: number) => Effect.succeed(beats + 1)
})

export const program: Effect.Effect<number, never, ActorSystem.ActorSystem> = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const probe = yield* TestProbe.make<Msg>()
  yield* Effect.orDie(system.scheduler.scheduleOnce("1 second", probe.ref, { _tag: "Beat" }))
  yield* TestTimers.advance("1 second")
  return (yield* system.stats).actors
})

export const failure: Workers.CpuTaskError["_tag"] = "WorkerQueueFull"
