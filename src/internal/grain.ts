/**
 * The grain runtime: a registry of activations, each an actor whose messages are grain envelopes.
 *
 * An activation goes activating → active → deactivating → gone. While it deactivates, new messages for its identity
 * wait in `pending`; messages still in its mailbox are handed back by the actor's `undelivered` hook; once the actor
 * has terminated, waiting messages start the next activation. Grain timers are `GrainTimer` ticks; deactivation
 * cancels them before `onDeactivate`, and any copy still queued is stale and dropped.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Actor from "../Actor.js"
import { type ActorRef, AskUndeliverable } from "../ActorRef.js"
import type { ActorSystemService } from "../ActorSystem.js"
import {
  type Grain,
  GrainActivationFailed,
  type GrainContext,
  GrainFailed,
  type GrainIdentity,
  GrainMessageUnhandled,
  type GrainProps,
  GrainReplyError,
  InvalidGrainKey,
  InvalidGrainKind,
  isGrain,
  UnknownGrainKind
} from "../Grain.js"
import type { TimerInfo, TimerOptions } from "../GrainTimers.js"
import type { Passivation } from "../Passivation.js"
import * as QuartzCron from "../QuartzCron.js"
import {
  GrainTimersStopped,
  type InvalidCronExpression,
  type InvalidTimerDelay,
  type InvalidTimerInterval,
  InvalidTimerOptions,
  InvalidTimerReference,
  ScheduledReferenceNotFound
} from "../TimerError.js"
import { type ActorCell, type CellRef, cellOf } from "./actorCell.js"
import { type ActorHooks, withHooks } from "./actorHooks.js"
import { spawnOwned } from "./actorSystem.js"
import { delayMillis, intervalMillis } from "./duration.js"
import { GrainTimer, type TimerOwner, type Trigger } from "./grainTimer.js"
import { Latch } from "./latch.js"
import { TimerBook } from "./timerBook.js"
import { checkReference, describeValue, firstInstant } from "./validate.js"

/** The error an `ask` to a grain can fail with, besides the ask timeout. */
export type GrainAskError =
  | AskUndeliverable
  | UnknownGrainKind
  | GrainActivationFailed
  | GrainFailed
  | GrainReplyError
  | GrainMessageUnhandled

/**
 * A message on its way to a grain; `reply` is set for an ask. A tracked tell (`asked` false with a `reply`) is
 * handled as a tell (signals are logged, not answered) and completes `reply` once the grain has handled it.
 */
class GrainEnvelope {
  constructor(
    readonly message: unknown,
    readonly reply: Deferred.Deferred<unknown, GrainAskError> | undefined,
    readonly asked: boolean = reply !== undefined
  ) {}
}

/**
 * Hooks for a runtime that hosts grains elsewhere (the cluster): where `tellGrain` goes, the passivation of a kind
 * and a callback when an activation starts or stops holding a keep-alive timer.
 */
export interface RegistryHooks {
  readonly tellGrain?: (
    kind: Grain<any, any, any, any>,
    key: string,
    message: unknown
  ) => Effect.Effect<void, UnknownGrainKind>
  readonly passivationOf?: (kind: Grain<any, any, any, any>) => Passivation
  readonly keepAliveChanged?: (identity: GrainIdentity, enabled: boolean) => void
}

/** The idle-passivation check, delivered as the activation actor's receive timeout. */
const PASSIVATE = Symbol.for("tickwork/Grain/passivate")

/** A message that only activates the grain (the testkit's way in): handled without `onReceive`. */
const ACTIVATE = Symbol.for("tickwork/Grain/activate")

/** The registry behind each `Grains` service (the testkit reaches activations through it). */
const registries = new WeakMap<object, GrainRegistry>()

/** Remembers the registry behind a `Grains` service. */
export const registerService = (service: object, registry: GrainRegistry): void => {
  registries.set(service, registry)
}

/** The registry behind a `Grains` service, when it is a single-process one. */
export const registryOf = (service: object): GrainRegistry | undefined => registries.get(service)

type Signal =
  | { readonly _tag: "reply"; readonly value: unknown }
  | { readonly _tag: "err"; readonly error: unknown }
  | { readonly _tag: "unhandled" }

const NO_ERR: Signal = { _tag: "reply", value: undefined }

const OPTION_KEYS = ["reference", "keepAlive", "timeZone"]

/**
 * The options of one schedule call, merged and checked: what a JavaScript caller gets wrong (a typo, a value of the
 * wrong kind, a string where an option goes) is a typed error naming the option, never ignored.
 */
