/**
 * The entity runtime: one actor per awake entity, and a small registry that routes messages by id.
 *
 * Registry states per id: absent (asleep) → starting (a spawn is on its way; messages wait in `pending`) → running
 * (messages go straight to the actor's mailbox) → draining (a sleep was asked for, or the incarnation is stopping;
 * messages wait in `next`) → absent again when the actor has terminated, or straight back to starting when messages
 * waited in `next`. The transitions are synchronous (a sync `route`, a termination callback on the actor), so a
 * message is never routed to an incarnation that has begun to stop. Spawns run on a short-lived fiber of the
 * registry's runtime, so that routing is synchronous for `ActorRef.tell` and `unsafeTell` alike.
 */
import * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import * as Random from "effect/Random"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Actor from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import { ActorSystem, type ActorSystemService } from "../ActorSystem.js"
import {
  type Deadline,
  type Input as DeadlineInput,
  type InvalidDeadline,
  isDeadline,
  make as makeDeadline
} from "../Deadline.js"
import {
  type Command,
  type Definition,
  type Entity,
  type EntityContext,
  type EntityRegistry,
  InvalidCommand,
  InvalidEntityDefinition,
  InvalidEntityId,
  type RegistryStats
} from "../Entity.js"
import type { PeriodicTimer } from "../EntityTimers.js"
import type { LogContext } from "../LogContext.js"
import type { Cancellable } from "../Scheduler.js"
import type { InvalidTimerDelay, InvalidTimerInterval, InvalidTimerTarget } from "../TimerError.js"
import type { TimerInfo } from "../Timers.js"
import { type ActorCell, type CellRef, cellOf, type TimerTable } from "./actorCell.js"
import { withHooks } from "./actorHooks.js"
import { spawnOwned } from "./actorSystem.js"
import { RunInside } from "./cellProtocol.js"
import { delayMillis, intervalMillis, periodMillis } from "./duration.js"
import { currentState, GameClockState } from "./entityGameClock.js"
import { missedWarning, OneShotEntry, PeriodicEntry, randomizedFirstDelay, type TimerOwner } from "./entityTimers.js"
import { Latch } from "./latch.js"
import { captureFrom, withoutParentSpan } from "./logContext.js"
import { BaseRef, type Delivery } from "./refs.js"
import { alreadyCancelled } from "./scheduler.js"
import { TimerBook } from "./timerBook.js"
import { checkTask, describeValue } from "./validate.js"

export const TypeId: unique symbol = Symbol.for("tickwork/Entity")
export const RegistryTypeId: unique symbol = Symbol.for("tickwork/EntityRegistry")

// ------------------------------------------------------------------ definition

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }
}

export const make = <Model, Cmd extends Command, E, R>(
  definition: Definition<Model, Cmd, E, R>
): Entity<Model, Cmd, E, R> => {
  // a data constructor: what is wrong is reported by `makeRegistry` (a JavaScript caller may even pass nothing)
  const given: Partial<Definition<Model, Cmd, E, R>> = definition ?? {}
  return Object.assign(Object.create(Proto), {
    name: given.name,
    initialize: given.initialize,
    commands: given.commands,
    onSessionStart: given.onSessionStart,
    onShutdown: given.onShutdown,
    timers: given.timers ?? [],
    mailboxCapacity: given.mailboxCapacity
  })
}

const notAFunction = (value: unknown): string =>
  `must be a function returning an Effect, got ${Effect.isEffect(value) ? "an Effect" : describeValue(value)}`

/** What `makeRegistry` cannot use in `entity` (the field and why), or undefined. Durations are checked later. */
const definitionProblem = (entity: Entity<any, any, any, any>): readonly [string, string] | undefined => {
  if (!Predicate.hasProperty(entity, TypeId))
    return ["kind", `${describeValue(entity)} is not an entity kind: make one with Entity.make`]
  if (typeof entity.name !== "string" || entity.name.trim() === "") {
    return ["name", `must be a non-empty string, got ${describeValue(entity.name)}`]
  }
  if (typeof entity.initialize !== "function") return ["initialize", notAFunction(entity.initialize)]
  const commands: unknown = entity.commands
  if (typeof commands !== "object" || commands === null || Array.isArray(commands)) {
    return ["commands", `must be an object with one handler per command tag, got ${describeValue(commands)}`]
  }
  for (const [tag, handler] of Object.entries(commands)) {
    if (typeof handler !== "function") return [`commands.${tag}`, notAFunction(handler)]
  }
  for (const hook of ["onSessionStart", "onShutdown"] as const) {
    if (entity[hook] !== undefined && typeof entity[hook] !== "function") return [hook, notAFunction(entity[hook])]
  }
  const timers: unknown = entity.timers
  if (!Array.isArray(timers)) return ["timers", `must be an array of periodic timers, got ${describeValue(timers)}`]
  for (const [index, timer] of timers.entries()) {
    if (typeof timer !== "object" || timer === null) {
      return [`timers[${index}]`, `must be an object such as { interval, run }, got ${describeValue(timer)}`]
    }
    const { name, run } = timer as PeriodicTimer<any, any, any, any>
    if (name !== undefined && (typeof name !== "string" || name.trim() === "")) {
      return [`timers[${index}].name`, `must be a non-empty string when given, got ${describeValue(name)}`]
    }
    if (typeof run !== "function") return [`timers[${index}].run`, notAFunction(run)]
  }
  const capacity = entity.mailboxCapacity
  if (capacity !== undefined && !(Number.isSafeInteger(capacity) && capacity > 0)) {
    return ["mailboxCapacity", `must be a whole number >= 1, got ${describeValue(capacity)}`]
  }
  return undefined
}

