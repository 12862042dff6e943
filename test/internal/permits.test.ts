import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { Permits } from "../../src/internal/permits.js"

describe("Permits", () => {
  it.effect("at most N hold a permit; the others are served first come, first served", () =>
    Effect.gen(function* () {
      const permits = new Permits(2)
      const gates = Array.from({ length: 6 }, () => Deferred.unsafeMake<void>(undefined as never))
      const started: Array<number> = []
      const fibers = yield* Effect.forEach(gates, (gate, i) =>
        Effect.fork(
          permits.with(
            Effect.zipRight(
              Effect.sync(() => started.push(i)),
              Deferred.await(gate)
            )
          )
        )
      )
      yield* Effect.yieldNow()
      assert.deepStrictEqual(started, [0, 1])
      assert.strictEqual(permits.waiters, 4)
      // Released out of order: the next in line goes, not the one whose holder finished.
      yield* Deferred.succeed(gates[1]!, undefined)
      yield* Fiber.join(fibers[1]!)
      yield* Effect.yieldNow()
      assert.deepStrictEqual(started, [0, 1, 2])
      for (const i of [0, 2, 3, 4, 5]) {
        yield* Deferred.succeed(gates[i]!, undefined)
        yield* Fiber.join(fibers[i]!)
        yield* Effect.yieldNow()
      }
      assert.deepStrictEqual(started, [0, 1, 2, 3, 4, 5])
      assert.strictEqual(permits.waiters, 0)
    })
  )

  it.effect("a waiter interrupted leaves the line; a holder that fails or is interrupted gives its permit back", () =>
    Effect.gen(function* () {
      const permits = new Permits(1)
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(permits.with(Deferred.await(gate)))
      yield* Effect.yieldNow()
      const quitter = yield* Effect.fork(permits.with(Effect.succeed("never")))
      const next = yield* Effect.fork(permits.with(Effect.succeed("served")))
      yield* Effect.yieldNow()
      assert.strictEqual(permits.waiters, 2)
      yield* Fiber.interrupt(quitter)
      assert.strictEqual(permits.waiters, 1)
      yield* Fiber.interrupt(holder)
      assert.strictEqual(yield* Fiber.join(next), "served")
      const failed = yield* Effect.exit(permits.with(Effect.fail("boom")))
      assert.isTrue(Exit.isFailure(failed))
      // Every permit is back: as many as there are run at once again.
      assert.strictEqual(yield* permits.with(Effect.succeed("again")), "again")
    })
  )

  it.effect("thousands waiting: each is served once, in order, and the line empties", () =>
    Effect.gen(function* () {
      const permits = new Permits(3)
      const order: Array<number> = []
      yield* Effect.forEach(
        Array.from({ length: 2_000 }, (_, i) => i),
        (i) =>
          permits.with(
            Effect.zipRight(
              Effect.yieldNow(),
              Effect.sync(() => order.push(i))
            )
          ),
        { concurrency: "unbounded", discard: true }
      )
      assert.strictEqual(order.length, 2_000)
      assert.strictEqual(new Set(order).size, 2_000)
      assert.strictEqual(permits.waiters, 0)
      // First come, first served: a waiter never finishes before one that queued earlier than the permits it waited for.
      for (let i = 3; i < order.length; i++) assert.isAtLeast(order[i]!, order[i - 3]!)
    })
  )
})
