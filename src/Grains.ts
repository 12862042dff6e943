/**
 * The grain runtime as a service: register grain kinds, then tell or ask grains by identity.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { AskTimeout } from "./ActorRef.js"
import { ActorSystem } from "./ActorSystem.js"
import type { Grain, InvalidGrainKey, InvalidGrainKind, UnknownGrainKind } from "./Grain.js"
import type { TimerInfo } from "./GrainTimers.js"
import { askTimeoutMillis } from "./internal/askTimeout.js"
import {
  type GrainAskError,
  GrainRegistry,
  holdKinds,
  keyProblem,
  passivationProblem,
  registerService,
  resolveKinds
} from "./internal/grain.js"
import { describeValue } from "./internal/validate.js"
import * as Passivation from "./Passivation.js"
import type { InvalidTimerDelay } from "./TimerError.js"

/**
 * Why an `ask` to a grain failed. `InvalidTimerDelay`: the timeout is not a positive finite duration;
 * `InvalidGrainKey`: the key is not a non-empty string (nothing was sent in either case).
 *
 * @since 0.1.0
 * @category errors
 */
export type AskError = GrainAskError | AskTimeout | InvalidTimerDelay | InvalidGrainKey

/**
 * The options of `Grains.layer` are not usable: the kinds are not an array, an option is unknown, or the default
 * `passivation` is not usable (`Passivation.idle("soon")`). `option` names it; the layer fails and starts nothing.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem, Grains, Passivation } from "tickwork"
 *
 * const GrainsLive = Grains.layer([], { passivation: Passivation.messageCount(0) }).pipe(
 *   Layer.provideMerge(ActorSystem.layer({ name: "app" }))
 * )
 * // fails with "invalid Grains option passivation: the message count must be a whole number >= 1, got 0"
 * const program = Effect.void.pipe(Effect.provide(GrainsLive))
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidGrainsOptions extends Data.TaggedError("InvalidGrainsOptions")<{
  readonly option: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid Grains option ${this.option}: ${this.reason}`
  }
}

/**
 * The service.
 *
 * @since 0.1.0
 * @category models
 */
export interface GrainsService {
  /** Sends `message` to the grain (kind, key), activating it if needed. The key must be a non-empty string. */
  readonly tell: <Msg>(
    kind: Grain<Msg, any, any, any>,
    key: string,
    message: NoInfer<Msg>
  ) => Effect.Effect<void, UnknownGrainKind | InvalidGrainKey>
  /**
   * Sends `message` and waits for the grain's signal: `reply(value)` succeeds with `value`, `noErr` (or no signal)
   * with undefined. The timeout (default 5 seconds) does not interrupt the grain's handler; one that is not a
   * positive finite duration fails with `InvalidTimerDelay` and sends nothing.
   */
  readonly ask: <A = unknown, Msg = any>(
    kind: Grain<Msg, any, any, any>,
    key: string,
    message: NoInfer<Msg>,
    timeout?: Duration.DurationInput
  ) => Effect.Effect<A | undefined, AskError>
  /** The active timers of an activation (empty when the grain is not active). */
  readonly timers: (
    kind: Grain<any, any, any, any>,
    key: string
  ) => Effect.Effect<ReadonlyArray<TimerInfo>, UnknownGrainKind | InvalidGrainKey>
  /** True while an activation of (kind, key) is active. */
  readonly isActive: (kind: Grain<any, any, any, any>, key: string) => Effect.Effect<boolean>
  /** The number of activations, including those activating or deactivating. */
  readonly activations: Effect.Effect<number>
}

/**
 * The Grains service tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grains } from "tickwork"
 *
 * const count = Effect.flatMap(Grains.Grains, (grains) => grains.activations)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class Grains extends Context.Tag("tickwork/Grains")<Grains, GrainsService>() {}

/**
 * Options of the grain runtime.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The passivation of kinds that do not set their own (default: idle for 15 minutes). */
  readonly passivation?: Passivation.Passivation
}

/** The default passivation, checked; unknown options are errors too (a misspelt one would be ignored). */
const checkOptions = (options: unknown): Either.Either<Passivation.Passivation, InvalidGrainsOptions> => {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return Either.left(
      new InvalidGrainsOptions({
        option: "options",
        reason: `must be an object such as { passivation: Passivation.never }, got ${describeValue(options)}`
      })
    )
  }
  for (const key of Object.keys(options)) {
    if (key !== "passivation") {
      return Either.left(new InvalidGrainsOptions({ option: key, reason: "is not a Grains option (passivation)" }))
    }
  }
  const passivation = (options as Options).passivation
  if (passivation === undefined) return Either.right(Passivation.defaultStrategy)
  const problem = passivationProblem(passivation)
  return problem === undefined
    ? Either.right(passivation)
    : Either.left(new InvalidGrainsOptions({ option: "passivation", reason: problem }))
}

