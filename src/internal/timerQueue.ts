/**
 * The timer engine's data structure: timers in buckets (linked lists in insertion order), buckets in binary heaps.
 *
 * It is pure: it never reads a clock; the caller passes `now`. Two levels:
 * - **near**: one bucket per whole millisecond (a timer due at 1000.4 ms fires at 1001, the first whole millisecond at
 *   or after its due time), for every timer in the windows opened so far;
 * - **far**: one bucket per window of `WINDOW` milliseconds, for timers in later windows. A window is opened when
 *   time reaches it (`popDue`), or earlier and in steps (`openAhead`, which the driver calls before a window starts, so
 *   that sorting a million timers into milliseconds does not make the first of them late): its timers move to their
 *   millisecond buckets, oldest first, and later timers for that window go straight to the near level. Windows open
 *   earliest first, nothing fires while an earlier window is still closed, and a window being opened takes new timers
 *   at its end, so timers come out by due millisecond and equal deadlines in scheduling order.
 *
 * Scheduling is a map lookup and a link, cancelling an unlink, firing walks a list; only the first timer of a
 * millisecond or window pays a heap insert, O(log b) in the number of buckets. Against a binary heap of timers (one
 * heap entry per timer), draining 1M timers spread over one second went from ~1.2M to ~6M pops per second, and far-off
 * timers cost no bucket each (1M timers spread over ten minutes share ~600 windows).
 */
import { HeapEntry, TimerHeap } from "./timerHeap.js"

/** A link in a bucket's circular list: a timer, or the bucket itself as the list's head. */
interface Link {
  prev: Link | undefined
  next: Link | undefined
}

/** A timer as the queue sees it. Concrete timer kinds extend this class, so a timer is one allocation. */
export abstract class QueueEntry implements Link {
  /** Epoch millis at which the entry is due. */
  due = 0
  /** Neighbours in its bucket's list while pending; undefined otherwise. */
  prev: Link | undefined = undefined
  next: Link | undefined = undefined

  /** True while the entry waits in a queue. */
  get isPending(): boolean {
    return this.prev !== undefined
  }
}

/**
 * A bucket: the timers of one millisecond (near) or one window (far), oldest first, in a circular list whose head is
 * the bucket itself, so that a timer needs no field pointing at its bucket; `due` is the bucket's key.
 */
export class Bucket extends HeapEntry implements Link {
  prev: Link = this
  next: Link = this
  constructor(readonly level: Level) {
    super()
  }

  get isEmpty(): boolean {
    return this.next === this
  }
}

/** Milliseconds per far window. */
const WINDOW = 1024

/** The buckets of one level, by key and in a heap. */
class Level {
  readonly heap = new TimerHeap<Bucket>()
  readonly byKey = new Map<number, Bucket>()

  add(entry: QueueEntry, key: number): void {
    this.append(entry, this.bucket(key))
  }

  /** The bucket for `key`, made (and put in the heap) if there is none. */
  bucket(key: number): Bucket {
    let bucket = this.byKey.get(key)
    if (bucket === undefined) {
      bucket = new Bucket(this)
      this.byKey.set(key, bucket)
      this.heap.insert(bucket, key)
    }
    return bucket
  }

  /** Links `entry` last in `bucket`. */
  append(entry: QueueEntry, bucket: Bucket): void {
    const last = bucket.prev
    entry.prev = last
    entry.next = bucket
    last.next = entry
    bucket.prev = entry
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
  private readonly near = new Level()
  private readonly far = new Level()
  /** The last far window opened: timers up to its end go to the near level. */
  private openUntil = Number.NEGATIVE_INFINITY
  private count = 0
  /** The near bucket of each millisecond of the window being opened (`slotsWindow`), by offset in the window. */
  private readonly slots = new Array<Bucket | undefined>(WINDOW + 1)
  private slotsWindow = Number.NaN

  get size(): number {
    return this.count
  }

  /** Adds `entry` due at `due`; an entry that is already pending is moved (to the end of its new millisecond). */
  insert(entry: E, due: number): void {
    if (entry.prev !== undefined) this.unlink(entry)
    entry.due = due
    const millis = Math.ceil(due)
    const window = Math.floor(millis / WINDOW)
    if (window <= this.openUntil) this.near.add(entry, millis)
    else this.far.add(entry, window)
    this.count++
  }

  /** Removes `entry`; false when it was not pending. */
  remove(entry: E): boolean {
    if (entry.prev === undefined) return false
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
    const entry = bucket.next as E
    this.unlink(entry)
    return entry
  }

  /** The pending entries, earliest first (a copy). */
  toArray(): Array<E> {
    const all: Array<E> = []
    for (const level of [this.near, this.far]) {
      for (const bucket of level.heap.toArray().sort((a, b) => a.due - b.due)) {
        for (let link = bucket.next; link !== bucket; link = link.next!) all.push(link as E)
      }
    }
    return all
  }

  /** Removes every entry and returns them. */
  clear(): Array<E> {
    const all = this.toArray()
    for (const entry of all) {
      entry.prev = undefined
      entry.next = undefined
    }
    this.near.clear()
    this.far.clear()
    this.slotsWindow = Number.NaN
    this.count = 0
    return all
  }

  /**
   * Moves up to `budget` timers of the far window `bucket` to their milliseconds, oldest first; true when the window
   * is then fully open. The near bucket of each millisecond is remembered per window (`slots`), so a move costs no map
   * lookup: opening 1M timers went from ~210 to ~100 ms.
   */
  private open(bucket: Bucket, budget: number): boolean {
    const window = bucket.due
    if (this.slotsWindow !== window) {
      this.slots.fill(undefined)
      this.slotsWindow = window
    }
    const first = window * WINDOW
    let link = bucket.next
    while (link !== bucket && budget-- > 0) {
      const entry = link as QueueEntry
      link = entry.next!
      const slot = Math.ceil(entry.due) - first
      let near = this.slots[slot]
      // A remembered bucket that emptied (cancels) has left the heap: make a new one.
      if (near === undefined || near.index < 0) near = this.slots[slot] = this.near.bucket(first + slot)
      this.near.append(entry, near)
    }
    bucket.next = link
    link.prev = bucket
    if (link !== bucket) return false
    this.far.drop(bucket)
    this.openUntil = Math.max(this.openUntil, window)
    return true
  }

  /** Takes a pending entry out of its list; a bucket left empty leaves its level. */
  private unlink(entry: QueueEntry): void {
    const prev = entry.prev!
    const next = entry.next!
    prev.next = next
    next.prev = prev
    entry.prev = undefined
    entry.next = undefined
    this.count--
    if (prev === next && prev instanceof Bucket) prev.level.drop(prev)
  }
}
