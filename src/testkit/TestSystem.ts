/**
 * A whole tickwork system for one test, in one line: an `ActorSystem` with grains, entities and Spots on the test's
 * `TestClock`, a seeded `Random`, and a timeline of every timer event that is printed beside the assertion error when
 * the test fails.
 *
 * ```ts
 * it.effect("...", () => Effect.gen(function*() { ... }).pipe(Effect.provide(TestSystem.layer({ grains: [Counter] }))))
 * ```
 *
 * With it come the helpers that need the system: the timers of any owner (an actor, a grain, an entity, a Spot) read
 * without sending it a message, with assertions in the style of Akka's `BehaviorTestKit` (`expectTimer`,
 * `expectNoTimers`); code run inside an owner (`inside`); time that moves to the next timer (`advanceToNext`,
 * `runUntilIdle`); a grain timer fired on demand (`fireTimer`, Orleans' `FireTimer`); and counts of delivered, dropped
 * and stale ticks for this system alone (`counts`).
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as Utils from "effect/Utils"
import type { ActorContext } from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import * as ActorSystem from "../ActorSystem.js"
import * as Entity from "../Entity.js"
import { type Grain, type GrainProps, type InvalidGrainKind, UnknownGrainKind } from "../Grain.js"
import * as Grains from "../Grains.js"
import type { ActorCell } from "../internal/actorCell.js"
import { CellRef } from "../internal/actorCell.js"
import { type SystemImpl, systemOf } from "../internal/actorSystem.js"
import { type RegistryImpl, registryIn } from "../internal/entity.js"
import { Activation, idOf, registryOf } from "../internal/grain.js"
import type * as internal from "../internal/timeline.js"
import { formatTimeline as formatLines, type Timeline } from "../internal/timeline.js"
import type { DropReason } from "../Metrics.js"
import * as Schedules from "../Schedules.js"
import * as Spot from "../Spot.js"
import type { InvalidTimerDelay, InvalidTimerInterval, ScheduledReferenceNotFound } from "../TimerError.js"
import type * as Workers from "../Workers.js"
import { now, settle } from "./TestTimers.js"

// ------------------------------------------------------------------------------------------------------ the layer

/**
 * What the testkit keeps of a system: reached through the `TestSystem` tag; the functions of this module use it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestSystemService {
  readonly system: ActorSystem.ActorSystemService
  readonly grains: Grains.GrainsService
  /** The clock's time when the system started: where the timeline's offsets count from. */
  readonly startedAt: number
  /** Lines of the timeline printed beside a failing test's error. */
  readonly printLines: number
  /** The system's scope: entity registries started by `entities` live in it. */
  readonly scope: Scope.Scope
}

/**
 * The tag of the testkit's system.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const startedAt = Effect.map(TestSystem.TestSystem, (test) => test.startedAt)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class TestSystem extends Context.Tag("tickwork/testkit/TestSystem")<TestSystem, TestSystemService>() {}

/**
 * Options of `layer`; every one has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Kinds extends ReadonlyArray<Grain<any, any, any, any>>> {
  /** The system's name (default `"test"`). */
  readonly name?: string
  /** The other `ActorSystem` options (mailbox capacity, ask and stop timeouts, ...). */
  readonly system?: Omit<ActorSystem.Options, "name">
  /** Grain kinds to register (default none); `Grains` is provided either way. */
  readonly grains?: Kinds
  readonly grainsOptions?: Grains.Options
  /** The seed of the `Random` the test and the system see (default `"tickwork"`): same seed, same run. */
  readonly seed?: string | number
  /** The `Random` the test and the system see, instead of one seeded with `seed` (e.g. `Random.fixed([0.25])`). */
  readonly random?: Random.Random
  /** Timeline lines kept (default 1,000). */
  readonly timelineCapacity?: number
  /** Timeline lines printed beside a failing test's error (default 40; 0 prints none). */
  readonly printLines?: number
}

type KindRequirements<Kinds extends ReadonlyArray<Grain<any, any, any, any>>> = [Kinds[number]] extends [never]
  ? never
  : Kinds[number] extends Grain<any, any, any, infer R>
    ? R
    : never