/** Why `id` cannot address an entity of `kind`, or undefined: ids are non-empty strings and are never converted. */
const idProblem = (kind: string, id: unknown): InvalidEntityId | undefined =>
  typeof id === "string" && id !== ""
    ? undefined
    : new InvalidEntityId({ kind, id: describeValue(id), reason: "an entity id must be a non-empty string" })

/** The handler of `command` in `commands`, own properties only (`toString` is no command). */
const handlerOf = (commands: object, command: unknown): Function | undefined => {
  const tag = (command as { readonly _tag?: unknown } | null | undefined)?._tag
  return typeof tag === "string" && Object.hasOwn(commands, tag)
    ? (commands as Record<string, Function>)[tag]
    : undefined
}

/** Why `command` is not a command of `kind`, or undefined. */
const commandProblem = (kind: Entity<any, any, any, any>, command: unknown): InvalidCommand | undefined => {
  if (handlerOf(kind.commands, command) !== undefined) return undefined
  const tag = (command as { readonly _tag?: unknown } | null | undefined)?._tag
  return typeof tag === "string"
    ? new InvalidCommand({
        kind: kind.name,
        command: JSON.stringify(tag),
        reason: `the kind has no handler for it (its commands: ${Object.keys(kind.commands).join(", ") || "none"})`
      })
    : new InvalidCommand({
        kind: kind.name,
        command: describeValue(command),
        reason: "a command must be an object with a string _tag"
      })
}

/** A declarative timer with its durations decoded. */
interface ResolvedTimer<Model, Cmd, E, R> {
  readonly name: string
  readonly interval: number
  readonly initialDelay: number | undefined
  readonly run: PeriodicTimer<Model, Cmd, E, R>["run"]
}

const resolveTimers = <Model, Cmd, E, R>(
  timers: ReadonlyArray<PeriodicTimer<Model, Cmd, E, R>>
): Effect.Effect<Array<ResolvedTimer<Model, Cmd, E, R>>, InvalidTimerInterval | InvalidTimerDelay> =>
  Effect.forEach(timers, (timer, index) =>
    Effect.suspend((): Effect.Effect<ResolvedTimer<Model, Cmd, E, R>, InvalidTimerInterval | InvalidTimerDelay> => {
      const interval = intervalMillis(timer.interval)
      if (Either.isLeft(interval)) return Effect.fail(interval.left)
      const initialDelay = timer.initialDelay === undefined ? Either.right(undefined) : delayMillis(timer.initialDelay)
      if (Either.isLeft(initialDelay)) return Effect.fail(initialDelay.left)
      return Effect.succeed({
        name: timer.name ?? `periodic-${index}`,
        interval: interval.right,
        initialDelay: initialDelay.right,
        run: timer.run
      })
    })
  )

// ------------------------------------------------------------------ lifecycle messages

class SessionStart {}
class SleepRequest {}
const SESSION_START = new SessionStart()
const SLEEP = new SleepRequest()

// ------------------------------------------------------------------ incarnation

type EntityTimerEntry = PeriodicEntry | OneShotEntry

/**
 * Drops of periodic timers stopped with an incarnation, until `reportStopped` logs them: kept aside (not in a field)
 * because few incarnations ever have any.
 */
const unreportedMisses = new WeakMap<object, Array<readonly [name: string, missed: number]>>()

