/**
 * The timers an owner (a grain activation, an entity incarnation) holds, by key, in the order they were added.
 *
 * Most owners hold one timer, and a `Map` of one is two objects (its own and its hash table): a book keeps its first
 * timer in fields and makes the map for a second. A base class rather than a field of its own, which would cost another
 * object per owner. The first timer is kept in the fields only while it is the oldest: it goes there when the book is
 * empty, and every later timer goes to the map, so the fields then the map list the timers in the order they came.
 */
export class TimerBook<K, T> {
  private firstKey: K | undefined = undefined
  private first: T | undefined = undefined
  private later: Map<K, T> | undefined = undefined

  get timerCount(): number {
    return (this.first === undefined ? 0 : 1) + (this.later === undefined ? 0 : this.later.size)
  }

  getTimer(key: K): T | undefined {
    if (this.first !== undefined && this.firstKey === key) return this.first
    return this.later?.get(key)
  }

  /** Adds `timer` under `key`, or replaces the timer held under it (which keeps its place). */
  setTimer(key: K, timer: T): void {
    if (this.first !== undefined && this.firstKey === key) this.first = timer
    else if (this.first === undefined && (this.later === undefined || this.later.size === 0)) {
      this.firstKey = key
      this.first = timer
    } else (this.later ??= new Map()).set(key, timer)
  }

  deleteTimer(key: K): void {
    if (this.first !== undefined && this.firstKey === key) {
      this.first = undefined
      this.firstKey = undefined
    } else this.later?.delete(key)
  }

  /** The timers, oldest first (a copy: the caller may change the book meanwhile). */
  timerList(): Array<T> {
    const list: Array<T> = this.first === undefined ? [] : [this.first]
    if (this.later !== undefined) for (const timer of this.later.values()) list.push(timer)
    return list
  }

  clearTimers(): void {
    this.first = undefined
    this.firstKey = undefined
    this.later = undefined
  }
}