const checkOptions = (
  grain: string,
  options: ReadonlyArray<unknown>,
  cron: boolean
): Either.Either<TimerOptions, InvalidTimerOptions | InvalidTimerReference> => {
  const fail = (option: string, reason: string) =>
    Either.left(new InvalidTimerOptions({ owner: `grain ${grain}`, option, reason }))
  const merged: { reference?: string; keepAlive?: boolean; timeZone?: string } = {}
  for (const option of options) {
    if (typeof option !== "object" || option === null || Array.isArray(option)) {
      return fail(
        "options",
        `each option must be an object such as withTimerReference("poll"), got ${describeValue(option)}`
      )
    }
    for (const [key, value] of Object.entries(option)) {
      switch (key) {
        case "reference": {
          // a reference is checked as the scheduler checks its own (`InvalidTimerReference`); `$` is ours
          const invalid =
            checkReference(value) ??
            ((value as string).startsWith("$")
              ? new InvalidTimerReference({
                  reference: value as string,
                  reason: 'references starting with "$" are reserved for generated ones'
                })
              : undefined)
          if (invalid !== undefined) return Either.left(invalid)
          merged.reference = value as string
          break
        }
        case "keepAlive":
          if (typeof value !== "boolean") return fail(key, `must be true or false, got ${describeValue(value)}`)
          merged.keepAlive = value
          break
        case "timeZone":
          if (!cron) return fail(key, "applies to cron timers only (scheduleWithCron); this timer has no time zone")
          if (typeof value !== "string") return fail(key, `must be an IANA zone name, got ${describeValue(value)}`)
          merged.timeZone = value
          break
        default:
          return fail(key, `is not a grain timer option (${OPTION_KEYS.join(", ")})`)
      }
    }
  }
  return Either.right(merged)
}

/**
 * One activation of a grain, and the book of its timers by reference (a base class: see `TimerBook`). What most
 * activations never use is made on first use: the message lists, the latch `awaitGone` waits on.
 */
export class Activation extends TimerBook<string, GrainTimer> implements TimerOwner {
  phase: "activating" | "active" | "deactivating" | "gone" = "activating"
  /** Messages for the next activation: arrived while this one deactivated. */
  pending: Array<GrainEnvelope> | undefined = undefined
  /** Messages handed back from this activation's mailbox when it stopped. */
  leftover: Array<GrainEnvelope> | undefined = undefined
  cell: ActorCell | undefined = undefined
  /** Messages for this activation that arrived while its actor was being spawned. */
  starting: Array<GrainEnvelope> | undefined = undefined
  activationFailure: Cause.Cause<unknown> | undefined = undefined
  /** Set by `GrainRegistry.close`: messages left when it ends are rejected instead of starting a new activation. */
  closing = false
  /** Released once this activation is gone (`markGone`); made when someone waits. */
  private goneLatch: Latch | undefined = undefined
  /** Whether the registry's `keepAliveChanged` hook was last told that a keep-alive timer is held. */
  private keptAlive = false
  private state: unknown = undefined
  private processed = 0
  private timerSeq = 0
  private timersStopped = false

  constructor(
    readonly registry: GrainRegistry,
    readonly kind: Grain<any, any, any, any>,
    readonly identity: GrainIdentity,
    readonly passivation: Passivation
  ) {
    super()
  }

  get path(): string | undefined {
    return this.cell?.path
  }

  get name(): string {
    return `${this.identity.kind}/${this.identity.key}`
  }

  /** What `onActivate` and `onDeactivate` get: a view over the activation, made for the call. */
  private get props(): GrainProps<unknown> {
    return new ActivationProps(this)
  }

  /** Completes once this activation is gone: terminated, or its actor could not be spawned. */
  get awaitGone(): Effect.Effect<void> {
    return this.phase === "gone" ? Effect.void : (this.goneLatch ??= new Latch()).await
  }

  markGone(): void {
    this.phase = "gone"
    this.goneLatch?.release()
  }

  get driver() {
    return this.cell!.host.driver
  }

  // ---------------------------------------------------------------- lifecycle (on the activation's fiber)

  /** The activation actor's `preStart`. Timers registered here stay dormant until it has succeeded. */
  activate(): Effect.Effect<void, unknown> {
    return Effect.matchCauseEffect(this.kind.onActivate(this.props) as Effect.Effect<unknown, unknown>, {
      onFailure: (cause) => {
        // The activation actor stops; its cell logs the failure with the actor's path.
        this.activationFailure = cause
        this.dropTimers()
        return Effect.failCause(cause)
      },
      onSuccess: (state) =>
        Effect.sync(() => {
          this.state = state
          this.phase = "active"
          const now = this.driver.now()
          for (const timer of this.timerList()) this.arm(timer, now)
          if (this.passivation._tag === "Idle") this.cell!.setReceiveTimeout(this.passivation.timeoutMillis, PASSIVATE)
        })
    })
  }

  /** Handles one user message or passivation check. */
  receive(entry: unknown): Effect.Effect<void> {
    if (entry === PASSIVATE) {
      const idle = this.passivation._tag === "Idle" ? this.passivation.timeoutMillis : Number.POSITIVE_INFINITY
      // An active keep-alive timer keeps the grain available for its ticks.
      return !this.holdsKeepAlive && this.driver.now() - this.cell!.lastActivity >= idle
        ? this.deactivate()
        : Effect.void
    }
    const envelope = entry as GrainEnvelope
    if (envelope.message === ACTIVATE) {
      if (envelope.reply !== undefined) Deferred.unsafeDone(envelope.reply, Effect.void)
      return Effect.void
    }
    return this.process(envelope.message, envelope.reply, envelope.asked, false)
  }

