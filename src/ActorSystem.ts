/**
 * The actor runtime as an Effect service: spawning, the system scheduler, the event stream, dead letters and
 * shutdown. Build it with `layer(options)`; when the layer's scope closes every actor is stopped (children first,
 * `postStop` hooks run), every timer is cancelled and no fiber is left. Shutdown does not wait for a handler in
 * flight: it is interrupted, as any Effect fiber is when its scope closes (`stop` of a single actor, by contrast,
 * lets the current message finish).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Actor } from "./Actor.js"
import type { ActorRef } from "./ActorRef.js"
import type { EventStream } from "./EventStream.js"
import { make as makeSystem } from "./internal/actorSystem.js"
import { positiveDuration } from "./internal/duration.js"
import { formatOptionsError } from "./internal/options.js"
import type { Scheduler } from "./Scheduler.js"
import * as Workers from "./Workers.js"

/**
 * The options `ActorSystem.layer` validates. Durations are anything `Duration.decode` accepts (`"5 seconds"`, millis).
 *
 * | option | default | meaning |
 * | --- | --- | --- |
 * | `name` | required | the system's name: letters, digits, `-`, `_` |
 * | `mailboxCapacity` | unbounded | default bounded capacity for every actor |
 * | `askTimeout` | 5 seconds | `ActorRef.ask`'s default timeout |
 * | `logDeadLetters` | 10 | dead letters logged per interval (a full mailbox at warning level, a stopped recipient at info); the rest are counted and reported in one line when the interval ends; 0 logs none |
 * | `logDeadLettersInterval` | 5 minutes | the interval of `logDeadLetters` |
 * | `stopTimeout` | 10 seconds | how long a stop (an actor's, a grain's deactivation, an entity's sleep) may take before its handler is interrupted and the stop forced, with a warning naming the actor |
 * | `throughput` | 64 | messages an actor handles in a row before other ready actors get their turn |
 * | `guardian` | `"restart"` | how top-level actors are supervised: `restart`, `stop` or `resume` |
 * | `workers` | no thread until the first CPU task | the CPU worker pool (`Workers.Options`: `minThreads`, `maxThreads`, `idleTime`, `queueLength`) |
 *
 * @since 0.1.0
 * @category models
 */
export const Options = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, {
      message: () => "name must start with a letter or digit and contain only letters, digits, '-' and '_'"
    })
  ),
  mailboxCapacity: Schema.optional(
    Schema.Number.pipe(Schema.int(), Schema.positive({ message: () => "mailboxCapacity must be a positive integer" }))
  ),
  askTimeout: Schema.optional(positiveDuration("askTimeout", '"5 seconds" or 5000 (millis)')),
  stopTimeout: Schema.optional(positiveDuration("stopTimeout", '"10 seconds" or 10000 (millis)')),
  logDeadLetters: Schema.optional(
    Schema.Number.pipe(
      Schema.int(),
      Schema.nonNegative({ message: () => "logDeadLetters must be a whole number >= 0 (0 logs none)" })
    )
  ),
  logDeadLettersInterval: Schema.optional(positiveDuration("logDeadLettersInterval", '"5 minutes" or 300000 (millis)')),
  throughput: Schema.optional(
    Schema.Number.pipe(Schema.int(), Schema.positive({ message: () => "throughput must be a positive integer" }))
  ),
  guardian: Schema.optional(Schema.Literal("restart", "stop", "resume")),
  workers: Schema.optional(Workers.Options)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Options = Schema.Schema.Type<typeof Options>

/**
 * The options did not validate; `message` says which option and why.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem } from "tickwork"
 *
 * const bad = Layer.build(ActorSystem.layer({ name: "" })).pipe(
 *   Effect.scoped,
 *   Effect.catchTag("InvalidActorSystemOptions", (e) => Effect.logError(e.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidActorSystemOptions extends Data.TaggedError("InvalidActorSystemOptions")<{
  readonly details: string
}> {
  override get message(): string {
    return `invalid ActorSystem options:\n${this.details}`
  }
}

/**
 * A spawn used a name that is not valid: not a string, empty, starting with `$` (reserved for generated names), or
 * containing `/`.
 *
 * @example
 * ```ts
 * import { ActorSystem } from "tickwork"
 *
 * console.log(new ActorSystem.InvalidActorName({ name: "a/b", reason: "must not contain '/'" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidActorName extends Data.TaggedError("InvalidActorName")<{
  readonly name: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid actor name "${this.name}": ${this.reason}`
  }
}

/**
 * A sibling with the same name is alive.
 *
 * @example
 * ```ts
 * import { ActorSystem } from "tickwork"
 *
 * console.log(new ActorSystem.ActorNameTaken({ path: "/user/orders" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ActorNameTaken extends Data.TaggedError("ActorNameTaken")<{ readonly path: string }> {
  override get message(): string {
    return `an actor named ${this.path} is already running`
  }
}

/**
 * The system (or the parent) is shutting down or gone; nothing new can start.
 *
 * @example
 * ```ts
 * import { ActorSystem } from "tickwork"
 *
 * console.log(new ActorSystem.ActorSystemTerminated({ system: "demo" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ActorSystemTerminated extends Data.TaggedError("ActorSystemTerminated")<{ readonly system: string }> {
  override get message(): string {
    return `actor system ${this.system} has terminated (or the parent has stopped)`
  }
}

/**
 * What was given to `spawn` as an actor cannot run: not made with `Actor.make`, a handler that is not a function, a
 * mailbox capacity that is not a positive whole number, or a supervisor strategy with bad options
 * (`Supervision.restart({ maxRestarts: -1 })`). Checked before anything starts, so nothing is left behind.
 *
 * @example
 * ```ts
 * import { ActorSystem } from "tickwork"
 *
 * const error = new ActorSystem.InvalidActorDefinition({ name: "worker", reason: "receive must be a function" })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidActorDefinition extends Data.TaggedError("InvalidActorDefinition")<{
  /** The name the actor was to be spawned under (generated names are not made for a definition that fails). */
  readonly name: string | undefined
  readonly reason: string
}> {
  override get message(): string {
    return `cannot spawn ${this.name === undefined ? "an actor" : `actor "${this.name}"`}: ${this.reason}`
  }
}

