/**
 * The fibers that drive an ActorSystem's timers.
 *
 * The primary fiber sleeps through Effect's `Clock` until the nearest deadline in the queue, fires what is due, and
 * sleeps again: one plain `Clock.sleep` per turn, no race and no fork, so a turn is cheap. Under `TestClock` the sleep
 * is virtual, so tests drive every timer kind by adjusting the clock.
 *
 * A timer that arrives earlier than the primary's planned wake-up gets an "early" fiber that sleeps until it, fires
 * what is due, and keeps going only while something comes due before the primary wakes. Early inserts are rare (the
 * common re-arm of a periodic timer happens inside a turn and needs no wake-up), so early fibers are too. With an
 * empty queue the primary parks on a resume callback that the next `schedule` calls.
 *
 * A timer is a record (`TimerEntry`), never a fiber: firing one is a method call that offers a tick to a mailbox or
 * forks a task, so a slow consumer never stalls the driver. A turn also fires what comes due while it runs, for up to
 * `SLICE_MILLIS`; when it is still behind after that, or after a large batch, the driver yields to the event loop
 * (`Clock.sleep(0)`, a macrotask on the live clock) so Node's own timers and I/O keep running.
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import { QueueEntry, TimerQueue } from "./timerQueue.js"

/** What a fault report says of the timer that caused it. */
export interface TimerLabel {
  /** The timer kind (a metric tag: `actor_timer`, `scheduler_message`, ...). */
  readonly kind: string
  /** The timer's key, reference or name, where it has one. */
  readonly key: string | undefined
  /** The path of the actor that owns it or that it targets, where there is one. */
  readonly owner: string | undefined
}

/** A timer kind: what happens when its deadline passes. */
export abstract class TimerEntry extends QueueEntry {
  /**
   * Called by the driver with the driver's `now` (>= `due`). It may re-arm itself through `driver.schedule`. It returns
   * an effect only when firing needs one (a `Schedule` step, a log line); the common path allocates nothing. A throw
   * (or a failure of the returned effect) is this entry's fault alone: the driver reports it and goes on.
   */
  abstract fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined

  /** Names the timer in a fault report. */
  label(): TimerLabel {
    return { kind: "timer", key: undefined, owner: undefined }
  }

  /**
   * Firing faulted before the entry was re-armed, so it will not fire again: settle its owner's books (a one-shot is
   * done, a timer whose next due time could not be computed ends).
   */
  abandon(): void {}
}

/** Reports a fault of one entry (it is logged, counted and published by the system); the effect never fails. */
export type FaultReporter = (entry: TimerEntry, cause: Cause.Cause<unknown>) => Effect.Effect<void>

const logFault: FaultReporter = (entry, cause) =>
  Effect.logError(`timer ${entry.label().kind} faulted while firing; the other timers go on`, cause)

/**
 * Watches the engine (the testkit's timeline): told of every arm, fire and cancel. Absent by default, and then the
 * engine pays one field read per operation.
 */
export interface EngineObserver {
  armed(entry: TimerEntry, due: number): void
  fired(entry: TimerEntry, now: number): void
  cancelled(entry: TimerEntry): void
}

/** Counters kept by the driver; plain numbers so the hot path pays no effect per tick. */
export interface DriverStats {
  fired: number
}

/** JS timers cannot sleep longer than this (Effect treats longer sleeps as infinite): sleep in steps. */
const MAX_SLEEP_MILLIS = 2 ** 31 - 1

/** Entries fired in one turn before the driver yields to the event loop. */
const BATCH = 50_000

/**
 * How long before a window of far timers starts the driver begins to open it: early enough that opening a window of a
 * million timers is done before the burst of the window before it (docs/performance.md, "Figures behind the engine's
 * constants").
 */
export const OPEN_AHEAD_MILLIS = 3_000

/**
 * How far ahead a window with no far timer in or before it is opened as a timer is inserted into it (`TimerQueue`'s
 * horizon): its timers then go straight to their milliseconds and are never moved, for the price of one bucket per
 * millisecond instead of one per window within the horizon.
 */