  handleTick(timer: GrainTimer): Effect.Effect<void> {
    return this.process(timer.message, undefined, false, true)
  }

  private process(
    message: unknown,
    reply: Deferred.Deferred<unknown, GrainAskError> | undefined,
    asked: boolean,
    isTick: boolean
  ): Effect.Effect<void> {
    if (this.phase !== "active") {
      if (reply !== undefined) Deferred.unsafeDone(reply, Effect.fail(this.undeliverable()))
      return Effect.void
    }
    const context = new MessageContext(this, message, isTick)
    // suspended: an `onReceive` that throws fails like one whose effect dies
    const handled = Effect.suspend(() => this.kind.onReceive(context, this.state) as Effect.Effect<unknown, unknown>)
    return Effect.matchCauseEffect(handled, {
      onSuccess: (state) => {
        this.state = state
        this.processed++
        const answered = this.answer(asked ? reply : undefined, context.signal ?? NO_ERR, isTick)
        if (!asked && reply !== undefined) Deferred.unsafeDone(reply, Effect.void)
        const passivate =
          this.passivation._tag === "MessageCount" && this.processed >= this.passivation.count
            ? this.deactivate()
            : Effect.void
        return Effect.zipRight(answered, passivate)
      },
      onFailure: (cause) => {
        // DESIGN §5: a tick is fire-and-forget; its failure is logged and the grain and its timers go on.
        if (isTick) return Effect.logWarning(`grain ${this.name} failed handling a timer tick; its timers go on`, cause)
        // An ask and a tracked tell both learn of it (a durable reminder counts its failures so).
        if (reply !== undefined) Deferred.unsafeDone(reply, Effect.fail(new GrainFailed({ grain: this.name, cause })))
        return Effect.zipRight(Effect.logError(`grain ${this.name} failed; deactivating`, cause), this.deactivate())
      }
    })
  }

  private answer(
    reply: Deferred.Deferred<unknown, GrainAskError> | undefined,
    signal: Signal,
    isTick: boolean
  ): Effect.Effect<void> {
    if (reply !== undefined) {
      const grain = this.name
      const outcome =
        signal._tag === "reply"
          ? Effect.succeed(signal.value)
          : signal._tag === "err"
            ? Effect.fail(new GrainReplyError({ grain, error: signal.error }))
            : Effect.fail(new GrainMessageUnhandled({ grain }))
      Deferred.unsafeDone(reply, outcome)
      return Effect.void
    }
    if (signal._tag === "reply") return Effect.void
    const what = isTick ? "a timer tick" : "a told message"
    return signal._tag === "err"
      ? Effect.logWarning(`grain ${this.name} reported an error for ${what}`, signal.error)
      : Effect.logWarning(`grain ${this.name} did not handle ${what}`)
  }

  /** Passivation or failure: stop timers, run `onDeactivate`, then stop the actor after this message. */
  deactivate(): Effect.Effect<void> {
    if (this.phase !== "active") return Effect.void
    return Effect.zipRight(
      this.runDeactivation(),
      Effect.sync(() => this.cell!.requestStop())
    )
  }

  /** Shutdown or the end of a deactivation: idempotent. */
  runDeactivation(): Effect.Effect<void> {
    if (this.phase !== "active") return Effect.void
    this.phase = "deactivating"
    this.stopTimers()
    const onDeactivate = Effect.catchAllCause(
      this.kind.onDeactivate(this.props, this.state) as Effect.Effect<void>,
      (cause) => Effect.logError(`onDeactivate of grain ${this.name} failed`, cause)
    )
    // a deactivation takes a bounded time: an `onDeactivate` that never returns is interrupted after the stop timeout
    const cell = this.cell
    return cell === undefined ? onDeactivate : cell.host.bounded(onDeactivate, cell, "onDeactivate")
  }

  /** The error of a message that reached an activation that is no longer active. */
  undeliverable(): AskUndeliverable {
    return new AskUndeliverable({ recipient: `grain ${this.name}`, reason: "stopped" })
  }

  // ---------------------------------------------------------------- timers

  /** Whether one of the activation's timers is a keep-alive one. */
  private get holdsKeepAlive(): boolean {
    return this.timerList().some((timer) => timer.keepAlive)
  }

  /** Tells the registry's hook when the activation starts or stops holding a keep-alive timer. */
  private keepAliveCheck(): void {
    const hook = this.registry.hooks.keepAliveChanged
    if (hook === undefined) return
    const held = this.holdsKeepAlive
    if (held !== this.keptAlive) {
      this.keptAlive = held
      hook(this.identity, held)
    }
  }

  private stopTimers(): void {
    this.timersStopped = true
    this.dropTimers()
  }

  private dropTimers(): void {
    for (const timer of this.timerList()) {
      timer.active = false
      if (this.cell !== undefined) this.driver.cancel(timer)
    }
    this.clearTimers()
    this.keepAliveCheck()
  }

  private arm(timer: GrainTimer, now: number): void {
    const due = timer.firstDue(now)
    if (due === undefined) this.forget(timer)
    else this.driver.schedule(timer, due)
  }

