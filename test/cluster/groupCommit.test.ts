/**
 * Group commit (src/cluster/internal/groupCommit.ts), with a writer of its own: callers in flight together share
 * batches, a lone caller is written at once, a failed batch gives each caller its own item's answer, an interrupted
 * caller's item is never written, and closing the scope answers every caller.
 */
import { assert, describe, it } from "@effect/vitest"
import { Data, Effect, Exit, Fiber, Scope, TestClock } from "effect"
import * as GroupCommit from "../../src/cluster/internal/groupCommit.js"

class Refused extends Data.TaggedError("Refused")<{ readonly item: string; readonly why: string }> {}

/** A writer that takes `millis` of the clock per batch, records each batch, and refuses an item named "bad". */
const makeWriter = (options: { readonly millis?: number; readonly down?: () => boolean } = {}) => {
  const batches: Array<ReadonlyArray<string>> = []
  const write = (items: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      batches.push(items)
      if ((options.millis ?? 0) > 0) yield* Effect.sleep(options.millis!)
      if (options.down?.()) return yield* new Refused({ item: items.join(","), why: "down" })
      const bad = items.find((item) => item === "bad")
      if (bad !== undefined) return yield* new Refused({ item: bad, why: "bad item" })
      if (items.includes("defect")) return yield* Effect.die("writer defect")
      return items.map((item) => `${item}!`)
    })
  return { batches, write }
}

const closed = (when: "queued" | "inFlight") => new Refused({ item: "", why: `closed ${when}` })