export const NEAR_HORIZON_MILLIS = 10_000

/** Timers moved per step of opening a window ahead of time, between yields to the event loop: a step stays short. */
const OPEN_STEP = 8_192

/**
 * How long a turn goes on firing what comes due while it runs, before it ends and the driver yields to the event loop
 * (checked between passes over what is due, so a pass that started in time may run past it, up to `BATCH` entries).
 * Yielding costs a millisecond or more (a zero sleep is a `setTimeout(0)` on the live clock), so a driver that yielded
 * whenever it fell behind would start each tick of a busy second late by that much.
 */
const SLICE_MILLIS = 5

/**
 * Entries fired before the drains they made ready are run (`afterFire`), within a turn: handling a tick soon after it
 * fired finds the timer's record still in the CPU cache.
 */
const FIRE_CHUNK = 1_024

export class TimerDriver {
  readonly queue = new TimerQueue<TimerEntry>(() => this.now() + NEAR_HORIZON_MILLIS)
  readonly stats: DriverStats = { fired: 0 }
  /** The due time the primary fiber sleeps toward; -Infinity while it is awake, +Infinity while it is parked. */
  private plannedWake = Number.NEGATIVE_INFINITY
  /** Due times early fibers sleep toward. */
  private readonly earlyTargets: Array<number> = []
  private readonly earlyFibers = new Set<Fiber.RuntimeFiber<void>>()
  private parked: ((effect: Effect.Effect<void>) => void) | undefined = undefined
  private wakeRequested = false
  private closed = false
  /**
   * True while a turn fires entries: a tick offered now is handled at once by an idle actor, or else run by
   * `afterFire` at the end of the chunk.
   */
  firing = false
  /** The testkit's timeline, when one watches this engine. */
  observer: EngineObserver | undefined = undefined
  /** The primary fiber's runtime: early fibers are forked with it, synchronously, from `schedule`. */
  private runtime: Runtime.Runtime<never> | undefined = undefined

  constructor(
    readonly clock: Clock.Clock,
    /** Called after each turn with the number of armed timers (feeds the active-timers gauge). */
    private readonly onTurn: (size: number) => void = () => {},
    /** Called after each batch of fired entries, still inside the turn: runs the drains the ticks made ready. */
    private readonly afterFire: () => void = () => {},
    /** Reports an entry whose firing threw or failed. */
    private readonly onFault: FaultReporter = logFault
  ) {}

  /** When `entry` is (or was last) due, in epoch millis. */
  dueOf(entry: QueueEntry): number {
    return this.queue.dueOf(entry)
  }

  /** Epoch millis as a small integer, as the engine keeps due times (for a time a timer keeps of its own). */
  toOffset(millis: number): number {
    return this.queue.toOffset(millis)
  }

  /** The epoch millis of an offset made by `toOffset`. */
  fromOffset(offset: number): number {
    return this.queue.fromOffset(offset)
  }

  /** The clock's time in epoch millis. */
  now(): number {
    return this.clock.unsafeCurrentTimeMillis()
  }

