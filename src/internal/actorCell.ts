/**
 * The runtime of one actor: its mailbox, state, children, timers and receive timeout.
 *
 * An idle actor has no fiber. Work arriving queues a drain with the system's dispatcher, which runs the drains of many
 * ready actors on one fiber, each with the actor's own FiberRefs; the drain handles queued entries back to back (no
 * suspension per message while work is queued) and ends when the mailbox is empty. A tick for an idle actor is handled
 * as it fires (`handleNow`); other ticks are drained inside the timer driver's turn. Lifetimes follow DESIGN §3: stop
 * and restart cancel the incarnation's timers (and registered timer tables) and stop its children before anything new
 * starts.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Runtime from "effect/Runtime"
import type * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Intervals from "effect/ScheduleIntervals"
import type { Actor, ActorContext } from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import type { ActorSystemService, SpawnError } from "../ActorSystem.js"
import type { LogContext } from "../LogContext.js"
import type { Directive, SupervisorStrategy } from "../Supervision.js"
import { CellContext } from "./actorContext.js"
import { type ActorHooks, hooksOf } from "./actorHooks.js"
import { completeNow, type Dispatcher } from "./dispatcher.js"
import { scheduleDue } from "./duration.js"
import type { FiberRefsCache } from "./fiberRefsCache.js"
import { EMPTY, Mailbox } from "./mailbox.js"
import { recordDelivered, recordDropped, recordLateness } from "./metrics.js"
import { BaseRef, type Delivery } from "./refs.js"
import { MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"

/**
 * The timers a runtime built on an actor keeps for one incarnation (an entity's, a Spot's). Registered on the cell, it
 * is stopped together with the incarnation's own timers at stop and restart, and counted in the system's stats.
 */
export interface TimerTable {
  readonly size: number
  stopTimers(): void
}

/** What a cell needs from its system. */
export interface CellHost {
  readonly driver: TimerDriver
  readonly dispatcher: Dispatcher
  readonly service: ActorSystemService
  readonly throughput: number
  readonly askTimeoutMillis: number
  readonly defaultMailboxCapacity: number
  readonly guardianStrategy: SupervisorStrategy
  readonly fiberRefsCache: FiberRefsCache
  spawnCell<M, S, E, R>(
    actor: Actor<M, S, E, R>,
    name: string | undefined,
    parent: ActorCell | undefined
  ): Effect.Effect<ActorRef<M>, SpawnError, R>
  deadLetter(message: unknown, sender: ActorRef<any> | undefined, recipient: string, reason: Delivery): void
  terminated(cell: ActorCell): void
  /** Arms the stop timeout of `cell` (once): when it passes before the actor has terminated, its stop is forced. */
  armStopDeadline(cell: ActorCell): void
  /** `effect`, interrupted with a warning naming the actor and `what` when it outlasts the stop timeout. */
  bounded(effect: Effect.Effect<void>, cell: ActorCell, what: string): Effect.Effect<void>
}

/** A user message that carries a sender or the sender's log context; a bare message is queued as itself. */
class Envelope {
  constructor(
    readonly message: unknown,
    readonly sender: ActorRef<any> | undefined,
    readonly logContext: LogContext | undefined
  ) {}
}

class StopMessage {}
const STOP = new StopMessage()

class ChildFailed {
  constructor(
    readonly child: ActorCell,
    readonly cause: Cause.Cause<unknown>
  ) {}
}

enum Status {
  Starting = 0,
  Running = 1,
  Stopping = 2,
  Terminated = 3
}

/** The cell's boolean states, bits of `flags`. */
enum Flag {
  /** A drain is queued or running. */
  Draining = 1,
  /** `forceStop` took over: a drain still queued must not run. */
  Forced = 2,
  Started = 4,
  PostStopPending = 8
}