/**
 * One-line wiring for a test: an `ActorSystem` (with `Grains` and `Schedules`) on the `TestClock` of the fiber that
 * builds it, a `Random` seeded with `seed`, and the timeline on. When the test fails, the last `printLines` lines of
 * the timeline are appended to its error, so the reason a tick did not arrive is in the test's output. Entities come
 * from `entities(kind)`, Spots from `Spot.spawn`, both in this system.
 *
 * @example
 * ```ts
 * import { it } from "@effect/vitest"
 * import { Effect } from "effect"
 * import { Grain, Grains } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Counter = Grain.make<"inc">()({
 *   name: "counter",
 *   onActivate: () => Effect.succeed(0),
 *   onReceive: (_ctx, n) => Effect.succeed(n + 1)
 * })
 *
 * it.effect("counts", () =>
 *   Effect.gen(function*() {
 *     yield* Grains.tell(Counter, "c-1", "inc")
 *     const n = yield* TestSystem.inside(TestSystem.grain(Counter, "c-1"), (_props, n) => Effect.succeed(n))
 *   }).pipe(Effect.provide(TestSystem.layer({ grains: [Counter] }))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const Kinds extends ReadonlyArray<Grain<any, any, any, any>> = []>(
  options: Options<Kinds> = {}
): Layer.Layer<
  TestSystem | ActorSystem.ActorSystem | Workers.Workers | Grains.Grains | Schedules.Schedules,
  ActorSystem.InvalidActorSystemOptions | Workers.WorkerFailure | InvalidGrainKind | Grains.InvalidGrainsOptions,
  KindRequirements<Kinds>
> => {
  const system = ActorSystem.layer({ name: options.name ?? "test", ...options.system })
  const grains = Grains.layer(options.grains ?? [], options.grainsOptions)
  const test = Layer.scoped(TestSystem, make(options.timelineCapacity ?? 1_000, options.printLines ?? 40))
  return test.pipe(
    Layer.provideMerge(Layer.merge(grains, Schedules.layer)),
    Layer.provideMerge(system),
    // made at each build: every test starts from the seed, not from where the previous test left the generator
    Layer.provide(Layer.suspend(() => Layer.setRandom(options.random ?? Random.make(options.seed ?? "tickwork"))))
  ) as never
}

const make = (
  capacity: number,
  printLines: number
): Effect.Effect<TestSystemService, never, ActorSystem.ActorSystem | Grains.Grains | Scope.Scope> =>
  Effect.gen(function* () {
    const system = yield* ActorSystem.ActorSystem
    const impl = systemOf(system)!
    const timeline = impl.recordTimeline(capacity)
    const startedAt = impl.driver.now()
    const scope = yield* Scope.Scope
    const service: TestSystemService = {
      system,
      grains: yield* Grains.Grains,
      startedAt,
      printLines,
      scope
    }
    yield* Effect.addFinalizer((exit) =>
      Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) && printLines > 0
        ? Effect.sync(() => attachTimeline(exit.cause, timeline, startedAt, printLines))
        : Effect.void
    )
    return service
  })

/** The text appended to a failing test's error: the last lines of the timeline. */
const timelineText = (timeline: Timeline, startedAt: number, lines: number): string => {
  const last = timeline.lines(lines)
  const shown = last.length === 0 ? "  (no timer events)" : formatLines(last, startedAt)
  return `\n\ntickwork timeline (last ${last.length} of ${timeline.recorded} events; virtual time since the system started):\n${shown}`
}

/** Appends the timeline to the first error of `cause` (printed to stderr when the error cannot take it). */
const attachTimeline = (cause: Cause.Cause<unknown>, timeline: Timeline, startedAt: number, lines: number): void => {
  const text = timelineText(timeline, startedAt, lines)
  const first = [...Cause.defects(cause), ...Cause.failures(cause)][0]
  if (first instanceof Error) {
    try {
      Object.defineProperty(first, "message", { value: first.message + text, configurable: true, writable: true })
      return
    } catch {
      // a frozen error: print instead
    }
  }
  console.error(text.trimStart())
}

// ------------------------------------------------------------------------------------------------------ owners

/**
 * A grain identity as an owner (`grain(kind, key)`).
 *
 * @since 0.1.0
 * @category models
 */
export interface GrainOwner<Msg, S> {
  readonly _tag: "GrainOwner"
  readonly kind: Grain<Msg, S, any, any>
  readonly key: string
}

/**
 * An entity as an owner (`entity(registry, id)`).
 *
 * @since 0.1.0
 * @category models
 */
export interface EntityOwner<Model, Cmd extends Entity.Command> {
  readonly _tag: "EntityOwner"
  /** The registry, or the kind whose registry `entities(kind)` started in the test's system. */
  readonly registry: Entity.EntityRegistry<Cmd> | Entity.Entity<Model, Cmd, any, any>
  readonly id: string
  /** Never set: carries the model's type. */
  readonly model?: Model
}

/**
 * What owns timers: an actor's ref, a grain identity, an entity, a Spot.
 *
 * @since 0.1.0
 * @category models
 */