/** One incarnation of an entity: its model, its context and its timers. The actor's state is this object. */
class Incarnation<Model, Cmd extends Command>
  extends TimerBook<EntityTimerEntry, EntityTimerEntry>
  implements TimerOwner, TimerTable
{
  model: Model = undefined as Model
  initialized = false
  stopping = false
  readonly context: EntityContext<Model, Cmd>

  constructor(
    readonly registry: RegistryImpl<Model, Cmd, any, any>,
    readonly id: string,
    readonly cell: ActorCell
  ) {
    super()
    this.context = new IncarnationContext(this)
    // the cell stops these timers with the incarnation's own, at stop and restart
    cell.addTimerTable(this)
  }

  get size(): number {
    return this.timerCount
  }

  infos(): ReadonlyArray<TimerInfo> {
    return this.timerList().map((timer) => timer.inspect())
  }

  get target(): ActorCell {
    return this.cell
  }

  get driver() {
    return this.cell.host.driver
  }

  release(entry: EntityTimerEntry): void {
    if (this.getTimer(entry) === undefined) return
    this.deleteTimer(entry)
    this.registry.timers--
  }

  private hold(entry: EntityTimerEntry): void {
    this.setTimer(entry, entry)
    this.registry.timers++
  }

  gameNow(): number {
    return this.driver.now() + this.registry.clock.offsetMillis
  }

  /**
   * Cancels every timer; from now on nothing new is armed. Invocations its periodic timers dropped since their last
   * run are kept for `reportStopped` (this runs synchronously, from the cell, where nothing can be logged).
   */
  stopTimers(): void {
    this.stopping = true
    const timers = this.timerList()
    this.registry.timers -= timers.length
    this.clearTimers()
    for (const timer of timers) {
      timer.stop()
      const missed = timer instanceof PeriodicEntry ? timer.takeMissed() : 0
      if (missed > 0) {
        let pending = unreportedMisses.get(this)
        if (pending === undefined) unreportedMisses.set(this, (pending = []))
        pending.push([(timer as PeriodicEntry).name, missed])
      }
    }
  }

  /** `stopTimers`, then `reportStopped`: for a restart and a failed start. */
  readonly stopAndReport: Effect.Effect<void> = Effect.suspend(() => {
    this.stopTimers()
    return this.reportStopped()
  })

  /** Logs the drops `stopTimers` kept: at postStop, preRestart, or a failed start (on the actor's fiber). */
  reportStopped(): Effect.Effect<void> {
    const pending = unreportedMisses.get(this)
    if (pending === undefined) return Effect.void
    unreportedMisses.delete(this)
    return Effect.forEach(pending, ([name, missed]) => missedWarning(name, missed, "stopped"), { discard: true })
  }

  get path(): string {
    return this.cell.path
  }

  noteMissed(entry: PeriodicEntry, count: number): void {
    this.cell.host.timeline?.dropped(entry, "missed", count)
  }

  logDetached(warning: Effect.Effect<void>): void {
    Runtime.runFork(this.registry.runtime)(warning)
  }

  startPeriodic(
    name: string,
    interval: number,
    firstDelay: number,
    message: unknown,
    run: Effect.Effect<unknown, unknown> | undefined
  ): Cancellable {
    if (this.stopping) return alreadyCancelled
    const entry = new PeriodicEntry(this, name, interval, message, run)
    this.hold(entry)
    return entry.start(firstDelay)
  }

  /** Arms a one-shot at `due` (engine time); the effect is the mailbox-full warning when it had to run at once. */
  startOneShot(
    effect: Effect.Effect<unknown, unknown>,
    due: number,
    deadline: number | undefined
  ): Effect.Effect<Cancellable> {
    if (this.stopping) return Effect.succeed(alreadyCancelled)
    const entry = new OneShotEntry(this, effect, deadline, this.registry.clock)
    this.hold(entry)
    const warning = entry.arm(due)
    return warning === undefined ? Effect.succeed(entry) : Effect.as(warning, entry)
  }

  runCommand(command: unknown): Effect.Effect<unknown, unknown> {
    return this.handleCommand(command as Cmd)
  }

  /** Runs on the actor's fiber, which provides the entity's services: the requirement is erased here. */
  handleCommand(command: Cmd): Effect.Effect<this, unknown> {
    // suspended: a handler that throws, or a message that is not a command, fails the actor under its supervision
    return Effect.suspend(() => {
      const handler = handlerOf(this.registry.entity.commands, command)
      if (handler === undefined) {
        const tag = (command as { readonly _tag?: unknown } | null | undefined)?._tag
        return Effect.dieMessage(`entity ${this.registry.kind}: no handler for command ${JSON.stringify(tag)}`)
      }
      return Effect.map(handler(command, this.model, this.context) as Effect.Effect<Model, unknown>, (model) => {
        this.model = model
        return this
      })
    })
  }

  receive(message: unknown): Effect.Effect<this, unknown> {
    if (message === SLEEP) return Effect.as(this.cell.context.stop(this.cell.ref), this)
    if (message === SESSION_START) {
      const onSessionStart = this.registry.entity.onSessionStart
      if (onSessionStart === undefined) return Effect.succeed(this)
      return Effect.map(
        Effect.suspend(() => onSessionStart(this.model, this.context) as Effect.Effect<Model, unknown>),
        (model) => {
          this.model = model
          return this
        }
      )
    }
    return this.handleCommand(message as Cmd)
  }

  /**
   * postStop: timers first (and the drops they leave unreported), then the registry learns that this incarnation is
   * going, then `onShutdown`.
   */
  shutdown(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.stopTimers()
      this.registry.incarnationStopping(this)
      const onShutdown = this.registry.entity.onShutdown
      return Effect.zipRight(
        this.reportStopped(),
        this.initialized && onShutdown !== undefined
          ? (onShutdown(this.model, this.context) as Effect.Effect<void>)
          : Effect.void
      )
    })
  }
}

// ------------------------------------------------------------------ context

