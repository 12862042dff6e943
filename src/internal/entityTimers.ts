/**
 * Entity timer entries: periodic timers that drop missed invocations, and one-shots that run an effect on the
 * entity's fiber. Both are `MailboxTick`s on the system's one timer engine: firing offers the entry itself into the
 * owner's mailbox, and the owner's loop runs `handler()` serialized with commands, under its supervision.
 *
 * Periodic timers keep a fixed grid from their first due time, and never have more than one invocation queued or
 * running. An invocation is *missed* when its due time passes while the previous one is still queued or running (a
 * slow handler) or while the driver could not run (a paused process: it wakes after several grid points at once).
 * Missed invocations are dropped, not caught up, and counted in `ticksDropped("missed")` as they are; one warning
 * with their count is logged by the next invocation that runs, or, if none runs, when the timer is cancelled or its
 * entity stops (sleep, restart, shutdown): a drop is never left unreported.
 * Keeping the grid (instead of re-arming from "now") preserves the randomized phase, so entities that were spread
 * out stay spread out after a pause.
 */
import * as Effect from "effect/Effect"
import { ticksDropped } from "../Metrics.js"
import type { Cancellable } from "../Scheduler.js"
import type { TimerInfo } from "../Timers.js"
import type { GameClockState, GameTimer } from "./entityGameClock.js"
import { cancelEffect } from "./scheduler.js"
import { FLAG_FREE, MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"

/** The one empty tag array metric updates pass (Effect caches a metric's hook per tag-array identity). */
const NO_TAGS: ReadonlyArray<never> = []

/** Where a tick goes when it fires; `ActorCell` is one. */
export interface TickTarget {
  offerTick(tick: MailboxTick, due: number, now: number): Effect.Effect<void> | undefined
}

/** The incarnation that owns a timer. */
export interface TimerOwner {
  readonly target: TickTarget
  readonly driver: TimerDriver
  /** The timer is done: forget it (it no longer counts as armed). */
  release(entry: EntityTimer): void
  /** One invocation of a command timer: the command handled on the owner's fiber. */
  runCommand(command: unknown): Effect.Effect<unknown, unknown>
  /** Invocations `entry` dropped as missed: told to the testkit's timeline, if one records the system. */
  noteMissed(entry: PeriodicEntry, count: number): void
  /** The owner's actor path, for warnings logged off its fiber. */
  readonly path: string
  /** Runs a warning from code outside a fiber (`unsafeCancel`), with the owner's services. */
  logDetached(warning: Effect.Effect<void>): void
}

/** What every entity timer supports. */
export interface EntityTimer {
  /** Disarms the timer because its owner stops; its queued tick, if any, becomes stale. */
  stop(): void
}

/**
 * The randomized first delay of a periodic timer: uniform over [interval/2, 3·interval/2), in whole milliseconds.
 * `u` is a draw from `Random.next`, in [0, 1).
 */
export const randomizedFirstDelay = (interval: number, u: number): number => {
  const low = Math.ceil(interval / 2)
  const span = Math.max(1, Math.ceil((interval * 3) / 2) - low)
  return low + Math.min(span - 1, Math.floor(u * span))
}

/** When missed invocations are reported: at the next run, or instead when no run follows. */
export type MissedReport = "run" | "cancelled" | "stopped"

const MISSED_WHEN: Record<MissedReport, string> = {
  run: "",
  cancelled: " before it was cancelled",
  stopped: " before its entity stopped"
}

/** Missed invocations are reported through this warning, with their count (they were counted as they were dropped). */
export const missedWarning = (name: string, dropped: number, when: MissedReport = "run"): Effect.Effect<void> =>
  Effect.logWarning(
    `periodic timer "${name}" dropped ${dropped} missed invocation${dropped === 1 ? "" : "s"}${MISSED_WHEN[when]} ` +
      "(the handler ran longer than the interval or the process was paused)"
  ).pipe(Effect.annotateLogs({ timer: name, dropped }))

const BUSY = 1 << FLAG_FREE

export class PeriodicEntry extends MailboxTick implements EntityTimer, Cancellable {
  get kind() {
    return "entity_timer" as const
  }
  override label(): TimerLabel {
    return { kind: this.kind, key: this.name, owner: this.owner.path }
  }

  /** As `Schedules.timersOf` shows it. */
  inspect(): TimerInfo {
    return {
      key: this.name,
      kind: this.kind,
      mode: "periodic",
      nextDue: this.isPending ? this.owner.driver.dueOf(this) : undefined,
      intervalMillis: this.interval,
      expression: undefined
    }
  }
  /** An invocation of this timer is queued or running (kept in `flags`, as `active` is by the tick). */
  get busy(): boolean {
    return this.hasFlag(BUSY)
  }
  set busy(on: boolean) {
    this.setFlag(BUSY, on)
  }
  /** Invocations dropped since the last one that ran. */
  missed = 0

  constructor(
    readonly owner: TimerOwner,
    readonly name: string,
    readonly interval: number,
    /** The command of a command timer (run through `owner.runCommand`); undefined for an effect timer. */
    readonly message: unknown,
    /** One invocation of an effect timer, re-evaluated on every tick; undefined for a command timer. */
    private readonly run: Effect.Effect<unknown, unknown> | undefined
  ) {
    super()
  }

  /** Arms the first invocation `firstDelay` from now. */
  start(firstDelay: number): this {
    this.owner.driver.schedule(this, this.owner.driver.now() + firstDelay)
    return this
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = driver.dueOf(this)
    // Grid points that passed while the driver could not run (a paused process) are dropped.
    const skipped = now - due >= this.interval ? Math.floor((now - due) / this.interval) : 0
    driver.schedule(this, due + (skipped + 1) * this.interval)
    const busy = this.busy
    const dropped = busy ? skipped + 1 : skipped
    if (dropped > 0) {
      this.missed += dropped
      ticksDropped("missed").unsafeUpdate(dropped, NO_TAGS)
      this.owner.noteMissed(this, dropped)
    }
    if (busy) return undefined
    this.busy = true
    return this.owner.target.offerTick(this, due, now)
  }

  accept(): boolean {
    return this.active
  }

  undeliverable(): void {
    this.busy = false
  }

  /** The invocations dropped since the last report; whoever takes them reports them. */
  takeMissed(): number {
    const missed = this.missed
    this.missed = 0
    return missed
  }

  override handler(): Effect.Effect<unknown, unknown> {
    const missed = this.takeMissed()
    const once = this.run ?? this.owner.runCommand(this.message)
    const run = missed === 0 ? once : Effect.zipRight(missedWarning(this.name, missed), once)
    // Built per invocation, not kept per timer: a pending timer is only its fields.
    return Effect.ensuring(
      run,
      Effect.sync(() => {
        this.busy = false
      })
    )
  }

  stop(): void {
    this.active = false
    this.owner.driver.cancel(this)
  }

  /** Cancels; the invocations dropped since the last run (to report), or undefined when it was not active. */
  private cancelNow(): number | undefined {
    if (!this.active) return undefined
    this.stop()
    this.owner.release(this)
    return this.takeMissed()
  }

  /** The warning for drops that no run will report, annotated with the actor (it may be logged off its fiber). */
  private cancelledWarning(missed: number): Effect.Effect<void> {
    return Effect.annotateLogs(missedWarning(this.name, missed, "cancelled"), "actor", this.owner.path)
  }

  unsafeCancel(): boolean {
    const missed = this.cancelNow()
    if (missed === undefined) return false
    if (missed > 0) this.owner.logDetached(this.cancelledWarning(missed))
    return true
  }

  // Getters rather than fields: a timer costs no effect objects until someone asks.
  get cancel(): Effect.Effect<boolean> {
    return Effect.suspend(() => {
      const missed = this.cancelNow()
      if (missed === undefined) return Effect.succeed(false)
      return missed === 0 ? Effect.succeed(true) : Effect.as(this.cancelledWarning(missed), true)
    })
  }

  get isCancelled(): Effect.Effect<boolean> {
    return Effect.sync(() => !this.active)
  }
}

enum OneShotState {
  /** Armed in the engine. */
  Pending = 0,
  /** In the owner's mailbox. */
  Queued = 1,
  /** Taken from the mailbox: the effect runs (or ran). */
  Started = 2,
  Cancelled = 3,
  /** Could not be queued (owner stopped, mailbox full). */
  Dropped = 4
}

/**
 * `scheduleExecuteOnActorContext`: runs an effect once on the owner's fiber. Cancellable until the effect starts. An
 * absolute one-shot (`deadline` in game time) is registered with its game clock and re-armed when time is skipped.
 */
export class OneShotEntry extends MailboxTick implements EntityTimer, Cancellable, GameTimer {
  get kind() {
    return "entity_timer" as const
  }
  readonly message = undefined
  private state = OneShotState.Pending

  constructor(
    readonly owner: TimerOwner,
    private readonly effect: Effect.Effect<unknown, unknown>,
    /** Game-time deadline (epoch millis) of an absolute one-shot; undefined for a delay. */
    readonly deadline: number | undefined,
    private readonly clock: GameClockState | undefined
  ) {
    super()
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: "one-shot", owner: this.owner.path }
  }

  /** As `Schedules.timersOf` shows it: a delay's one-shot is due on the engine, a deadline's at its game time. */
  inspect(): TimerInfo {
    return {
      key: "one-shot",
      kind: this.kind,
      mode: this.deadline === undefined ? "one-shot" : "deadline",
      nextDue: this.isPending ? this.owner.driver.dueOf(this) : undefined,
      intervalMillis: undefined,
      expression: undefined
    }
  }

  /**
   * Arms at `due` (engine time). A due time that is not in the future queues the effect at once, without a round trip
   * through the engine; the returned effect, if any, is the mailbox-full warning.
   */
  arm(due: number): Effect.Effect<void> | undefined {
    const driver = this.owner.driver
    const now = driver.now()
    if (due <= now) {
      this.finished = true
      this.state = OneShotState.Queued
      return this.owner.target.offerTick(this, now, now)
    }
    if (this.deadline !== undefined) this.clock?.timers.add(this)
    driver.schedule(this, due)
    return undefined
  }

  rearm(offsetMillis: number): void {
    if (this.state === OneShotState.Pending && this.deadline !== undefined) {
      this.owner.driver.schedule(this, this.deadline - offsetMillis)
    }
  }

  fire(now: number): Effect.Effect<void> | undefined {
    this.clock?.timers.delete(this)
    if (this.state !== OneShotState.Pending) return undefined
    this.finished = true
    this.state = OneShotState.Queued
    return this.owner.target.offerTick(this, this.owner.driver.dueOf(this), now)
  }

  accept(): boolean {
    if (this.state !== OneShotState.Queued) return false
    this.state = OneShotState.Started
    this.owner.release(this)
    return true
  }

  undeliverable(): void {
    if (this.state === OneShotState.Queued) this.state = OneShotState.Dropped
    this.owner.release(this)
  }

  override handler(): Effect.Effect<unknown, unknown> {
    return this.effect
  }

  stop(): void {
    if (this.state === OneShotState.Pending || this.state === OneShotState.Queued) this.state = OneShotState.Cancelled
    this.clock?.timers.delete(this)
    this.owner.driver.cancel(this)
  }

  unsafeCancel(): boolean {
    if (this.state !== OneShotState.Pending && this.state !== OneShotState.Queued) return false
    this.stop()
    this.owner.release(this)
    return true
  }

  get cancel(): Effect.Effect<boolean> {
    return cancelEffect(this)
  }

  get isCancelled(): Effect.Effect<boolean> {
    return Effect.sync(() => this.state === OneShotState.Cancelled)
  }
}
