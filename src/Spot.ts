/**
 * Spots: state with one serial execution queue, periodic timers, and workers for what must not block the queue.
 *
 * A Spot owns a state value and one execution queue that runs one item at a time: work submitted with `run` or
 * `submit`, timer ticks (`context.timers`, see `SpotTimers`) and the continuations of worker calls all enter that
 * queue, in order. The item being run **holds the turn**: nothing else of the Spot runs meanwhile, so its code reads
 * and writes the state (`context.state`, `set`, `update`, `modify`) without locks. A Spot is an actor underneath (its
 * mailbox is the queue) and lives under `/user/<name>` of the `ActorSystem`.
 *
 * Long work leaves the queue through a worker call (`Workers.cpu` for a synchronous computation on a worker thread,
 * `Workers.io` for an asynchronous Effect), closed by a terminator that says what happens to the turn meanwhile:
 *
 * | terminator | the Spot's turn | use it |
 * | --- | --- | --- |
 * | `Spot.Yield` | given back while waiting; the continuation re-enters the queue | by default: other work runs |
 * | `Spot.Async` | held until the call completes | short calls during which the state must not change |
 * | `Spot.Submit` | returns at once; the result is not awaited, failures are logged | fire and forget |
 *
 * After a `Yield`, other work may have changed the state: read it again rather than trusting values read before.
 * Workers never touch Spot state: a worker call that tries dies. Copy the values it needs into its input.
 *
 * Stopping a Spot (its `stop` or `context.stop`) lets the item holding the turn finish (the system's shutdown
 * interrupts it instead), then cancels every timer, drops the queued ticks, fails queued `run` calls with `SpotStopped`, interrupts work waiting
 * off the turn and every worker call still in flight, and runs `onStop` with the final state. Nothing is left behind:
 * the Spot's fibers live in its own Scope.
 *
 * Failures: `run` returns the work's failure to its caller. A failing `submit`ted item or timer handler is logged
 * (error level) and the Spot goes on; a timer keeps its schedule. A failing `onStart` is logged and stops the Spot.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { Pipeable } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import { ActorSystem, type SpawnError } from "./ActorSystem.js"
import * as internal from "./internal/spot.js"
import type { SpotTimers } from "./SpotTimers.js"
import type { WorkerCall } from "./Workers.js"

/**
 * The symbol that marks a Spot handle.
 *
 * @example
 * ```ts
 * import { Spot } from "tickwork"
 *
 * const marked = (u: object) => Spot.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: typeof internal.SpotTypeId = internal.SpotTypeId

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { Spot } from "tickwork"
 *
 * type Marker = Spot.TypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A running Spot.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot } from "tickwork"
 *
 * // a counter Spot: state changes only through its queue
 * const increment = (counter: Spot.Spot<number>) => counter.run((ctx) => ctx.modify((n) => [n + 1, n + 1] as const))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Spot<S> extends Pipeable {
  readonly [TypeId]: TypeId
  /** The path of the Spot's actor, e.g. `/user/game-7`. */
  readonly path: string
  /**
   * Queues `work` and waits for its result. The work runs with the caller's context (services, log annotations).
   * Fails with `SpotStopped` when the Spot has stopped, or stops before the work ran. Calling it from the Spot's own
   * work would wait for itself and dies: use `submit` there.
   */
  readonly run: <A, E, R>(
    work: (context: SpotContext<S>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | SpotStopped, R>
  /**
   * Queues `work` without waiting; it runs with the caller's context and a failure is logged. Fails with
   * `SpotStopped` when the Spot has stopped.
   */
  readonly submit: <R>(
    work: (context: SpotContext<S>) => Effect.Effect<unknown, unknown, R>
  ) => Effect.Effect<void, SpotStopped, R>
  /** Stops the Spot once the item holding the turn has finished, and waits until it has stopped. */
  readonly stop: Effect.Effect<void>
}

/**
 * What the Spot's own work sees.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Spot } from "tickwork"
 *
 * const addPlayer = (ctx: Spot.SpotContext<ReadonlyArray<string>>, name: string) =>
 *   Effect.gen(function*() {
 *     const players = yield* ctx.state
 *     if (players.includes(name)) return false
 *     yield* ctx.set([...players, name])
 *     return true
 *   })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface SpotContext<S> {
  readonly self: Spot<S>
  readonly path: string
  /** The state. Like `set`, `update` and `modify`, it dies unless the caller holds the Spot's turn. */
  readonly state: Effect.Effect<S>
  readonly set: (state: S) => Effect.Effect<void>
  readonly update: (f: (state: S) => S) => Effect.Effect<void>
  /** Updates the state and returns a value computed from it. */
  readonly modify: <A>(f: (state: S) => readonly [A, S]) => Effect.Effect<A>
  /** The Spot's timers. */
  readonly timers: SpotTimers<S>
  /** Stops this Spot after the item holding the turn (it does not wait). */
  readonly stop: Effect.Effect<void>
}

