/**
 * The system scheduler's entries: message schedules (ticks into a target's mailbox) and function tasks (forked).
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type { ActorRef } from "../ActorRef.js"
import type { Cancellable } from "../Scheduler.js"
import { CellRef } from "./actorCell.js"
import { flushMetrics, recordDelivered, recordDropped, recordLateness } from "./metrics.js"
import { MailboxTick } from "./tick.js"
import type { Timeline } from "./timeline.js"
import { type TimerDriver, TimerEntry, type TimerLabel } from "./timerDriver.js"
import type { TickTracing } from "./tracing.js"

enum State {
  Pending = 0,
  Cancelled = 1,
  Done = 2
}

/** What scheduler entries need from the system. */
export interface SchedulerHost {
  readonly driver: TimerDriver
  readonly tracing: TickTracing
  readonly timeline: Timeline | undefined
  forkTask(task: Effect.Effect<void>): Effect.Effect<Fiber.RuntimeFiber<void>>
  taskFailed(cause: Cause.Cause<unknown>): Effect.Effect<void>
  release(entry: ScheduledEntry): void
}

export type ScheduledEntry = ScheduledMessage | ScheduledFunction

/** An entry is its own `Cancellable`: no handle object beside it (a pending schedule is one record in the engine). */
interface Settling {
  state: State
  readonly host: SchedulerHost
}

/** The schedule ran out (a one-shot that ran, a schedule that ended): it leaves the system's books. */
const settleDone = (entry: Settling & ScheduledEntry): void => {
  if (entry.state !== State.Pending) return
  entry.state = State.Done
  entry.host.release(entry)
}

/** Cancels; true when this stopped an active schedule. */
export const cancelNow = (entry: Settling & ScheduledEntry): boolean => {
  if (entry.state !== State.Pending) return false
  entry.state = State.Cancelled
  entry.host.driver.cancel(entry)
  entry.host.release(entry)
  return true
}

/** `Cancellable.cancel` of every timer kind: its `unsafeCancel`, as an effect. */
export const cancelEffect = (timer: Pick<Cancellable, "unsafeCancel">): Effect.Effect<boolean> =>
  Effect.sync(() => timer.unsafeCancel())

/** `Cancellable.isCancelled` of both kinds of scheduler entry. */
const cancelledEffect = (entry: Settling): Effect.Effect<boolean> => Effect.sync(() => entry.state === State.Cancelled)

interface MessageExtra {
  readonly replyTo: ActorRef<any> | undefined
  readonly next: ((due: number, now: number) => number | undefined) | undefined
}

/** `scheduleOnce` / `scheduleAtFixedRate`: a tick that goes to the target's mailbox. */
export class ScheduledMessage extends MailboxTick implements Cancellable, Settling {
  get kind() {
    return "scheduler_message" as const
  }
  /** Kept in the tick's `flags` (`ownBits`). */
  get state(): State {
    return this.ownBits
  }
  set state(state: State) {
    this.ownBits = state
  }

  /** The rarer parts in one field, absent for a plain one-shot: a pending one-shot is 8 fields. */
  private readonly extra: MessageExtra | undefined

  constructor(
    readonly host: SchedulerHost,
    readonly target: ActorRef<any>,
    readonly message: unknown,
    replyTo: ActorRef<any> | undefined,
    /** The next due time after a firing at `due` (at `now`); undefined for a one-shot or when the schedule ends. */
    next: ((due: number, now: number) => number | undefined) | undefined
  ) {
    super()
    this.extra = replyTo === undefined && next === undefined ? undefined : { replyTo, next }
  }

  // Getters rather than fields: a pending schedule costs no effect objects until someone asks.
  get cancel(): Effect.Effect<boolean> {
    return cancelEffect(this)
  }

  get isCancelled(): Effect.Effect<boolean> {
    return cancelledEffect(this)
  }

  unsafeCancel(): boolean {
    return cancelNow(this)
  }

  override get sender(): ActorRef<any> | undefined {
    return this.extra?.replyTo
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: undefined, owner: this.target.path }
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = driver.dueOf(this)
    const next = this.extra?.next?.(due, now)
    if (next !== undefined) driver.schedule(this, next)
    else this.finished = true
    if (this.target instanceof CellRef) return this.target.cell.offerTick(this, due, now)
    // A ref without a mailbox (a probe, an ask slot, a custom ref) takes the message directly; a throw here is this
    // schedule's fault (the driver reports it), and the delivery is not counted.
    recordLateness(now - due)
    this.target.unsafeTell(this.message, this.sender)
    recordDelivered(this.kind)
    this.host.timeline?.delivered(this)
    this.settle()
    return undefined
  }

  accept(): boolean {
    if (this.state === State.Cancelled) return false
    this.settle()
    return true
  }

  undeliverable(): void {
    this.settle()
  }

  /** A scheduled message that cannot reach its stopped target is a dead letter, unless it was cancelled. */
  override lost(deadLetter: (message: unknown, sender: ActorRef<any> | undefined) => void): void {
    if (this.accept()) deadLetter(this.message, this.sender)
    else recordDropped("owner_stopped")
  }

  /** A one-shot is done once its message was handled or could not be delivered. */
  private settle(): void {
    if (this.finished && this.queued === 0) settleDone(this)
  }
}

/** `scheduleOnceFunction` / `scheduleAtFixedRateFunction`: a task forked on its own fiber; runs never overlap. */
export class ScheduledFunction extends TimerEntry implements Cancellable, Settling {
  state = State.Pending
  private running = false
  private backlog = 0

  constructor(
    readonly host: SchedulerHost,
    private readonly task: Effect.Effect<unknown, unknown>,
    private readonly interval: number
  ) {
    super()
  }

  // Getters rather than fields: a pending schedule costs no effect objects until someone asks.
  get cancel(): Effect.Effect<boolean> {
    return cancelEffect(this)
  }

  get isCancelled(): Effect.Effect<boolean> {
    return cancelledEffect(this)
  }

  unsafeCancel(): boolean {
    return cancelNow(this)
  }

  override label(): TimerLabel {
    return { kind: "scheduler_function", key: undefined, owner: undefined }
  }

  override abandon(): void {
    settleDone(this)
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = driver.dueOf(this)
    recordLateness(now - due)
    if (this.interval > 0) {
      driver.schedule(this, due + this.interval)
    } else {
      settleDone(this)
    }
    if (this.host.tracing.enabled) this.host.tracing.offered(this, due)
    if (this.running) {
      this.backlog++
      return undefined
    }
    this.running = true
    return Effect.asVoid(this.host.forkTask(this.runs))
  }

  private readonly once: Effect.Effect<void> = Effect.suspend(() => {
    // On the task's own fiber, outside any driver batch or dispatcher flush: counted and handed over at once.
    recordDelivered("scheduler_function")
    flushMetrics()
    const tracing = this.host.tracing
    const task = tracing.enabled ? tracing.wrapTick(this, this.label(), this.host.driver.now(), this.task) : this.task
    return Effect.catchAllCause(task, (cause) => this.host.taskFailed(cause))
  }).pipe(Effect.asVoid)

  /** Runs the task, then once per run that came due meanwhile (the backlog is not compressed). */
  private readonly runs: Effect.Effect<void> = Effect.suspend(() => {
    const loop: Effect.Effect<void> = Effect.zipRight(
      this.once,
      Effect.suspend(() => {
        if (this.backlog > 0 && this.state !== State.Cancelled) {
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
  isCancelled: Effect.succeed(true),
  unsafeCancel: () => false
}