type KindRequirements<Kinds extends ReadonlyArray<Grain<any, any, any, any>>> =
  Kinds[number] extends Grain<any, any, any, infer R> ? R : never

/**
 * Registers grain kinds on the current `ActorSystem`. The kinds and options are checked first: a kind the layer cannot
 * run (a duplicate or empty name, a handler that is not a function, an unusable passivation or mailbox capacity)
 * fails the layer with `Grain.InvalidGrainKind`, a bad option with `InvalidGrainsOptions`. A kind name has one kind
 * per system: a kind another `Grains` layer of the system registered (the same `Grain.make` value) runs in that layer's
 * activations, so both layers reach the same grains; another kind under that name is an `InvalidGrainKind` (`name`).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem, Grain, Grains, Passivation } from "tickwork"
 *
 * const Echo = Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message) })
 *
 * const GrainsLive = Grains.layer([Echo], { passivation: Passivation.idle("1 minute") }).pipe(
 *   Layer.provideMerge(ActorSystem.layer({ name: "app" }))
 * )
 *
 * const program = Grains.ask<string>(Echo, "a", "hello").pipe(Effect.provide(GrainsLive))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const Kinds extends ReadonlyArray<Grain<any, any, any, any>>>(
  kinds: Kinds,
  options: Options = {}
): Layer.Layer<Grains, InvalidGrainKind | InvalidGrainsOptions, ActorSystem | KindRequirements<Kinds>> =>
  Layer.scoped(
    Grains,
    Effect.gen(function* () {
      if (!Array.isArray(kinds)) {
        return yield* new InvalidGrainsOptions({
          option: "kinds",
          reason: `must be an array of grain kinds, got ${describeValue(kinds)}`
        })
      }
      const byName = yield* resolveKinds(kinds)
      const passivation = yield* checkOptions(options)
      const system = yield* ActorSystem
      const runtime = yield* Effect.runtime<KindRequirements<Kinds>>()
      const own = new GrainRegistry(system, runtime as never, byName, passivation)
      // a kind another layer of this system registered runs in that layer's registry (one kind per name and system)
      const routes = yield* holdKinds(system, byName, own)
      const registryOf = (kind: Grain<any, any, any, any>): GrainRegistry => routes.get(kind?.name) ?? own
      const service: GrainsService = {
        tell: (kind, key, message) => {
          const invalid = keyProblem(kind, key)
          return invalid === undefined ? registryOf(kind).tell(kind, key, message) : Effect.fail(invalid)
        },
        ask: <A, Msg>(kind: Grain<Msg, any, any, any>, key: string, message: Msg, timeout?: Duration.DurationInput) =>
          Either.match(askTimeoutMillis(timeout, 5_000), {
            onLeft: (error): Effect.Effect<A | undefined, AskError> => Effect.fail(error),
            onRight: (timeoutMillis) => {
              const invalid = keyProblem(kind, key)
              if (invalid !== undefined) return Effect.fail(invalid)
              return registryOf(kind)
                .ask(kind, key, message)
                .pipe(
                  Effect.timeoutFail({
                    duration: Duration.millis(timeoutMillis),
                    onTimeout: () => new AskTimeout({ recipient: `grain ${kind.name}/${key}`, timeoutMillis })
                  })
                ) as Effect.Effect<A | undefined, AskError>
            }
          }),
        timers: (kind, key) => {
          const invalid = keyProblem(kind, key)
          return invalid === undefined ? registryOf(kind).timersOf(kind, key) : Effect.fail(invalid)
        },
        isActive: (kind, key) => Effect.sync(() => registryOf(kind).isActive(kind, key)),
        activations: Effect.sync(() => own.size)
      }
      registerService(service, own)
      return service
    })
  )

/**
 * Tells a grain through the `Grains` service in context.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain, Grains } from "tickwork"
 *
 * const Counter = Grain.make<"inc">()({
 *   name: "counter",
 *   onActivate: () => Effect.succeed(0),
 *   onReceive: (_ctx, n) => Effect.succeed(n + 1)
 * })
 * const program = Grains.tell(Counter, "c-1", "inc")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const tell = <Msg>(
  kind: Grain<Msg, any, any, any>,
  key: string,
  message: NoInfer<Msg>
): Effect.Effect<void, UnknownGrainKind | InvalidGrainKey, Grains> =>
  Effect.flatMap(Grains, (grains) => grains.tell(kind, key, message))

/**
 * Asks a grain through the `Grains` service in context.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain, Grains } from "tickwork"
 *
 * const Echo = Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message) })
 * const program = Grains.ask<string>(Echo, "a", "hello", "1 second")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const ask = <A = unknown, Msg = any>(
  kind: Grain<Msg, any, any, any>,
  key: string,
  message: NoInfer<Msg>,
  timeout?: Duration.DurationInput
): Effect.Effect<A | undefined, AskError, Grains> =>
  Effect.flatMap(Grains, (grains) => grains.ask<A, Msg>(kind, key, message, timeout))
