/**
 * Entities: game-server actors addressed by id, with a typed model, command handlers, a lifecycle and timers.
 *
 * An entity kind is data plus Effect handlers, like `Actor.make`. A registry (`makeRegistry`) routes messages to
 * entities by id and runs each awake entity as one actor of the `ActorSystem`:
 *
 * - **initialize** builds the model when a routed message finds the entity asleep (on demand), then the declarative
 *   periodic timers start;
 * - **session start** is an explicit message (`registry.startSession(id)`), handled by `onSessionStart`;
 * - **sleep** (`registry.sleep(id)` or `ctx.sleep`) runs `onShutdown` and stops the actor after the messages already
 *   in its mailbox. Every timer of the incarnation is cancelled with it. A message routed while the entity is going
 *   to sleep waits in the registry and wakes a new incarnation: nothing is lost.
 *
 * Commands an entity sends itself (`ctx.send`) and timer ticks go straight to the running actor, not through the
 * registry, so they never wake a sleeping entity (the source's rule: "a timer cannot wake a sleeping entity"). A
 * failing handler goes through the actor's supervision (the system's guardian: restart by default, which cancels the
 * incarnation's timers, runs `initialize` again and re-arms the declarative timers).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Pipeable } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import type { ActorRef } from "./ActorRef.js"
import type { ActorSystem } from "./ActorSystem.js"
import type { Deadline, InvalidDeadline } from "./Deadline.js"
import type { EntityTimers, PeriodicTimer } from "./EntityTimers.js"
import * as internal from "./internal/entity.js"
import type { Cancellable } from "./Scheduler.js"
import type { InvalidTimerDelay, InvalidTimerInterval } from "./TimerError.js"

/**
 * The symbol that marks an entity kind.
 *
 * @example
 * ```ts
 * import { Entity } from "tickwork"
 *
 * const isKind = (u: object) => Entity.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: typeof internal.TypeId = internal.TypeId

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { Entity } from "tickwork"
 *
 * type Marked = { readonly [K in Entity.TypeId]: Entity.TypeId }
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * The symbol that marks an entity registry.
 *
 * @example
 * ```ts
 * import { Entity } from "tickwork"
 *
 * const isRegistry = (u: object) => Entity.RegistryTypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const RegistryTypeId: typeof internal.RegistryTypeId = internal.RegistryTypeId

/**
 * The type of `RegistryTypeId`.
 *
 * @example
 * ```ts
 * import type { Entity } from "tickwork"
 *
 * type Marked = { readonly [K in Entity.RegistryTypeId]: Entity.RegistryTypeId }
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type RegistryTypeId = typeof RegistryTypeId

/**
 * What a command looks like: a tagged value. Each tag has one handler.
 *
 * @example
 * ```ts
 * import type { Entity } from "tickwork"
 *
 * type PlayerCommand = { readonly _tag: "UnlockLevel"; readonly level: number } | { readonly _tag: "AddGold"; readonly amount: number }
 * const check: Entity.Command = { _tag: "AddGold" }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Command {
  readonly _tag: string
}

/**
 * One handler per command tag: (command, model, context) → next model.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "AddGold"; readonly amount: number }
 * const handlers: Entity.CommandHandlers<{ readonly gold: number }, Cmd, never, never> = {
 *   AddGold: (cmd, model) => Effect.succeed({ gold: model.gold + cmd.amount })
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type CommandHandlers<Model, Cmd extends Command, E, R> = {
  readonly [Tag in Cmd["_tag"]]: (
    command: Extract<Cmd, { readonly _tag: Tag }>,
    model: Model,
    context: EntityContext<Model, Cmd>
  ) => Effect.Effect<Model, E, R>
}

/**
 * What an entity's handlers see: its id, the current model, the game clock, itself and its timers. Its operations are
 * methods: call them on the context (`ctx.send(cmd)`), not detached.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "Refill" }
 * const logModel = (ctx: Entity.EntityContext<{ readonly energy: number }, Cmd>) =>
 *   Effect.flatMap(ctx.model, (model) => Effect.logInfo(`${ctx.id} has ${model.energy} energy`))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface EntityContext<Model, Cmd> extends EntityTimers<Cmd> {
  /** The entity's id. */
  readonly id: string
  /** The entity kind's name. */
  readonly kind: string
  /** The running actor. Telling it does not go through the registry, so it never wakes a sleeping entity. */
  readonly self: ActorRef<Cmd>
  /** The current model (dies when read before `initialize` has returned it). */
  readonly model: Effect.Effect<Model>
  /** Game time (`GameClock`: the system clock plus the time-skip offset), epoch millis. */
  readonly currentTimeMillis: Effect.Effect<number>
  /** Game time as a UTC `DateTime`. */
  readonly now: Effect.Effect<DateTime.Utc>
  /** Enqueues `command` to the running actor itself, behind the messages already queued. */
  readonly send: (command: Cmd) => Effect.Effect<void>
  /** Asks this entity to sleep once the messages already in its mailbox are handled. */
  readonly sleep: Effect.Effect<void>
  /**
   * Checks a deadline stored in the model (rule 2: check on demand). When it has passed on the game clock, runs
   * `onDue` now; when it is ahead, arms a one-shot at the deadline that runs the same check again (re-reading the
   * model) and returns its handle; when `deadline` returns undefined, does nothing. When it returns something that is
   * not a usable time (epoch millis and `DateTime` are accepted, as by `Deadline.make`), fails with `InvalidDeadline`.
   */
  readonly checkDeadline: <E, R>(options: {
    readonly deadline: (model: Model) => Deadline | undefined
    readonly onDue: (model: Model) => Effect.Effect<unknown, E, R>
  }) => Effect.Effect<Option.Option<Cancellable>, E | InvalidDeadline, R>
}

