/**
 * An actor's mailbox: a ring buffer of user entries and a small list of system messages that jump the queue. It is a
 * plain structure: the owning cell queues its drain with the dispatcher when it offers to an idle actor (no
 * `Queue.take`, no parked fiber).
 *
 * Offering never suspends and never allocates beyond the buffer's growth: a tick is the timer record itself, a plain
 * message without a sender is stored as is.
 */

/** Returned by `poll` when nothing is queued (user messages may themselves be `undefined`). */
export const EMPTY: unique symbol = Symbol.for("tickwork/Mailbox/empty")

/**
 * Slots of a new buffer (a power of two). Most actors hold a message or two at a time, and an idle actor's buffer is
 * most of its mailbox: 16 slots cost ~100 B more per actor than 4; a busy actor's buffer doubles as it needs.
 */
const INITIAL_SLOTS = 4

/** An empty mailbox whose buffer grew past this many slots goes back to `INITIAL_SLOTS`. */
const SHRINK_ABOVE = 1024

export class Mailbox {
  private buffer: Array<unknown>
  private head = 0
  private length = 0
  /**
   * System messages waiting, oldest first; undefined while there are none, so that checking for them (on every tick an
   * idle actor is handed) reads a field of this object, not an array of its own: one cache miss fewer per tick.
   */
  private system: Array<unknown> | undefined = undefined

  /** `capacity` bounds user entries; `Infinity` for an unbounded mailbox. */
  constructor(readonly capacity: number) {
    this.buffer = new Array(INITIAL_SLOTS)
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
    return true
  }

  /** Adds a system message; never refused, handled before user entries. */
  offerSystem(message: unknown): void {
    if (this.system === undefined) this.system = [message]
    else this.system.push(message)
  }

  /** The next system message, else the next user entry, else `EMPTY`. */
  poll(): unknown {
    const system = this.system
    if (system === undefined) return this.pollUser()
    const message = system.shift()
    if (system.length === 0) this.system = undefined
    return message
  }

  /** The next user entry or `EMPTY`. */
  pollUser(): unknown {
    if (this.length === 0) return EMPTY
    const i = this.head
    const entry = this.buffer[i]
    this.buffer[i] = undefined
    this.head = (i + 1) & (this.buffer.length - 1)
    // A backlog grew the buffer: give the memory back once it has drained.
    if (--this.length === 0 && this.buffer.length > SHRINK_ABOVE) {
      this.buffer = new Array(INITIAL_SLOTS)
      this.head = 0
    }
    return entry
  }

  get hasSystemMessages(): boolean {
    return this.system !== undefined
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