/** How the dispatcher completes the effect a drain step returned. */
enum Completion {
  /** `receive`: its value is the next state; a failure goes to supervision. */
  Receive = 0,
  /** A tick's own handler: the value is ignored; a failure goes to supervision. */
  Tick = 1,
  /** The actor's own machinery (start, stop, a child's escalation): a failure is an internal defect. */
  Internal = 2
}

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
    const due = this.due
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
        if (!firing && this.queued === 0) this.cell.removeTimer(this)
      } else {
        const start = Intervals.start(decision.intervals)
        driver.schedule(this, firing ? scheduleDue(start, now) : Math.max(start, now))
      }
    })
  }

  accept(): boolean {
    if (!this.active) return false
    if (this.finished && this.queued === 0) this.cell.removeTimer(this)
    return true
  }

  undeliverable(): void {
    if (this.finished && this.queued === 0) this.cell.removeTimer(this)
  }
}

/** The receive-timeout timer: re-checks idleness when it fires instead of being re-armed on every message. */
class ReceiveTimeout extends MailboxTick {
  get kind() {
    return "receive_timeout" as const
  }

  constructor(
    readonly cell: ActorCell,
    readonly timeout: number,
    readonly message: unknown
  ) {
    super()
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const idleSince = this.cell.lastActivity
    if (now - idleSince < this.timeout) {
      driver.schedule(this, idleSince + this.timeout)
      return undefined
    }
    const due = this.due
    driver.schedule(this, now + this.timeout)
    return this.cell.offerTick(this, due, now)
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: undefined, owner: this.cell.path }
  }

  accept(): boolean {
    return this.active && this.cell.receiveTimeout === this
  }

  undeliverable(): void {}
}

/** The cell of the actor whose context this is (the handlers of runtimes built on actors reach their owner so). */
export const cellOf = (context: ActorContext<any>): ActorCell => (context.self as CellRef<unknown>).cell

/** The ref of a mailbox-backed actor. */
export class CellRef<Msg> extends BaseRef<Msg> {
  constructor(readonly cell: ActorCell) {
    super()
  }

  get path(): string {
    return this.cell.path
  }

  override get defaultAskTimeoutMillis(): number {
    return this.cell.host.askTimeoutMillis
  }

  deliver(message: Msg, sender: ActorRef<any> | undefined, logContext: LogContext | undefined): Delivery {
    return this.cell.deliver(message, sender, logContext)
  }
}

export class ActorCell {
  readonly ref: CellRef<any>
  /** Names the actor's slot in the system's `FiberRefsCache`. */
  private readonly serial: number
  readonly mailbox: Mailbox
  /** Children by name, timers by key, registered timer tables: made on first use (most actors have none). */
  children: Map<string, ActorCell> | undefined = undefined
  timers: Map<string, ActorTimer> | undefined = undefined
  timerTables: Array<TimerTable> | undefined = undefined
  /**
   * Completed at termination; made only when someone waits for it. Not a `Latch`: whether it is released follows from
   * `status`, so a latch's own state (and object, ~32 B an actor) would repeat it.
   */
  private done: Deferred.Deferred<void> | undefined = undefined
  readonly context: ActorContext<any>
  /** The fiber running this actor's drain while one runs; undefined for an idle actor. */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined = undefined
  /**
   * Where the FiberRefs the actor's handlers run with come from: the spawner's services without its diagnostic context
   * (`ActorSystem.spawnerBase`), shared by the actors spawned from the same FiberRefs. Set by the system at spawn.
   */
  baseRefs: FiberRefs.FiberRefs | undefined = undefined
  /** `Flag`s: four booleans in one field (~24 B an actor fewer than four fields). */
  private flags = 0
  receiveTimeout: ReceiveTimeout | undefined = undefined
  lastActivity = 0
  private state: unknown = undefined
  private status = Status.Starting
  private currentSender: ActorRef<any> | undefined = undefined
  private restarts: Array<number> | undefined = undefined
  private anonymous = 0

  constructor(
    readonly host: CellHost,
    readonly actor: Actor<any, any, any, any>,
    /** `/user/name`, `parent/name`. */
    readonly path: string,
    readonly parent: ActorCell | undefined,
    /**
     * What this actor carries for the runtime that spawned it (a grain activation, an entity's entry): one actor
     * definition then serves every owner of a kind, and no owner needs closures of its own.
     */
    readonly owner: unknown = undefined
  ) {
    this.ref = new CellRef(this)
    this.serial = host.fiberRefsCache.serial()
    this.mailbox = new Mailbox(actor.mailboxCapacity ?? host.defaultMailboxCapacity)
    this.context = new CellContext(this)
  }