/**
 * An entity kind: its name, its model's lifecycle, its command handlers and its declarative timers.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "Ping" }
 * const Pinger: Entity.Entity<number, Cmd> = Entity.make<number, Cmd>()({
 *   name: "Pinger",
 *   initialize: () => Effect.succeed(0),
 *   commands: { Ping: (_cmd, pings) => Effect.succeed(pings + 1) }
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Entity<in out Model, in out Cmd extends Command, out E = never, out R = never> extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  readonly initialize: (id: string, context: EntityContext<Model, Cmd>) => Effect.Effect<Model, E, R>
  readonly commands: CommandHandlers<Model, Cmd, E, R>
  readonly onSessionStart:
    | ((model: Model, context: EntityContext<Model, Cmd>) => Effect.Effect<Model, E, R>)
    | undefined
  readonly onShutdown: ((model: Model, context: EntityContext<Model, Cmd>) => Effect.Effect<void, never, R>) | undefined
  readonly timers: ReadonlyArray<PeriodicTimer<Model, Cmd, E, R>>
  readonly mailboxCapacity: number | undefined
}

/**
 * The definition `make` accepts.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "Ping" }
 * const definition: Entity.Definition<number, Cmd, never, never> = {
 *   name: "Pinger",
 *   initialize: () => Effect.succeed(0),
 *   commands: { Ping: (_cmd, pings) => Effect.succeed(pings + 1) }
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Definition<Model, Cmd extends Command, E, R> {
  /** The kind's name; the actors are named `<name>:<id>` (URI-encoded) under `/user`. */
  readonly name: string
  /** Builds the model of a new incarnation; programmatic timers are usually started here. */
  readonly initialize: (id: string, context: EntityContext<Model, Cmd>) => Effect.Effect<Model, E, R>
  readonly commands: CommandHandlers<Model, Cmd, E, R>
  /** Runs on `registry.startSession(id)`; waking the entity first if it sleeps. */
  readonly onSessionStart?: (model: Model, context: EntityContext<Model, Cmd>) => Effect.Effect<Model, E, R>
  /** Runs when the incarnation stops (sleep, system shutdown, a stop after a failure), after its timers are cancelled. */
  readonly onShutdown?: (model: Model, context: EntityContext<Model, Cmd>) => Effect.Effect<void, never, R>
  /** Declarative periodic timers; they start after `initialize` and run until the entity stops. */
  readonly timers?: ReadonlyArray<PeriodicTimer<Model, Cmd, E, R>>
  /** Bounded mailbox capacity, or the system default. */
  readonly mailboxCapacity?: number
}