/**
 * What `spawn` takes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Spot } from "tickwork"
 *
 * const options: Spot.Options<number> = {
 *   initialState: 0,
 *   onStart: (ctx) => Effect.logInfo(`${ctx.path} started`),
 *   onStop: (state) => Effect.logInfo(`stopped at ${state}`)
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<S, R = never> {
  readonly initialState: S
  /** The Spot's first item: register timers, load data. A failure is logged and stops the Spot. */
  readonly onStart?: ((context: SpotContext<S>) => Effect.Effect<unknown, unknown, R>) | undefined
  /** Runs once the Spot has stopped (timers cancelled, work interrupted), with its final state. */
  readonly onStop?: ((state: S) => Effect.Effect<void, never, R>) | undefined
}

/**
 * The Spot has stopped: no work can be queued, and queued work will not run.
 *
 * @example
 * ```ts
 * import { Spot } from "tickwork"
 *
 * console.log(new Spot.SpotStopped({ path: "/user/game-7" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class SpotStopped extends Data.TaggedError("SpotStopped")<{ readonly path: string }> {
  override get message(): string {
    return `Spot ${this.path} has stopped`
  }
}

/**
 * `spawn` was given options it cannot use: not an object, without `initialState`, with an unknown option (a typo would
 * otherwise be ignored), or with an `onStart` or `onStop` that is not a function. `option` names it; nothing is
 * started.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot } from "tickwork"
 *
 * // `onstart` is a typo: "invalid Spot option onstart: is not a Spot option (initialState, onStart, onStop)"
 * const program = Spot.spawn({ initialState: 0, onstart: () => Effect.void } as Spot.Options<number>).pipe(
 *   Effect.catchTag("InvalidSpotOptions", (error) => Effect.logError(error.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSpotOptions extends Data.TaggedError("InvalidSpotOptions")<{
  readonly option: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid Spot option ${this.option}: ${this.reason}`
  }
}

/**
 * Starts a Spot under `/user/<name>` (the name is generated when omitted). `onStart`, when given, is its first item;
 * it and `onStop` run with the context `spawn` runs in. Options it cannot use fail with `InvalidSpotOptions`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem, Spot } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const counter = yield* Spot.spawn({ initialState: 0 }, "counter")
 *   yield* counter.submit((ctx) => ctx.update((n) => n + 1))
 *   const value = yield* counter.run((ctx) => ctx.state)
 *   yield* Effect.logInfo(`counter = ${value}`)
 * }).pipe(Effect.provide(ActorSystem.layer({ name: "spots" })))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const spawn = <S, R = never>(
  options: Options<S, R>,
  name?: string
): Effect.Effect<Spot<S>, SpawnError | InvalidSpotOptions, R | ActorSystem> =>
  Effect.suspend((): Effect.Effect<Spot<S>, SpawnError | InvalidSpotOptions, R | ActorSystem> => {
    const invalid = internal.optionsProblem(options)
    return invalid === undefined
      ? Effect.flatMap(ActorSystem, (system) => internal.spawn(options, system, name))
      : Effect.fail(new InvalidSpotOptions({ option: invalid[0], reason: invalid[1] }))
  })

/**
 * Closes a worker call and gives the Spot's turn back while it runs: other queued work of the Spot runs meanwhile,
 * and the rest of this work re-enters the queue when the call completes. The default choice. A CPU call whose pool
 * queue is full fails at once, before the turn is given back. Dies outside a Spot's own work.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot, Workers } from "tickwork"
 *
 * const refresh = (ctx: Spot.SpotContext<{ readonly price: number }>) =>
 *   Effect.gen(function*() {
 *     const price = yield* Workers.io(Effect.succeed(42).pipe(Effect.delay("100 millis"))).pipe(Spot.Yield)
 *     // other work may have run meanwhile: update from the current state
 *     yield* ctx.update((s) => ({ ...s, price }))
 *   })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const Yield: <A, E, R>(call: WorkerCall<A, E, R>) => Effect.Effect<A, E, R> = internal.yieldCall

/**
 * Closes a worker call and holds the Spot's turn until it completes: nothing else of the Spot runs meanwhile, so the
 * state cannot change under the caller. For short calls. Dies outside a Spot's own work.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot, Workers } from "tickwork"
 *
 * const save = (ctx: Spot.SpotContext<{ readonly saved: number }>, write: Effect.Effect<void>) =>
 *   Effect.gen(function*() {
 *     yield* Workers.io(write).pipe(Spot.Async)
 *     yield* ctx.update((s) => ({ saved: s.saved + 1 }))
 *   })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const Async: <A, E, R>(call: WorkerCall<A, E, R>) => Effect.Effect<A, E, R> = internal.asyncCall

/**
 * Starts a worker call and returns at once: the result is not awaited and a failure (a full CPU queue included) is
 * logged. The call is interrupted if the Spot stops first. Dies outside a Spot's own work.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot, Workers } from "tickwork"
 *
 * const audit = (line: string) => Workers.io(Effect.logInfo(line)).pipe(Spot.Submit)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const Submit: <A, E, R>(call: WorkerCall<A, E, R>) => Effect.Effect<void, never, R> = internal.submitCall

/**
 * True for a Spot.
 *
 * @example
 * ```ts
 * import { Spot } from "tickwork"
 *
 * console.log(Spot.isSpot({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isSpot = (u: unknown): u is Spot<unknown> => Predicate.hasProperty(u, TypeId)
