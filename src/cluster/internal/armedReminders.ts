/**
 * The reminders a runner's dispatcher holds armed (`reminderDispatch.ts`): each one due within the window, found by
 * its generation and waiting in due order, or handed to its grain.
 *
 * They are held as columns (an arena), not as one object each: slot i of every column is one reminder, and the slots
 * in use are 0 to `size - 1` (taking one out moves the last into its place). A dispatcher can hold a whole page of a
 * backlog and every reminder its runner wrote within the window, and per reminder an object, a map entry and its three
 * strings cost more than the reminder's own characters; docs/performance.md has the figures. So:
 *
 * - the reminder's generation, grain key and name are one flat string (one string header instead of three), split
 *   again when the reminder is handed over;
 * - its grain kind is a number (the kinds' names are held once);
 * - its due time, push order and state are numbers in typed arrays;
 * - it is found by its generation through an open-addressing table of slot numbers (`index`), not a `Map` (whose key
 *   would be a string of its own);
 * - the due order is a heap of slot numbers (`SlotHeap`).
 *
 * The columns double when full and halve when a quarter full, so a backlog's burst is given back once it is
 * delivered.
 *
 * @internal
 */
import type { DueRow } from "./reminderSql.js"
import { SlotHeap } from "./slotHeap.js"

/** The fewest slots the columns keep. */
const MIN_CAPACITY = 64

/** `nexts` of a reminder waiting in the due order. */
const WAITING = -1

/**
 * The reminder's generation, key and name in one flat string. `join` writes the characters into one new string; `+`
 * would make a rope (V8's `ConsString`: a header and two pointers above the parts, which stay alive under it).
 */
const identityOf = (row: DueRow): string => [row.generation, row.key, row.name].join("")

/** FNV-1a of the first `length` characters of `s`, mixed so that its low bits differ for close strings. */
const hashOf = (s: string, length: number): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

export class ArmedReminders {
  private capacity = MIN_CAPACITY
  /** Each reminder's generation, grain key and name, in one string. */
  private readonly identities: Array<string> = []
  /** Where the key starts in the identity (the generation's length). */
  private keyAts = new Int32Array(MIN_CAPACITY)
  /** Where the name starts in the identity. */
  private nameAts = new Int32Array(MIN_CAPACITY)
  /** The grain kind, as its place in `kinds`. */
  private kindIds = new Int32Array(MIN_CAPACITY)
  /** The occurrence armed (or being handed over): its due time. */
  private dues = new Float64Array(MIN_CAPACITY)
  /** When it was put in the due order: the order of reminders due together (a scan's order, the oldest first). */
  private seqs = new Float64Array(MIN_CAPACITY)
  /**
   * `WAITING` while in the due order; once handed to its grain, the due time of the occurrence after it armed
   * meanwhile (0 for none yet), armed when the hand-over ends.
   */
  private nexts = new Float64Array(MIN_CAPACITY)
  /**
   * Slot + 1 of each reminder, at the first free place from its generation's hash on (linear probing), 0 where free;
   * twice as many places as slots, so a search ends soon.
   */
  private index = new Int32Array(2 * MIN_CAPACITY)
  private readonly kinds: Array<string> = []
  private readonly kindIdOf = new Map<string, number>()
  private pushed = 0
  private readonly order = new SlotHeap(
    (a, b) => this.dues[a]! < this.dues[b]! || (this.dues[a] === this.dues[b] && this.seqs[a]! < this.seqs[b]!),
    MIN_CAPACITY
  )

  /** How many reminders are held: the slots 0 to `size - 1`. */
  get size(): number {
    return this.identities.length
  }

  /** The slot of the reminder of `generation`, or -1. */
  find(generation: string): number {
    const mask = this.index.length - 1
    for (let i = hashOf(generation, generation.length) & mask; ; i = (i + 1) & mask) {
      const slot = this.index[i]! - 1
      if (slot < 0) return -1
      if (this.keyAts[slot] === generation.length && this.identities[slot]!.startsWith(generation)) return slot
    }
  }

  /** Holds `row` (its generation not held yet), waiting for its due time. */
  add(row: DueRow): void {
    if (this.size === this.capacity) this.resize(2 * this.capacity)
    const slot = this.size
    this.identities.push(identityOf(row))
    this.keyAts[slot] = row.generation.length
    this.nameAts[slot] = row.generation.length + row.key.length
    let kind = this.kindIdOf.get(row.kind)
    if (kind === undefined) {
      kind = this.kinds.push(row.kind) - 1
      this.kindIdOf.set(row.kind, kind)
    }
    this.kindIds[slot] = kind
    this.indexed(slot)
    this.wait(slot, row.due)
  }