  offerTick(timer: GrainTimer, due: number, now: number): Effect.Effect<void> | undefined {
    return this.cell!.offerTick(timer, due, now)
  }

  forget(timer: GrainTimer): void {
    timer.active = false
    this.driver.cancel(timer)
    if (this.getTimer(timer.reference) === timer) this.deleteTimer(timer.reference)
    if (timer.keepAlive) this.keepAliveCheck()
  }

  touch(): void {
    this.cell!.lastActivity = this.driver.now()
  }

  /** Registers a timer whose options and trigger `make` checked at `now`. */
  register<E>(
    message: unknown,
    make: (now: number) => Either.Either<readonly [Trigger, TimerOptions], E>
  ): Effect.Effect<string, GrainTimersStopped | E> {
    return Effect.suspend((): Effect.Effect<string, GrainTimersStopped | E> => {
      if (this.timersStopped || this.phase === "gone") return Effect.fail(new GrainTimersStopped({ grain: this.name }))
      const now = this.driver.now()
      const made = make(now)
      if (Either.isLeft(made)) return Effect.fail(made.left)
      const [trigger, options] = made.right
      const { keepAlive = false, reference = `$timer-${++this.timerSeq}` } = options
      const previous = this.getTimer(reference)
      if (previous !== undefined) this.forget(previous)
      const timer = new GrainTimer(this, reference, message, trigger, keepAlive, now)
      this.setTimer(reference, timer)
      if (keepAlive) this.keepAliveCheck()
      if (this.phase === "active") this.arm(timer, now)
      return Effect.succeed(reference)
    })
  }

  cancelSchedule(reference: string): Effect.Effect<void, GrainTimersStopped | ScheduledReferenceNotFound> {
    return Effect.suspend((): Effect.Effect<void, GrainTimersStopped | ScheduledReferenceNotFound> => {
      if (this.timersStopped || this.phase === "gone") return Effect.fail(new GrainTimersStopped({ grain: this.name }))
      const timer = this.getTimer(reference)
      if (timer === undefined) return Effect.fail(new ScheduledReferenceNotFound({ reference }))
      this.forget(timer)
      return Effect.void
    })
  }

  listTimers(): ReadonlyArray<TimerInfo> {
    return this.timerList().map((timer) => timer.info())
  }

  /** The testkit's `inside`: `f` with the activation's props and state, on its fiber, in its mailbox order. */
  runInside(f: (props: GrainProps<unknown>, state: unknown) => Effect.Effect<unknown, unknown>) {
    return Effect.suspend(() =>
      this.phase === "active" ? f(this.props, this.state) : Effect.die(this.undeliverable())
    )
  }

  /**
   * The testkit's `fireTimer` (Orleans' `FireTimer`): `onReceive` runs now with the timer's message as a tick; the
   * timer's own schedule does not move.
   */
  fireNow(reference: string): Effect.Effect<void, ScheduledReferenceNotFound> {
    return Effect.suspend(() => {
      const timer = this.getTimer(reference)
      if (timer === undefined) return Effect.fail(new ScheduledReferenceNotFound({ reference }))
      if (timer.keepAlive) this.touch()
      return this.handleTick(timer)
    })
  }
}

/** The activation a grain actor's cell carries (`spawnOwned`). */
const activationOf = (ctx: Actor.ActorContext<unknown>): Activation => cellOf(ctx).owner as Activation

/** What a grain actor's hooks do, for every activation: the activation is the cell's owner. */
const grainHooks: ActorHooks = {
  undelivered: (owner, message) => {
    if (message instanceof GrainEnvelope) ((owner as Activation).leftover ??= []).push(message)
  },
  terminated: (owner) => (owner as Activation).registry.terminated(owner as Activation),
  timerInfos: (owner) => (owner as Activation).timerList().map((timer) => timer.inspect())
}

/**
 * The actor that carries the activations of `kind`: one definition per kind, whose handlers find their activation
 * through the cell (an activation holds no closures of its own).
 */
const grainActor = (kind: Grain<any, any, any, any>): Actor.Actor<unknown, void, unknown> => {
  const actor = Actor.make<unknown>()({
    preStart: (ctx) => {
      const activation = activationOf(ctx)
      // The drain may start before `spawn` returns to the registry (the spawning fiber can yield in between).
      activation.cell = cellOf(ctx)
      return activation.activate()
    },
    receive: (entry, ctx) => activationOf(ctx).receive(entry),
    postStop: (ctx) => activationOf(ctx).runDeactivation()
  })
  const sized = kind.mailboxCapacity === undefined ? actor : Actor.withMailboxCapacity(actor, kind.mailboxCapacity)
  return withHooks(sized, grainHooks)
}

/**
 * What `onActivate` and `onDeactivate` see: a class over the activation, no closure made while the grain is idle. Each
 * operation is a getter returning a function closed over the activation, so a destructured `schedule` works too.
 */
class ActivationProps implements GrainProps<unknown> {
  constructor(protected readonly activation: Activation) {}

  get identity(): GrainIdentity {
    return this.activation.identity
  }

