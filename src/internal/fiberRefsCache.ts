/**
 * The FiberRefs of the actors that drained last, direct-mapped by the actor's serial number.
 *
 * An actor's handlers run with FiberRefs of its own (its spawner's services and its `actor` log annotation). Held by
 * every actor, they would be a large share of an idle actor; made for every drain that runs an effect, a noticeable
 * share of a short drain (docs/performance.md). This cache keeps them for the actors that drained last, for a bounded
 * memory: at most
 * `SLOTS` FiberRefs, whatever the number of actors. A slot holds a serial number, not the actor, so a stopped actor is
 * not kept alive by it; its FiberRefs go when the slot is taken.
 */
import type * as FiberRefs from "effect/FiberRefs"

/** A power of two, so a slot is a mask away; it bounds the cache's memory whatever the number of actors. */
const SLOTS = 1024

export class FiberRefsCache {
  private readonly serials = new Float64Array(SLOTS).fill(-1)
  private readonly refs: Array<FiberRefs.FiberRefs | undefined> = new Array(SLOTS).fill(undefined)
  private nextSerial = 0

  /** A serial number for a new actor: unique within the system. */
  serial(): number {
    return this.nextSerial++
  }

  /** The FiberRefs kept for `serial`, if its slot still holds them. */
  get(serial: number): FiberRefs.FiberRefs | undefined {
    const slot = serial & (SLOTS - 1)
    return this.serials[slot] === serial ? this.refs[slot] : undefined
  }

  set(serial: number, refs: FiberRefs.FiberRefs): void {
    const slot = serial & (SLOTS - 1)
    this.serials[slot] = serial
    this.refs[slot] = refs
  }
}
