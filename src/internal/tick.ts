/**
 * Ticks: timer entries that, when they fire, put themselves into an owner's mailbox.
 *
 * The entry is its own envelope: offering a tick allocates nothing, and the mailbox loop checks the entry on arrival
 * (`accept`) so a tick from a cancelled, replaced or dead-incarnation timer is dropped there (Akka's rule).
 */
import type * as Effect from "effect/Effect"
import type { ActorRef } from "../ActorRef.js"
import { recordDropped } from "./metrics.js"
import { TimerEntry, type TimerLabel } from "./timerDriver.js"

const FINISHED = 1
const ACTIVE = 2

/** The lowest of the two bits of `MailboxTick.flags` that belong to the timer kind (`ownBits`). */
export const FLAG_FREE = 2
const OWN_MASK = 3 << FLAG_FREE

/**
 * `queued` is kept in `flags` from this bit up. The count never exceeds the entries of one mailbox, at most
 * `MAX_ENTRIES` (2^27 - 1), so the packed field stays a positive small integer.
 */
const QUEUED_SHIFT = 4
const LOW_BITS = (1 << QUEUED_SHIFT) - 1

export abstract class MailboxTick extends TimerEntry {
  /**
   * Small state packed in one field, since a pending timer is mostly its fields: bit 0 is `finished`, bit 1 `active`,
   * the timer kind keeps its own in the two bits from `FLAG_FREE`, and `queued` takes the bits from `QUEUED_SHIFT`
   * up. One field instead of several saves 8 bytes each.
   */
  protected flags = ACTIVE
  /** Copies of this tick waiting in the mailbox (a fixed-rate backlog queues the same entry several times). */
  get queued(): number {
    return this.flags >>> QUEUED_SHIFT
  }
  set queued(count: number) {
    this.flags = (this.flags & LOW_BITS) | (count << QUEUED_SHIFT)
  }
  protected hasFlag(flag: number): boolean {
    return (this.flags & flag) !== 0
  }
  protected setFlag(flag: number, on: boolean): void {
    this.flags = on ? this.flags | flag : this.flags & ~flag
  }
  /** The two bits from `FLAG_FREE`: a small state of the timer kind's own (a scheduler entry's state, a mode). */
  protected get ownBits(): number {
    return (this.flags & OWN_MASK) >> FLAG_FREE
  }
  protected set ownBits(bits: number) {
    this.flags = (this.flags & ~OWN_MASK) | ((bits << FLAG_FREE) & OWN_MASK)
  }
  /** No further firing is planned: the entry is done once its queued copies are handled or dropped. */
  get finished(): boolean {
    return this.hasFlag(FINISHED)
  }
  set finished(value: boolean) {
    this.setFlag(FINISHED, value)
  }
  /**
   * The timer is armed; cleared when it is cancelled, replaced or its owner stops, so that its queued ticks are stale.
   * Timer kinds that track more states than armed and not (scheduler entries, entity one-shots) keep a state of their
   * own instead.
   */
  get active(): boolean {
    return this.hasFlag(ACTIVE)
  }
  set active(value: boolean) {
    this.setFlag(ACTIVE, value)
  }
  abstract readonly message: unknown
  /**
   * The kind's name, a metric tag (`Metrics.TimerKind` lists tickwork's own); subclasses implement it as a getter, so it
   * costs no slot in every timer record.
   */
  abstract readonly kind: string
  get sender(): ActorRef<any> | undefined {
    return undefined
  }
  /**
   * What handling this tick runs on the owner's fiber. Undefined (the default) hands `message` to the actor's
   * `receive`; timer kinds that run code of their own (entity one-shots, Spot timer handlers) return it here. A
   * failure goes through the owner's supervision like a failing `receive`.
   */
  handler(): Effect.Effect<unknown, unknown> | undefined {
    return undefined
  }
  override label(): TimerLabel {
    return { kind: this.kind, key: undefined, owner: undefined }
  }
  /** Firing faulted before a re-arm: no further firing is planned, and with nothing queued the tick is done. */
  override abandon(): void {
    this.finished = true
    if (this.queued === 0) this.undeliverable()
  }
  /** Called when a copy is taken from the mailbox; false drops it as stale. */
  abstract accept(): boolean
  /** Called when a copy could not be queued (full mailbox, stopped owner). */
  abstract undeliverable(): void
  /**
   * A tick whose owner has stopped will never be handled: a timer's tick is counted as dropped; a kind whose tick is a
   * message someone sent (a scheduled message) makes it a dead letter instead.
   */
  lost(_deadLetter: (message: unknown, sender: ActorRef<any> | undefined) => void): void {
    recordDropped("owner_stopped")
  }
}
