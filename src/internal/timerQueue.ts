/**
 * The timer engine's data structure: timers in buckets (arrays in insertion order), buckets in binary heaps.
 *
 * It is pure: it never reads a clock; the caller passes `now`. Two levels:
 * - **near**: one bucket per whole millisecond (a timer due at 1000.4 ms fires at 1001, the first whole millisecond at
 *   or after its due time), for every timer in the windows opened so far;
 * - **far**: one bucket per window of `WINDOW` milliseconds, for timers in later windows. A window is opened when
 *   time reaches it (`popDue`), or earlier and in steps (`openAhead`, which the driver calls before a window starts, so
 *   that sorting a million timers into milliseconds does not make the first of them late): its timers move to their
 *   millisecond buckets, oldest first, and later timers for that window go straight to the near level. A window that
 *   starts within the driver's horizon and holds no far timer (nor does any before it) is opened as a timer is
 *   inserted into it, with nothing to move (`opensEmpty`): timers a few seconds ahead never go far. Windows open
 *   earliest first, nothing fires while an earlier window is still closed, and a window being opened takes new timers
 *   at its end, so timers come out by due millisecond and equal deadlines in scheduling order.
 *
 * Scheduling is a map lookup and a push, cancelling a map lookup and a hole (compacted once holes outnumber the
 * timers), firing walks an array; only the first timer of a millisecond or window pays a heap insert, O(log b) in the
 * number of buckets, where a binary heap of timers pays it per timer; far-off timers cost no bucket each (timers spread
 * over ten minutes share a window per second or so). Arrays rather than linked lists let `popDue` read timers ahead
 * (see `prefetch`). docs/performance.md has the figures.
 */
import { HeapEntry, TimerHeap } from "./timerHeap.js"

/** A timer as the queue sees it. Concrete timer kinds extend this class, so a timer is one allocation. */
export abstract class QueueEntry {
  /**
   * The due time, as an offset from its queue's epoch (`TimerQueue.dueOf` reads it back). An epoch-millis field holds
   * a boxed double, an object of its own per timer (and one more object for every collection to move); an offset
   * within ~24 days of the epoch is a small integer, kept in the field itself. Exact either way: the epoch is a whole
   * number, so the offset of a due is representable and adds back to it. An offset beyond int32 (a due weeks away) is
   * stored as a double, which V8 then boxes: slower, never wrong.
   */
  dueOffset = 0
  /** Where the entry waits: its index in its bucket's items × 2 + its level (0 near, 1 far); -1 when not pending. */
  slot = -1

  /** True while the entry waits in a queue. */
  get isPending(): boolean {
    return this.slot >= 0
  }
}

/**
 * A bucket: the timers of one millisecond (near) or one window (far), oldest first, in an array. A cancelled timer
 * leaves a hole until the bucket is compacted; `due` is the bucket's key. An entry finds its bucket again from its
 * due time and level, so it needs no field pointing at it.
 */
export class Bucket extends HeapEntry {
  readonly items: Array<QueueEntry | undefined> = []
  /** Items before `head` have left (fired, or moved to the near level). */
  head = 0
  /** Entries pending in `items`. */
  live = 0
}

/** Milliseconds per far window. */
const WINDOW = 1024

/** Holes a bucket may hold beyond its pending entries before it is compacted (and never fewer than this). */
const MAX_HOLES = 32

/** Entries whose records are loaded together, ahead of popping them (see `popDue`). */
const PREFETCH = 8

/** The buckets of one level, by key and in a heap. */
class Level {
  readonly heap = new TimerHeap<Bucket>()
  readonly byKey = new Map<number, Bucket>()

  constructor(
    /** The level's bit in `QueueEntry.slot`. */
    readonly tag: 0 | 1
  ) {}

  /** The bucket for `key`, made (and put in the heap) if there is none. */
  bucket(key: number): Bucket {
    let bucket = this.byKey.get(key)
    if (bucket === undefined) {
      bucket = new Bucket()
      this.byKey.set(key, bucket)
      this.heap.insert(bucket, key)
    }
    return bucket
  }

  /** Puts `entry` last in `bucket`. */
  append(entry: QueueEntry, bucket: Bucket): void {
    entry.slot = bucket.items.length * 2 + this.tag
    bucket.items.push(entry)
    bucket.live++
  }

  /** Takes `entry` (pending in this level, due in `key`'s bucket) out, leaving a hole. */
  take(entry: QueueEntry, key: number): void {
    const bucket = this.byKey.get(key)!
    bucket.items[entry.slot >>> 1] = undefined
    entry.slot = -1
    if (--bucket.live === 0) this.drop(bucket)
    else if (bucket.items.length - bucket.head - bucket.live > Math.max(MAX_HOLES, bucket.live)) this.compact(bucket)
  }