export type Owner = ActorRef<any> | Spot.Spot<any> | GrainOwner<any, any> | EntityOwner<any, any>

/**
 * The grain (kind, key) as an owner.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Device = Grain.make<"poll">()({ name: "device", onReceive: () => Effect.void })
 * const timers = TestSystem.timers(TestSystem.grain(Device, "d-1"))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const grain = <Msg, S>(kind: Grain<Msg, S, any, any>, key: string): GrainOwner<Msg, S> => ({
  _tag: "GrainOwner",
  kind,
  key
})

/**
 * An entity kind's registry started by `entities(kind)`: an `EntityRegistry` that also carries the kind's model type,
 * so that `entity(registry, id)` and `inside` on it are typed by the model without naming it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestEntities<Model, Cmd extends Entity.Command> extends Entity.EntityRegistry<Cmd> {
  /** Never set: carries the model's type. */
  readonly "~model"?: Model
}

/**
 * Entity `id` as an owner: of `registry`, or of the registry `entities(kind)` started for `kind` in the test's system.
 * Both are typed by the model: a kind carries it, and so does a registry from `entities(kind)`; for a registry of your
 * own (`Entity.makeRegistry`), name it: `entity<Model>(registry, id)`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Player = Entity.make<{ readonly hp: number }, { readonly _tag: "Hit" }>()({
 *   name: "Player",
 *   initialize: () => Effect.succeed({ hp: 10 }),
 *   commands: { Hit: (_cmd, model) => Effect.succeed({ hp: model.hp - 1 }) }
 * })
 * const test = Effect.gen(function*() {
 *   const players = yield* TestSystem.entities(Player)
 *   yield* players.tell("p-1", { _tag: "Hit" })
 *   const hp = yield* TestSystem.inside(TestSystem.entity(Player, "p-1"), (_ctx, model) => Effect.succeed(model.hp))
 *   const same = TestSystem.entity(players, "p-1") // the same entity, through the registry
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const entity: {
  <Model, Cmd extends Entity.Command>(kind: Entity.Entity<Model, Cmd, any, any>, id: string): EntityOwner<Model, Cmd>
  <Model = unknown, Cmd extends Entity.Command = any>(
    registry: Entity.EntityRegistry<Cmd> & { readonly "~model"?: Model },
    id: string
  ): EntityOwner<Model, Cmd>
} = (registry: Entity.EntityRegistry<any> | Entity.Entity<any, any, any, any>, id: string): EntityOwner<any, any> => ({
  _tag: "EntityOwner",
  registry,
  id
})

/**
 * The registry of an entity kind in the test's system, started at the first call for the system's lifetime (no
 * `Scope` needed); later calls give the same registry (as `Entity.makeRegistry` does: one registry per kind and
 * system). It carries the kind's model type: `entity(registry, id)` and `inside` on it are typed by it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Player = Entity.make<{ readonly hp: number }, { readonly _tag: "Hit" }>()({
 *   name: "Player",
 *   initialize: () => Effect.succeed({ hp: 10 }),
 *   commands: { Hit: (_cmd, model) => Effect.succeed({ hp: model.hp - 1 }) }
 * })
 * const test = Effect.gen(function*() {
 *   const players = yield* TestSystem.entities(Player)
 *   yield* players.tell("p-1", { _tag: "Hit" })
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const entities = <Model, Cmd extends Entity.Command, E, R>(
  kind: Entity.Entity<Model, Cmd, E, R>
): Effect.Effect<
  TestEntities<Model, Cmd>,
  Entity.InvalidEntityDefinition | InvalidTimerInterval | InvalidTimerDelay,
  R | TestSystem
> =>
  Effect.flatMap(TestSystem, (test) =>
    Effect.provideService(Scope.extend(Entity.makeRegistry(kind), test.scope), ActorSystem.ActorSystem, test.system)
  ) as Effect.Effect<
    TestEntities<Model, Cmd>,
    Entity.InvalidEntityDefinition | InvalidTimerInterval | InvalidTimerDelay,
    R | TestSystem
  >

// ------------------------------------------------------------------------------------------------------ internals

const implOf = (test: TestSystemService): SystemImpl => systemOf(test.system)!

const isGrainOwner = (owner: Owner): owner is GrainOwner<any, any> =>
  typeof owner === "object" && owner !== null && (owner as { _tag?: unknown })._tag === "GrainOwner"

const isEntityOwner = (owner: Owner): owner is EntityOwner<any, any> =>
  typeof owner === "object" && owner !== null && (owner as { _tag?: unknown })._tag === "EntityOwner"

/** The name of an entity owner's kind. */
const entityKindOf = (owner: EntityOwner<any, any>): string =>
  Entity.isEntity(owner.registry) ? owner.registry.name : (owner.registry as Entity.EntityRegistry<any>).kind