/** Lets forked fibers run up to where they wait. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

describe("group commit", () => {
  it.scoped("a lone caller is written at once, alone, with no clock moving", () =>
    Effect.gen(function* () {
      const { batches, write } = makeWriter()
      const commits = yield* GroupCommit.make({ write, maxBatch: 100, closed })
      assert.strictEqual(yield* commits.submit("a"), "a!")
      assert.strictEqual(yield* commits.submit("b"), "b!")
      assert.deepStrictEqual(batches, [["a"], ["b"]])
    })
  )

  it.scoped("callers in flight together share batches: those queued during a write go in the next one", () =>
    Effect.gen(function* () {
      const { batches, write } = makeWriter({ millis: 10 })
      const commits = yield* GroupCommit.make({ write, maxBatch: 30, closed })
      const items = Array.from({ length: 100 }, (_, i) => `i${i}`)
      const firstCaller = yield* Effect.fork(commits.submit(items[0]!))
      yield* settle
      const fiber = yield* Effect.fork(Effect.forEach(items.slice(1), commits.submit, { concurrency: "unbounded" }))
      yield* settle
      // The first caller's batch is being written; the other 99 wait for it.
      assert.deepStrictEqual(batches, [["i0"]])
      for (let i = 0; i < 5; i++) {
        yield* TestClock.adjust(10)
        yield* settle
      }
      // Each caller gets its own result, in its order.
      assert.deepStrictEqual(
        [yield* Fiber.join(firstCaller), ...(yield* Fiber.join(fiber))],
        items.map((item) => `${item}!`)
      )
      // 1 + 99 in batches of at most 30, in queue order.
      assert.deepStrictEqual(
        batches.map((batch) => batch.length),
        [1, 30, 30, 30, 9]
      )
      assert.deepStrictEqual(batches.flat(), items)
    })
  )

  it.scoped("a batch that fails is written again item by item: only the bad item's caller fails", () =>
    Effect.gen(function* () {
      const { batches, write } = makeWriter({ millis: 10 })
      const commits = yield* GroupCommit.make({ write, maxBatch: 100, closed })
      const first = yield* Effect.fork(commits.submit("first"))
      yield* settle
      const items = ["a", "bad", "b", "defect", "c"]
      const fibers = yield* Effect.forEach(items, (item) => Effect.fork(Effect.exit(commits.submit(item))))
      for (let i = 0; i < 10; i++) {
        yield* TestClock.adjust(10)
        yield* settle
      }
      assert.strictEqual(yield* Fiber.join(first), "first!")
      const exits = yield* Effect.forEach(fibers, Fiber.join)
      assert.deepStrictEqual(exits[0], Exit.succeed("a!"))
      assert.deepStrictEqual(exits[1], Exit.fail(new Refused({ item: "bad", why: "bad item" })))
      assert.deepStrictEqual(exits[2], Exit.succeed("b!"))
      assert.isTrue(Exit.isFailure(exits[3]!) && Exit.isFailure(exits[3]) && exits[3].cause._tag === "Die")
      assert.deepStrictEqual(exits[4], Exit.succeed("c!"))
      assert.deepStrictEqual(batches, [["first"], items, ["a"], ["bad"], ["b"], ["defect"], ["c"]])
    })
  )

  it.scoped("storage down: each caller gets its own typed error", () =>
    Effect.gen(function* () {
      let down = false
      const { write } = makeWriter({ millis: 10, down: () => down })
      const commits = yield* GroupCommit.make({ write, maxBatch: 100, closed })
      down = true
      const fibers = yield* Effect.forEach(["a", "b", "c"], (item) => Effect.fork(Effect.either(commits.submit(item))))
      for (let i = 0; i < 10; i++) {
        yield* TestClock.adjust(10)
        yield* settle
      }
      const answers = yield* Effect.forEach(fibers, Fiber.join)
      assert.deepStrictEqual(
        answers.map((answer) => (answer._tag === "Left" ? `${answer.left._tag}:${answer.left.item}` : "written")),
        ["Refused:a", "Refused:b", "Refused:c"]
      )
      // Up again: the worker goes on.
      down = false
      const again = yield* Effect.fork(commits.submit("d"))
      yield* TestClock.adjust(10)
      assert.strictEqual(yield* Fiber.join(again), "d!")
    })
  )

  it.scoped("an interrupted caller's item still queued is never written; the worker goes on with the others", () =>
    Effect.gen(function* () {
      const { batches, write } = makeWriter({ millis: 10 })
      const commits = yield* GroupCommit.make({ write, maxBatch: 100, closed })
      const inFlight = yield* Effect.fork(commits.submit("in-flight"))
      yield* settle
      const queued = yield* Effect.fork(commits.submit("queued"))
      const kept = yield* Effect.fork(commits.submit("kept"))
      yield* settle
      // One interrupted while its batch is written (the write goes on), one while queued (taken out).
      yield* Fiber.interrupt(inFlight)
      yield* Fiber.interrupt(queued)
      yield* TestClock.adjust(10)
      yield* settle
      yield* TestClock.adjust(10)
      assert.strictEqual(yield* Fiber.join(kept), "kept!")
      assert.deepStrictEqual(batches, [["in-flight"], ["kept"]])
      // Still serving.
      const later = yield* Effect.fork(commits.submit("later"))
      yield* TestClock.adjust(10)
      assert.strictEqual(yield* Fiber.join(later), "later!")
    })
  )

  it.effect("closing the scope answers every caller, in flight or queued, and refuses new ones", () =>
    Effect.gen(function* () {
      const { batches, write } = makeWriter({ millis: 10 })
      const scope = yield* Scope.make()
      const commits = yield* GroupCommit.make({ write, maxBatch: 100, closed }).pipe(Scope.extend(scope))
      const inFlight = yield* Effect.fork(Effect.either(commits.submit("a")))
      yield* settle
      const queued = yield* Effect.forEach(["b", "c"], (item) => Effect.fork(Effect.either(commits.submit(item))))
      yield* settle
      // The clock never moves: the batch in flight would never end by itself.
      yield* Scope.close(scope, Exit.void)
      const why = (answer: { _tag: "Left"; left: Refused } | { _tag: "Right"; right: string }) =>
        answer._tag === "Left" ? answer.left.why : answer.right
      assert.strictEqual(why(yield* Fiber.join(inFlight)), "closed inFlight")
      for (const fiber of queued) assert.strictEqual(why(yield* Fiber.join(fiber)), "closed queued")
      assert.strictEqual(why(yield* Effect.either(commits.submit("d"))), "closed queued")
      assert.deepStrictEqual(batches, [["a"]])
    })
  )
})