  private hasFlag(flag: Flag): boolean {
    return (this.flags & flag) !== 0
  }

  private setFlag(flag: Flag, on: boolean): void {
    this.flags = on ? this.flags | flag : this.flags & ~flag
  }

  /** The last segment of the path (not a field: ~8 B an actor; read when an actor terminates). */
  get name(): string {
    return this.path.slice(this.path.lastIndexOf("/") + 1)
  }

  private get hooks(): ActorHooks | undefined {
    return hooksOf(this.actor)
  }

  /** Waits until this actor has terminated. */
  get awaitDone(): Effect.Effect<void> {
    if (this.status === Status.Terminated) return Effect.void
    return Deferred.await((this.done ??= Deferred.unsafeMake(FiberId.none)))
  }

  get isTerminated(): boolean {
    return this.status === Status.Terminated
  }

  get sender(): ActorRef<any> | undefined {
    return this.currentSender
  }

  nextChildName(): string {
    return `$${(this.anonymous++).toString(36)}`
  }

  // ---------------------------------------------------------------- delivery

  deliver(message: unknown, sender: ActorRef<any> | undefined, logContext: LogContext | undefined): Delivery {
    if (this.status >= Status.Stopping) {
      this.host.deadLetter(message, sender, this.path, "stopped")
      return "stopped"
    }
    const entry = sender === undefined && logContext === undefined ? message : new Envelope(message, sender, logContext)
    if (this.mailbox.offer(entry)) {
      this.wake(false)
      return "delivered"
    }
    this.host.deadLetter(message, sender, this.path, "mailbox-full")
    return "mailbox-full"
  }

  /** Called by the driver when one of this actor's ticks fires. Never suspends. */
  offerTick(tick: MailboxTick, due: number, now: number): Effect.Effect<void> | undefined {
    recordLateness(now - due)
    if (this.status >= Status.Stopping) {
      if (tick.kind === "scheduler_message") this.host.deadLetter(tick.message, tick.sender, this.path, "stopped")
      else recordDropped("owner_stopped")
      tick.undeliverable()
      return undefined
    }
    if (this.host.driver.firing && this.isIdle()) {
      tick.queued++
      this.handleNow(tick)
      return undefined
    }
    if (this.mailbox.offer(tick)) {
      tick.queued++
      this.wake(this.host.driver.firing)
      return undefined
    }
    recordDropped("mailbox_full")
    tick.undeliverable()
    return Effect.logWarning(
      `tick dropped: mailbox full (capacity ${this.mailbox.capacity}); the timer keeps firing`
    ).pipe(Effect.annotateLogs({ actor: this.path, timer_kind: tick.kind }))
  }

  /**
   * Running (so started, by a drain), with no drain queued or running, and so nothing queued: a tick may be handled at
   * once. The mailbox is not read: whatever is queued for a running actor claims a drain (`wake`), and a drain lets go
   * (`endDrain`) only when it found the mailbox empty; `handleNow` keeps the claim when its handler queued something.
   * Reading it cost a cache miss per tick (the mailbox is an object of its own): 20k actors × 50 ms went from ~0.95 to
   * ~0.86 µs per tick with its system lane kept in a field, and to ~0.82 without reading it.
   */
  private isIdle(): boolean {
    return !this.hasFlag(Flag.Draining) && this.status === Status.Running
  }

  /**
   * Handles a tick as it fires, for an idle actor, inside the driver's loop: the tick skips the mailbox and the
   * dispatcher, and is handled while its record is still in the CPU cache. A handler that completes synchronously (a
   * value or an `Effect.sync`, as the dispatcher completes them) is done here; it runs no code that could observe the
   * fiber (Effect hands `Effect.sync` no fiber), and nothing else of this actor's runs meanwhile, so this is what its
   * drain would have done. Any other handler effect is kept as `pending`, and the actor's drain, queued now, runs it
   * first: the tick is in flight, as a message whose handler started is in Akka, so a stop or a child's failure that
   * arrives meanwhile is handled after it. (10k actors × 100 ms: CPU 33-39% → 13-16% of a core; push 300k → 600-810k
   * ticks/s; see docs/performance.md.)
   */
  private handleNow(tick: MailboxTick): void {
    // Claimed as if its drain ran: what arrives meanwhile (a tell from the handler to itself) queues behind the tick.
    this.setFlag(Flag.Draining, true)
    const effect = this.handle(tick)
    const rest = effect === undefined ? undefined : completeNow(effect, this)
    if (rest !== undefined) this.pending = rest
    else if (this.mailbox.size === 0 && !this.mailbox.hasSystemMessages) {
      this.setFlag(Flag.Draining, false)
      return
    }
    this.host.dispatcher.enqueue(this, true)
  }

