/**
 * An indexed binary min-heap of slot numbers, in typed arrays: the order in which the reminder dispatcher's armed
 * reminders come due (`armedReminders.ts`, whose columns hold one reminder per slot).
 *
 * It holds no keys of its own: its owner says which of two slots comes first (`before`), so a reminder's due time is
 * stored once, in its owner's column, and the heap holds two integers a slot (its place in the heap, and the slot at
 * that place). Each slot is in it at most once and knows its place, so one is taken out or renumbered (its owner moved
 * it to another slot) in O(log n) without a search. Like `TimerHeap` (src/internal/timerHeap.ts), which orders objects.
 *
 * @internal
 */
export class SlotHeap {
  /** The slots in heap order, `count` of them. */
  private heap: Int32Array
  /** Each slot's index in `heap`, -1 when it is not in it. */
  private places: Int32Array
  private count = 0

  /** Slots run from 0 to `capacity - 1`; `before(a, b)` when slot a comes out before slot b. */
  constructor(
    private readonly before: (a: number, b: number) => boolean,
    capacity: number
  ) {
    this.heap = new Int32Array(capacity)
    this.places = new Int32Array(capacity).fill(-1)
  }

  /** Room for slots 0 to `capacity - 1`, at least every slot in it now. */
  resize(capacity: number): void {
    const heap = new Int32Array(capacity)
    heap.set(this.heap.subarray(0, this.count))
    const places = new Int32Array(capacity).fill(-1)
    places.set(this.places.subarray(0, Math.min(capacity, this.places.length)))
    this.heap = heap
    this.places = places
  }

  /** The first slot, or -1 when empty. */
  top(): number {
    return this.count > 0 ? this.heap[0]! : -1
  }

  /** Adds `slot` (not in it) in its place by `before`. */
  push(slot: number): void {
    this.up(this.count++, slot)
  }

  /** Takes `slot` out, if it is in: the last slot fills its place. */
  remove(slot: number): void {
    const i = this.places[slot]!
    if (i < 0) return
    this.places[slot] = -1
    const last = this.heap[--this.count]!
    if (last === slot) return
    this.down(i, last)
    this.up(this.places[last]!, last)
  }

  /** Slot `from` (in it or not) is now slot `to`, which was not in it. */
  moved(from: number, to: number): void {
    const i = this.places[from]!
    this.places[from] = -1
    this.places[to] = i
    if (i >= 0) this.heap[i] = to
  }

  private put(i: number, slot: number): void {
    this.heap[i] = slot
    this.places[slot] = i
  }

  /** Puts `slot` at index `i` or above it, moving down each parent it comes before. */
  private up(i: number, slot: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = this.heap[p]!
      if (!this.before(slot, parent)) break
      this.put(i, parent)
      i = p
    }
    this.put(i, slot)
  }

  /** Puts `slot` at index `i` or below it, moving up each child that comes before it. */
  private down(i: number, slot: number): void {
    const n = this.count
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      const c = r < n && this.before(this.heap[r]!, this.heap[l]!) ? r : l
      const child = this.heap[c]!
      if (!this.before(child, slot)) break
      this.put(i, child)
      i = c
    }
    this.put(i, slot)
  }
}