/**
 * Defines an entity kind. Give the model and command types first, then the definition. A data constructor: it never
 * throws; `makeRegistry` checks the definition and fails with `InvalidEntityDefinition` naming what it cannot use.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 *
 * interface Model {
 *   readonly gold: number
 * }
 * type Cmd = { readonly _tag: "AddGold"; readonly amount: number }
 *
 * const Player = Entity.make<Model, Cmd>()({
 *   name: "Player",
 *   initialize: () => Effect.succeed({ gold: 0 }),
 *   commands: {
 *     AddGold: (cmd, model) => Effect.succeed({ gold: model.gold + cmd.amount })
 *   },
 *   timers: [{ interval: "1 minute", run: (model) => Effect.as(Effect.logInfo(`gold: ${model.gold}`), model) }]
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make =
  <Model, Cmd extends Command>() =>
  <E = never, R = never>(definition: Definition<Model, Cmd, E, R>): Entity<Model, Cmd, E, R> =>
    internal.make(definition)

/**
 * True for an entity kind.
 *
 * @example
 * ```ts
 * import { Entity } from "tickwork"
 *
 * console.log(Entity.isEntity({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isEntity = (u: unknown): u is Entity<unknown, Command, unknown, unknown> =>
  Predicate.hasProperty(u, TypeId)

/**
 * `makeRegistry` was given a kind it cannot run: not made by `Entity.make`, an empty or blank name, an `initialize`,
 * handler or hook that is not a function, `commands` that is not an object of functions, `timers` that is not an
 * array of `{ interval, run }`, a mailbox capacity that is not a whole number >= 1, or a name whose registry is open
 * in the system for another definition (one definition per kind name and system). `field` names it (`commands.X`,
 * `timers[0].run`); nothing is started. Bad timer durations fail with `TimerError.InvalidTimerInterval` /
 * `InvalidTimerDelay` instead.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem, Entity } from "tickwork"
 *
 * const Broken = Entity.make<number, { readonly _tag: "Ping" }>()({
 *   name: "Broken",
 *   initialize: () => Effect.succeed(0),
 *   commands: { Ping: (_cmd, n) => Effect.succeed(n + 1) },
 *   mailboxCapacity: 0
 * })
 *
 * // "invalid entity definition Broken (mailboxCapacity): must be a whole number >= 1, got 0"
 * const program = Entity.makeRegistry(Broken).pipe(
 *   Effect.catchTag("InvalidEntityDefinition", (error) => Effect.logError(error.message)),
 *   Effect.scoped,
 *   Effect.provide(ActorSystem.layer({ name: "game" }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEntityDefinition extends Data.TaggedError("InvalidEntityDefinition")<{
  /** The kind's name, as given. */
  readonly kind: string
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid entity definition ${this.kind} (${this.field}): ${this.reason}`
  }
}

/**
 * An entity was addressed with an id that is not a non-empty string (an id that was `undefined`, a number, `""`).
 * Ids are never converted: `42` and `"42"` would otherwise be two entities with one actor name.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "AddGold"; readonly amount: number }
 * const reward = (players: Entity.EntityRegistry<Cmd>, byName: Map<string, string>, name: string) =>
 *   players.tell(byName.get(name)!, { _tag: "AddGold", amount: 1 }).pipe(
 *     Effect.catchTag("InvalidEntityId", (error) => Effect.logWarning(error.message))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEntityId extends Data.TaggedError("InvalidEntityId")<{
  readonly kind: string
  /** The id as given, shown as text. */
  readonly id: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid id ${this.id} for entity kind ${this.kind}: ${this.reason}`
  }
}

