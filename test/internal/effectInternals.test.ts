import { assert, describe, it } from "@effect/vitest"
import { Effect, FiberRef } from "effect"
import { mode, NOT_NOW, valueNow, withFiberRefs } from "../../src/internal/effectInternals.js"

// `npm test` runs this file twice: once as is, once with TICKWORK_EFFECT_INTERNALS=public (with the behaviour tests).
const forced = process.env.TICKWORK_EFFECT_INTERNALS === "public"

describe("the seam around effect's internals", () => {
  it("takes the fast path on the tested effect version, and the public path when it is forced", () => {
    assert.strictEqual(mode, forced ? "public" : "internals")
  })

  it("completes values and Effect.sync on the fast path, and nothing on the public path", () => {
    const values = [valueNow(Effect.succeed(1)), valueNow(Effect.sync(() => 2)), valueNow(Effect.void)]
    assert.deepStrictEqual(values, forced ? [NOT_NOW, NOT_NOW, NOT_NOW] : [1, 2, undefined])
    // anything else is left to the run loop on both paths
    assert.strictEqual(valueNow(Effect.map(Effect.succeed(1), (n) => n + 1)), NOT_NOW)
    assert.strictEqual(valueNow(Effect.sleep("1 second")), NOT_NOW)
    assert.strictEqual(valueNow(Effect.fail("e")), NOT_NOW)
  })

  it.effect("installs FiberRefs wholesale on both paths: refs the target lacks read their initial value", () =>
    Effect.gen(function* () {
      const kept = FiberRef.unsafeMake("initial")
      const stale = FiberRef.unsafeMake("initial")
      const target = yield* Effect.locally(Effect.getFiberRefs, kept, "target's")
      const seen = yield* Effect.withFiberRuntime<readonly [string, string]>((fiber) =>
        withFiberRefs(fiber, target, Effect.all([FiberRef.get(kept), FiberRef.get(stale)]))
      ).pipe(Effect.locally(stale, "left over"))
      assert.deepStrictEqual(seen, ["target's", "initial"])
    })
  )
})