  /** Takes out the reminder in `slot`; the last one moves into it. */
  remove(slot: number): void {
    this.order.remove(slot)
    this.unindexed(slot)
    const last = this.size - 1
    if (slot !== last) {
      this.index[this.placeOf(last)] = slot + 1
      this.identities[slot] = this.identities[last]!
      this.keyAts[slot] = this.keyAts[last]!
      this.nameAts[slot] = this.nameAts[last]!
      this.kindIds[slot] = this.kindIds[last]!
      this.dues[slot] = this.dues[last]!
      this.seqs[slot] = this.seqs[last]!
      this.nexts[slot] = this.nexts[last]!
      this.order.moved(last, slot)
    }
    this.identities.pop()
    if (this.capacity > MIN_CAPACITY && this.size <= this.capacity / 4) this.resize(this.capacity / 2)
  }

  /** The due time of the occurrence armed (or being handed over). */
  due(slot: number): number {
    return this.dues[slot]!
  }

  /** The reminder as a row: what its hand-over carries. */
  row(slot: number): DueRow {
    const identity = this.identities[slot]!
    const keyAt = this.keyAts[slot]!
    const nameAt = this.nameAts[slot]!
    return {
      kind: this.kinds[this.kindIds[slot]!]!,
      key: identity.slice(keyAt, nameAt),
      name: identity.slice(nameAt),
      generation: identity.slice(0, keyAt),
      due: this.dues[slot]!
    }
  }

  /** Puts the reminder (waiting or handed over) in the due order at `due`, after the others due then. */
  wait(slot: number, due: number): void {
    this.order.remove(slot)
    this.dues[slot] = due
    this.seqs[slot] = this.pushed++
    this.nexts[slot] = WAITING
    this.order.push(slot)
  }

  /** The earliest due time waited for, or undefined when none waits. */
  earliest(): number | undefined {
    const slot = this.order.top()
    return slot < 0 ? undefined : this.dues[slot]
  }

  /** The first reminder due by `now`, out of the due order (to be handed over or removed), or -1 when none is. */
  takeDue(now: number): number {
    const slot = this.order.top()
    if (slot < 0 || this.dues[slot]! > now) return -1
    this.order.remove(slot)
    return slot
  }

  /** The reminder is being handed to its grain: not in the due order until that ends. */
  handOver(slot: number): void {
    this.nexts[slot] = 0
  }

  handingOver(slot: number): boolean {
    return this.nexts[slot]! >= 0
  }

  /** Of a reminder being handed over: its occurrence after `due(slot)` armed meanwhile, 0 for none. */
  next(slot: number): number {
    return this.nexts[slot]!
  }

  /** Of a reminder being handed over: an occurrence after it, armed when the hand-over ends (the latest wins). */
  armNext(slot: number, due: number): void {
    if (due > this.nexts[slot]!) this.nexts[slot] = due
  }

  private home(slot: number): number {
    return hashOf(this.identities[slot]!, this.keyAts[slot]!) & (this.index.length - 1)
  }

  private indexed(slot: number): void {
    const mask = this.index.length - 1
    let i = this.home(slot)
    while (this.index[i] !== 0) i = (i + 1) & mask
    this.index[i] = slot + 1
  }

  /** Where `slot` is in the index. */
  private placeOf(slot: number): number {
    const mask = this.index.length - 1
    let i = this.home(slot)
    while (this.index[i] !== slot + 1) i = (i + 1) & mask
    return i
  }

  /** Takes `slot` out of the index, moving back what follows it so that no search stops short (Knuth's Algorithm R). */
  private unindexed(slot: number): void {
    const index = this.index
    const mask = index.length - 1
    let i = this.placeOf(slot)
    for (let j = (i + 1) & mask; index[j] !== 0; j = (j + 1) & mask) {
      const k = this.home(index[j]! - 1)
      // The entry at j may move to i unless its home lies cyclically in (i, j].
      if (i <= j ? i < k && k <= j : i < k || k <= j) continue
      index[i] = index[j]!
      i = j
    }
    index[i] = 0
  }

  private resize(capacity: number): void {
    const size = this.size
    const copy = <A extends Int32Array | Float64Array>(from: A, to: A): A => {
      to.set(from.subarray(0, size))
      return to
    }
    this.keyAts = copy(this.keyAts, new Int32Array(capacity))
    this.nameAts = copy(this.nameAts, new Int32Array(capacity))
    this.kindIds = copy(this.kindIds, new Int32Array(capacity))
    this.dues = copy(this.dues, new Float64Array(capacity))
    this.seqs = copy(this.seqs, new Float64Array(capacity))
    this.nexts = copy(this.nexts, new Float64Array(capacity))
    this.order.resize(capacity)
    this.capacity = capacity
    this.index = new Int32Array(2 * capacity)
    for (let slot = 0; slot < size; slot++) this.indexed(slot)
  }
}
