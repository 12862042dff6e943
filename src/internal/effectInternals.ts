/**
 * Every use of effect's private internals, behind one seam.
 *
 * The dispatcher's hot path reads two things effect does not promise: the shape of the two commonest handler results
 * (`Effect.succeed` is an `Exit` with `_op: "Success"` and its `value`; `Effect.sync(thunk)` has `_op: "Sync"` and the
 * thunk in `effect_instruction_i0`), so that it can complete them without the run loop; and a fiber's own
 * `setFiberRefs`, which installs an actor's FiberRefs wholesale where `Effect.setFiberRefs` sets them one by one.
 *
 * Both are checked once, when this module loads, against the effect version actually installed: each shape is built
 * with the public API and read back. When a check fails (a future effect builds these differently), or when the
 * environment variable `TICKWORK_EFFECT_INTERNALS=public` asks for it, the seam uses public API only: every handler
 * effect goes through the run loop, and FiberRefs are installed with `Effect.setFiberRefs`. Behaviour is the same
 * either way; only speed differs (`test/internal/effectInternals.test.ts`, and the behaviour tests that `npm test`
 * runs again with the fallback forced).
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Runtime from "effect/Runtime"

/** An effect as effect 3.x builds the two primitives the fast path reads. */
interface Primitive {
  readonly _op: string
  readonly value: unknown
  readonly effect_instruction_i0: () => unknown
}

interface FiberWithRefs {
  setFiberRefs(refs: FiberRefs.FiberRefs): void
}

const PROBE = { probe: true }

/** No refs at all: a ref's value in it is the ref's initial value. */
const NONE = FiberRefs.empty()

/** True when `Effect.succeed` and `Effect.sync` are built as the fast path reads them. */
const primitivesAsExpected = (): boolean => {
  try {
    const succeeded = Effect.succeed(PROBE) as unknown as Primitive
    const synced = Effect.sync(() => PROBE) as unknown as Primitive
    const mapped = Effect.map(Effect.void, () => PROBE) as unknown as Primitive
    return (
      succeeded._op === "Success" &&
      succeeded.value === PROBE &&
      synced._op === "Sync" &&
      typeof synced.effect_instruction_i0 === "function" &&
      synced.effect_instruction_i0() === PROBE &&
      // anything else must not look like either
      mapped._op !== "Success" &&
      mapped._op !== "Sync"
    )
  } catch {
    return false
  }
}

/** True when a running fiber installs FiberRefs wholesale with `setFiberRefs`, as the fast path calls it. */
const setFiberRefsAsExpected = (): boolean => {
  try {
    const ref = FiberRef.unsafeMake<unknown>(undefined)
    const withProbe = Effect.runSync(Effect.locally(Effect.getFiberRefs, ref, PROBE))
    let seen: unknown
    Runtime.runFork(Runtime.defaultRuntime)(
      Effect.withFiberRuntime<void>((running) => {
        const own = running as unknown as Partial<FiberWithRefs>
        if (typeof own.setFiberRefs !== "function") return Effect.void
        own.setFiberRefs(withProbe)
        seen = running.getFiberRef(ref)
        return Effect.void
      }),
      { immediate: true }
    )
    return seen === PROBE
  } catch {
    return false
  }
}

const forcedPublic =
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.TICKWORK_EFFECT_INTERNALS ===
  "public"

/** Which path the seam took at load: `"internals"` (the fast path) or `"public"` (public API only). */
export const mode: "internals" | "public" =
  !forcedPublic && primitivesAsExpected() && setFiberRefsAsExpected() ? "internals" : "public"

const fast = mode === "internals"

/** What `completeNow` found: the effect's value when it is a plain value or `Effect.sync`, else `NOT_NOW`. */
export const NOT_NOW: unique symbol = Symbol("tickwork/NOT_NOW")

/**
 * The value of `effect` without the run loop, when it is a succeeded `Exit` or an `Effect.sync` (the thunk is called;
 * a throw propagates to the caller, as a defect of that effect). `NOT_NOW` for anything else, and always on the
 * public path.
 */
export const valueNow = (effect: Effect.Effect<unknown, unknown>): unknown => {
  if (!fast) return NOT_NOW
  const op = (effect as unknown as Primitive)._op
  if (op === "Success") return (effect as unknown as Primitive).value
  if (op === "Sync") return (effect as unknown as Primitive).effect_instruction_i0()
  return NOT_NOW
}

/**
 * `effect` to run on `fiber` with `refs` as its FiberRefs. On the fast path they are installed now, by the fiber's own
 * `setFiberRefs` (the caller runs on `fiber`), and `effect` is returned as is; on the public path the effect first
 * sets them with `Effect.setFiberRefs`, and resets the refs `refs` lacks to their initial values, which is what
 * reading a ref absent from `refs` gives.
 */
export const withFiberRefs = <A, E>(
  fiber: { getFiberRefs(): FiberRefs.FiberRefs },
  refs: FiberRefs.FiberRefs,
  effect: Effect.Effect<A, E>
): Effect.Effect<A, E> => {
  if (fast) {
    ;(fiber as unknown as FiberWithRefs).setFiberRefs(refs)
    return effect
  }
  return Effect.zipRight(
    Effect.flatMap(Effect.getFiberRefs, (current) => {
      const stale: Array<FiberRef.FiberRef<unknown>> = []
      for (const ref of current.locals.keys()) if (!refs.locals.has(ref)) stale.push(ref)
      return Effect.zipRight(
        Effect.forEach(stale, (ref) => FiberRef.set(ref, FiberRefs.getOrDefault(NONE, ref)), { discard: true }),
        Effect.setFiberRefs(refs)
      )
    }),
    effect
  )
}