  /** Closes the holes of `bucket` from its head on, in place, keeping the order. */
  private compact(bucket: Bucket): void {
    const items = bucket.items
    let n = 0
    for (let i = bucket.head; i < items.length; i++) {
      const entry = items[i]
      if (entry === undefined) continue
      entry.slot = n * 2 + this.tag
      items[n++] = entry
    }
    items.length = n
    bucket.head = 0
  }

  drop(bucket: Bucket): void {
    this.heap.remove(bucket)
    this.byKey.delete(bucket.due)
  }

  clear(): void {
    this.heap.clear()
    this.byKey.clear()
  }
}

export class TimerQueue<E extends QueueEntry> {
  /**
   * @param horizon Windows starting up to this time (epoch millis) may be opened as a timer is inserted, when no far
   *   timer is due in them or before them: there is nothing to move, so the timer goes straight to its millisecond.
   *   Read only when that could happen; the driver passes its clock's time plus `NEAR_HORIZON_MILLIS`, the default
   *   never opens a window at insert.
   */
  constructor(private readonly horizon: () => number = () => Number.NEGATIVE_INFINITY) {}

  private readonly near = new Level(0)
  private readonly far = new Level(1)
  /** The last far window opened: timers up to its end go to the near level. */
  private openUntil = Number.NEGATIVE_INFINITY
  private count = 0
  /** The near bucket of each millisecond of the window being opened (`slotsWindow`), by offset in the window. */
  private readonly slots = new Array<Bucket | undefined>(WINDOW)
  private slotsWindow = Number.NaN
  /** Where `popDue` puts what it reads ahead, so that the reads are kept. */
  prefetched = 0

  get size(): number {
    return this.count
  }

  /**
   * The due time of the first entry this queue was given: its entries keep theirs as an offset from it. Per queue, so
   * per engine: a system on `TestClock` (near 1970) and a live one in the same process each keep small offsets.
   */
  private epoch: number | undefined = undefined

  /** Epoch millis as an offset from this queue's epoch, which the first finite value sets (see `dueOffset`). */
  toOffset(millis: number): number {
    if (this.epoch === undefined && Number.isFinite(millis)) this.epoch = Math.floor(millis)
    const offset = millis - (this.epoch ?? 0)
    // `| 0` makes the int32 V8 keeps in the field; a difference of two doubles would be stored as a double
    return offset === (offset | 0) ? offset | 0 : offset
  }

  /** The epoch millis of an offset made by `toOffset`. */
  fromOffset(offset: number): number {
    return offset + (this.epoch ?? 0)
  }

  /** When `entry` is (or was last) due, in epoch millis. */
  dueOf(entry: QueueEntry): number {
    return entry.dueOffset + (this.epoch ?? 0)
  }

  /** Adds `entry` due at `due`; an entry that is already pending is moved (to the end of its new millisecond). */
  insert(entry: E, due: number): void {
    if (entry.slot >= 0) this.unlink(entry)
    entry.dueOffset = this.toOffset(due)
    const millis = Math.ceil(due)
    const window = Math.floor(millis / WINDOW)
    if (window > this.openUntil && this.opensEmpty(window)) this.openUntil = window
    if (window <= this.openUntil) this.near.append(entry, this.near.bucket(millis))
    else this.far.append(entry, this.far.bucket(window))
    this.count++
  }

  /** Removes `entry`; false when it was not pending. */
  remove(entry: E): boolean {
    if (entry.slot < 0) return false
    this.unlink(entry)
    return true
  }

  /**
   * A lower bound of the earliest due time: the earliest near millisecond, or the first millisecond of the earliest
   * window not opened yet when that is sooner (a driver waking then finds the window opened by `popDue` and asks again).
   * Undefined when empty. Windows open only when the caller's time reaches them (or `openAhead` opens them), so timers
   * far ahead never sit in per-millisecond buckets.
   */
  peekDue(): number | undefined {
    const near = this.near.heap.peekDue()
    const window = this.nextWindowStart()
    return near === undefined || (window !== undefined && window < near) ? window : near
  }

  /**
   * The whole millisecond the earliest pending entry fires at, exactly: the entries of a far window are read (the
   * testkit's `advanceToNext`; the driver never calls it).
   */
  earliestDue(): number | undefined {
    const near = this.near.heap.peekDue()
    const window = this.far.heap.peek()
    if (window === undefined || (near !== undefined && near <= window.due * WINDOW)) return near
    let earliest = near ?? Number.POSITIVE_INFINITY
    for (let i = window.head; i < window.items.length; i++) {
      const entry = window.items[i]
      if (entry !== undefined) earliest = Math.min(earliest, Math.ceil(this.dueOf(entry)))
    }
    return earliest
  }