/** The registry of an entity owner: its own, or the one `entities(kind)` started for its kind in this system. */
const entityRegistry = (
  test: TestSystemService,
  owner: EntityOwner<any, any>
): Effect.Effect<RegistryImpl<any, any, any, any>> => {
  const registry = owner.registry
  if (!Entity.isEntity(registry)) return Effect.succeed(registry as RegistryImpl<any, any, any, any>)
  const started = registryIn(test.system, registry)
  return started === undefined
    ? fail(`entity kind ${registry.name} has no registry in this system: start it with TestSystem.entities(kind)`)
    : Effect.succeed(started)
}

/** The actor path of an owner: what the timeline and the counts name it by. */
const pathOf = (owner: Owner): string => {
  if (isGrainOwner(owner)) return `/user/grain:${encodeURIComponent(owner.kind.name)}:${encodeURIComponent(owner.key)}`
  if (isEntityOwner(owner)) {
    return `/user/${encodeURIComponent(entityKindOf(owner))}:${encodeURIComponent(owner.id)}`
  }
  return owner.path
}

/** How an owner is named in an assertion's message. */
const nameOf = (owner: Owner): string =>
  isGrainOwner(owner)
    ? `grain ${owner.kind.name}/${owner.key}`
    : isEntityOwner(owner)
      ? `entity ${entityKindOf(owner)}/${owner.id}`
      : Spot.isSpot(owner)
        ? `Spot ${owner.path}`
        : `actor ${owner.path}`

/** The live cell at `path` in this system, if any. */
const cellAt = (impl: SystemImpl, path: string): ActorCell | undefined => {
  for (const cell of impl.actorCells) if (cell.path === path && !cell.isTerminated) return cell
  return undefined
}

const grainRegistry = (test: TestSystemService) => {
  const registry = registryOf(test.grains)
  if (registry === undefined) throw new Error("TestSystem: the Grains service is not a single-process one")
  return registry
}

const fail = (message: string): Effect.Effect<never> => Effect.die(new Error(`TestSystem: ${message}`))

/**
 * The cell of grain (kind, key): from the system's `Grains` (activated first if it is not), or else a live activation
 * of it that another host keeps in this system (a cluster grain: a message activates it, not the testkit).
 */
const grainCell = (test: TestSystemService, owner: GrainOwner<any, any>): Effect.Effect<ActorCell, UnknownGrainKind> =>
  Effect.catchAll(grainRegistry(test).cellOf(owner.kind, owner.key), (error) => {
    const cell = cellAt(implOf(test), pathOf(owner))
    if (cell !== undefined && cell.owner instanceof Activation) return Effect.succeed(cell)
    return Effect.fail(
      new UnknownGrainKind({
        kind: error.kind,
        detail:
          `${error.detail ?? "it is not registered in the Grains layer"}, and no activation of ${owner.kind.name}/` +
          `${owner.key} is live in this system (a cluster grain is activated by a message: tell it first)`
      })
    )
  })

/**
 * The messages of an incarnation's timers, by kind and key: what no public `TimerInfo` carries. Read from the entries
 * themselves: the actor's keyed timers and receive timeout, a grain activation's timers, the timer tables (an
 * entity's periodic timers keep their command; a Spot's timers and one-shots have none).
 */
const timerMessages = (cell: ActorCell): Map<string, unknown> => {
  const messages = new Map<string, unknown>()
  const put = (kind: string, key: string, message: unknown) => messages.set(idOf(kind, key), message)
  for (const timer of cell.timers?.values() ?? []) put(timer.kind, timer.key, timer.message)
  if (cell.receiveTimeout !== undefined) put(cell.receiveTimeout.kind, "receive-timeout", cell.receiveTimeout.message)
  if (cell.owner instanceof Activation) {
    for (const timer of cell.owner.timerList()) put(timer.kind, timer.reference, timer.message)
  }
  for (const table of cell.timerTables ?? []) {
    const book = table as { timerList?: () => ReadonlyArray<{ kind: string; name?: string; message?: unknown }> }
    for (const entry of book.timerList?.() ?? [])
      if (entry.name !== undefined) put(entry.kind, entry.name, entry.message)
  }
  return messages
}

// ------------------------------------------------------------------------------------------------------ inside

