/**
 * `context.timers` in the cell: the actor timer kind and the cell's table of timers by key (Akka's
 * `TimerSchedulerImpl`). Starting a key that is in use replaces its timer; replacing or cancelling one makes its queued
 * ticks stale (`active` cleared), so they are dropped when dequeued.
 */
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Intervals from "effect/ScheduleIntervals"
import type { TimerInfo } from "../Timers.js"
import type { ActorCell } from "./actorCell.js"
import { Status } from "./cellProtocol.js"
import { scheduleDue } from "./duration.js"
import { MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"

export enum Mode {
  Single = 0,
  FixedDelay = 1,
  FixedRate = 2,
  Schedule = 3
}

/** A `context.timers` timer. Replacing or cancelling it sets `active = false`; its queued ticks are then stale. */
export class ActorTimer extends MailboxTick {
  get kind() {
    return "actor_timer" as const
  }
  /** Set only for `startTimerWithSchedule`: the schedule and its state. */
  scheduled: { readonly schedule: Schedule.Schedule<unknown>; state: unknown } | undefined

  constructor(
    readonly cell: ActorCell,
    readonly key: string,
    readonly message: unknown,
    mode: Mode,
    readonly interval: number,
    schedule: Schedule.Schedule<unknown> | undefined
  ) {
    super()
    this.ownBits = mode
    this.scheduled = schedule === undefined ? undefined : { schedule, state: schedule.initial }
  }

  get mode(): Mode {
    return this.ownBits
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: this.key, owner: this.cell.path }
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = driver.dueOf(this)
    switch (this.mode) {
      case Mode.Single:
        this.finished = true
        break
      case Mode.FixedDelay:
        driver.schedule(this, now + this.interval)
        break
      case Mode.FixedRate:
        driver.schedule(this, due + this.interval)
        break
      case Mode.Schedule:
        // The schedule is stepped before the tick is offered, so that the last tick is known to be the last when it
        // is handled (`isTimerActive` reads false in its handler, as for a single timer). A step that fails still
        // delivers this tick, then fails for the driver to report: the timer has no next time and ends.
        return Effect.matchCauseEffect(this.step(now, driver, true), {
          onSuccess: () => this.cell.offerTick(this, due, now) ?? Effect.void,
          onFailure: (cause) => {
            this.finished = true
            return Effect.zipRight(this.cell.offerTick(this, due, now) ?? Effect.void, Effect.failCause(cause))
          }
        })
    }
    return this.cell.offerTick(this, due, now)
  }

  /**
   * Asks the schedule for the next due time (never within the engine's resolution of a firing at `now`). A finished
   * schedule leaves the timer active until its last tick is handled; with no tick on its way, it ends at once.
   */
  step(now: number, driver: TimerDriver, firing: boolean): Effect.Effect<void> {
    const scheduled = this.scheduled!
    return Effect.map(scheduled.schedule.step(now, undefined, scheduled.state), ([state, , decision]) => {
      if (!this.active) return
      scheduled.state = state
      if (ScheduleDecision.isDone(decision)) {
        this.finished = true
        if (!firing && this.queued === 0) removeTimer(this.cell, this)
      } else {
        const start = Intervals.start(decision.intervals)
        driver.schedule(this, firing ? scheduleDue(start, now) : Math.max(start, now))
      }
    })
  }

  accept(): boolean {
    if (!this.active) return false
    if (this.finished && this.queued === 0) removeTimer(this.cell, this)
    return true
  }

  undeliverable(): void {
    if (this.finished && this.queued === 0) removeTimer(this.cell, this)
  }
}

const MODES = ["single", "fixed-delay", "fixed-rate", "schedule"] as const

/** The cell's keyed timers, in the order they were started, for inspection. */
export const keyedTimerInfos = (cell: ActorCell): ReadonlyArray<TimerInfo> =>
  Array.from(cell.timers?.values() ?? [], (timer) => ({
    key: timer.key,
    kind: timer.kind,
    mode: MODES[timer.mode],
    nextDue: timer.isPending ? cell.host.driver.dueOf(timer) : undefined,
    intervalMillis: timer.mode === Mode.FixedDelay || timer.mode === Mode.FixedRate ? timer.interval : undefined,
    expression: undefined
  }))

/** Starts (or replaces) the timer under `key`; undefined once the actor is stopping. */
export const startTimer = (
  cell: ActorCell,
  key: string,
  message: unknown,
  mode: Mode,
  firstDelay: number,
  interval: number,
  schedule?: Schedule.Schedule<unknown>
): ActorTimer | undefined => {
  if (cell.status >= Status.Stopping) return undefined
  const previous = cell.timers?.get(key)
  if (previous !== undefined) removeTimer(cell, previous)
  const timer = new ActorTimer(cell, key, message, mode, interval, schedule)
  ;(cell.timers ??= new Map()).set(key, timer)
  if (mode !== Mode.Schedule) cell.host.driver.schedule(timer, cell.host.driver.now() + firstDelay)
  return timer
}

/** Cancels `timer` and forgets it; its queued ticks become stale. */
export const removeTimer = (cell: ActorCell, timer: ActorTimer): void => {
  timer.active = false
  cell.host.driver.cancel(timer)
  if (cell.timers?.get(timer.key) === timer) cell.timers.delete(timer.key)
}

/** Cancels every keyed timer of the incarnation (stop, restart). */
export const cancelKeyedTimers = (cell: ActorCell): void => {
  if (cell.timers === undefined) return
  const driver = cell.host.driver
  for (const timer of cell.timers.values()) {
    timer.active = false
    driver.cancel(timer)
  }
  cell.timers = undefined
}