  // ---------------------------------------------------------------- the drain

  /**
   * Makes sure a drain runs. An idle actor has no fiber at all: its drain is queued with the system's dispatcher,
   * which runs the drains of many ready actors on one fiber, and ends when the mailbox is empty. Ticks fired in a
   * driver turn are drained at the end of that turn (a synchronous tick handler completes inside it, with no fiber
   * wake-up); other deliveries (tells) are drained by a flush the dispatcher schedules, so handlers never nest.
   */
  wake(inTurn: boolean): void {
    if (this.hasFlag(Flag.Draining) || this.status === Status.Terminated || this.baseRefs === undefined) return
    this.setFlag(Flag.Draining, true)
    this.host.dispatcher.enqueue(this, inTurn)
  }

  /**
   * Called by the dispatcher on the batch fiber about to drain this actor: installs the actor's FiberRefs. False when
   * `forceStop` took over since the drain was queued.
   */
  enter(fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean {
    if (this.hasFlag(Flag.Forced)) return false
    this.fiber = fiber
    this.budget = this.host.throughput
    return true
  }

  /** Called by the dispatcher before the first effect of a drain that runs on `fiber`. */
  fiberRefsOn(fiber: Fiber.RuntimeFiber<unknown, unknown>): FiberRefs.FiberRefs {
    return this.fiberRefs(fiber.id())
  }

  /**
   * What the actor's handlers run with: its services (`currentContext`) and its diagnostic context (the `actor`
   * annotation only). Not held by the actor (~0.5 KB each): made when a drain first runs an effect on a fiber, and kept
   * a while by the system's `FiberRefsCache`. A drain whose handlers complete in place needs none. Every drain starts
   * from these same values, whatever the handlers of the one before set on their fiber.
   */
  private fiberRefs(fiberId: FiberId.Single): FiberRefs.FiberRefs {
    const cache = this.host.fiberRefsCache
    const cached = cache.get(this.serial)
    if (cached !== undefined) return cached
    // Set directly rather than through `FiberRefs.updateAs`, which compares the old value to the new one and so
    // computes and caches a hash of the annotations.
    const locals = new Map(this.baseRefs!.locals)
    locals.set(FiberRef.currentLogAnnotations, [[fiberId, HashMap.make(["actor", this.path as unknown])]])
    const refs = FiberRefs.unsafeMake(locals)
    cache.set(this.serial, refs)
    return refs
  }

  private budget = 0
  /** A tick's handler effect that `handleNow` left for the drain. */
  private pending: Effect.Effect<unknown, unknown> | undefined = undefined
  /** How the dispatcher must complete the effect `next` returned. */
  private completion = Completion.Internal

  /**
   * The drain, one step at a time: handles queued entries back to back and returns the next effect to run (a
   * handler); the dispatcher runs it and reports back through `succeeded` / `failed`. Undefined ends this turn of the
   * drain: the mailbox is empty, or `throughput` entries were handled and the actor went to the back of the queue.
   */
  next(): Effect.Effect<unknown, unknown> | undefined {
    if (!this.hasFlag(Flag.Started)) {
      this.setFlag(Flag.Started, true)
      this.completion = Completion.Internal
      return this.start()
    }
    const pending = this.pending
    if (pending !== undefined) {
      // A tick handled as it fired whose handler did not complete at once (`handleNow`); `completion` is its own.
      this.pending = undefined
      this.budget--
      if (this.status === Status.Running) return pending
      recordDropped("owner_stopped")
    }
    for (;;) {
      if (this.status === Status.Terminated) return this.endDrain()
      if (this.budget-- <= 0) {
        // Fairness as Akka's throughput: after `throughput` entries the actor goes to the back of the ready queue (its
        // drain stays claimed), so other actors run first; no fiber suspends for it. `enter` refills the budget.
        this.fiber = undefined
        this.host.dispatcher.enqueue(this, false)
        return undefined
      }
      const entry = this.mailbox.poll()
      if (entry === EMPTY) return this.endDrain()
      const effect = this.handle(entry)
      if (effect !== undefined) return effect
    }
  }

  /** The effect from `next` succeeded: a `receive` returned the next state. */
  succeeded(value: unknown): void {
    if (this.completion === Completion.Receive) {
      this.state = value
      this.currentSender = undefined
    }
  }

  /** The effect from `next` failed: a handler goes to supervision; an internal defect stops the actor. */
  failed(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    const internal = this.completion === Completion.Internal
    this.currentSender = undefined
    const handled = internal ? this.internalDefect(cause) : this.onFailure(cause)
    // An internal defect must not leave the actor wedged: finish its stop sequence.
    return internal ? handled : Effect.catchAllCause(handled, (defect) => this.internalDefect(defect))
  }

  private internalDefect(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    return Effect.zipRight(Effect.logError("actor drain failed; stopping the actor", cause), this.terminate(true, true))
  }

  /**
   * The dispatcher caught a throw that escaped this actor's drain machinery: stop the actor as an internal defect, and
   * when even that fails, take it out of the system without its hooks, so that nothing waits for it forever.
   */
  abandon(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    this.fiber = undefined
    return Effect.catchAllCause(this.internalDefect(cause), (again) =>
      Cause.isInterruptedOnly(again)
        ? Effect.failCause(again)
        : Effect.zipRight(
            Effect.logError("the actor's stop sequence failed too; it is removed without its hooks", again),
            Effect.sync(() => this.removeNow())
          )
    )
  }

  /** The last resort of `abandon`: terminated, its timers cancelled, gone from its parent and the system. */
  private removeNow(): void {
    this.status = Status.Terminated
    this.cancelTimers()
    this.parent?.children?.delete(this.name)
    this.host.terminated(this)
    if (this.done !== undefined) Deferred.unsafeDone(this.done, Effect.void)
  }

  private endDrain(): undefined {
    this.setFlag(Flag.Draining, false)
    this.fiber = undefined
    return undefined
  }

  /**
   * Stops this actor now, from outside its drain: interrupts the drain (a handler in flight), then runs the forced
   * stop sequence on a fiber with the actor's own context. Used by system shutdown and by a parent's forced stop.
   */
  forceStop(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.status === Status.Terminated || this.baseRefs === undefined) return Effect.void
      const fiberRefs = this.fiberRefs(FiberId.none)
      const running = this.fiber
      this.setFlag(Flag.Draining, true) // no new drain may start
      this.setFlag(Flag.Forced, true) // and a queued one must not run
      this.fiber = undefined
      const interrupted = running === undefined ? Effect.void : Fiber.interrupt(running)
      const runtime = Runtime.make({
        context: FiberRefs.getOrDefault(fiberRefs, FiberRef.currentContext),
        fiberRefs,
        runtimeFlags: Runtime.defaultRuntimeFlags
      })
      return Effect.zipRight(
        interrupted,
        // awaited, not joined: a join would copy the actor's FiberRefs (its `actor` annotation) into the caller
        Effect.suspend(() => Effect.flatten(Fiber.await(Runtime.runFork(runtime)(this.terminate(true, true)))))
      )
    })
  }

  /** Handles one entry; undefined when it was dropped without running anything. */
  private handle(entry: unknown): Effect.Effect<unknown, unknown> | undefined {
    if (entry instanceof MailboxTick) {
      entry.queued--
      if (!entry.accept()) {
        recordDropped("stale")
        return undefined
      }
      if (this.status !== Status.Running) {
        entry.undeliverable()
        recordDropped("owner_stopped")
        return undefined
      }
      recordDelivered(entry.kind)
      let handler: Effect.Effect<unknown, unknown> | undefined
      try {
        handler = entry.handler()
      } catch (defect) {
        // A tick kind may make its handler by calling user code: a throw is the actor's defect, supervised, and never
        // the timer driver's, which may be the one handling the tick (`handleNow`).
        handler = Effect.die(defect)
      }
      if (handler === undefined) return this.invoke(entry.message, entry.sender, undefined, true)
      // A tick's own handler runs under this actor's supervision; the state is left as it is.
      this.completion = Completion.Tick
      return handler
    }
    if (entry instanceof Envelope) return this.invoke(entry.message, entry.sender, entry.logContext, false)
    this.completion = Completion.Internal
    if (entry === STOP) return this.stop()
    if (entry instanceof ChildFailed) {
      // A child escalated: this actor fails with the child's cause.
      return this.status === Status.Running ? this.onFailure(entry.cause) : undefined
    }
    return this.invoke(entry, undefined, undefined, false)
  }

  /** Calls `receive`; the dispatcher runs the effect and `succeeded` stores the next state. */
  private invoke(
    message: unknown,
    sender: ActorRef<any> | undefined,
    logContext: LogContext | undefined,
    tick: boolean
  ): Effect.Effect<unknown, unknown> | undefined {
    if (this.status !== Status.Running) return undefined
    if (!tick && this.receiveTimeout !== undefined) this.lastActivity = this.host.driver.now()
    this.currentSender = sender
    this.completion = Completion.Receive
    let effect: Effect.Effect<unknown, unknown>
    try {
      effect = this.actor.receive(message, this.context, this.state) as Effect.Effect<unknown, unknown>
    } catch (defect) {
      // A handler that throws instead of returning an effect fails like a defect, so supervision sees it.
      effect = Effect.die(defect)
    }
    if (effect == null) effect = notAnEffect("receive", effect)
    if (logContext === undefined) return effect
    return Effect.locally(
      effect,
      FiberRef.currentLogAnnotations,
      HashMap.set(logContext.annotations, "actor", this.path as unknown)
    ).pipe(Effect.locally(FiberRef.currentLogSpan, logContext.spans))
  }

  // ---------------------------------------------------------------- lifecycle

  private start(): Effect.Effect<void> {
    return Effect.matchCauseEffect(
      attempt(() => this.actor.preStart(this.context)),
      {
        onSuccess: (state) => {
          this.state = state
          if (this.status === Status.Starting) this.status = Status.Running
          return Effect.void
        },
        onFailure: (cause) =>
          Effect.zipRight(Effect.logError("preStart failed; the actor is stopped", cause), this.terminate(false, false))
      }
    )
  }

  private onFailure(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    const strategy = this.parent?.actor.supervisorStrategy ?? this.host.guardianStrategy
    let directive: Directive
    let decided: Cause.Cause<unknown> = cause
    try {
      directive = strategy.decide(cause)
      if (!DIRECTIVES.has(directive)) throw new TypeError(`decide returned ${String(directive)}, not a directive`)
    } catch (defect) {
      // a decider that throws (or answers nonsense) cannot be obeyed: the safe answer is to stop the actor
      directive = "stop"
      decided = Cause.sequential(cause, Cause.die(defect))
    }
    if (directive === "restart" && !this.mayRestart(strategy)) directive = "stop"
    const logged = Effect.logError(`actor failed; supervisor directive: ${directive}`, decided)
    switch (directive) {
      case "resume":
        return logged
      case "restart":
        return Effect.zipRight(logged, this.restart(cause))
      case "stop":
        return Effect.zipRight(logged, this.stop())
      case "escalate": {
        const parent = this.parent
        return Effect.zipRight(
          logged,
          Effect.zipRight(
            this.stop(),
            Effect.sync(() => parent?.offerSystem(new ChildFailed(this, cause)))
          )
        )
      }
    }
  }

  private mayRestart(strategy: SupervisorStrategy): boolean {
    if (strategy.maxRestarts === Number.POSITIVE_INFINITY) return true
    const now = this.host.driver.now()
    const restarts = (this.restarts = (this.restarts ?? []).filter((t) => now - t < strategy.withinMillis))
    if (restarts.length >= strategy.maxRestarts) return false
    restarts.push(now)
    return true
  }

  private restart(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    return Effect.gen(this, function* () {
      this.status = Status.Starting
      this.cancelTimers()
      yield* this.stopChildren()
      yield* guard(() => this.actor.preRestart(this.context, this.state, cause), "preRestart")
      const started = yield* Effect.exit(attempt(() => this.actor.preStart(this.context)))
      if (started._tag === "Failure") {
        yield* Effect.logError("preStart failed on restart; the actor is stopped", started.cause)
        return yield* this.terminate(false, false)
      }
      this.state = started.value
      this.status = Status.Running
      yield* guard(() => this.actor.postRestart(this.context, this.state, cause), "postRestart")
    })
  }

  /** Stops this actor now: timers, then children, then `postStop`, then dead letters for what is left. */
  stop(): Effect.Effect<void> {
    return this.status >= Status.Stopping ? Effect.void : this.terminate(true, false)
  }

  /**
   * The stop sequence. `forced` interrupts the children instead of asking them to stop after their current message;
   * it runs when this actor's own fiber is interrupted (system shutdown), and it completes a graceful stop that the
   * interruption cut short: `postStop` runs once either way.
   */
  terminate(runPostStop: boolean, forced: boolean): Effect.Effect<void> {
    return Effect.gen(this, function* () {
      if (this.status === Status.Terminated) return
      if (this.status !== Status.Stopping) {
        this.setFlag(Flag.PostStopPending, runPostStop && this.status === Status.Running)
        this.status = Status.Stopping
      }
      // A graceful stop that hangs (in a child, in `postStop`) is forced when the system's stop timeout passes.
      if (!forced) this.host.armStopDeadline(this)
      this.cancelTimers()
      yield* forced ? this.interruptChildren() : this.stopChildren()
      if (this.hasFlag(Flag.PostStopPending)) {
        this.setFlag(Flag.PostStopPending, false)
        const postStop = guard(() => this.actor.postStop(this.context, this.state), "postStop")
        // Forced, nothing else bounds it: a `postStop` that never returns is interrupted after the stop timeout.
        yield* forced ? this.host.bounded(postStop, this, "postStop") : postStop
      }
      this.status = Status.Terminated
      if (this.pending !== undefined) {
        // A tick handler left by `handleNow` whose drain never ran (a forced stop took over): counted, not lost.
        this.pending = undefined
        recordDropped("owner_stopped")
      }
      this.drainToDeadLetters()
      this.parent?.children?.delete(this.name)
      this.host.terminated(this)
      if (this.done !== undefined) Deferred.unsafeDone(this.done, Effect.void)
      this.hooks?.terminated?.(this.owner)
    })
  }

  /** Queues a message ahead of user messages (never refused, even by a full bounded mailbox) and wakes the actor. */
  offerSystem(message: unknown): void {
    this.mailbox.offerSystem(message)
    this.wake(false)
  }

  /** Asks a child (or self) to stop after its current message. */
  requestStop(): void {
    if (this.status >= Status.Stopping) return
    this.offerSystem(STOP)
    this.host.armStopDeadline(this)
  }

  private stopChildren(): Effect.Effect<void> {
    if (this.children === undefined || this.children.size === 0) return Effect.void
    const children = Array.from(this.children.values())
    for (const child of children) child.requestStop()
    return Effect.forEach(children, (child) => child.awaitDone, { discard: true })
  }

  /** Stops the children now: a handler in flight is interrupted; each runs its own forced stop sequence. */
  private interruptChildren(): Effect.Effect<void> {
    if (this.children === undefined || this.children.size === 0) return Effect.void
    return Effect.forEach(Array.from(this.children.values()), (child) => child.forceStop(), { discard: true })
  }

  private drainToDeadLetters(): void {
    for (;;) {
      const entry = this.mailbox.pollUser()
      if (entry === EMPTY) break
      if (entry instanceof MailboxTick) {
        entry.queued--
        if (entry.kind === "scheduler_message" && entry.accept()) {
          this.host.deadLetter(entry.message, entry.sender, this.path, "stopped")
        } else {
          recordDropped("owner_stopped")
        }
      } else if (entry instanceof Envelope) {
        this.undelivered(entry.message, entry.sender)
      } else {
        this.undelivered(entry, undefined)
      }
    }
  }

  private undelivered(message: unknown, sender: ActorRef<any> | undefined): void {
    const sink = this.hooks?.undelivered
    if (sink !== undefined) sink(this.owner, message, sender)
    else this.host.deadLetter(message, sender, this.path, "stopped")
  }

  // ---------------------------------------------------------------- timers

  /** Timers of this incarnation, the receive timeout and registered timer tables included. */
  get timerCount(): number {
    let count = (this.timers?.size ?? 0) + (this.receiveTimeout === undefined ? 0 : 1)
    if (this.timerTables !== undefined) for (const table of this.timerTables) count += table.size
    return count
  }

  /** Registers a timer table of a runtime built on this actor (an entity's, a Spot's); see `TimerTable`. */
  addTimerTable(table: TimerTable): void {
    // An array made with its one table (a set, or `[]` then a push, reserves room for more: ~150 B per entity).
    if (this.timerTables === undefined) this.timerTables = [table]
    else this.timerTables.push(table)
  }

  /** The children map, made on first use. */
  childMap(): Map<string, ActorCell> {
    return (this.children ??= new Map())
  }

  /** Cancels every timer of the incarnation, including the receive timeout; their queued ticks become stale. */
  cancelTimers(): void {
    const driver = this.host.driver
    if (this.timers !== undefined) {
      for (const timer of this.timers.values()) {
        timer.active = false
        driver.cancel(timer)
      }
      this.timers = undefined
    }
    this.clearReceiveTimeout()
    if (this.timerTables !== undefined) {
      for (const table of this.timerTables) table.stopTimers()
      this.timerTables = undefined
    }
  }

  removeTimer(timer: ActorTimer): void {
    timer.active = false
    this.host.driver.cancel(timer)
    if (this.timers?.get(timer.key) === timer) this.timers.delete(timer.key)
  }

  startTimer(
    key: string,
    message: unknown,
    mode: Mode,
    firstDelay: number,
    interval: number,
    schedule?: Schedule.Schedule<unknown>
  ): ActorTimer | undefined {
    if (this.status >= Status.Stopping) return undefined
    const previous = this.timers?.get(key)
    if (previous !== undefined) this.removeTimer(previous)
    const timer = new ActorTimer(this, key, message, mode, interval, schedule)
    ;(this.timers ??= new Map()).set(key, timer)
    if (mode !== Mode.Schedule) this.host.driver.schedule(timer, this.host.driver.now() + firstDelay)
    return timer
  }

  setReceiveTimeout(timeout: number, message: unknown): void {
    if (this.status >= Status.Stopping) return
    this.clearReceiveTimeout()
    const driver = this.host.driver
    const entry = new ReceiveTimeout(this, timeout, message)
    this.receiveTimeout = entry
    this.lastActivity = driver.now()
    driver.schedule(entry, this.lastActivity + timeout)
  }

  clearReceiveTimeout(): void {
    const entry = this.receiveTimeout
    if (entry === undefined) return
    entry.active = false
    this.host.driver.cancel(entry)
    this.receiveTimeout = undefined
  }
}