/**
 * Runs `f` inside an owner, in its mailbox order (after what it was sent before), and gives back what `f` gives: an
 * actor's `f` gets its `ActorContext`, a grain's its props and state (the grain is activated first if it is not), an
 * entity's its context and model (it is woken first if it sleeps), a Spot's its `SpotContext`. A failure of `f` is the
 * caller's, never the owner's: no supervision, no restart, the state stays as it was. An owner that has stopped
 * answers with a defect that says so. A cluster grain (`tickwork/cluster/testkit`) is reached while it is active in
 * this system; a message activates it, and before that it is `UnknownGrainKind`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Ticker = Actor.make<"tick">()({
 *   preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "tick", "1 second")),
 *   receive: () => Effect.void
 * })
 * const test = Effect.gen(function*() {
 *   const ref = yield* ActorSystem.spawn(Ticker, "ticker")
 *   const keys = yield* TestSystem.inside(ref, (ctx) => ctx.timers.activeKeys) // ["beat"]
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const inside: {
  <Msg, S, A, E>(
    owner: GrainOwner<Msg, S>,
    f: (props: GrainProps<Msg>, state: S) => Effect.Effect<A, E>
  ): Effect.Effect<A, E | UnknownGrainKind, TestSystem>
  <Model, Cmd extends Entity.Command, A, E>(
    owner: EntityOwner<Model, Cmd>,
    f: (context: Entity.EntityContext<Model, Cmd>, model: Model) => Effect.Effect<A, E>
  ): Effect.Effect<A, E, TestSystem>
  <S, A, E, R>(owner: Spot.Spot<S>, f: (context: Spot.SpotContext<S>) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R>
  <Msg, A, E>(
    owner: ActorRef<Msg>,
    f: (context: ActorContext<Msg>) => Effect.Effect<A, E>
  ): Effect.Effect<A, E, TestSystem>
} = ((owner: Owner, f: (...args: Array<any>) => Effect.Effect<unknown, unknown, unknown>) => {
  if (Spot.isSpot(owner)) {
    return Effect.catchTag(
      owner.run((context) => f(context)) as Effect.Effect<unknown, unknown, unknown>,
      "SpotStopped" as never,
      (error: unknown) => Effect.die(error)
    )
  }
  return Effect.flatMap(TestSystem, (test) => {
    if (isGrainOwner(owner)) {
      return Effect.flatMap(grainCell(test, owner), (cell) =>
        Effect.flatten(
          cell.inside(() =>
            (cell.owner as Activation).runInside(f as (props: GrainProps<unknown>, state: unknown) => never)
          )
        )
      )
    }
    if (isEntityOwner(owner)) {
      return Effect.flatMap(entityRegistry(test, owner), (registry) =>
        Effect.flatten(registry.inside(owner.id, f as never))
      )
    }
    const cell = owner instanceof CellRef && implOf(test).owns(owner.cell) ? owner.cell : undefined
    return cell === undefined
      ? fail(`inside: ${owner.path} is not an actor of this system`)
      : Effect.flatten(cell.inside(f as never))
  })
}) as never

// ------------------------------------------------------------------------------------------------------ timers

/**
 * A timer as the testkit lists it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestTimer {
  /** The timer's key (actor, Spot, entity), reference (grain) or name (named schedule). */
  readonly key: string
  /** `actor_timer`, `receive_timeout`, `grain_timer`, `spot_timer`, `entity_timer`, `schedule`, ... */
  readonly kind: string
  /**
   * `single`, `fixed-delay`, `fixed-rate`, `schedule`, `receive-timeout` (actors); `once`, `interval`, `cron`
   * (grains, named schedules); the overrun policy's tag (Spots); `periodic`, `once` (entities).
   */
  readonly mode: string
  /** The clock time (epoch millis) it fires next; undefined when it is not armed (paused, or its tick is queued). */
  readonly nextDue: number | undefined
  readonly intervalMillis: number | undefined
  /** Its cron expression, for cron timers. */
  readonly expression: string | undefined
  /**
   * The message it sends: an actor timer's or receive timeout's, a grain timer's, an entity periodic timer's command
   * (undefined for one that runs code). A Spot timer runs a handler and a one-shot an effect: undefined for them, and
   * for a named schedule.
   */
  readonly message: unknown
  /** True for a named schedule paused through `Schedules.pause`. */
  readonly paused: boolean
}