/** The context an incarnation's handlers see: a class over the incarnation, safe to destructure. */
class IncarnationContext<Model, Cmd extends Command> implements EntityContext<Model, Cmd> {
  constructor(private readonly inc: Incarnation<Model, Cmd>) {}

  get id(): string {
    return this.inc.id
  }

  get kind(): string {
    return this.inc.registry.kind
  }

  get self(): ActorRef<Cmd> {
    return this.inc.cell.ref as ActorRef<Cmd>
  }

  get model(): Effect.Effect<Model> {
    return Effect.suspend(() =>
      this.inc.initialized
        ? Effect.succeed(this.inc.model)
        : Effect.dieMessage(`entity ${this.kind}/${this.id}: the model was read before initialize returned it`)
    )
  }

  get currentTimeMillis(): Effect.Effect<number> {
    return Effect.sync(() => this.inc.gameNow())
  }

  get now(): Effect.Effect<DateTime.Utc> {
    return Effect.sync(() => DateTime.unsafeMake(this.inc.gameNow()))
  }

  get send(): EntityContext<Model, Cmd>["send"] {
    const ref = this.inc.cell.ref
    return (command) => ref.tell(command)
  }

  get sleep(): Effect.Effect<void> {
    return Effect.sync(() => {
      this.inc.registry.requestSleep(this.inc.id, this.inc.cell)
    })
  }

  // Each operation is a getter returning a function closed over the context, so a destructured one works too, and an
  // idle entity pays no closure for it.
  get startPeriodicTimer(): EntityContext<Model, Cmd>["startPeriodicTimer"] {
    return ((...args: [Duration.DurationInput, Cmd] | [Duration.DurationInput, Duration.DurationInput, Cmd]) =>
      this.periodicTimer(...args)) as EntityContext<Model, Cmd>["startPeriodicTimer"]
  }

  get startRandomizedPeriodicTimer(): EntityContext<Model, Cmd>["startRandomizedPeriodicTimer"] {
    return (interval, command) => this.randomizedPeriodicTimer(interval, command)
  }

  get scheduleExecuteOnActorContext(): EntityContext<Model, Cmd>["scheduleExecuteOnActorContext"] {
    return (at, effect) => this.executeLater(at, effect)
  }

  get scheduleExecuteOnActorContextAt(): EntityContext<Model, Cmd>["scheduleExecuteOnActorContextAt"] {
    return (time, effect) => this.executeAt(time, effect)
  }

  get checkDeadline(): EntityContext<Model, Cmd>["checkDeadline"] {
    return (options) => this.deadlineCheck(options)
  }

  private periodicTimer(
    ...args: [Duration.DurationInput, Cmd] | [Duration.DurationInput, Duration.DurationInput, Cmd]
  ): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidTimerDelay | InvalidCommand> {
    return Effect.suspend((): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidTimerDelay | InvalidCommand> => {
      const [initialDelay, interval, command] = args.length === 2 ? [undefined, args[0], args[1]] : args
      const period = periodMillis(interval, initialDelay)
      if (Either.isLeft(period)) return Effect.fail(period.left)
      // a command without a handler would fail the entity at every tick: refuse it now
      const invalid = commandProblem(this.inc.registry.entity, command)
      if (invalid !== undefined) return Effect.fail(invalid)
      return Effect.sync(() => this.commandTimer(period.right.every, period.right.first, command))
    })
  }

  private randomizedPeriodicTimer(
    interval: Duration.DurationInput,
    command: Cmd
  ): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidCommand> {
    return Effect.suspend((): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidCommand> => {
      const every = intervalMillis(interval)
      if (Either.isLeft(every)) return Effect.fail(every.left)
      const invalid = commandProblem(this.inc.registry.entity, command)
      if (invalid !== undefined) return Effect.fail(invalid)
      return Effect.map(Random.next, (u) =>
        this.commandTimer(every.right, randomizedFirstDelay(every.right, u), command)
      )
    })
  }

  private executeLater<E, R>(
    at: Duration.DurationInput | DeadlineInput,
    effect: Effect.Effect<unknown, E, R>
  ): Effect.Effect<Cancellable, InvalidTimerDelay | InvalidDeadline | InvalidTimerTarget, R> {
    const invalid = checkTask(effect)
    if (invalid !== undefined) return Effect.fail(invalid)
    return Effect.flatMap(
      withServices(effect),
      (run): Effect.Effect<Cancellable, InvalidTimerDelay | InvalidDeadline> => {
        if (DateTime.isDateTime(at) || isDeadline(at)) return this.armAt(at, run)
        return Either.match(delayMillis(at as Duration.DurationInput), {
          onLeft: Effect.fail,
          onRight: (delay) => Effect.suspend(() => this.inc.startOneShot(run, this.inc.driver.now() + delay, undefined))
        })
      }
    )
  }

  private executeAt<E, R>(
    time: DeadlineInput,
    effect: Effect.Effect<unknown, E, R>
  ): Effect.Effect<Cancellable, InvalidDeadline | InvalidTimerTarget, R> {
    const invalid = checkTask(effect)
    if (invalid !== undefined) return Effect.fail(invalid)
    return Effect.flatMap(withServices(effect), (run) => this.armAt(time, run))
  }