/**
 * Calls a user handler. A handler that throws instead of returning an effect fails like a defect, so supervision
 * sees it; the common path costs a try block, no allocation.
 */
const attempt = (handler: () => Effect.Effect<unknown, unknown, any>): Effect.Effect<unknown, unknown> => {
  try {
    const effect = handler() as Effect.Effect<unknown, unknown>
    return effect == null ? notAnEffect("a lifecycle hook", effect) : effect
  } catch (defect) {
    return Effect.die(defect)
  }
}

/** A handler returned nothing (a JavaScript caller's `return` forgotten): a defect, so supervision sees it. */
const notAnEffect = (handler: string, value: unknown): Effect.Effect<never> =>
  Effect.die(new TypeError(`${handler} returned ${value} instead of an Effect`))

const DIRECTIVES: ReadonlySet<string> = new Set<Directive>(["resume", "restart", "stop", "escalate"])

/** Runs a lifecycle hook; its failure is logged, never propagated (interruption excepted). */
const guard = (hook: () => Effect.Effect<void, never, any>, name: string): Effect.Effect<void> =>
  Effect.catchAllCause(Effect.asVoid(attempt(hook)), (cause) =>
    Cause.isInterruptedOnly(cause)
      ? (Effect.failCause(cause) as Effect.Effect<never>)
      : Effect.logError(`${name} failed`, cause)
  )