  get scheduleOnce() {
    const activation = this.activation
    return (
      message: unknown,
      delay: Duration.DurationInput,
      ...options: ReadonlyArray<TimerOptions>
    ): Effect.Effect<string, GrainTimersStopped | InvalidTimerDelay | InvalidTimerOptions | InvalidTimerReference> =>
      activation.register(message, () =>
        Either.flatMap(checkOptions(activation.name, options, false), (checked) =>
          Either.map(delayMillis(delay), (d) => [{ _tag: "once", delay: d }, checked] as const)
        )
      )
  }

  get schedule() {
    const activation = this.activation
    return (
      message: unknown,
      interval: Duration.DurationInput,
      ...options: ReadonlyArray<TimerOptions>
    ): Effect.Effect<string, GrainTimersStopped | InvalidTimerInterval | InvalidTimerOptions | InvalidTimerReference> =>
      activation.register(message, () =>
        Either.flatMap(checkOptions(activation.name, options, false), (checked) =>
          Either.map(intervalMillis(interval), (i) => [{ _tag: "interval", interval: i }, checked] as const)
        )
      )
  }

  get scheduleWithCron() {
    const activation = this.activation
    return (
      message: unknown,
      expression: string,
      ...options: ReadonlyArray<TimerOptions>
    ): Effect.Effect<
      string,
      GrainTimersStopped | InvalidCronExpression | InvalidTimerOptions | InvalidTimerReference
    > =>
      activation.register(message, (now) =>
        Either.flatMap(checkOptions(activation.name, options, true), (checked) =>
          Either.flatMap(
            QuartzCron.parse(expression, checked.timeZone === undefined ? undefined : { timeZone: checked.timeZone }),
            // a cron with no instant after now would be "active" and never fire
            (cron) => Either.map(firstInstant(cron, expression, now), () => [{ _tag: "cron", cron }, checked] as const)
          )
        )
      )
  }

  get cancelSchedule() {
    const activation = this.activation
    return (reference: string): Effect.Effect<void, GrainTimersStopped | ScheduledReferenceNotFound> =>
      activation.cancelSchedule(reference)
  }

  get timers(): Effect.Effect<ReadonlyArray<TimerInfo>> {
    const activation = this.activation
    return Effect.sync(() => activation.listTimers())
  }

  get tellGrain() {
    const registry = this.activation.registry
    return <M>(
      kind: Grain<M, any, any, any>,
      key: string,
      message: M
    ): Effect.Effect<void, UnknownGrainKind | InvalidGrainKey> => {
      const invalid = keyProblem(kind, key)
      if (invalid !== undefined) return Effect.fail(invalid)
      return registry.hooks.tellGrain === undefined
        ? registry.tell(kind, key, message)
        : registry.hooks.tellGrain(kind, key, message)
    }
  }

  get tellActor() {
    return <M>(actor: ActorRef<M>, message: M): Effect.Effect<void> => actor.tell(message)
  }
}

/** What `onReceive` sees: the props plus the message and its reply signals (at most one per message). */
class MessageContext extends ActivationProps implements GrainContext<unknown> {
  signal: Signal | undefined = undefined

  constructor(
    activation: Activation,
    readonly message: unknown,
    readonly isTick: boolean
  ) {
    super(activation)
  }

  get reply() {
    return (value: unknown): Effect.Effect<void> => this.signalOnce({ _tag: "reply", value })
  }

  get noErr(): Effect.Effect<void> {
    return this.signalOnce(NO_ERR)
  }

  get err() {
    return (error: unknown): Effect.Effect<void> => this.signalOnce({ _tag: "err", error })
  }

  get unhandled(): Effect.Effect<void> {
    return this.signalOnce({ _tag: "unhandled" })
  }

  private signalOnce(next: Signal): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.signal !== undefined) {
        return Effect.dieMessage(`grain ${this.activation.name}: signal at most once per message`)
      }
      this.signal = next
      return Effect.void
    })
  }
}

/**
 * Activations by kind, then by key. The key is the caller's own string, which the activation's identity holds too; a
 * single map would need a joined id, a string of its own per activation (~32 B).
 */
class ActivationTable {
  private readonly byKind = new Map<string, Map<string, Activation>>()
  size = 0

  get(kind: string, key: string): Activation | undefined {
    return this.byKind.get(kind)?.get(key)
  }

  set(kind: string, key: string, activation: Activation): void {
    let byKey = this.byKind.get(kind)
    if (byKey === undefined) this.byKind.set(kind, (byKey = new Map()))
    if (!byKey.has(key)) this.size++
    byKey.set(key, activation)
  }

  /** Forgets `activation`, if it is the one held for (kind, key). */
  delete(kind: string, key: string, activation: Activation): void {
    const byKey = this.byKind.get(kind)
    if (byKey?.get(key) !== activation) return
    byKey.delete(key)
    this.size--
  }
}

export class GrainRegistry {
  private readonly activations = new ActivationTable()
  /** The actor of each kind started so far (`grainActor`). */
  private readonly actors = new Map<Grain<any, any, any, any>, Actor.Actor<unknown, void, unknown>>()

