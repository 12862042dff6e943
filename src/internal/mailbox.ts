/**
 * An actor's mailbox: a ring buffer of user entries, a small list of system messages that jump the queue, and one
 * parked resume callback instead of `Queue.take`.
 *
 * Offering never suspends and never allocates beyond the buffer's growth: a tick is the timer record itself, a plain
 * message without a sender is stored as is. Waking the owner costs one callback when it is parked, nothing otherwise.
 */
import * as Effect from "effect/Effect"

/** Returned by `poll` when nothing is queued (user messages may themselves be `undefined`). */
export const EMPTY: unique symbol = Symbol.for("tickwork/Mailbox/empty")

export class Mailbox {
  private buffer: Array<unknown>
  private head = 0
  private length = 0
  private system: Array<unknown> = []
  private parked: ((effect: Effect.Effect<void>) => void) | undefined = undefined

  /** `capacity` bounds user entries; `Infinity` for an unbounded mailbox. */
  constructor(readonly capacity: number) {
    this.buffer = new Array(16)
  }

  get size(): number {
    return this.length
  }

  get isFull(): boolean {
    return this.length >= this.capacity
  }

  /** Adds a user entry; false when the mailbox is bounded and full. */
  offer(entry: unknown): boolean {
    if (this.length >= this.capacity) return false
    if (this.length === this.buffer.length) this.grow()
    this.buffer[(this.head + this.length) & (this.buffer.length - 1)] = entry
    this.length++
    this.wake()
    return true
  }

  /** Adds a system message; never refused, handled before user entries. */
  offerSystem(message: unknown): void {
    this.system.push(message)
    this.wake()
  }

  /** The next system message, else the next user entry, else `EMPTY`. */
  poll(): unknown {
    if (this.system.length > 0) return this.system.shift()
    return this.pollUser()
  }

  /** The next user entry or `EMPTY`. */
  pollUser(): unknown {
    if (this.length === 0) return EMPTY
    const i = this.head
    const entry = this.buffer[i]
    this.buffer[i] = undefined
    this.head = (i + 1) & (this.buffer.length - 1)
    this.length--
    return entry
  }

  get hasSystemMessages(): boolean {
    return this.system.length > 0
  }

  /** Suspends until something is offered; returns at once if something already is. */
  readonly awaitMessage: Effect.Effect<void> = Effect.async<void>((resume) => {
    if (this.length > 0 || this.system.length > 0) {
      resume(Effect.void)
      return
    }
    this.parked = resume
    return Effect.sync(() => {
      if (this.parked === resume) this.parked = undefined
    })
  })

  private wake(): void {
    const parked = this.parked
    if (parked !== undefined) {
      this.parked = undefined
      parked(Effect.void)
    }
  }

  private grow(): void {
    // Capacity stays a power of two so that indexing is a mask.
    const old = this.buffer
    const next = new Array<unknown>(old.length * 2)
    for (let i = 0; i < this.length; i++) next[i] = old[(this.head + i) & (old.length - 1)]
    this.buffer = next
    this.head = 0
  }
}
