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
 * Slots of a new buffer (a power of two). Most actors hold a message or two at a time; a busy actor's buffer doubles
 * as it needs.
 */
const INITIAL_SLOTS = 4

/**
 * The most user entries any mailbox holds, an unbounded one included (a larger capacity means this): 2^27 - 1. A fast
 * array cannot hold more anyway (V8 stops with a fatal "invalid size" error growing one past ~2^27 elements). It keeps
 * the limit a small integer (`Infinity` is a double, which V8 boxes in an object of its own per mailbox), and a
 * tick's count of copies waiting in its mailbox (`MailboxTick.queued`) never exceeds it, so the count fits in the bits
 * it is packed in.
 */
export const MAX_ENTRIES = 2 ** 27 - 1

export class Mailbox {
  /**
   * Made by the first offer to an empty mailbox and dropped when the mailbox empties: an idle actor holds no buffer
   * (most of an idle mailbox), and one that drained a backlog gives the memory back. An actor told
   * one message at a time makes a small array per message, as a linked mailbox makes a node per message.
   */
  private buffer: Array<unknown> | undefined = undefined
  private head = 0
  private length = 0
  /**
   * System messages waiting, oldest first; undefined while there are none, so that checking for them (on every tick an
   * idle actor is handed) reads a field of this object, not an array of its own: one cache miss fewer per tick.
   */
  private system: Array<unknown> | undefined = undefined

  /** The most user entries held: `capacity`, at most `MAX_ENTRIES`. */
  private readonly limit: number

  /** `capacity` bounds user entries; `Infinity` for an unbounded mailbox. */
  constructor(capacity: number) {
    this.limit = Math.min(capacity, MAX_ENTRIES)
  }

  /** The bound on user entries; `Infinity` for an unbounded mailbox (or a capacity of `MAX_ENTRIES` and up). */
  get capacity(): number {
    return this.limit === MAX_ENTRIES ? Number.POSITIVE_INFINITY : this.limit
  }

  get size(): number {
    return this.length
  }

  get isFull(): boolean {
    return this.length >= this.limit
  }

  /** Adds a user entry; false when the mailbox is bounded and full. */
  offer(entry: unknown): boolean {
    if (this.length >= this.limit) return false
    let buffer = this.buffer
    if (buffer === undefined) buffer = this.buffer = new Array(INITIAL_SLOTS)
    else if (this.length === buffer.length) buffer = this.grow(buffer)
    buffer[(this.head + this.length) & (buffer.length - 1)] = entry
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
    const buffer = this.buffer!
    const i = this.head
    const entry = buffer[i]
    if (--this.length === 0) {
      this.buffer = undefined
      this.head = 0
    } else {
      buffer[i] = undefined
      this.head = (i + 1) & (buffer.length - 1)
    }
    return entry
  }

  get hasSystemMessages(): boolean {
    return this.system !== undefined
  }

  private grow(old: Array<unknown>): Array<unknown> {
    // Capacity stays a power of two so that indexing is a mask.
    const next = new Array<unknown>(old.length * 2)
    for (let i = 0; i < this.length; i++) next[i] = old[(this.head + i) & (old.length - 1)]
    this.buffer = next
    this.head = 0
    return next
  }
}