  constructor(
    private readonly system: ActorSystemService,
    private readonly runtime: Runtime.Runtime<never>,
    private readonly kinds: ReadonlyMap<string, Grain<any, any, any, any>>,
    private readonly defaultPassivation: Passivation,
    readonly hooks: RegistryHooks = {}
  ) {}

  get size(): number {
    return this.activations.size
  }

  private kindOf(kind: Grain<any, any, any, any>): Either.Either<Grain<any, any, any, any>, UnknownGrainKind> {
    const registered = this.kinds.get(kind.name)
    return registered === undefined ? Either.left(new UnknownGrainKind({ kind: kind.name })) : Either.right(registered)
  }

  tell(kind: Grain<any, any, any, any>, key: string, message: unknown): Effect.Effect<void, UnknownGrainKind> {
    return Effect.suspend(() =>
      Either.match(this.kindOf(kind), {
        onLeft: Effect.fail,
        onRight: (registered) => this.deliver(registered, key, new GrainEnvelope(message, undefined))
      })
    )
  }

  ask(kind: Grain<any, any, any, any>, key: string, message: unknown): Effect.Effect<unknown, GrainAskError> {
    return this.deliverAwaiting(kind, key, message, true)
  }

  /**
   * Tells and waits until the grain has handled the message; fails when it could not be delivered, or with
   * `GrainFailed` when `onReceive` failed on it.
   */
  tellTracked(kind: Grain<any, any, any, any>, key: string, message: unknown): Effect.Effect<void, GrainAskError> {
    return Effect.asVoid(this.deliverAwaiting(kind, key, message, false))
  }

  private deliverAwaiting(
    kind: Grain<any, any, any, any>,
    key: string,
    message: unknown,
    asked: boolean
  ): Effect.Effect<unknown, GrainAskError> {
    return Effect.suspend(() =>
      Either.match(this.kindOf(kind), {
        onLeft: Effect.fail,
        onRight: (registered) =>
          Effect.flatMap(Deferred.make<unknown, GrainAskError>(), (reply) =>
            Effect.zipRight(
              this.deliver(registered, key, new GrainEnvelope(message, reply, asked)),
              Deferred.await(reply)
            )
          )
      })
    )
  }

  /**
   * Deactivates the activation of (kind, key), if any, and waits until it is gone. Messages that wait for it are
   * rejected (asks and tracked tells fail with `AskUndeliverable`, tells become dead letters) instead of starting a
   * new activation: the host decides where the next activation runs.
   */
  close(kind: string, key: string): Effect.Effect<void> {
    return Effect.suspend(() => {
      const activation = this.activations.get(kind, key)
      if (activation === undefined) return Effect.void
      activation.closing = true
      activation.cell?.requestStop()
      return activation.awaitGone
    })
  }

  timersOf(kind: Grain<any, any, any, any>, key: string): Effect.Effect<ReadonlyArray<TimerInfo>, UnknownGrainKind> {
    return Effect.suspend(() =>
      Either.match(this.kindOf(kind), {
        onLeft: Effect.fail,
        onRight: () => {
          const activation = this.activations.get(kind.name, key)
          return Effect.succeed(activation?.phase === "active" ? activation.listTimers() : [])
        }
      })
    )
  }

  isActive(kind: Grain<any, any, any, any>, key: string): boolean {
    return this.activations.get(kind.name, key)?.phase === "active"
  }

  /**
   * The actor cell of the activation of (kind, key), activated first when there is none (the testkit reaches a grain
   * so). Dies when it cannot be activated.
   */
  cellOf(kind: Grain<any, any, any, any>, key: string): Effect.Effect<ActorCell, UnknownGrainKind> {
    return Effect.suspend(() =>
      Either.match(this.kindOf(kind), {
        onLeft: Effect.fail,
        onRight: (registered) => {
          const current = this.activations.get(kind.name, key)
          if (current?.cell !== undefined && current.phase !== "deactivating") return Effect.succeed(current.cell)
          // activate it (or wait for the next activation) with a message that does nothing
          return Effect.zipRight(
            this.tellTracked(registered, key, ACTIVATE),
            Effect.suspend(() => {
              const cell = this.activations.get(kind.name, key)?.cell
              return cell === undefined
                ? Effect.dieMessage(`grain ${kind.name}/${key} could not be activated`)
                : Effect.succeed(cell)
            })
          ).pipe(Effect.catchAll((error) => Effect.die(error)))
        }
      })
    )
  }

  private deliver(kind: Grain<any, any, any, any>, key: string, envelope: GrainEnvelope): Effect.Effect<void> {
    const current = this.activations.get(kind.name, key)
    if (current !== undefined) {
      if (current.phase === "deactivating") {
        ;(current.pending ??= []).push(envelope)
        return Effect.void
      }
      return Effect.sync(() => {
        if (current.cell === undefined) (current.starting ??= []).push(envelope)
        else this.post(current.cell, envelope)
      })
    }
    return this.start(kind, key, [envelope])
  }

