import { assert, describe, it } from "@effect/vitest"
import { FiberRefs } from "effect"
import { FiberRefsCache } from "../../src/internal/fiberRefsCache.js"

describe("FiberRefsCache", () => {
  it("gives each actor a serial of its own, and keeps what was set for it", () => {
    const cache = new FiberRefsCache()
    const a = cache.serial()
    const b = cache.serial()
    assert.notStrictEqual(a, b)
    assert.isUndefined(cache.get(a), "nothing kept before a set")
    const refs = FiberRefs.empty()
    cache.set(a, refs)
    assert.strictEqual(cache.get(a), refs)
    assert.isUndefined(cache.get(b), "a set for one actor answers for no other")
  })

  it("forgets an actor whose slot another takes (1,024 slots), and never answers with the other's", () => {
    const cache = new FiberRefsCache()
    const serials = Array.from({ length: 1_025 }, () => cache.serial())
    const first = FiberRefs.empty()
    const last = FiberRefs.empty()
    cache.set(serials[0]!, first)
    cache.set(serials[1_024]!, last)
    assert.isUndefined(cache.get(serials[0]!), "the first actor's slot went to the 1,025th")
    assert.strictEqual(cache.get(serials[1_024]!), last)
    cache.set(serials[0]!, first)
    assert.isUndefined(cache.get(serials[1_024]!))
    assert.strictEqual(cache.get(serials[0]!), first)
  })
})
