/**
 * The system scheduler's entries: message schedules (ticks into a target's mailbox) and function tasks (forked).
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type { ActorRef } from "../ActorRef.js"
import type { Cancellable } from "../Scheduler.js"
import { CellRef } from "./actorCell.js"
import { recordDelivered, recordLateness } from "./metrics.js"
import { MailboxTick } from "./tick.js"
import { type TimerDriver, TimerEntry } from "./timerDriver.js"

enum State {
  Pending = 0,
  Cancelled = 1,
  Done = 2
}

/** What scheduler entries need from the system. */
export interface SchedulerHost {
  readonly driver: TimerDriver
  forkTask(task: Effect.Effect<void>): Effect.Effect<Fiber.RuntimeFiber<void>>
  taskFailed(cause: Cause.Cause<unknown>): Effect.Effect<void>
  release(entry: ScheduledEntry): void
}

export type ScheduledEntry = ScheduledMessage | ScheduledFunction

/**
 * The cancellation state both kinds of entry share, and the `Cancellable` handed to the caller: pending until it is
 * cancelled or done (a one-shot that ran, a schedule that ran out).
 */
export class ScheduleHandle implements Cancellable {
  private state = State.Pending

  constructor(
    private readonly host: SchedulerHost,
    private readonly entry: ScheduledEntry
  ) {}

  get isPending(): boolean {
    return this.state === State.Pending
  }

  get wasCancelled(): boolean {
    return this.state === State.Cancelled
  }

  /** The schedule ran out; it leaves the system's books. */
  done(): void {
    if (this.state !== State.Pending) return
    this.state = State.Done
    this.host.release(this.entry)
  }

  /** Cancels; true when this stopped an active schedule. */
  unsafeCancel(): boolean {
    if (this.state !== State.Pending) return false
    this.state = State.Cancelled
    this.host.driver.cancel(this.entry)
    this.host.release(this.entry)
    return true
  }

  // Getters rather than fields: a pending schedule costs no effect objects until someone asks.
  get cancel(): Effect.Effect<boolean> {
    return Effect.sync(() => this.unsafeCancel())
  }

  get isCancelled(): Effect.Effect<boolean> {
    return Effect.sync(() => this.state === State.Cancelled)
  }
}

/** `scheduleOnce` / `scheduleAtFixedRate`: a tick that goes to the target's mailbox. */
export class ScheduledMessage extends MailboxTick {
  get kind() {
    return "scheduler_message" as const
  }
  readonly handle: ScheduleHandle

  constructor(
    host: SchedulerHost,
    readonly target: ActorRef<any>,
    readonly message: unknown,
    private readonly replyTo: ActorRef<any> | undefined,
    /** The next due time after a firing at `due` (at `now`); undefined for a one-shot or when the schedule ends. */
    private readonly next: ((due: number, now: number) => number | undefined) | undefined,
    /** Set when the schedule was made under a reference. */
    readonly reference: string | undefined = undefined
  ) {
    super()
    this.handle = new ScheduleHandle(host, this)
  }

  override get sender(): ActorRef<any> | undefined {
    return this.replyTo
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = this.due
    const next = this.next?.(due, now)
    if (next !== undefined) driver.schedule(this, next)
    else this.finished = true
    if (this.target instanceof CellRef) return this.target.cell.offerTick(this, due, now)
    // A ref without a mailbox (a probe, an ask slot) takes the message directly.
    recordLateness(now - due)
    recordDelivered(this.kind)
    this.target.unsafeTell(this.message, this.replyTo)
    this.settle()
    return undefined
  }

  accept(): boolean {
    if (this.handle.wasCancelled) return false
    this.settle()
    return true
  }

  undeliverable(): void {
    this.settle()
  }

  /** A one-shot is done once its message was handled or could not be delivered. */
  private settle(): void {
    if (this.finished && this.queued === 0) this.handle.done()
  }
}

/** `scheduleOnceFunction` / `scheduleAtFixedRateFunction`: a task forked on its own fiber; runs never overlap. */
export class ScheduledFunction extends TimerEntry {
  readonly handle: ScheduleHandle
  private running = false
  private backlog = 0

  constructor(
    private readonly host: SchedulerHost,
    private readonly task: Effect.Effect<unknown, unknown>,
    private readonly interval: number
  ) {
    super()
    this.handle = new ScheduleHandle(host, this)
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    recordLateness(now - this.due)
    if (this.interval > 0) {
      driver.schedule(this, this.due + this.interval)
    } else {
      this.handle.done()
    }
    if (this.running) {
      this.backlog++
      return undefined
    }
    this.running = true
    return Effect.asVoid(this.host.forkTask(this.runs))
  }

  private readonly once: Effect.Effect<void> = Effect.suspend(() => {
    recordDelivered("scheduler_function")
    return Effect.catchAllCause(this.task, (cause) => this.host.taskFailed(cause))
  }).pipe(Effect.asVoid)

  /** Runs the task, then once per run that came due meanwhile (the backlog is not compressed). */
  private readonly runs: Effect.Effect<void> = Effect.suspend(() => {
    const loop: Effect.Effect<void> = Effect.zipRight(
      this.once,
      Effect.suspend(() => {
        if (this.backlog > 0 && !this.handle.wasCancelled) {
          this.backlog--
          return loop
        }
        this.running = false
        return Effect.void
      })
    )
    return loop
  })
}

/** What a schedule made after shutdown returns. */
export const alreadyCancelled: Cancellable = {
  cancel: Effect.succeed(false),
  isCancelled: Effect.succeed(true)
}
