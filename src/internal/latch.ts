/**
 * A latch released once, that costs one field until somebody waits for it. A `Deferred` is several objects in V8 (an
 * object literal of its own shape, a `commit` closure, a ref and a list), which every grain activation and entity paid
 * for a latch that is rarely awaited.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"

export class Latch {
  /** Undefined: not released, nobody waits; a Deferred: not released, awaited; true: released. */
  private state: Deferred.Deferred<void> | true | undefined = undefined

  /** Completes once `release` has been called (at once when it already has). */
  get await(): Effect.Effect<void> {
    const state = this.state
    if (state === true) return Effect.void
    return Deferred.await(state ?? (this.state = Deferred.unsafeMake<void>(FiberId.none)))
  }

  /** Releases the latch; later calls do nothing. */
  release(): void {
    const state = this.state
    this.state = true
    if (state !== undefined && state !== true) Deferred.unsafeDone(state, Effect.void)
  }
}
