/**
 * The one fiber that drives an ActorSystem's timers.
 *
 * It sleeps through Effect's `Clock` until the nearest deadline in the heap, raced with a wake-up that `schedule`
 * triggers when an earlier timer arrives. Under `TestClock` the sleep is virtual, so tests drive every timer kind by
 * adjusting the clock. A timer is a record (`TimerEntry`), never a fiber: firing one is a method call that offers a
 * tick to a mailbox or forks a task, so a slow consumer never stalls the driver.
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HeapEntry, TimerHeap } from "./timerHeap.js"

/** A timer kind: what happens when its deadline passes. */
export abstract class TimerEntry extends HeapEntry {
  /**
   * Called by the driver with the driver's `now` (>= `due`). It may re-arm itself through `driver.schedule`. It returns
   * an effect only when firing needs one (a `Schedule` step, a log line); the common path allocates nothing.
   */
  abstract fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined
}

/** Counters kept by the driver; plain numbers so the hot path pays no effect per tick. */
export interface DriverStats {
  fired: number
}

export class TimerDriver {
  readonly heap = new TimerHeap<TimerEntry>()
  readonly stats: DriverStats = { fired: 0 }
  /** The due time the driver sleeps toward; -Infinity while it is awake and will look at the heap anyway. */
  private plannedWake = Number.NEGATIVE_INFINITY
  private wakeup: ((effect: Effect.Effect<void>) => void) | undefined = undefined
  private wakeRequested = false
  private closed = false

  constructor(
    readonly clock: Clock.Clock,
    /** Called after each turn with the number of armed timers (feeds the active-timers gauge). */
    private readonly onTurn: (size: number) => void = () => {}
  ) {}

  /** The clock's time in epoch millis. */
  now(): number {
    return this.clock.unsafeCurrentTimeMillis()
  }

  get size(): number {
    return this.heap.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Arms (or re-arms) `entry` at `due`. A due time in the past fires on the driver's next turn. */
  schedule(entry: TimerEntry, due: number): void {
    if (this.closed) return
    this.heap.insert(entry, due)
    if (due < this.plannedWake) this.requestWake()
  }

  /** Disarms `entry`; false when it was not pending. O(log n). */
  cancel(entry: TimerEntry): boolean {
    return this.heap.remove(entry)
  }

  /** Stops accepting timers and drops every pending one. */
  close(): void {
    this.closed = true
    this.heap.clear()
    this.onTurn(0)
  }

  private requestWake(): void {
    this.plannedWake = Number.NEGATIVE_INFINITY
    const wake = this.wakeup
    if (wake !== undefined) {
      this.wakeup = undefined
      wake(Effect.void)
    } else {
      this.wakeRequested = true
    }
  }

  private readonly awaitWake: Effect.Effect<void> = Effect.async<void>((resume) => {
    if (this.wakeRequested) {
      this.wakeRequested = false
      resume(Effect.void)
      return
    }
    this.wakeup = resume
    return Effect.sync(() => {
      if (this.wakeup === resume) this.wakeup = undefined
    })
  })

  /** Fires everything due at `now`, in (due, seq) order. Periodic entries re-armed at or before `now` fire again. */
  private fireDue(now: number): Effect.Effect<void> | undefined {
    let entry: TimerEntry | undefined
    while ((entry = this.heap.popDue(now)) !== undefined) {
      this.stats.fired++
      const more = entry.fire(now, this)
      if (more !== undefined) {
        // Rare path: finish this entry's effect, then continue with the rest of the due entries.
        return Effect.flatMap(more, () => this.fireDue(now) ?? Effect.void)
      }
    }
    return undefined
  }

  /** The driver loop; fork it once per system. */
  readonly run: Effect.Effect<never> = Effect.suspend(() => {
    const turn: Effect.Effect<void> = Effect.suspend(() => {
      this.plannedWake = Number.NEGATIVE_INFINITY
      this.wakeRequested = false
      const now = this.now()
      const fired = this.fireDue(now)
      return fired === undefined
        ? this.sleep()
        : Effect.zipRight(
            fired,
            Effect.suspend(() => this.sleep())
          )
    })
    return Effect.forever(turn)
  })

  private sleep(): Effect.Effect<void> {
    this.onTurn(this.heap.size)
    const next = this.heap.peekDue()
    if (next === undefined) {
      this.plannedWake = Number.POSITIVE_INFINITY
      return this.awaitWake
    }
    const delay = next - this.now()
    if (delay <= 0) return Effect.void
    this.plannedWake = next
    return Effect.raceFirst(this.clock.sleep(Duration.millis(delay)), this.awaitWake)
  }
}