/**
 * The timers an owner holds now, read without sending it a message (ready fibers run first, as in `TestProbe`, so a
 * `preStart` or a message on its way has run): an actor's `ctx.timers` and receive timeout, a
 * grain's timers (empty while it is not active), an entity's, a Spot's, and the named schedules (`Schedules`) that
 * send to it. A stopped or sleeping owner holds none.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem, Actor } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const ref = yield* ActorSystem.spawn(Actor.make<string>()({ receive: () => Effect.void }), "a")
 *   const timers = yield* TestSystem.timers(ref) // []
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const timers = (owner: Owner): Effect.Effect<ReadonlyArray<TestTimer>, never, TestSystem> =>
  Effect.flatMap(Effect.zipRight(settle, TestSystem), (test) =>
    Effect.suspend(() => {
      const impl = implOf(test)
      const path = pathOf(owner)
      let cell: ActorCell | undefined
      if (owner instanceof CellRef) cell = impl.owns(owner.cell) && !owner.cell.isTerminated ? owner.cell : undefined
      else if (isEntityOwner(owner) && !Entity.isEntity(owner.registry)) {
        cell = (owner.registry as RegistryImpl<any, any, any, any>).cellOf(owner.id)
      } else cell = cellAt(impl, path)
      const live = cell?.isTerminated === false ? cell : undefined
      const messages = live === undefined ? undefined : timerMessages(live)
      let own: Array<TestTimer> = (live?.timerInfos() ?? []).map((info) => ({
        key: info.key,
        kind: info.kind,
        mode: info.mode,
        nextDue: info.nextDue,
        intervalMillis: info.intervalMillis,
        expression: info.expression,
        message: messages?.get(idOf(info.kind, info.key)),
        paused: false
      }))
      // a grain's passivation check is the runtime's, not one of the grain's timers
      if (isGrainOwner(owner)) own = own.filter((timer) => timer.kind !== "receive_timeout")
      return Effect.map(impl.schedules.listLocal({ owner: path }), (schedules) => [
        ...own,
        ...schedules.map(
          (info): TestTimer => ({
            key: info.reference,
            kind: "schedule",
            mode: info.kind,
            nextDue: info.nextFire,
            intervalMillis: info.intervalMillis,
            expression: info.expression,
            message: undefined,
            paused: info.state === "paused"
          })
        )
      ])
    })
  )

/**
 * What `expectTimer` checks; each field left out is not checked.
 *
 * @since 0.1.0
 * @category models
 */
export interface ExpectedTimer {
  readonly mode?: string
  /** The clock time (epoch millis) it fires next. */
  readonly dueAt?: number
  /** How long from now it fires next, in millis. */
  readonly dueIn?: number
  readonly intervalMillis?: number
  readonly expression?: string
  /** The message it sends (as `TimerScheduled`'s `msg`), compared by content as `TestProbe.expectMessageEquals` does. */
  readonly message?: unknown
  readonly paused?: boolean
}

const show = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const describeTimer = (timer: TestTimer, now: number): string => {
  const parts = [`"${timer.key}" ${timer.kind} ${timer.mode}`]
  if (timer.message !== undefined) parts.push(`sends ${show(timer.message)}`)
  parts.push(timer.nextDue === undefined ? "not armed" : `due at ${timer.nextDue} (in ${timer.nextDue - now} ms)`)
  if (timer.intervalMillis !== undefined) parts.push(`every ${timer.intervalMillis} ms`)
  if (timer.expression !== undefined) parts.push(`cron "${timer.expression}"`)
  if (timer.paused) parts.push("paused")
  return parts.join(", ")
}

const listing = (owner: Owner, all: ReadonlyArray<TestTimer>, now: number): string =>
  all.length === 0
    ? `${nameOf(owner)} holds no timers`
    : `${nameOf(owner)} holds:\n${all.map((timer) => `  - ${describeTimer(timer, now)}`).join("\n")}`

