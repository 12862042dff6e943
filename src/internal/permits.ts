/**
 * A counting semaphore whose waiters are served first come, first served, one per released permit. Effect 3's
 * `Semaphore` wakes every waiter on each release (each checks the count again and queues itself anew), so with
 * thousands waiting every release costs thousands of fiber wake-ups: a runner recovering a backlog of durable
 * reminders spent most of its time collecting that garbage. Here a release hands its permit to the oldest waiter.
 */
import * as Effect from "effect/Effect"

export class Permits {
  private free: number
  /** Resumes of the fibers waiting for a permit, oldest first from `head`; undefined: served or gone. */
  private waiting: Array<(() => void) | undefined> = []
  private head = 0
  /** Slots dropped from the front of `waiting` so far: slot `s` is at index `s - offset`. */
  private offset = 0

  constructor(permits: number) {
    this.free = permits
  }

  /** How many fibers wait for a permit. */
  get waiters(): number {
    let n = 0
    for (let i = this.head; i < this.waiting.length; i++) if (this.waiting[i] !== undefined) n++
    return n
  }

  /** Runs `effect` holding one permit, waiting for it first when none is free; the permit is released however it ends. */
  readonly with = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(restore(this.take), Effect.ensuring(restore(effect), Effect.sync(this.release)))
    )

  private readonly take: Effect.Effect<void> = Effect.suspend(() => {
    if (this.free > 0) {
      this.free--
      return Effect.void
    }
    return Effect.async<void>((resume) => {
      let granted = false
      const slot = this.offset + this.waiting.length
      this.waiting.push(() => {
        granted = true
        resume(Effect.void)
      })
      // Interrupted while waiting: leave the queue (its slot is not served yet); interrupted as the permit came: give
      // the permit on.
      return Effect.sync(() => {
        if (granted) this.release()
        else this.waiting[slot - this.offset] = undefined
      })
    })
  })

  private readonly release = (): void => {
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head]
      this.waiting[this.head++] = undefined
      if (next !== undefined) {
        this.compact()
        next()
        return
      }
    }
    this.compact()
    this.free++
  }

  /** Drops the served slots at the front once they are most of the array. */
  private compact(): void {
    if (this.head === this.waiting.length) {
      this.offset += this.head
      this.waiting.length = 0
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.offset += this.head
      this.waiting.splice(0, this.head)
      this.head = 0
    }
  }
}
