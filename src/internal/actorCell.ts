/**
 * The runtime of one actor: its mailbox, state and children, delivery, and the drain the dispatcher runs (Akka's
 * `ActorCell` with its `Dispatch`). Supervision and the stop sequence live in `faultHandling.ts`, the keyed timers in
 * `actorTimers.ts`, the receive timeout in `receiveTimeout.ts` (see `cellProtocol.ts`).
 *
 * An idle actor has no fiber. Work arriving queues a drain with the system's dispatcher, which runs the drains of many
 * ready actors on one fiber, each with the actor's own FiberRefs; the drain handles queued entries back to back (no
 * suspension per message while work is queued) and ends when the mailbox is empty. A tick for an idle actor is handled
 * as it fires (`handleNow`); other ticks are drained inside the timer driver's turn.
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import type { Actor, ActorContext } from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import type { LogContext } from "../LogContext.js"
import type { TimerInfo } from "../Timers.js"
import { CellContext } from "./actorContext.js"
import { type ActorHooks, hooksOf } from "./actorHooks.js"
import { type ActorTimer, cancelKeyedTimers, keyedTimerInfos } from "./actorTimers.js"
import {
  type CellHost,
  ChildFailed,
  Completion,
  Envelope,
  Flag,
  RunInside,
  STOP,
  Status,
  type TimerTable
} from "./cellProtocol.js"
import { completeNow } from "./dispatcher.js"
import * as FaultHandling from "./faultHandling.js"
import { EMPTY, Mailbox } from "./mailbox.js"
import { recordDelivered, recordDropped, recordLateness } from "./metrics.js"
import { clearReceiveTimeout, type ReceiveTimeout, setReceiveTimeout } from "./receiveTimeout.js"
import { BaseRef, type Delivery } from "./refs.js"
import { MailboxTick } from "./tick.js"

export type { CellHost, TimerTable } from "./cellProtocol.js"

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

/**
 * An actor. Its fields are read and written by the modules it is split into (`faultHandling.ts`, `actorTimers.ts`,
 * `receiveTimeout.ts`); outside `src/internal` only its methods are used.
 */
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
   * `status`, so a latch's own state (and object) would repeat it.
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
  /** `Flag`s: four booleans in one field rather than four fields in every actor. */
  private flags = 0
  receiveTimeout: ReceiveTimeout | undefined = undefined
  lastActivity = 0
  state: unknown = undefined
  status = Status.Starting
  private currentSender: ActorRef<any> | undefined = undefined
  /** Restart times inside the supervisor's window (`faultHandling.ts`), made at the first restart. */
  restarts: Array<number> | undefined = undefined
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

  hasFlag(flag: Flag): boolean {
    return (this.flags & flag) !== 0
  }

  setFlag(flag: Flag, on: boolean): void {
    this.flags = on ? this.flags | flag : this.flags & ~flag
  }

  /** The last segment of the path (not a field in every actor: it is read when an actor terminates). */
  get name(): string {
    return this.path.slice(this.path.lastIndexOf("/") + 1)
  }

  get hooks(): ActorHooks | undefined {
    return hooksOf(this.actor)
  }

  /** Waits until this actor has terminated. */
  get awaitDone(): Effect.Effect<void> {
    if (this.status === Status.Terminated) return Effect.void
    return Deferred.await((this.done ??= Deferred.unsafeMake(FiberId.none)))
  }

  /** Releases whoever waits in `awaitDone`: the actor has terminated. */
  released(): void {
    if (this.done !== undefined) Deferred.unsafeDone(this.done, Effect.void)
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

  /** The children map, made on first use. */
  childMap(): Map<string, ActorCell> {
    return (this.children ??= new Map())
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
    const tracing = this.host.tracing
    if (tracing.enabled) tracing.offered(tick, due)
    if (this.status >= Status.Stopping) {
      this.host.timeline?.dropped(tick, "owner_stopped")
      tick.lost((message, sender) => this.host.deadLetter(message, sender, this.path, "stopped"))
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
    this.host.timeline?.dropped(tick, "mailbox_full")
    if (tracing.enabled) tracing.droppedOne(tick)
    tick.undeliverable()
    return Effect.logWarning(
      `tick dropped: mailbox full (capacity ${this.mailbox.capacity}); the timer keeps firing`
    ).pipe(Effect.annotateLogs({ actor: this.path, timer_kind: tick.kind }))
  }

  /**
   * Runs `f` with this actor's context, in its mailbox order, and gives its outcome back (the testkit's `inside`). An
   * actor that has stopped, or whose bounded mailbox is full, answers with a defect saying so.
   */
  inside<A, E>(f: (context: ActorContext<any>) => Effect.Effect<A, E>): Effect.Effect<Exit.Exit<A, E>> {
    return Effect.async<Exit.Exit<A, E>>((resume) => {
      const reply = (exit: Exit.Exit<unknown, unknown>) => resume(Effect.succeed(exit as Exit.Exit<A, E>))
      const entry = new RunInside(f as (context: ActorContext<any>) => Effect.Effect<unknown, unknown>, reply)
      if (this.status >= Status.Stopping) reply(Exit.die(new Error(`actor ${this.path} has stopped`)))
      else if (!this.mailbox.offer(entry)) reply(Exit.die(new Error(`the mailbox of ${this.path} is full`)))
      else this.wake(false)
    })
  }

  /** Queues a message ahead of user messages (never refused, even by a full bounded mailbox) and wakes the actor. */
  offerSystem(message: unknown): void {
    this.mailbox.offerSystem(message)
    this.wake(false)
  }

  /**
   * Running (so started, by a drain), with no drain queued or running, and so nothing queued: a tick may be handled at
   * once. The mailbox is not read: whatever is queued for a running actor claims a drain (`wake`), and a drain lets go
   * (`endDrain`) only when it found the mailbox empty; `handleNow` keeps the claim when its handler queued something.
   * Reading it would cost a cache miss per tick (the mailbox is an object of its own).
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
   * arrives meanwhile is handled after it (docs/performance.md has what this saves).
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
   * Called by the dispatcher on the batch fiber about to drain this actor. False when `forceStop` took over since the
   * drain was queued.
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
   * annotation only). Not held by the actor: made when a drain first runs an effect on a fiber, and kept a while by the
   * system's `FiberRefsCache`. A drain whose handlers complete in place needs none. Every drain starts from these same
   * values, whatever the handlers of the one before set on their fiber.
   */
  fiberRefs(fiberId: FiberId.Single): FiberRefs.FiberRefs {
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
  pending: Effect.Effect<unknown, unknown> | undefined = undefined
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
      return FaultHandling.start(this)
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
    if (internal) return FaultHandling.internalDefect(this, cause)
    // An internal defect must not leave the actor wedged: finish its stop sequence.
    return Effect.catchAllCause(FaultHandling.onFailure(this, cause), (defect) =>
      FaultHandling.internalDefect(this, defect)
    )
  }

  /** The dispatcher caught a throw that escaped this drain's machinery (see `FaultHandling.abandon`). */
  abandon(cause: Cause.Cause<unknown>): Effect.Effect<void> {
    return FaultHandling.abandon(this, cause)
  }

  private endDrain(): undefined {
    this.setFlag(Flag.Draining, false)
    this.fiber = undefined
    return undefined
  }

  /** Handles one entry; undefined when it was dropped without running anything. */
  private handle(entry: unknown): Effect.Effect<unknown, unknown> | undefined {
    if (entry instanceof MailboxTick) {
      entry.queued--
      if (!entry.accept()) {
        recordDropped("stale")
        this.host.timeline?.dropped(entry, "stale")
        if (this.host.tracing.enabled) this.host.tracing.droppedOne(entry)
        return undefined
      }
      if (this.status !== Status.Running) {
        entry.undeliverable()
        recordDropped("owner_stopped")
        this.host.timeline?.dropped(entry, "owner_stopped")
        return undefined
      }
      recordDelivered(entry.kind)
      this.host.timeline?.delivered(entry)
      let handler: Effect.Effect<unknown, unknown> | undefined
      try {
        handler = entry.handler()
      } catch (defect) {
        // A tick kind may make its handler by calling user code: a throw is the actor's defect, supervised, and never
        // the timer driver's, which may be the one handling the tick (`handleNow`).
        handler = Effect.die(defect)
      }
      let effect: Effect.Effect<unknown, unknown> | undefined
      if (handler === undefined) {
        effect = this.invoke(entry.message, entry.sender, undefined, true)
      } else {
        // A tick's own handler runs under this actor's supervision; the state is left as it is.
        this.completion = Completion.Tick
        effect = handler
      }
      const tracing = this.host.tracing
      if (!tracing.enabled || effect === undefined) return effect
      const { key } = entry.label()
      return tracing.wrapTick(entry, { kind: entry.kind, owner: this.path, key }, this.host.driver.now(), effect)
    }
    if (entry instanceof Envelope) return this.invoke(entry.message, entry.sender, entry.logContext, false)
    if (entry instanceof RunInside) {
      // the testkit's code: its outcome goes back to the caller, never to supervision; the state stays as it is
      this.completion = Completion.Tick
      const run = Effect.suspend(() => entry.run(this.context))
      return this.status === Status.Running
        ? Effect.map(Effect.exit(run), entry.reply)
        : Effect.sync(() => entry.reply(Exit.die(new Error(`actor ${this.path} has stopped`))))
    }
    this.completion = Completion.Internal
    if (entry === STOP) return FaultHandling.stop(this)
    if (entry instanceof ChildFailed) {
      // A child escalated: this actor fails with the child's cause.
      return this.status === Status.Running ? FaultHandling.onFailure(this, entry.cause) : undefined
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
    if (effect == null) effect = FaultHandling.notAnEffect("receive", effect)
    if (logContext === undefined) return effect
    return Effect.locally(
      effect,
      FiberRef.currentLogAnnotations,
      HashMap.set(logContext.annotations, "actor", this.path as unknown)
    ).pipe(Effect.locally(FiberRef.currentLogSpan, logContext.spans))
  }

  // ---------------------------------------------------------------- stopping (faultHandling.ts)

  /** Asks this actor to stop after its current message; the system's stop timeout bounds how long that may take. */
  requestStop(): void {
    if (this.status >= Status.Stopping) return
    this.offerSystem(STOP)
    this.host.armStopDeadline(this)
  }

  /** Stops this actor now, interrupting a handler in flight (see `FaultHandling.forceStop`). */
  forceStop(): Effect.Effect<void> {
    return FaultHandling.forceStop(this)
  }

  // ---------------------------------------------------------------- timers (actorTimers.ts, receiveTimeout.ts)

  /** Timers of this incarnation, the receive timeout and registered timer tables included. */
  get timerCount(): number {
    let count = (this.timers?.size ?? 0) + (this.receiveTimeout === undefined ? 0 : 1)
    if (this.timerTables !== undefined) for (const table of this.timerTables) count += table.size
    return count
  }

  /** Every timer of the incarnation, for inspection: keyed timers, the receive timeout, then registered tables. */
  timerInfos(): ReadonlyArray<TimerInfo> {
    const infos = [...keyedTimerInfos(this)]
    const timeout = this.receiveTimeout
    if (timeout !== undefined) {
      infos.push({
        key: "receive-timeout",
        kind: timeout.kind,
        mode: "receive-timeout",
        nextDue: timeout.isPending ? this.host.driver.dueOf(timeout) : undefined,
        intervalMillis: timeout.timeout,
        expression: undefined
      })
    }
    if (this.timerTables !== undefined) for (const table of this.timerTables) infos.push(...(table.infos?.() ?? []))
    const owned = this.hooks?.timerInfos
    if (owned !== undefined) infos.push(...owned(this.owner))
    return infos
  }

  /** Registers a timer table of a runtime built on this actor (an entity's, a Spot's); see `TimerTable`. */
  addTimerTable(table: TimerTable): void {
    // An array made with its one table (a set, or `[]` then a push, reserves room for more).
    if (this.timerTables === undefined) this.timerTables = [table]
    else this.timerTables.push(table)
  }

  /** Cancels every timer of the incarnation, including the receive timeout; their queued ticks become stale. */
  cancelTimers(): void {
    cancelKeyedTimers(this)
    clearReceiveTimeout(this)
    if (this.timerTables !== undefined) {
      for (const table of this.timerTables) table.stopTimers()
      this.timerTables = undefined
    }
  }

  /** Sets the receive timeout (a grain's idle passivation uses it; actors go through `ctx.setReceiveTimeout`). */
  setReceiveTimeout(timeout: number, message: unknown): void {
    setReceiveTimeout(this, timeout, message)
  }
}