  /** Starts an activation and hands it `messages` in order. */
  private start(
    kind: Grain<any, any, any, any>,
    key: string,
    messages: ReadonlyArray<GrainEnvelope>
  ): Effect.Effect<void> {
    const passivation = this.hooks.passivationOf?.(kind) ?? kind.passivation ?? this.defaultPassivation
    const activation = new Activation(this, kind, { kind: kind.name, key }, passivation)
    this.activations.set(kind.name, key, activation)
    let actor = this.actors.get(kind)
    if (actor === undefined) this.actors.set(kind, (actor = grainActor(kind)))
    // The handlers run with the services of the layer that registered the kind (its runtime), whoever sends the
    // message that activates it; the activations then share one base of FiberRefs (`spawnerBase`).
    const name = `grain:${encodeURIComponent(kind.name)}:${encodeURIComponent(key)}`
    return spawnOwned(this.system, actor, name, activation, this.runtime.fiberRefs).pipe(
      Effect.match({
        onFailure: (error) => {
          // The system is shutting down (or the name is somehow taken): nothing can run these messages.
          this.activations.delete(kind.name, key, activation)
          this.reject(
            [...messages, ...(activation.starting ?? [])],
            new GrainActivationFailed({ grain: activation.name, cause: Cause.fail(error) })
          )
          activation.markGone()
        },
        onSuccess: (ref) => {
          const cell = (ref as CellRef<unknown>).cell
          activation.cell = cell
          for (const envelope of messages) this.post(cell, envelope)
          const starting = activation.starting
          activation.starting = undefined
          if (starting !== undefined) for (const envelope of starting) this.post(cell, envelope)
          if (activation.closing) cell.requestStop()
        }
      })
    )
  }

  /** Puts an envelope into the activation's mailbox; an ask that cannot be queued fails at once. */
  private post(cell: ActorCell, envelope: GrainEnvelope): void {
    const delivery = cell.ref.deliver(envelope, undefined, undefined)
    if (delivery !== "delivered" && envelope.reply !== undefined) {
      Deferred.unsafeDone(envelope.reply, Effect.fail(new AskUndeliverable({ recipient: cell.path, reason: delivery })))
    }
  }

  /** The activation's actor has terminated: forget it, and start the next one if messages wait. */
  terminated(activation: Activation): void {
    activation.markGone()
    this.activations.delete(activation.identity.kind, activation.identity.key, activation)
    const waiting = [...(activation.leftover ?? []), ...(activation.pending ?? [])]
    if (activation.activationFailure !== undefined) {
      this.reject(waiting, new GrainActivationFailed({ grain: activation.name, cause: activation.activationFailure }))
      return
    }
    if (activation.closing) {
      this.reject(waiting, activation.undeliverable())
      return
    }
    if (waiting.length > 0) Runtime.runFork(this.runtime)(this.start(activation.kind, activation.identity.key, waiting))
  }

  /** Fails the asks among `messages` with `error`; the tells become dead letters. */
  private reject(messages: ReadonlyArray<GrainEnvelope>, error: GrainAskError): void {
    for (const envelope of messages) {
      if (envelope.reply !== undefined) Deferred.unsafeDone(envelope.reply, Effect.fail(error))
      else this.system.deadLetters.unsafeTell(envelope.message)
    }
  }
}

/** Where `Passivation.idle` and `messageCount` leave why their argument is unusable (see Passivation.ts). */
const PassivationProblemKey = Symbol.for("tickwork/Passivation/problem")

/**
 * Why a passivation strategy cannot be used, or undefined when it can: the reason its constructor left, or a check of
 * a hand-made or foreign value.
 */
export const passivationProblem = (strategy: unknown): string | undefined => {
  if (typeof strategy !== "object" || strategy === null) {
    const use = "use Passivation.idle(timeout), messageCount(n) or never"
    return `${describeValue(strategy)} is not a passivation strategy: ${use}`
  }
  const marked = (strategy as { readonly [PassivationProblemKey]?: string })[PassivationProblemKey]
  if (marked !== undefined) return marked
  const candidate = strategy as Passivation
  switch (candidate._tag) {
    case "Idle": {
      const checked = intervalMillis(candidate.timeoutMillis)
      return checked._tag === "Left" ? `the idle timeout ${checked.left.reason}` : undefined
    }
    case "MessageCount":
      return Number.isSafeInteger(candidate.count) && candidate.count > 0
        ? undefined
        : `the message count must be a whole number >= 1, got ${describeValue(candidate.count)}`
    case "Never":
      return undefined
    default:
      return "it is not a passivation strategy: use Passivation.idle(timeout), messageCount(n) or never"
  }
}

