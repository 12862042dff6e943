/**
 * A Spot timer: a timer-engine entry that is also its own mailbox tick (`MailboxTick`, kind `spot_timer`).
 *
 * At most one copy of a timer's tick is ever queued or running: the entry is armed at registration, fires once into
 * the Spot's mailbox, and is armed again only when the handler has ended (or when the tick could not be queued). The
 * overrun policy runs when the tick starts (`begin`): it compares the clock with the timer's grid and decides which
 * scheduled tick this delivery stands for and how many are dropped. So a fixed-rate timer keeps its grid however late
 * it runs, and the ticks that went by are counted, not queued.
 */
import type * as Effect from "effect/Effect"
import type { OverrunPolicy } from "../OverrunPolicy.js"
import * as Tick from "../Tick.js"
import { MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"

/** What a timer needs from its Spot. */
export interface SpotTimerHost {
  readonly driver: TimerDriver
  /** The Spot's actor path: what the timeline and the testkit's counts name it by. */
  readonly path: string
  readonly stopped: boolean
  offerTick(timer: SpotTimer, due: number, now: number): Effect.Effect<void> | undefined
  /** The effect that runs the handler on the Spot's queue, computing the tick when it starts. */
  startTick(timer: SpotTimer): Effect.Effect<void>
}

/** Tolerance for the grid division, so that 0.3 / 0.1 counts 3 periods and not 2.999... */
const EPSILON = 1e-9

/**
 * Which scheduled tick a delivery starting at `now` stands for, on the grid `start + k × period` (k >= 1).
 * `nextIndex` is the first scheduled tick not yet delivered or dropped; `limit` is the CatchUpBounded limit, or 0 for
 * SkipLateTicks. Pure, so that the policy can be tested exhaustively.
 */
export const planOnGrid = (
  start: number,
  period: number,
  nextIndex: number,
  limit: number,
  now: number
): { readonly index: number; readonly skipped: number } => {
  // The last scheduled tick due at `now`; the entry never fires before `start + nextIndex × period`.
  const lastDue = Math.max(nextIndex, Math.floor((now - start) / period + EPSILON))
  const wentBy = lastDue - nextIndex
  if (wentBy <= limit) return { index: nextIndex, skipped: 0 }
  return { index: lastDue - limit, skipped: wentBy - limit }
}

export class SpotTimer extends MailboxTick {
  get kind() {
    return "spot_timer" as const
  }
  readonly message = undefined
  /** Fixed-rate policies: the first scheduled index not yet delivered or dropped. */
  private nextIndex = 1
  private deliveries = 0
  /** DelayNextTick: the scheduled index and due time of the armed tick, and drops since the last delivery. */
  private armedIndex = 1
  private armedDue = 0
  private dropped = 0
  private readonly limit: number

  constructor(
    readonly host: SpotTimerHost,
    readonly name: string,
    /** Millis, > 0. */
    readonly period: number,
    readonly policy: OverrunPolicy,
    /** The handler, its context already provided. */
    readonly onTick: (tick: Tick.Tick) => Effect.Effect<unknown, unknown>,
    /** When the timer was registered: the origin of its grid. */
    readonly startTime: number
  ) {
    super()
    this.limit = policy._tag === "CatchUpBounded" ? policy.limit : 0
    this.arm(startTime + period)
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: this.name, owner: this.host.path }
  }

  private arm(due: number): void {
    this.armedDue = due
    this.host.driver.schedule(this, due)
  }

  fire(now: number): Effect.Effect<void> | undefined {
    return this.host.offerTick(this, this.host.driver.dueOf(this), now)
  }

  accept(): boolean {
    return this.active && !this.host.stopped
  }

  /** The tick could not be queued (the Spot is stopping): try again on the next due time, counting the drop. */
  undeliverable(): void {
    if (!this.active || this.host.stopped) return
    const now = this.host.driver.now()
    if (this.policy._tag === "DelayNextTick") {
      this.dropped++
      this.armedIndex++
      this.arm(now + this.period)
    } else {
      // The grid's next time after now; `nextIndex` stays, so the start of the next tick counts these as missed.
      this.arm(this.startTime + (Math.floor((now - this.startTime) / this.period + EPSILON) + 1) * this.period)
    }
  }

  override handler(): Effect.Effect<void> {
    return this.host.startTick(this)
  }

  /** The tick starting at `now`: runs the overrun policy and advances the counters. */
  begin(now: number): Tick.Tick {
    let index: number
    let skipped: number
    let scheduledTime: number
    if (this.policy._tag === "DelayNextTick") {
      index = this.armedIndex
      skipped = this.dropped
      scheduledTime = this.armedDue
      this.dropped = 0
    } else {
      const plan = planOnGrid(this.startTime, this.period, this.nextIndex, this.limit, now)
      index = plan.index
      skipped = plan.skipped
      scheduledTime = this.startTime + index * this.period
      this.nextIndex = index + 1
    }
    return Tick.make({
      name: this.name,
      scheduledIndex: index,
      deliveryIndex: ++this.deliveries,
      scheduledTime,
      startTime: now,
      skippedTicks: skipped,
      period: this.period
    })
  }

  /** The handler ended at `now`: queue the next tick (at once when its time has passed). */
  ended(now: number): void {
    if (!this.active || this.host.stopped) return
    if (this.policy._tag === "DelayNextTick") {
      this.armedIndex++
      this.arm(now + this.period)
    } else {
      this.arm(this.startTime + this.nextIndex * this.period)
    }
  }

  /** Cancels the timer; a queued tick is then dropped as stale. True when it was active. */
  cancel(): boolean {
    if (!this.active) return false
    this.active = false
    this.host.driver.cancel(this)
    return true
  }
}
