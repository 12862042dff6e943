/**
 * The timer engine's data structure: timers in buckets (linked lists in insertion order), buckets in binary heaps.
 *
 * It is pure: it never reads a clock; the caller passes `now`. Two levels:
 * - **near**: one bucket per whole millisecond (a timer due at 1000.4 ms fires at 1001, the first whole millisecond at
 *   or after its due time), for every timer in the windows opened so far;
 * - **far**: one bucket per window of `WINDOW` milliseconds, for timers in later windows. When the near level runs
 *   empty, the earliest far bucket is opened: its timers move to their millisecond buckets, in the order they were
 *   scheduled, and later timers for that window go straight to the near level. Every near timer therefore precedes
 *   every far timer, and equal deadlines come out in scheduling order.
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
    let bucket = this.byKey.get(key)
    if (bucket === undefined) {
      bucket = new Bucket(this)
      this.byKey.set(key, bucket)
      this.heap.insert(bucket, key)
    }
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
   * The earliest due millisecond; or, while every timer is in a far window that has not opened yet, that window's
   * first millisecond (a driver waking then finds the window opened by `popDue` and asks again). Undefined when empty.
   * Windows open only when the caller's time reaches them, so timers far ahead never sit in per-millisecond buckets.
   */
  peekDue(): number | undefined {
    const near = this.near.heap.peekDue()
    if (near !== undefined) return near
    const window = this.far.heap.peekDue()
    return window === undefined ? undefined : window * WINDOW
  }

  /** Removes and returns the earliest entry if its millisecond has come at `now`. */
  popDue(now: number): E | undefined {
    if (this.near.heap.size === 0) {
      const window = this.far.heap.peekDue()
      if (window === undefined || window * WINDOW > now) return undefined
      this.openNext()
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
    this.count = 0
    return all
  }

  /** Moves the earliest far window's timers to their milliseconds, in scheduling order. */
  private openNext(): void {
    const bucket = this.far.heap.peek()
    if (bucket === undefined) return
    this.far.drop(bucket)
    this.openUntil = bucket.due
    let link = bucket.next
    while (link !== bucket) {
      const entry = link as QueueEntry
      link = entry.next!
      this.near.add(entry, Math.ceil(entry.due))
    }
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