/** What is wrong with `kind` (the field and why), or undefined when the layer can run it. */
const kindProblem = (kind: Grain<any, any, any, any>): readonly [string, string] | undefined => {
  if (!isGrain(kind)) return ["kind", `${describeValue(kind)} is not a grain kind: make one with Grain.make`]
  if (typeof kind.name !== "string" || kind.name.trim() === "") {
    return ["name", `must be a non-empty string, got ${describeValue(kind.name)}`]
  }
  for (const handler of ["onActivate", "onReceive", "onDeactivate"] as const) {
    const value: unknown = kind[handler]
    if (typeof value !== "function") {
      const what = Effect.isEffect(value) ? "an Effect" : describeValue(value)
      return [handler, `must be a function returning an Effect, got ${what}`]
    }
  }
  if (kind.passivation !== undefined) {
    const problem = passivationProblem(kind.passivation)
    if (problem !== undefined) return ["passivation", problem]
  }
  const capacity = kind.mailboxCapacity
  if (capacity !== undefined && !(Number.isSafeInteger(capacity) && capacity > 0)) {
    return ["mailboxCapacity", `must be a whole number >= 1, got ${describeValue(capacity)}`]
  }
  return undefined
}

/** Grain kinds by name, each checked; a name given twice is an `InvalidGrainKind` too. */
export const resolveKinds = (
  kinds: Iterable<Grain<any, any, any, any>>
): Either.Either<Map<string, Grain<any, any, any, any>>, InvalidGrainKind> => {
  const byName = new Map<string, Grain<any, any, any, any>>()
  for (const kind of kinds) {
    const problem = kindProblem(kind)
    const name = String((kind as { readonly name?: unknown } | undefined)?.name)
    if (problem !== undefined) {
      return Either.left(new InvalidGrainKind({ kind: name, field: problem[0], reason: problem[1] }))
    }
    if (byName.has(kind.name)) {
      return Either.left(new InvalidGrainKind({ kind: name, field: "name", reason: "the name is registered twice" }))
    }
    byName.set(kind.name, kind)
  }
  return Either.right(byName)
}

/** `resolveKinds` for callers without an error channel: a bad kind throws (a defect where the layer is built). */
export const kindsByName = (kinds: Iterable<Grain<any, any, any, any>>): Map<string, Grain<any, any, any, any>> =>
  Either.getOrElse(resolveKinds(kinds), (error) => {
    throw new RangeError(error.message)
  })

/** Why `key` cannot address a grain, or undefined: keys are non-empty strings and are never converted. */
export const keyProblem = (kind: Grain<any, any, any, any>, key: unknown): InvalidGrainKey | undefined =>
  typeof key === "string" && key !== ""
    ? undefined
    : new InvalidGrainKey({
        kind: String((kind as { readonly name?: unknown } | undefined)?.name),
        key: describeValue(key),
        reason: "a grain key must be a non-empty string"
      })

/**
 * A grain kind name held in a system by the `Grains` layers that registered it, and the registry that runs its
 * activations. The activations' actors are named after the kind (`grain:<kind>:<key>`), so a second registry of the kind
 * could never spawn a grain another one holds: a later layer with the same kind routes it to the holding registry.
 */
class HeldKind {
  users = 1

  constructor(
    readonly kind: Grain<any, any, any, any>,
    readonly registry: GrainRegistry
  ) {}
}

/** The held kinds by system, then by name. */
const heldKinds = new WeakMap<ActorSystemService, Map<string, HeldKind>>()

/**
 * Holds `kinds` in `system` for a `Grains` layer's scope and gives, by name, the registry that runs each: the one
 * already holding it for the same kind, `registry` for the others. Another kind under a held name is an
 * `InvalidGrainKind` (name), and nothing is held. A name is free again once every layer holding it has been released.
 */
export const holdKinds = (
  system: ActorSystemService,
  kinds: ReadonlyMap<string, Grain<any, any, any, any>>,
  registry: GrainRegistry
): Effect.Effect<ReadonlyMap<string, GrainRegistry>, InvalidGrainKind, Scope.Scope> => {
  let byName = heldKinds.get(system)
  if (byName === undefined) heldKinds.set(system, (byName = new Map()))
  const table = byName
  return Effect.flatMap(
    Effect.acquireRelease(
      // one synchronous step: the table cannot change between the check and the hold
      Effect.sync((): Either.Either<ReadonlyArray<HeldKind>, InvalidGrainKind> => {
        for (const [name, kind] of kinds) {
          const held = table.get(name)
          if (held !== undefined && held.kind !== kind) {
            const reason =
              `another grain kind named ${name} is registered in ActorSystem ${system.name} by another Grains layer ` +
              "(one kind per name and system: pass the same Grain.make value to every layer)"
            return Either.left(new InvalidGrainKind({ kind: name, field: "name", reason }))
          }
        }
        const holds: Array<HeldKind> = []
        for (const [name, kind] of kinds) {
          const held = table.get(name)
          if (held === undefined) table.set(name, new HeldKind(kind, registry))
          else held.users++
          holds.push(table.get(name)!)
        }
        return Either.right(holds)
      }),
      (holds) =>
        Effect.sync(() => {
          if (Either.isLeft(holds)) return
          for (const held of holds.right) {
            if (--held.users === 0 && table.get(held.kind.name) === held) table.delete(held.kind.name)
          }
        })
    ),
    Either.map((holds) => new Map(holds.map((held) => [held.kind.name, held.registry])))
  )
}

/** The key of a grain identity in maps of activations. */
export const idOf = (kind: string, key: string): string => `${kind}\u0000${key}`

export type { ActorRef }
