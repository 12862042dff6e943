/**
 * A cluster cron instant read ahead of its time: the wait for the instant (`untilInstant`) and the transactions
 * begun ahead of it (`claimAhead`). The end-to-end behaviour (message early, execute at the instant, PostgreSQL's
 * lock held before it) is in conformance.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Option, TestClock } from "effect"
import { CLAIMS_AHEAD, claimAhead, untilInstant } from "../../src/cluster/internal/cron.js"

/** Fibers started with `start`, each recording the clock when it got through. */
const recorder = () => {
  const through: Array<[string, number]> = []
  const wait = (name: string, effect: Effect.Effect<void>) =>
    Effect.fork(
      Effect.zipRight(
        effect,
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => through.push([name, now])))
      )
    )
  return { through, wait }
}

describe("untilInstant", () => {
  it.effect("the waits for one instant share one sleep and end together at the instant, not before", () =>
    Effect.gen(function* () {
      const { through, wait } = recorder()
      for (const name of ["a", "b", "c"]) yield* wait(name, untilInstant(1_000))
      yield* wait("other", untilInstant(2_000))
      yield* Effect.yieldNow()
      // One sleep for the instant 1,000 (three waits) and one for 2,000.
      assert.strictEqual((yield* TestClock.sleeps()).length, 2)
      yield* TestClock.adjust(999)
      assert.deepStrictEqual(through, [])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(through, [
        ["a", 1_000],
        ["b", 1_000],
        ["c", 1_000]
      ])
      yield* TestClock.adjust(1_000)
      assert.deepStrictEqual(through.at(-1), ["other", 2_000])
    })
  )

  it.effect("an instant already due does not wait; one whose first waiter is interrupted is still waited for", () =>
    Effect.gen(function* () {
      const { through, wait } = recorder()
      yield* TestClock.setTime(500)
      yield* wait("due", untilInstant(500))
      yield* Effect.yieldNow()
      assert.deepStrictEqual(through, [["due", 500]])
      const first = yield* wait("first", untilInstant(1_000))
      yield* wait("second", untilInstant(1_000))
      yield* Effect.yieldNow()
      // The first waiter holds the sleep; interrupted, it opens the gate, and the second waits on by itself.
      yield* Fiber.interrupt(first)
      yield* Effect.yieldNow()
      assert.deepStrictEqual(through, [["due", 500]])
      yield* TestClock.adjust(499)
      assert.deepStrictEqual(through, [["due", 500]])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(through, [
        ["due", 500],
        ["second", 1_000]
      ])
    })
  )
})

describe("claimAhead", () => {
  it.effect(`at most ${CLAIMS_AHEAD} transactions of one client begin ahead; the others at the instant`, () =>
    Effect.gen(function* () {
      const { through, wait } = recorder()
      const client = {}
      const started: Array<number> = []
      // A transaction that notes when it began, then waits for the instant (as an instant's does after its claim).
      const transaction = Effect.zipRight(
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => started.push(now))),
        untilInstant(1_000)
      )
      yield* TestClock.setTime(950)
      for (let i = 0; i < CLAIMS_AHEAD + 2; i++) yield* wait(`t${i}`, claimAhead(client, 1_000, transaction))
      yield* Effect.yieldNow()
      assert.deepStrictEqual(
        started,
        Array.from({ length: CLAIMS_AHEAD }, () => 950)
      )
      // Without a client (SQLite), nothing begins ahead.
      const alone = yield* wait("sqlite", claimAhead(undefined, 1_000, transaction))
      yield* Effect.yieldNow()
      assert.strictEqual(started.length, CLAIMS_AHEAD)
      yield* TestClock.adjust(50)
      assert.deepStrictEqual(started, [
        ...Array.from({ length: CLAIMS_AHEAD }, () => 950),
        ...Array.from({ length: 3 }, () => 1_000)
      ])
      assert.strictEqual(through.length, CLAIMS_AHEAD + 3)
      assert.isTrue(Option.isSome(yield* Fiber.poll(alone)))
      // Those that ended gave their place back: the next instant's begin ahead again.
      started.length = 0
      yield* TestClock.setTime(1_950)
      const next = Effect.zipRight(
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => started.push(now))),
        untilInstant(2_000)
      )
      for (let i = 0; i < CLAIMS_AHEAD; i++) yield* wait(`n${i}`, claimAhead(client, 2_000, next))
      yield* Effect.yieldNow()
      assert.deepStrictEqual(
        started,
        Array.from({ length: CLAIMS_AHEAD }, () => 1_950)
      )
    })
  )
})