/**
 * Asserts that `owner` holds a timer `key` as `expected` describes (Akka's `expectEffect(TimerScheduled(...))`), and
 * returns it. Dies with a message naming what differs and listing the owner's timers.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Ticker = Actor.make<"tick">()({
 *   preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "tick", "1 second")),
 *   receive: () => Effect.void
 * })
 * const test = Effect.gen(function*() {
 *   const ref = yield* ActorSystem.spawn(Ticker, "ticker")
 *   yield* TestSystem.expectTimer(ref, "beat", { message: "tick", mode: "fixed-rate", dueIn: 1000 })
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const expectTimer = (
  owner: Owner,
  key: string,
  expected: ExpectedTimer = {}
): Effect.Effect<TestTimer, never, TestSystem> =>
  Effect.flatMap(Effect.zip(timers(owner), now), ([all, now]) => {
    const timer = all.find((t) => t.key === key)
    if (timer === undefined) return fail(`expected a timer "${key}"; ${listing(owner, all, now)}`)
    const wrong: Array<string> = []
    const check = (name: string, want: unknown, got: unknown) => {
      if (want !== undefined && want !== got) wrong.push(`${name} ${String(want)} but it is ${String(got)}`)
    }
    check("mode", expected.mode, timer.mode)
    check("due at", expected.dueAt, timer.nextDue)
    check("due in (ms)", expected.dueIn, timer.nextDue === undefined ? undefined : timer.nextDue - now)
    check("interval (ms)", expected.intervalMillis, timer.intervalMillis)
    check("expression", expected.expression, timer.expression)
    if ("message" in expected && !Utils.structuralRegion(() => Equal.equals(expected.message, timer.message))) {
      wrong.push(`message ${show(expected.message)} but it is ${show(timer.message)}`)
    }
    check("paused", expected.paused, timer.paused)
    return wrong.length === 0
      ? Effect.succeed(timer)
      : fail(`expected timer "${key}" with ${wrong.join("; ")}; ${listing(owner, all, now)}`)
  })

/**
 * Asserts that `owner` holds no timer `key` (Akka's `TimerCancelled`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const ref = yield* ActorSystem.spawn(Actor.make<string>()({ receive: () => Effect.void }), "a")
 *   yield* TestSystem.expectNoTimer(ref, "beat")
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const expectNoTimer = (owner: Owner, key: string): Effect.Effect<void, never, TestSystem> =>
  Effect.flatMap(Effect.zip(timers(owner), now), ([all, now]) =>
    all.some((t) => t.key === key) ? fail(`expected no timer "${key}"; ${listing(owner, all, now)}`) : Effect.void
  )

/**
 * Asserts that `owner` holds no timers at all.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const ref = yield* ActorSystem.spawn(Actor.make<string>()({ receive: () => Effect.void }), "a")
 *   yield* TestSystem.expectNoTimers(ref)
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const expectNoTimers = (owner: Owner): Effect.Effect<void, never, TestSystem> =>
  Effect.flatMap(Effect.zip(timers(owner), now), ([all, now]) =>
    all.length === 0 ? Effect.void : fail(`expected no timers; ${listing(owner, all, now)}`)
  )

// ------------------------------------------------------------------------------------------------------ time

/**
 * One line of the timeline: what happened to a timer, when, and to whom.
 *
 * @since 0.1.0
 * @category models
 */
export type TimelineEvent = internal.TimelineEvent

/**
 * What a move of the clock did: where it went and every timer event on the way.
 *
 * @since 0.1.0
 * @category models
 */
export interface Advanced {
  /** The clock's time after the move. */
  readonly now: number
  /** The timers that fired (`fired` lines). */
  readonly fired: ReadonlyArray<TimelineEvent>
  /** Every timeline line of the move (arms, fires, deliveries, drops, stale discards, cancels). */
  readonly events: ReadonlyArray<TimelineEvent>
}

/** The last `n` lines of the test system's timeline (all it keeps by default), oldest first. */
const timelineOf = (test: TestSystemService): Timeline => implOf(test).timeline!