  /** The first millisecond of the earliest window not fully opened; undefined when there is none. */
  nextWindowStart(): number | undefined {
    const window = this.far.heap.peekDue()
    return window === undefined ? undefined : window * WINDOW
  }

  /**
   * Opens the earliest far window ahead of its time, moving at most `budget` of its timers to their milliseconds; true
   * when it is fully open (or there was none). A window opened in steps keeps taking new timers at its end until it is
   * fully open, so equal deadlines keep their scheduling order, and `popDue` finishes opening it when its time comes.
   */
  openAhead(budget: number): boolean {
    const bucket = this.far.heap.peek()
    return bucket === undefined || this.open(bucket, budget)
  }

  /** Removes and returns the earliest entry if its millisecond has come at `now`. */
  popDue(now: number): E | undefined {
    let window = this.far.heap.peek()
    while (window !== undefined && window.due * WINDOW <= now) {
      this.open(window, Number.POSITIVE_INFINITY)
      window = this.far.heap.peek()
    }
    const bucket = this.near.heap.peek()
    if (bucket === undefined || bucket.due > now) return undefined
    const items = bucket.items
    let head = bucket.head
    let entry = items[head]
    while (entry === undefined) entry = items[++head]
    items[head++] = undefined
    bucket.head = head
    entry.slot = -1
    this.count--
    if (--bucket.live === 0) this.near.drop(bucket)
    else if (head % PREFETCH === 0) this.prefetch(items, head + PREFETCH)
    return entry as E
  }

  /**
   * Reads the records of the `PREFETCH` entries from `from` on. A bucket's timers lie scattered in memory (they were
   * made in scheduling order, not in due order), so the first touch of each is a cache miss; these reads do not depend
   * on each other, so the CPU waits for them together instead of once per timer (a linked list would make each read
   * wait for the one before).
   */
  private prefetch(items: ReadonlyArray<QueueEntry | undefined>, from: number): void {
    let sum = 0
    const end = Math.min(from + PREFETCH, items.length)
    for (let i = from; i < end; i++) sum += items[i]?.slot ?? 0
    this.prefetched = sum
  }

  /** The pending entries, earliest first (a copy). */
  toArray(): Array<E> {
    const all: Array<E> = []
    for (const level of [this.near, this.far]) {
      for (const bucket of level.heap.toArray().sort((a, b) => a.due - b.due)) {
        for (let i = bucket.head; i < bucket.items.length; i++) {
          const entry = bucket.items[i]
          if (entry !== undefined) all.push(entry as E)
        }
      }
    }
    return all
  }

  /** Removes every entry and returns them. */
  clear(): Array<E> {
    const all = this.toArray()
    for (const entry of all) entry.slot = -1
    this.near.clear()
    this.far.clear()
    this.slotsWindow = Number.NaN
    this.count = 0
    return all
  }

  /**
   * Moves up to `budget` timers of the far window `bucket` to their milliseconds, oldest first; true when the window
   * is then fully open. The near bucket of each millisecond is remembered per window (`slots`), so a move costs no map
   * lookup.
   */
  private open(bucket: Bucket, budget: number): boolean {
    const window = bucket.due
    if (this.slotsWindow !== window) {
      this.slots.fill(undefined)
      this.slotsWindow = window
    }
    const first = window * WINDOW
    const items = bucket.items
    let i = bucket.head
    while (bucket.live > 0 && budget > 0) {
      const entry = items[i]
      items[i++] = undefined
      if (entry === undefined) continue
      budget--
      bucket.live--
      const slot = Math.ceil(this.dueOf(entry)) - first
      let near = this.slots[slot]
      // A remembered bucket that emptied (cancels) has left the heap: make a new one.
      if (near === undefined || near.index < 0) near = this.slots[slot] = this.near.bucket(first + slot)
      this.near.append(entry, near)
    }
    bucket.head = i
    if (bucket.live > 0) return false
    this.far.drop(bucket)
    this.openUntil = Math.max(this.openUntil, window)
    return true
  }

  /**
   * True when `window` and every window before it that is not open yet hold no far timer, and it starts within the
   * horizon: it can be marked open without moving anything. Timers scheduled a few seconds ahead then never pass
   * through the far level, so the window need not be opened later (a move that would be spent after a stall, in the
   * overdue drain, or ahead of a burst).
   */
  private opensEmpty(window: number): boolean {
    const far = this.far.heap.peek()
    return (far === undefined || far.due > window) && window * WINDOW <= this.horizon()
  }

  /** Takes a pending entry out of its bucket; a bucket left empty leaves its level. */
  private unlink(entry: QueueEntry): void {
    const millis = Math.ceil(this.dueOf(entry))
    if ((entry.slot & 1) === 0) this.near.take(entry, millis)
    else this.far.take(entry, Math.floor(millis / WINDOW))
    this.count--
  }
}
