import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { Latch } from "../../src/internal/latch.js"

describe("Latch", () => {
  it.effect("a waiter waits until the latch is released, and is then let through", () =>
    Effect.gen(function* () {
      const latch = new Latch()
      const waiter = yield* Effect.fork(latch.await)
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiter)), "still waiting before the release")
      latch.release()
      yield* Fiber.join(waiter)
    })
  )

  it.effect("awaiting a released latch completes at once; releasing again changes nothing", () =>
    Effect.gen(function* () {
      const latch = new Latch()
      latch.release()
      latch.release()
      yield* latch.await
      yield* latch.await
      assert.ok(true, "both awaits completed")
    })
  )

  it.effect("several waiters are all let through by one release", () =>
    Effect.gen(function* () {
      const latch = new Latch()
      const waiters = yield* Effect.forEach([1, 2, 3], () => Effect.fork(latch.await))
      yield* Effect.yieldNow()
      latch.release()
      yield* Fiber.joinAll(waiters)
      const polled = yield* Effect.forEach(waiters, Fiber.poll)
      assert.isTrue(polled.every(Option.isSome))
    })
  )
})