/**
 * A message told through the registry is not a command of the kind: not an object with a string `_tag`, or a tag no
 * handler is defined for. Nothing is sent (it used to fail the entity and restart it).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "AddGold"; readonly amount: number }
 * const fromJson = (players: Entity.EntityRegistry<Cmd>, id: string, json: string) =>
 *   players.tell(id, JSON.parse(json)).pipe(
 *     Effect.catchTag("InvalidCommand", (error) => Effect.logWarning(error.message))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidCommand extends Data.TaggedError("InvalidCommand")<{
  readonly kind: string
  /** The command's `_tag`, or the value shown as text when it has none. */
  readonly command: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid command ${this.command} for entity kind ${this.kind}: ${this.reason}`
  }
}

/**
 * Live counts of a registry.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Entity } from "tickwork"
 *
 * const report = (players: Entity.EntityRegistry<never>) =>
 *   Effect.flatMap(players.stats, (stats: Entity.RegistryStats) =>
 *     Effect.logInfo(`${stats.awake} awake, ${stats.timers} timers, ${stats.waiting} messages waiting`)
 *   )
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface RegistryStats {
  /** Entities with an incarnation starting, running or going to sleep. */
  readonly awake: number
  /** Entity timers armed (periodic timers and one-shots not yet started), across awake entities. */
  readonly timers: number
  /** Messages waiting for an incarnation (routed while the entity was starting or going to sleep). */
  readonly waiting: number
}

/**
 * Routes messages to the entities of one kind by id, waking (spawning) them on demand.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "AddGold"; readonly amount: number }
 * const reward = (players: Entity.EntityRegistry<Cmd>) =>
 *   Effect.gen(function*() {
 *     yield* players.startSession("player-1")
 *     yield* players.tell("player-1", { _tag: "AddGold", amount: 10 })
 *     yield* players.sleep("player-1")
 *   })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface EntityRegistry<in Cmd> extends Pipeable {
  readonly [RegistryTypeId]: RegistryTypeId
  /** The entity kind's name. */
  readonly kind: string
  /**
   * Routes `command` to entity `id`, waking it (running `initialize`) if it sleeps. An id that is not a non-empty
   * string fails with `InvalidEntityId`, a command the kind has no handler for with `InvalidCommand`; nothing is sent.
   */
  readonly tell: (id: string, command: Cmd) => Effect.Effect<void, InvalidEntityId | InvalidCommand>
  /** Starts a session: `onSessionStart` runs on the entity, which is woken if it sleeps. */
  readonly startSession: (id: string) => Effect.Effect<void, InvalidEntityId>
  /**
   * Puts entity `id` to sleep after the messages already in its mailbox and waits until its actor has stopped; a
   * no-op for a sleeping entity.
   */
  readonly sleep: (id: string) => Effect.Effect<void, InvalidEntityId>
  /**
   * A ref that routes through this registry (so `ActorRef.ask` works with entities). A ref cannot fail: a message it
   * cannot route (a bad id, not a command of the kind) becomes a dead letter, and `ask` fails with `AskUndeliverable`.
   */
  readonly ref: (id: string) => ActorRef<Cmd>
  /** True while entity `id` has an incarnation (starting, running or going to sleep); false for any other value. */
  readonly isAwake: (id: string) => Effect.Effect<boolean>
  readonly stats: Effect.Effect<RegistryStats>
}

/**
 * True for an entity registry.
 *
 * @example
 * ```ts
 * import { Entity } from "tickwork"
 *
 * console.log(Entity.isEntityRegistry({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isEntityRegistry = (u: unknown): u is EntityRegistry<never> => Predicate.hasProperty(u, RegistryTypeId)

/**
 * Starts the registry of an entity kind in the current `ActorSystem`, for the scope's lifetime. A kind has one
 * registry per system: a second call with the same kind (the same `Entity.make` value) gives the registry already
 * open, with the first call's services and game clock, and it stays open until the last scope that asked for it
 * closes; another definition under a name whose registry is open fails with `InvalidEntityDefinition` (`name`).
 * Closing the last scope stops every awake entity as system shutdown does (a handler in flight is interrupted,
 * `onShutdown` runs) and waits for them; use `sleep` for a graceful stop after the queued messages. The definition is checked here: what it cannot
 * use fails with `InvalidEntityDefinition`, a bad declarative timer interval or initial delay with
 * `InvalidTimerInterval` / `InvalidTimerDelay`. Provide a `GameClock` to skip time; without one the game clock is the
 * system clock.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem, Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "AddGold"; readonly amount: number }
 * const Player = Entity.make<{ readonly gold: number }, Cmd>()({
 *   name: "Player",
 *   initialize: () => Effect.succeed({ gold: 0 }),
 *   commands: { AddGold: (cmd, model) => Effect.succeed({ gold: model.gold + cmd.amount }) }
 * })
 *
 * const program = Effect.gen(function*() {
 *   const players = yield* Entity.makeRegistry(Player)
 *   yield* players.tell("p1", { _tag: "AddGold", amount: 5 })
 * }).pipe(Effect.scoped, Effect.provide(ActorSystem.layer({ name: "game" })))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRegistry = <Model, Cmd extends Command, E, R>(
  entity: Entity<Model, Cmd, E, R>
): Effect.Effect<
  EntityRegistry<Cmd>,
  InvalidEntityDefinition | InvalidTimerInterval | InvalidTimerDelay,
  R | ActorSystem | Scope.Scope
> => internal.makeRegistry(entity)
