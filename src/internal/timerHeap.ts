/**
 * An indexed binary min-heap; the timer queue (`timerQueue.ts`) keeps the buckets of each of its levels in one.
 *
 * It is pure: it never reads a clock; the caller passes `now`. Entries are ordered by (due, seq), where `seq` is the
 * insertion order, so equal keys come out in the order they were inserted. Each entry remembers its own index, which
 * makes `remove` O(log n) without searching and lets an entry know whether it is pending (`index >= 0`).
 */

/** An entry as the heap sees it (a bucket of the timer queue); subclasses add their payload, so it is one allocation. */
export abstract class HeapEntry {
  /** Epoch millis at which the entry is due. */
  due = 0
  /** Insertion order, the tie-breaker for equal `due`. */
  seq = 0
  /** Position in the heap; -1 when the entry is not pending. */
  index = -1
}

const before = (a: HeapEntry, b: HeapEntry): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq)

export class TimerHeap<E extends HeapEntry> {
  private readonly items: Array<E> = []
  private nextSeq = 0

  get size(): number {
    return this.items.length
  }

  /** Adds `entry` due at `due`; an entry that is already pending is moved. */
  insert(entry: E, due: number): void {
    if (entry.index >= 0) this.remove(entry)
    entry.due = due
    entry.seq = this.nextSeq++
    entry.index = this.items.length
    this.items.push(entry)
    this.up(entry.index)
  }

  /** Removes `entry`; false when it was not pending. */
  remove(entry: E): boolean {
    const i = entry.index
    if (i < 0 || this.items[i] !== entry) return false
    const last = this.items.pop()!
    entry.index = -1
    if (last !== entry) {
      this.items[i] = last
      last.index = i
      this.down(i)
      this.up(last.index)
    }
    return true
  }

  /** The earliest due time, or undefined when empty. */
  peekDue(): number | undefined {
    return this.items[0]?.due
  }

  /** The earliest entry, left in place. */
  peek(): E | undefined {
    return this.items[0]
  }

  /** Removes and returns the earliest entry if it is due at `now`. */
  popDue(now: number): E | undefined {
    const top = this.items[0]
    if (top === undefined || top.due > now) return undefined
    this.remove(top)
    return top
  }

  /** The pending entries, in no particular order (a copy). */
  toArray(): Array<E> {
    return this.items.slice()
  }

  /** Removes every entry and returns them. */
  clear(): Array<E> {
    const all = this.items.splice(0, this.items.length)
    for (const e of all) e.index = -1
    return all
  }

  private up(i: number): void {
    const items = this.items
    const e = items[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = items[p]!
      if (!before(e, parent)) break
      items[i] = parent
      parent.index = i
      i = p
    }
    items[i] = e
    e.index = i
  }

  private down(i: number): void {
    const items = this.items
    const n = items.length
    const e = items[i]!
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      let c = l
      if (r < n && before(items[r]!, items[l]!)) c = r
      const child = items[c]!
      if (!before(child, e)) break
      items[i] = child
      child.index = i
      i = c
    }
    items[i] = e
    e.index = i
  }
}