  private deadlineCheck<E, R>(options: {
    readonly deadline: (model: Model) => Deadline | undefined
    readonly onDue: (model: Model) => Effect.Effect<unknown, E, R>
  }): Effect.Effect<Option.Option<Cancellable>, E | InvalidDeadline, R> {
    const inc = this.inc
    return Effect.flatMap(Effect.context<R>(), (services) => {
      const check: Effect.Effect<Option.Option<Cancellable>, E | InvalidDeadline> = Effect.suspend(
        (): Effect.Effect<Option.Option<Cancellable>, E | InvalidDeadline> => {
          if (!inc.initialized) return Effect.flatMap(this.model, () => Effect.succeedNone)
          const given = options.deadline(inc.model)
          if (given === undefined) return Effect.succeedNone
          // what the model holds may be epoch millis or garbage: never arm a one-shot at NaN
          const made = makeDeadline(given)
          if (Either.isLeft(made)) return Effect.fail(made.left)
          const deadline = made.right
          if (inc.gameNow() >= deadline.epochMillis) {
            return Effect.as(Effect.provide(options.onDue(inc.model), services), Option.none())
          }
          // Ahead: one-shot at the deadline that runs this same check again, re-reading the model.
          return Effect.map(
            inc.startOneShot(check, deadline.epochMillis - inc.registry.clock.offsetMillis, deadline.epochMillis),
            Option.some
          )
        }
      )
      return check
    })
  }

  private commandTimer(interval: number, firstDelay: number, command: Cmd): Cancellable {
    return this.inc.startPeriodic(command._tag, interval, firstDelay, command, undefined)
  }

  /** An absolute one-shot: armed on the engine at `deadline - offset`. */
  private armAt(time: DeadlineInput, effect: Effect.Effect<unknown, unknown>) {
    return Either.match(makeDeadline(time), {
      onLeft: Effect.fail,
      onRight: (deadline) =>
        Effect.suspend(() =>
          this.inc.startOneShot(
            effect,
            deadline.epochMillis - this.inc.registry.clock.offsetMillis,
            deadline.epochMillis
          )
        )
    })
  }
}

/** The caller's services, provided to an effect that will run later on the entity's fiber. */
const withServices = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Effect.Effect<A, E>, never, R> =>
  Effect.map(Effect.context<R>(), (context) => Effect.provide(effect, withoutParentSpan(context)))

// ------------------------------------------------------------------ the actor of one entity

/**
 * The actor of a registry's entities: one definition for all of them, whose `preStart` finds its entity's id through
 * the cell, which carries the entity's `Entry` (`spawnOwned`).
 */
const makeActor = <Model, Cmd extends Command, E, R>(
  registry: RegistryImpl<Model, Cmd, E, R>
): Actor.Actor<unknown, Incarnation<Model, Cmd>, E, R> => {
  const entity = registry.entity
  const actor = Actor.make<unknown>()<Incarnation<Model, Cmd>, E, R>({
    preStart: (actorContext) =>
      Effect.suspend(() => {
        const cell = cellOf(actorContext)
        const id = (cell.owner as Entry).id
        const inc = new Incarnation<Model, Cmd>(registry, id, cell)
        return entity.initialize(id, inc.context).pipe(
          Effect.flatMap((model) => {
            inc.model = model
            inc.initialized = true
            return registry.armDeclarative(inc)
          }),
          Effect.as(inc),
          // A failed start cancels what initialize may have armed; the actor stops without postStop.
          Effect.onError(() => inc.stopAndReport)
        )
      }),
    receive: (message, _actorContext, inc) => inc.receive(message) as Effect.Effect<Incarnation<Model, Cmd>, E, R>,
    postStop: (_actorContext, inc) => inc.shutdown() as Effect.Effect<void, never, R>,
    preRestart: (_actorContext, inc) => inc.stopAndReport
  })
  const sized = entity.mailboxCapacity === undefined ? actor : Actor.withMailboxCapacity(actor, entity.mailboxCapacity)
  // The cell's owner is the entity's entry: one hook serves every entity of the registry (no closure per entity).
  return withHooks(sized, { terminated: (owner) => registry.ended(owner as Entry) })
}

// ------------------------------------------------------------------ registry

interface Waiting {
  readonly message: unknown
  readonly logContext: LogContext | undefined
}

/**
 * An awake entity in the registry: its incarnation's actor, the messages that wait, and, as the latch it is, whether
 * its incarnation has ended (released then; one object fewer per entity than a latch of its own).
 */
class Entry extends Latch {
  cell: ActorCell | undefined = undefined
  draining = false
  /** For the incarnation being spawned; undefined while none wait, as for most entities. */
  pending: Array<Waiting> | undefined = undefined
  /** For the next incarnation (routed while this one is going to sleep). */
  next: Array<Waiting> | undefined = undefined

  constructor(readonly id: string) {
    super()
  }
}

