import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, FiberRefs } from "effect"
import { Dispatcher, type Drainable } from "../../src/internal/dispatcher.js"

/** A drainable that hands out `items` one by one, or throws from `next` when `broken`. */
class Fake implements Drainable {
  readonly handled: Array<unknown> = []
  abandoned: Cause.Cause<unknown> | undefined = undefined
  constructor(
    readonly items: Array<Effect.Effect<unknown, unknown>>,
    readonly broken = false
  ) {}
  abandon(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    this.abandoned = cause
    return Effect.void
  }
  enter(): boolean {
    return true
  }
  fiberRefsOn(): FiberRefs.FiberRefs {
    return FiberRefs.empty()
  }
  next(): Effect.Effect<unknown, unknown> | undefined {
    if (this.broken) throw new Error("the drain's machinery is broken")
    return this.items.shift()
  }
  succeeded(value: unknown): void {
    this.handled.push(value)
  }
  failed(): Effect.Effect<void> {
    this.handled.push("failed")
    return Effect.void
  }
}

describe("Dispatcher", () => {
  it("a throw that escapes one drain's machinery abandons that drain alone; the batch goes on", () => {
    const dispatcher = new Dispatcher()
    const before = new Fake([Effect.succeed(1), Effect.succeed(2)])
    const broken = new Fake([], true)
    const after = new Fake([Effect.succeed(3), Effect.sync(() => 4), Effect.fail("boom")])
    dispatcher.enqueue(before, true)
    dispatcher.enqueue(broken, true)
    dispatcher.enqueue(after, true)
    dispatcher.flush()
    assert.deepStrictEqual(before.handled, [1, 2])
    assert.isDefined(broken.abandoned)
    assert.include(String(Cause.squash(broken.abandoned!)), "the drain's machinery is broken")
    assert.deepStrictEqual(after.handled, [3, 4, "failed"])
    // and the dispatcher still works afterwards
    const later = new Fake([Effect.succeed(5)])
    dispatcher.enqueue(later, true)
    dispatcher.flush()
    assert.deepStrictEqual(later.handled, [5])
  })
})