/**
 * Why a spawn failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type SpawnError = InvalidActorName | ActorNameTaken | ActorSystemTerminated | InvalidActorDefinition

/**
 * Live counts, for diagnostics and for tests that prove nothing leaked.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stats {
  /** Actors that have not terminated. */
  readonly actors: number
  /** Actor fibers, scheduler-task fibers and the timer driver fiber still running. */
  readonly fibers: number
  /** Active `context.timers` timers across all actors, plus pending system-scheduler schedules. */
  readonly timers: number
  /** Entries in the timer engine. */
  readonly engineEntries: number
  /**
   * True while the timer engine's driver fiber runs: from the layer's build until shutdown. Should it ever end
   * otherwise, the system logs it at error level and starts it again with every pending timer kept.
   */
  readonly engineRunning: boolean
  /** Times the engine was started again after its driver fiber ended other than by shutdown (0 in a healthy system). */
  readonly engineRestarts: number
  /** Messages published as dead letters since start. */
  readonly deadLetters: number
}

/**
 * The service.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActorSystemService {
  readonly name: string
  /** Spawns a top-level actor under `/user`. The name is generated (`$0`, `$1`, ...) when omitted. */
  readonly spawn: <M, S, E, R>(actor: Actor<M, S, E, R>, name?: string) => Effect.Effect<ActorRef<M>, SpawnError, R>
  /** Stops an actor (after its current message) and waits until it has terminated. */
  readonly stop: (ref: ActorRef<never>) => Effect.Effect<void>
  readonly scheduler: Scheduler
  readonly eventStream: EventStream
  /** Where undeliverable messages go; telling it publishes a `DeadLetter`. */
  readonly deadLetters: ActorRef<unknown>
  /**
   * Stops every actor (interrupting handlers in flight; `postStop` still runs), cancels every timer and ends the
   * driver. Idempotent; the layer runs it on release. Spawns after it fail, schedules come back already cancelled.
   */
  readonly shutdown: Effect.Effect<void>
  readonly stats: Effect.Effect<Stats>
}

/**
 * The ActorSystem service tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   yield* Effect.logInfo(`running ${system.name}`)
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class ActorSystem extends Context.Tag("tickwork/ActorSystem")<ActorSystem, ActorSystemService>() {}

/**
 * Validates `options` and builds a system for the layer's scope, with its CPU worker pool (`Workers`, used by Spots).
 * A `Workers` layer provided around this one is used instead of a pool of the system's own (then the `workers` option
 * must be left out: one pool, configured in one place).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   yield* Effect.logInfo(system.name)
 * }).pipe(Effect.provide(ActorSystem.layer({ name: "demo" })))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<ActorSystem | Workers.Workers, InvalidActorSystemOptions | Workers.WorkerFailure> =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const decoded = yield* decodeOptions(options)
      // A worker pool provided around this layer is the one to use: the system never shadows it with its own.
      const outer = yield* Effect.serviceOption(Workers.Workers)
      if (Option.isSome(outer) && decoded.workers !== undefined) {
        return yield* new InvalidActorSystemOptions({
          details: "- workers: a Workers layer is provided around the system as well; configure the pool in one place"
        })
      }
      return Layer.merge(
        Layer.scoped(ActorSystem, makeSystem(decoded)),
        Option.isSome(outer)
          ? Layer.succeed(Workers.Workers, outer.value)
          : // The system's own pool (Spots' CPU workers): by default no thread starts before the first CPU task.
            Workers.layer({ minThreads: 0, ...decoded.workers }).pipe(
              Layer.mapError((error) =>
                error._tag === "InvalidWorkersOptions"
                  ? new InvalidActorSystemOptions({ details: `- workers: ${error.message}` })
                  : error
              )
            )
      )
    })
  )

/**
 * Validates options as `layer` does (useful for options read from configuration).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 *
 * const checked = ActorSystem.decodeOptions({ name: "demo", throughput: 0 })
 * // fails with InvalidActorSystemOptions: throughput must be a positive integer
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const decodeOptions = (options: unknown): Effect.Effect<Options, InvalidActorSystemOptions> =>
  Schema.decodeUnknown(Options, { errors: "all", onExcessProperty: "error" })(options).pipe(
    Effect.mapError(
      (error) => new InvalidActorSystemOptions({ details: formatOptionsError(error, options, '{ name: "app" }') })
    )
  )

/**
 * Spawns a top-level actor in the current system.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem } from "tickwork"
 *
 * const Echo = Actor.make<string>()({ receive: (msg) => Effect.logInfo(msg) })
 * const program = ActorSystem.spawn(Echo, "echo").pipe(Effect.flatMap((echo) => echo.tell("hi")))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const spawn = <M, S, E, R>(
  actor: Actor<M, S, E, R>,
  name?: string
): Effect.Effect<ActorRef<M>, SpawnError, R | ActorSystem> =>
  Effect.flatMap(ActorSystem, (system) => system.spawn(actor, name))