/**
 * Moves the clock to the earliest pending timer of the whole system (any kind, any owner) and lets what it made ready
 * run: Temporal's time skipping, one timer at a time. Returns what fired; with no timer pending the clock does not
 * move and nothing fired.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   yield* system.scheduler.scheduleOnceFunction("3 hours", Effect.log("later"))
 *   const step = yield* TestSystem.advanceToNext // step.now === 3 hours in millis
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const advanceToNext: Effect.Effect<Advanced, never, TestSystem> = Effect.flatMap(
  Effect.zipRight(settle, TestSystem),
  (test) =>
    Effect.suspend(() => {
      const impl = implOf(test)
      const timeline = timelineOf(test)
      const mark = timeline.recorded
      const due = impl.driver.queue.earliestDue()
      const now = impl.driver.now()
      const move = due === undefined ? 0 : Math.max(0, due - now)
      return Effect.map(TestClock.adjust(move), () => {
        const events = timeline.since(mark)
        return { now: impl.driver.now(), fired: events.filter((line) => line.event === "fired"), events }
      })
    })
)

/**
 * Moves the clock from timer to timer (`advanceToNext`) until no timer is pending in the system, at most `maxSteps`
 * steps (default 1,000): a periodic timer never lets a system go idle, so it dies then, listing what is still armed.
 * Returns every timer event on the way.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   yield* system.scheduler.scheduleOnceFunction("1 second", Effect.void)
 *   yield* system.scheduler.scheduleOnceFunction("1 hour", Effect.void)
 *   const all = yield* TestSystem.runUntilIdle() // all.fired.length === 2
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const runUntilIdle = (
  options: { readonly maxSteps?: number } = {}
): Effect.Effect<Advanced, never, TestSystem> =>
  Effect.flatMap(TestSystem, (test) => {
    const maxSteps = options.maxSteps ?? 1_000
    const impl = implOf(test)
    const timeline = timelineOf(test)
    const mark = timeline.recorded
    const loop = (step: number): Effect.Effect<void> =>
      Effect.flatMap(settle, () => {
        if (impl.driver.queue.earliestDue() === undefined) return Effect.void
        if (step >= maxSteps) {
          const pending = timeline
            .lines()
            .filter((line) => line.event === "armed")
            .slice(-5)
            .map((line) => `${line.kind} "${line.key ?? "-"}" of ${line.owner ?? "the system"}`)
          return fail(
            `runUntilIdle: still ${impl.driver.size} timer(s) pending after ${maxSteps} steps (a periodic timer ` +
              `never goes idle; move the clock by a duration instead). Last armed: ${pending.join(", ")}`
          )
        }
        return Effect.zipRight(Effect.provideService(advanceToNext, TestSystem, test), loop(step + 1))
      })
    return Effect.map(loop(0), () => {
      const events = timeline.since(mark)
      return { now: impl.driver.now(), fired: events.filter((line) => line.event === "fired"), events }
    })
  })

/**
 * Runs the grain's timer `reference` now, as if it fired (Orleans' TestKit `FireTimer`): `onReceive` sees its message
 * as a tick, in the grain's mailbox order; the timer's own schedule does not move. The grain is activated first if it
 * is not (a cluster grain must be active already, as for `inside`). A reference the grain does not hold fails with
 * `ScheduledReferenceNotFound`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain, GrainTimers } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const Device = Grain.make<"poll">()({
 *   name: "device",
 *   onActivate: (props) =>
 *     Effect.asVoid(Effect.orDie(props.schedule("poll", "1 hour", GrainTimers.withTimerReference("poll")))),
 *   onReceive: () => Effect.void
 * })
 * const test = TestSystem.fireTimer(TestSystem.grain(Device, "d-1"), "poll")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const fireTimer = (
  owner: GrainOwner<any, any>,
  reference: string
): Effect.Effect<void, ScheduledReferenceNotFound | UnknownGrainKind, TestSystem> =>
  Effect.flatMap(TestSystem, (test) =>
    Effect.flatMap(grainCell(test, owner), (cell) =>
      Effect.flatten(cell.inside(() => (cell.owner as Activation).fireNow(reference)))
    )
  )

// ------------------------------------------------------------------------------------------------------ counts

/**
 * Ticks delivered, dropped by reason, and stale ones, counted by this system's timeline (never by another system of
 * the process, unlike the process-wide `Metrics`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Counts {
  readonly delivered: number
  /** Dropped ticks by reason; `stale` ones (cancelled, replaced, from an old incarnation) among them. */
  readonly dropped: { readonly [R in DropReason]: number }
  /** The same as `dropped.stale`. */
  readonly stale: number
}

/**
 * The counts of the whole system, of one owner, or of one owner's timer `key`, since the system started.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem } from "tickwork"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const ref = yield* ActorSystem.spawn(Actor.make<string>()({ receive: () => Effect.void }), "a")
 *   const ofBeat = yield* TestSystem.counts(ref, "beat")
 *   const all = yield* TestSystem.counts()
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const counts = (owner?: Owner, key?: string): Effect.Effect<Counts, never, TestSystem> =>
  Effect.map(TestSystem, (test) => {
    const counted = timelineOf(test).countsOf(owner === undefined ? undefined : pathOf(owner), key)
    const { delivered, ...dropped } = counted
    return { delivered, dropped, stale: counted.stale }
  })

/**
 * The last `lines` lines of the system's timeline (all it keeps by default), oldest first.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const lastTen = TestSystem.timeline(10)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const timeline = (lines?: number): Effect.Effect<ReadonlyArray<TimelineEvent>, never, TestSystem> =>
  Effect.map(TestSystem, (test) => timelineOf(test).lines(lines))

/**
 * The timeline as the failure output prints it: one event a line, `+<ms since start>  <event> <kind> "<key>" of
 * <owner> (<due or reason>)`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestSystem } from "tickwork/testkit"
 *
 * const text = Effect.flatMap(TestSystem.formatTimeline(20), (text) => Effect.log(text))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const formatTimeline = (lines?: number): Effect.Effect<string, never, TestSystem> =>
  Effect.map(TestSystem, (test) => formatLines(timelineOf(test).lines(lines), test.startedAt))