const actorName = (kind: string, id: string): string => `${encodeURIComponent(kind)}:${encodeURIComponent(id)}`

class RoutingRef<Cmd> extends BaseRef<Cmd> {
  constructor(
    private readonly registry: RegistryImpl<any, any, any, any>,
    private readonly id: string
  ) {
    super()
  }

  get path(): string {
    return `/user/${actorName(this.registry.kind, this.id)}`
  }

  deliver(message: Cmd, _sender: ActorRef<any> | undefined, logContext: LogContext | undefined): Delivery {
    // a ref cannot fail: what it cannot route is a dead letter (and an ask fails with AskUndeliverable)
    const registry = this.registry
    if (idProblem(registry.kind, this.id) !== undefined || commandProblem(registry.entity, message) !== undefined) {
      registry.deadLetter(message)
      return "stopped"
    }
    return registry.route(this.id, message, logContext)
  }
}

export class RegistryImpl<Model, Cmd extends Command, E, R> implements EntityRegistry<Cmd> {
  readonly [RegistryTypeId]: typeof RegistryTypeId = RegistryTypeId
  readonly entries = new Map<string, Entry>()
  /** Timers held by the registry's incarnations (a count, not a set of incarnations: ~20 B an entity fewer). */
  timers = 0
  private closed = false
  /** The actor every entity of this registry runs as (`makeActor`), made at the first spawn. */
  private actor: Actor.Actor<unknown, Incarnation<Model, Cmd>, E, R> | undefined = undefined

  constructor(
    readonly entity: Entity<Model, Cmd, E, R>,
    private readonly declarative: ReadonlyArray<ResolvedTimer<Model, Cmd, E, R>>,
    private readonly system: ActorSystemService,
    readonly runtime: Runtime.Runtime<R>,
    readonly clock: GameClockState
  ) {}

