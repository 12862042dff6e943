/**
 * A grain timer: a tick that runs the grain's `onReceive` with the scheduled message.
 */
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { TimerInfo } from "../GrainTimers.js"
import * as QuartzCron from "../QuartzCron.js"
import type * as Timers from "../Timers.js"
import { FLAG_FREE, MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"

/** What a grain timer needs from its activation. */
export interface TimerOwner {
  readonly driver: TimerDriver
  offerTick(timer: GrainTimer, due: number, now: number): Effect.Effect<void> | undefined
  /** Runs `onReceive` for a delivered tick. */
  handleTick(timer: GrainTimer): Effect.Effect<void>
  /** Forgets a finished or cancelled timer. */
  forget(timer: GrainTimer): void
  /** A keep-alive tick counts as activity. */
  touch(): void
  /** The activation's actor path, once it has one: what the timeline and the testkit's counts name the grain by. */
  readonly path: string | undefined
}

export type Trigger =
  | { readonly _tag: "once"; readonly delay: number }
  | { readonly _tag: "interval"; readonly interval: number }
  | { readonly _tag: "cron"; readonly cron: QuartzCron.QuartzCron }

const KEEP_ALIVE = 1 << FLAG_FREE

export class GrainTimer extends MailboxTick {
  get kind() {
    return "grain_timer" as const
  }

  constructor(
    private readonly owner: TimerOwner,
    readonly reference: string,
    readonly message: unknown,
    readonly trigger: Trigger,
    keepAlive: boolean,
    registeredAt: number
  ) {
    super()
    if (keepAlive) this.flags |= KEEP_ALIVE
    this.registeredOffset = owner.driver.toOffset(registeredAt)
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: this.reference, owner: this.owner.path }
  }

  /** `registeredAt` as a small integer rather than epoch millis, which V8 would box (16 B per timer). */
  private readonly registeredOffset: number

  /** When the timer was registered; a dormant timer's first due time counts from here. */
  get registeredAt(): number {
    return this.owner.driver.fromOffset(this.registeredOffset)
  }

  // Kept in `flags`, above the tick's own bits (`active` among them): a field fewer per timer.
  get keepAlive(): boolean {
    return this.hasFlag(KEEP_ALIVE)
  }

  /** The first due time after `from` (registration for once/interval, now for cron), or undefined for never. */
  firstDue(now: number): number | undefined {
    switch (this.trigger._tag) {
      case "once":
        return Math.max(this.registeredAt + this.trigger.delay, now)
      case "interval":
        // Dormant while the grain activated: ticks that came due meanwhile are delivered once, right away.
        return Math.max(this.registeredAt + this.trigger.interval, now)
      case "cron":
        return Option.getOrUndefined(QuartzCron.next(this.trigger.cron, now))
    }
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = driver.dueOf(this)
    const trigger = this.trigger
    if (trigger._tag === "once") {
      this.finished = true
    } else {
      // Interval: a fixed cadence on the grid from registration. Cron: the next instant after now; instants
      // missed while the process stalled are not replayed.
      const next =
        trigger._tag === "interval"
          ? this.nextOnGrid(due, trigger.interval)
          : Option.getOrUndefined(QuartzCron.next(trigger.cron, Math.max(due, now)))
      if (next === undefined) this.finished = true
      else driver.schedule(this, next)
    }
    return this.owner.offerTick(this, due, now)
  }

  /** The first grid point (registration + k × interval) after `due`; `due + interval` when `due` is on the grid. */
  private nextOnGrid(due: number, interval: number): number {
    return this.registeredAt + (Math.floor((due - this.registeredAt) / interval) + 1) * interval
  }

  accept(): boolean {
    if (!this.active) return false
    if (this.finished && this.queued === 0) this.owner.forget(this)
    if (this.keepAlive) this.owner.touch()
    return true
  }

  undeliverable(): void {
    if (this.finished && this.queued === 0) this.owner.forget(this)
  }

  override handler(): Effect.Effect<unknown, unknown> {
    return this.owner.handleTick(this)
  }

  /** As `Schedules.timersOf` shows it. */
  inspect(): Timers.TimerInfo {
    const trigger = this.trigger
    return {
      key: this.reference,
      kind: this.kind,
      mode: trigger._tag,
      nextDue: this.info().nextDue,
      intervalMillis: trigger._tag === "interval" ? trigger.interval : undefined,
      expression: trigger._tag === "cron" ? trigger.cron.expression : undefined
    }
  }

  info(): TimerInfo {
    return {
      reference: this.reference,
      kind: this.trigger._tag,
      nextDue: this.isPending
        ? this.owner.driver.dueOf(this)
        : this.finished
          ? undefined
          : this.firstDue(this.registeredAt),
      keepAlive: this.keepAlive
    }
  }
}
