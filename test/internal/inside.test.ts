import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, TestClock } from "effect"
import { Actor, ActorSystem } from "tickwork"
import type { CellRef } from "../../src/internal/actorCell.js"

const cellOf = (ref: unknown) => (ref as CellRef<unknown>).cell

describe("running code inside an actor (the testkit's inside)", () => {
  it.effect("runs with the actor's context, in its mailbox order, and gives the outcome back", () =>
    Effect.gen(function* () {
      const Slow = Actor.make<string>()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startSingleTimer("t", "tick", "1 hour")),
        receive: () => Effect.sleep("100 millis")
      })
      const ref = yield* ActorSystem.spawn(Slow, "slow")
      yield* ref.tell("work") // busy until 100
      const fiber = yield* Effect.fork(
        cellOf(ref).inside((ctx) => Effect.map(ctx.timers.activeKeys, (keys) => [ctx.path, keys]))
      )
      yield* TestClock.adjust("50 millis")
      assert.isNull(fiber.unsafePoll(), "behind the message being handled")
      yield* TestClock.adjust("50 millis")
      const exit = yield* fiber.await.pipe(Effect.flatten)
      assert.deepStrictEqual(exit, Exit.succeed(["/user/slow", ["t"]]))
      // a failure comes back to the caller; the actor is not restarted (supervision never sees it)
      const failed = yield* cellOf(ref).inside(() => Effect.fail("nope"))
      assert.deepStrictEqual(failed, Exit.fail("nope"))
      assert.deepStrictEqual(yield* cellOf(ref).inside((ctx) => ctx.timers.activeKeys), Exit.succeed(["t"]))
    }).pipe(Effect.provide(ActorSystem.layer({ name: "inside" })))
  )

  it.effect("a stopped actor, or one that stops first, answers with a defect instead of never", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const Busy = Actor.make<string>()({ receive: () => Effect.sleep("100 millis") })
      const ref = yield* system.spawn(Busy, "busy")
      yield* ref.tell("work")
      const waiting = yield* Effect.fork(cellOf(ref).inside(() => Effect.void))
      yield* TestClock.adjust("1 millis")
      const stopping = yield* Effect.fork(system.stop(ref))
      yield* TestClock.adjust("100 millis")
      yield* stopping.await
      const exit = yield* Effect.flatten(waiting.await)
      assert.isTrue(Exit.isFailure(exit) && Cause.pretty(exit.cause).includes("stopped"))
      const after = yield* cellOf(ref).inside(() => Effect.void)
      assert.isTrue(Exit.isFailure(after) && Cause.pretty(after.cause).includes("has stopped"))
    }).pipe(Effect.provide(ActorSystem.layer({ name: "inside" })))
  )
})