  get kind(): string {
    return this.entity.name
  }

  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }

  // ---------------------------------------------------------------- routing

  route(id: string, message: unknown, logContext: LogContext | undefined): Delivery {
    if (this.closed) {
      this.deadLetter(message)
      return "stopped"
    }
    const entry = this.entries.get(id) ?? this.wake(id, undefined)
    if (entry.draining) (entry.next ??= []).push({ message, logContext })
    else if (entry.cell === undefined) (entry.pending ??= []).push({ message, logContext })
    else return entry.cell.deliver(message, undefined, logContext)
    return "delivered"
  }

  private wake(id: string, pending: Array<Waiting> | undefined): Entry {
    const entry = new Entry(id)
    entry.pending = pending
    this.entries.set(id, entry)
    Runtime.runFork(this.runtime)(this.spawn(entry))
    return entry
  }

  private spawn(entry: Entry): Effect.Effect<void, never, R> {
    const actor = (this.actor ??= makeActor(this))
    // Spawned on a fiber of its own (see `wake`): the actor takes its services from the registry's runtime.
    const spawned = spawnOwned(this.system, actor, actorName(this.kind, entry.id), entry, this.runtime.fiberRefs)
    return Effect.matchCauseEffect(spawned, {
      onFailure: (cause) =>
        Effect.zipRight(
          Effect.logWarning(`entity ${this.kind}/${entry.id} could not start; its messages go to dead letters`, cause),
          Effect.sync(() => this.ended(entry))
        ),
      onSuccess: (ref) =>
        Effect.suspend(() => {
          const cell = (ref as CellRef<unknown>).cell
          entry.cell = cell
          const pending = entry.pending
          entry.pending = undefined
          if (pending !== undefined)
            for (const waiting of pending) cell.deliver(waiting.message, undefined, waiting.logContext)
          // Its end is reported by the actor's `terminated` hook (`makeActor`).
          // The registry closed while this spawn was on its way.
          return this.closed ? cell.forceStop() : Effect.void
        })
    })
  }

  /** The incarnation's actor has terminated (or its spawn failed): forget it; wake the next one if messages wait. */
  ended(entry: Entry): void {
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id)
    entry.release()
    const waiting = (entry.pending ?? []).concat(entry.next ?? [])
    entry.pending = undefined
    entry.next = undefined
    if (waiting.length === 0) return
    if (this.closed || entry.cell === undefined) {
      for (const w of waiting) this.deadLetter(w.message)
    } else {
      this.wake(entry.id, waiting)
    }
  }

  /** Asks the current incarnation of `id` (or the one whose actor is `cell`) to sleep after its queued messages. */
  requestSleep(id: string, cell?: ActorCell): Entry | undefined {
    const entry = this.entries.get(id)
    // `cell`: only if it is still the current incarnation (undefined while its spawn has not reported back yet)
    if (entry === undefined || (cell !== undefined && entry.cell !== undefined && entry.cell !== cell)) return undefined
    if (!entry.draining) {
      entry.draining = true
      if (entry.cell === undefined) (entry.pending ??= []).push({ message: SLEEP, logContext: undefined })
      else {
        if (entry.cell.mailbox.isFull) entry.cell.offerSystem(SLEEP)
        else entry.cell.deliver(SLEEP, undefined, undefined)
        // a sleep takes a bounded time, counted from the request: a handler that never returns is interrupted
        entry.cell.host.armStopDeadline(entry.cell)
      }
    }
    return entry
  }

  /** postStop of an incarnation: from now on messages wait for the next one. */
  incarnationStopping(inc: Incarnation<Model, Cmd>): void {
    const entry = this.entries.get(inc.id)
    if (entry !== undefined && entry.cell === inc.cell) entry.draining = true
  }

  deadLetter(message: unknown): void {
    if (message instanceof RunInside) message.reply(Exit.die(new Error(`entity ${this.kind} could not run it`)))
    else if (message !== SLEEP && message !== SESSION_START) this.system.deadLetters.unsafeTell(message)
  }

  /**
   * The testkit's `inside`: runs `f` with the context and model of entity `id` (woken if it sleeps), in its mailbox
   * order, and gives its outcome back; the model is not changed.
   */
  inside<A, E>(id: string, f: (context: EntityContext<Model, Cmd>, model: Model) => Effect.Effect<A, E>) {
    return Effect.async<Exit.Exit<A, E>>((resume) => {
      const reply = (exit: Exit.Exit<unknown, unknown>) => resume(Effect.succeed(exit as Exit.Exit<A, E>))
      const entry = new RunInside((actorContext) => {
        const inc = cellOf(actorContext).state as Incarnation<Model, Cmd>
        return f(inc.context, inc.model)
      }, reply)
      const problem = idProblem(this.kind, id)
      if (problem !== undefined) reply(Exit.die(problem))
      else if (this.route(id, entry, undefined) !== "delivered") {
        reply(Exit.die(new Error(`entity ${this.kind}/${id} could not be reached`)))
      }
    })
  }

  /** The actor cell of entity `id`'s incarnation, when it is awake. */
  cellOf(id: string): ActorCell | undefined {
    return this.entries.get(id)?.cell
  }

  // ---------------------------------------------------------------- timers

  armDeclarative(inc: Incarnation<Model, Cmd>): Effect.Effect<void> {
    if (this.declarative.length === 0) return Effect.void
    return Effect.forEach(
      this.declarative,
      (timer) => {
        const start = (firstDelay: number) =>
          inc.startPeriodic(
            timer.name,
            timer.interval,
            firstDelay,
            undefined,
            Effect.suspend(() =>
              Effect.map(timer.run(inc.model, inc.context) as Effect.Effect<Model, unknown>, (model) => {
                inc.model = model
              })
            )
          )
        return timer.initialDelay === undefined
          ? Effect.map(Random.next, (u) => start(randomizedFirstDelay(timer.interval, u)))
          : Effect.sync(() => start(timer.initialDelay!))
      },
      { discard: true }
    )
  }

  // ---------------------------------------------------------------- the public interface

  // The public methods are bound, so they can be passed around: `Effect.forEach(ids, players.sleep)`.

  readonly tell = (id: string, command: Cmd): Effect.Effect<void, InvalidEntityId | InvalidCommand> =>
    Effect.withFiberRuntime((fiber) => {
      const invalid = idProblem(this.kind, id) ?? commandProblem(this.entity, command)
      if (invalid !== undefined) return Effect.fail(invalid)
      this.route(id, command, captureFrom(fiber))
      return Effect.void
    })

  readonly startSession = (id: string): Effect.Effect<void, InvalidEntityId> =>
    Effect.withFiberRuntime((fiber) => {
      const invalid = idProblem(this.kind, id)
      if (invalid !== undefined) return Effect.fail(invalid)
      this.route(id, SESSION_START, captureFrom(fiber))
      return Effect.void
    })

  readonly sleep = (id: string): Effect.Effect<void, InvalidEntityId> =>
    Effect.withFiberRuntime((fiber) => {
      const invalid = idProblem(this.kind, id)
      if (invalid !== undefined) return Effect.fail(invalid)
      const entry = this.requestSleep(id)
      // From inside the entity itself, waiting would deadlock: it sleeps after the current message.
      if (entry === undefined || (entry.cell !== undefined && entry.cell.fiber === fiber)) return Effect.void
      return entry.await
    })

  readonly ref = (id: string): ActorRef<Cmd> => new RoutingRef<Cmd>(this, id)

  readonly isAwake = (id: string): Effect.Effect<boolean> => Effect.sync(() => this.entries.has(id))

  readonly stats: Effect.Effect<RegistryStats> = Effect.sync(() => {
    const timers = this.timers
    let waiting = 0
    for (const entry of this.entries.values()) waiting += (entry.pending?.length ?? 0) + (entry.next?.length ?? 0)
    return { awake: this.entries.size, timers, waiting }
  })

  /**
   * The scope closes: no more routing, and every awake entity stops now, as at system shutdown: a handler in flight is
   * interrupted, `onShutdown` runs, what is still queued goes to dead letters.
   */
  readonly close: Effect.Effect<void> = Effect.suspend(() => {
    this.closed = true
    const entries = Array.from(this.entries.values())
    return Effect.zipRight(
      Effect.forEach(entries, (entry) => entry.cell?.forceStop() ?? Effect.void, { discard: true }),
      Effect.forEach(entries, (entry) => entry.await, { discard: true })
    )
  })
}