  get size(): number {
    return this.queue.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Arms (or re-arms) `entry` at `due`. A due time in the past fires on the driver's next turn. */
  schedule(entry: TimerEntry, due: number): void {
    if (this.closed) return
    this.queue.insert(entry, due)
    if (this.observer !== undefined) this.observer.armed(entry, due)
    // A timer in a window that is not open yet needs a driver fiber awake a while before the window, to open it.
    const start = this.queue.nextWindowStart()
    const wake = start === undefined ? due : Math.min(due, start - OPEN_AHEAD_MILLIS)
    if (wake >= this.plannedWake) return
    if (this.plannedWake === Number.POSITIVE_INFINITY) this.wakePrimary()
    else if (this.earlyTargets.every((target) => wake < target)) this.startEarly(wake)
  }

  /** Disarms `entry`; false when it was not pending. A map lookup, and a heap removal when its bucket empties. */
  cancel(entry: TimerEntry): boolean {
    const removed = this.queue.remove(entry)
    if (removed && this.observer !== undefined) this.observer.cancelled(entry)
    return removed
  }

  /** Stops accepting timers and drops every pending one; returns the early fibers to interrupt. */
  close(): ReadonlyArray<Fiber.RuntimeFiber<void>> {
    this.closed = true
    this.queue.clear()
    this.onTurn(0)
    return Array.from(this.earlyFibers)
  }

  private wakePrimary(): void {
    this.plannedWake = Number.NEGATIVE_INFINITY
    const parked = this.parked
    if (parked !== undefined) {
      this.parked = undefined
      parked(Effect.void)
    } else {
      this.wakeRequested = true
    }
  }

  private readonly park: Effect.Effect<void> = Effect.async<void>((resume) => {
    if (this.wakeRequested) {
      this.wakeRequested = false
      resume(Effect.void)
      return
    }
    this.parked = resume
    return Effect.sync(() => {
      if (this.parked === resume) this.parked = undefined
    })
  })

  /**
   * Fires everything due at `now`, in (due, seq) order, up to a batch, then what came due while it ran, up to the end of
   * the slice. Entries re-armed at or before the time they fire at fire too.
   */
  private fireDue(now: number, budget = BATCH, sliceEnd = now + SLICE_MILLIS): Effect.Effect<void> | undefined {
    let entry: TimerEntry | undefined
    this.firing = true
    for (;;) {
      let more: Effect.Effect<void> | undefined
      try {
        while (budget > 0 && (entry = this.queue.popDue(now)) !== undefined) {
          budget--
          if (++this.stats.fired % FIRE_CHUNK === 0) {
            this.endFiring()
            this.firing = true
          }
          if (this.observer !== undefined) this.observer.fired(entry, now)
          more = entry.fire(now, this)
          if (more !== undefined) break
        }
      } catch (defect) {
        // One entry's throw (a custom ActorRef's `unsafeTell`, a cron that threw) is that entry's fault alone.
        more = Effect.failCause(Cause.die(defect))
      }
      if (more !== undefined) {
        // Rare path: finish this entry's effect, then continue with the rest of the due entries.
        this.endFiring()
        const rest = budget
        return Effect.flatMap(this.guard(entry!, more), () => this.fireDue(now, rest, sliceEnd) ?? Effect.void)
      }
      // What came due while this turn ran is fired in it too, within the slice: a yield costs a millisecond or more.
      const fresh = budget > 0 ? this.now() : now
      if (fresh <= now || fresh >= sliceEnd) break
      now = fresh
    }
    this.endFiring()
    return undefined
  }

  private endFiring(): void {
    this.firing = false
    this.afterFire()
  }

  /**
   * Runs what firing `entry` left to do; a failure (not an interruption: that is the driver's own) is reported, and an
   * entry that was not re-armed before it failed is abandoned.
   */
  private guard(entry: TimerEntry, more: Effect.Effect<void>): Effect.Effect<void> {
    return Effect.catchAllCause(more, (cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      if (!entry.isPending) {
        try {
          entry.abandon()
        } catch (defect) {
          cause = Cause.sequential(cause, Cause.die(defect))
        }
      }
      return this.onFault(entry, cause)
    })
  }

  /** Sleeps `delay` ms through the clock; 0 still yields to the event loop on the live clock. */
  private sleepFor(delay: number): Effect.Effect<void> {
    return this.clock.sleep(Duration.millis(Math.min(Math.max(delay, 0), MAX_SLEEP_MILLIS)))
  }

  /** The primary loop; fork it once per system (and again if that fiber ever dies: it starts from the queue as is). */
  readonly run: Effect.Effect<never> = Effect.suspend(() => {
    const turn: Effect.Effect<void> = Effect.suspend(() => {
      this.plannedWake = Number.NEGATIVE_INFINITY
      this.wakeRequested = false
      const fired = this.fireDue(this.now())
      return fired === undefined
        ? this.rest()
        : Effect.zipRight(
            fired,
            Effect.suspend(() => this.rest())
          )
    })
    return Effect.flatMap(Effect.runtime<never>(), (runtime) => {
      // A fresh start (or a restart after the fiber died: the queue, and every pending timer in it, is kept).
      this.runtime = runtime
      this.plannedWake = Number.NEGATIVE_INFINITY
      this.parked = undefined
      this.wakeRequested = false
      this.firing = false
      return Effect.forever(turn)
    })
  })

  /**
   * Between two turns of the primary: park, sleep to the next due time, or just yield when already behind. A window of
   * far timers that starts within `OPEN_AHEAD_MILLIS` is opened here, a step per turn, so its timers are sorted
   * before they come due.
   */
  private rest(): Effect.Effect<void> {
    const size = this.queue.size
    this.onTurn(size)
    const now = this.now()
    const wake = this.nextWake(now)
    if (wake === undefined) {
      this.plannedWake = Number.POSITIVE_INFINITY
      return this.park
    }
    const delay = wake - now
    this.plannedWake = delay <= 0 ? Number.NEGATIVE_INFINITY : wake
    return this.sleepFor(delay)
  }

  /**
   * When a driver fiber must wake next: the earliest due time, or sooner to open a window ahead of time (now, when an
   * opening is under way: this takes one step of it). Undefined when nothing is armed.
   */
  private nextWake(now: number): number | undefined {
    const openAt = this.openAhead(now)
    const next = this.queue.peekDue()
    return next === undefined ? undefined : Math.min(next, openAt)
  }

  /** Takes one step of opening the next window if it starts soon; returns when the next step is due. */
  private openAhead(now: number): number {
    const start = this.queue.nextWindowStart()
    if (start === undefined) return Number.POSITIVE_INFINITY
    if (start - OPEN_AHEAD_MILLIS > now) return start - OPEN_AHEAD_MILLIS
    this.queue.openAhead(OPEN_STEP)
    const after = this.queue.nextWindowStart()
    return after === undefined ? Number.POSITIVE_INFINITY : Math.max(after - OPEN_AHEAD_MILLIS, now)
  }

  /**
   * An early fiber: sleeps to `target`, fires (and opens a window ahead, as the primary does), and goes on while
   * something is due before the primary wakes.
   */
  private startEarly(target: number): void {
    this.earlyTargets.push(target)
    let current = target
    const retarget = (next: number | undefined) => {
      const i = this.earlyTargets.indexOf(current)
      if (i >= 0) this.earlyTargets.splice(i, 1)
      if (next === undefined) return false
      current = next
      this.earlyTargets.push(next)
      return true
    }
    const loop: Effect.Effect<void> = Effect.suspend(() =>
      Effect.zipRight(
        this.sleepFor(current - this.now()),
        Effect.suspend(() => {
          const fired = this.fireDue(this.now()) ?? Effect.void
          return Effect.zipRight(
            fired,
            Effect.suspend(() => {
              const next = this.nextWake(this.now())
              // Hand over to the primary (or to an earlier early fiber) when it wakes first anyway.
              const mine =
                next !== undefined &&
                next < this.plannedWake &&
                this.earlyTargets.every((other) => other === current || next < other)
              return retarget(mine ? next : undefined) ? loop : Effect.void
            })
          )
        })
      )
    )
    if (this.runtime === undefined) {
      // The primary has not started yet; it will look at the queue when it does.
      retarget(undefined)
      return
    }
    // Not immediate: firing never happens inside `schedule`, only on a driver fiber of its own.
    const fiber = Runtime.runFork(this.runtime)(
      Effect.ensuring(
        loop,
        Effect.sync(() => retarget(undefined))
      ),
      {
        immediate: false
      }
    )
    this.earlyFibers.add(fiber)
    fiber.addObserver(() => this.earlyFibers.delete(fiber))
  }
}