// ------------------------------------------------------------------ one registry per kind and system

/**
 * The registry of a kind name in a system and the scopes that hold it. Its entities' actors are named after the kind
 * (`actorName`), so a second registry of the kind could never spawn an entity the first one holds: `makeRegistry`
 * gives the held registry again instead (Akka's `ClusterSharding.init` for a started type key).
 */
class HeldRegistry {
  /** The scopes holding it; at zero it closes. */
  users = 1
  /** Set when the last scope has released it: completes once its entities have stopped and the name is free. */
  closing: Latch | undefined = undefined

  constructor(readonly registry: RegistryImpl<any, any, any, any>) {}
}

/** Registries by system, then by kind name. */
const heldRegistries = new WeakMap<ActorSystemService, Map<string, HeldRegistry>>()

const heldIn = (system: ActorSystemService): Map<string, HeldRegistry> => {
  let byKind = heldRegistries.get(system)
  if (byKind === undefined) heldRegistries.set(system, (byKind = new Map()))
  return byKind
}

/** The registry of `entity` in `system`, when one is open for this very definition (the testkit finds it so). */
export const registryIn = (
  system: ActorSystemService,
  entity: Entity<any, any, any, any>
): RegistryImpl<any, any, any, any> | undefined => {
  const held = heldRegistries.get(system)?.get(entity.name)
  return held !== undefined && held.closing === undefined && held.registry.entity === entity ? held.registry : undefined
}

/**
 * Holds the registry of `entity` in `system` for the caller's scope: the open one (the same definition) or a new one
 * (`start`); another definition under a name whose registry is open is refused. A registry that is closing is waited
 * for, then the name is free.
 */
const holdRegistry = <Model, Cmd extends Command, E, R>(
  system: ActorSystemService,
  entity: Entity<Model, Cmd, E, R>,
  start: () => RegistryImpl<Model, Cmd, E, R>
): Effect.Effect<RegistryImpl<Model, Cmd, E, R>, InvalidEntityDefinition, Scope.Scope> => {
  const byKind = heldIn(system)
  const hold = Effect.acquireRelease(
    // one synchronous step: the table cannot change between the look-up and the hold
    Effect.sync((): HeldRegistry | Latch | InvalidEntityDefinition => {
      const open = byKind.get(entity.name)
      if (open === undefined) {
        const held = new HeldRegistry(start())
        byKind.set(entity.name, held)
        return held
      }
      if (open.closing !== undefined) return open.closing
      if (open.registry.entity !== entity) {
        return new InvalidEntityDefinition({
          kind: entity.name,
          field: "name",
          reason:
            `another definition of kind ${entity.name} already has a registry in ActorSystem ${system.name} ` +
            "(one definition per kind name and system: pass the same Entity.make value to every makeRegistry)"
        })
      }
      open.users++
      return open
    }),
    (held) => (held instanceof HeldRegistry ? release(byKind, entity.name, held) : Effect.void)
  )
  return Effect.flatMap(hold, (held) => {
    if (held instanceof HeldRegistry) return Effect.succeed(held.registry as RegistryImpl<Model, Cmd, E, R>)
    if (held instanceof Latch) return Effect.zipRight(held.await, holdRegistry(system, entity, start))
    return Effect.fail(held)
  })
}

/** A scope lets go of a registry: the last one closes it, and the name is free once its entities have stopped. */
const release = (byKind: Map<string, HeldRegistry>, name: string, held: HeldRegistry): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (--held.users > 0) return Effect.void
    const closing = (held.closing = new Latch())
    return Effect.ensuring(
      held.registry.close,
      Effect.sync(() => {
        if (byKind.get(name) === held) byKind.delete(name)
        closing.release()
      })
    )
  })

export const makeRegistry = <Model, Cmd extends Command, E, R>(
  entity: Entity<Model, Cmd, E, R>
): Effect.Effect<
  EntityRegistry<Cmd>,
  InvalidEntityDefinition | InvalidTimerInterval | InvalidTimerDelay,
  R | ActorSystem | Scope.Scope
> =>
  Effect.gen(function* () {
    const problem = definitionProblem(entity)
    if (problem !== undefined) {
      const kind = String((entity as { readonly name?: unknown } | undefined)?.name)
      return yield* new InvalidEntityDefinition({ kind, field: problem[0], reason: problem[1] })
    }
    const declarative = yield* resolveTimers(entity.timers)
    const system = yield* ActorSystem
    const runtime = yield* Effect.runtime<R>()
    const fallback = yield* Effect.clock
    const clock = Option.getOrElse(yield* currentState, () => new GameClockState(fallback))
    return yield* holdRegistry(system, entity, () => new RegistryImpl(entity, declarative, system, runtime, clock))
  })
