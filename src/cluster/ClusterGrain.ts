/**
 * Grains on the cluster: a tickwork `Grain` kind becomes an `@effect/cluster` entity whose messages, replies and
 * errors are Schema-typed, so they cross processes. The cluster places each grain identity (kind, key) on exactly
 * one runner at a time; that runner hosts one local activation of the grain, run by the same grain runtime as in a
 * single process. So:
 *
 * - exactly one activation per identity across all runners (the cluster's shard ownership gives that);
 * - passivation by idle time: the entity's `maxIdleTime` (from `options.maxIdleTime`, else the kind's
 *   `Passivation.idle` timeout, else the cluster's `entityMaxIdleTime`). A keep-alive grain timer holds it off
 *   (`Entity.keepAlive`); `Passivation.never` disables it; `Passivation.messageCount` still deactivates locally;
 * - grain timers are the single-process ones: activation-scoped and volatile, dormant until the activation
 *   completes, stopped on passivation, gone on reactivation, never reactivating a grain. For durable timers use
 *   `Reminders`;
 * - `tellGrain` from inside a cluster grain routes through the cluster.
 *
 * A runner needs `Sharding` (from a cluster runner layer) and an `ActorSystem` (the local grain runtime).
 *
 * @since 0.1.0
 */
import type * as Entity from "@effect/cluster/Entity"
import type { Sharding } from "@effect/cluster/Sharding"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { AskTimeout, type AskUndeliverable, AskUndeliverable as AskUndeliverableError } from "../ActorRef.js"
import type { ActorSystem } from "../ActorSystem.js"
import {
  type Grain,
  GrainActivationFailed,
  GrainFailed,
  GrainMessageUnhandled,
  GrainReplyError,
  InvalidGrainKind
} from "../Grain.js"
import { askTimeoutMillis } from "../internal/askTimeout.js"
import { passivationProblem } from "../internal/grain.js"
import type { InvalidTimerDelay } from "../TimerError.js"
import * as host from "./internal/grainHost.js"
import * as internal from "./internal/grainProtocol.js"

/**
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/cluster/ClusterGrain")

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A grain kind on the cluster: the grain, its schemas and the entity it became.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClusterGrain<in out Msg, in out A = void, in out E = unknown, out R = never> extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  /** The grain kind; its state type is its own (`any`: the cluster never sees it). */
  readonly grain: Grain<Msg, any, unknown, R>
  /** The message schema as the wire uses it: the encoded side is JSON, checked by the schema given to `make`. */
  readonly message: Schema.Schema<Msg, unknown>
  /** The reply schema; without one, an ask succeeds with undefined (the grain's reply value is not sent). */
  readonly reply: Schema.Schema<A, unknown> | undefined
  readonly error: Schema.Schema<E, unknown>
  /** The entity's idle time before passivation; undefined: the cluster's `entityMaxIdleTime`. */
  readonly maxIdleTime: Duration.Duration | undefined
  readonly persisted: boolean
  /** The entity the kind became: tell, ask, touch and reminder delivery, typed by `Msg`, `A` and `E`. */
  readonly entity: Entity.Entity<string, GrainRpcs<Msg, A, E>>
}

/**
 * The entity protocol a cluster grain kind becomes: `Tell` and `Ask` carry a `Msg`, `Ask` succeeds with an `A` (or
 * undefined) and fails with the kind's wire failure (its `E` for `ctx.err`), `Touch` refreshes the entity's idle time,
 * `Remind` delivers a reminder occurrence. A kind's `entity.client` is typed by it.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * const Echo = ClusterGrain.make(
 *   Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message) }),
 *   { message: Schema.String, reply: Schema.String }
 * )
 * // the entity's own client, typed by the protocol: Ask takes a string and succeeds with string | undefined
 * const raw = Effect.flatMap(Echo.entity.client, (client) => client("e-1").Ask({ message: "hi" }))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type GrainRpcs<Msg, A, E> = internal.GrainRpcs<Msg, A, E>

/**
 * Any cluster grain kind, each with its own types: what `layer` takes.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = ClusterGrain<any, any, any, any>

/**
 * Options of `make`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Msg, MI, A, AI, E, EI> {
  /** The message schema; its encoded form must be JSON. */
  readonly message: Schema.Schema<Msg, MI>
  /** The schema of `ctx.reply(value)` values; without it an ask succeeds with undefined. */
  readonly reply?: Schema.Schema<A, AI>
  /** The schema of `ctx.err(error)` values (default: `Schema.Defect`, errors travel as name and message). */
  readonly error?: Schema.Schema<E, EI>
  /** Idle time before passivation; overrides the kind's `Passivation.idle`. "Infinity" never passivates. */
  readonly maxIdleTime?: Duration.DurationInput
  /**
   * Persist tells and asks in the cluster's message storage (delivered at least once, across restarts) instead of
   * sending them straight to the owning runner (default: false).
   */
  readonly persisted?: boolean
}

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }
}

/** Why a kind made by `make` cannot be hosted (an unusable `maxIdleTime` or passivation); `layer` fails with it. */
const problems = new WeakMap<host.AnyHostedKind, InvalidGrainKind>()

/** The entity's idle time: `maxIdleTime`, else the kind's `Passivation.idle` timeout (or never), checked. */
const idleTimeOf = (
  grain: Grain<any, any, unknown, unknown>,
  maxIdleTime: Duration.DurationInput | undefined
): Either.Either<Duration.Duration | undefined, InvalidGrainKind> => {
  const invalid = (field: string, reason: string) =>
    Either.left(new InvalidGrainKind({ kind: grain.name, field, reason }))
  if (maxIdleTime !== undefined) {
    const decoded = Duration.decodeUnknown(maxIdleTime)
    if (decoded._tag === "None" || !(Duration.toMillis(decoded.value) > 0)) {
      return invalid(
        "maxIdleTime",
        `must be a positive duration ("Infinity" never passivates), got ${JSON.stringify(String(maxIdleTime))}`
      )
    }
    return Either.right(decoded.value)
  }
  if (grain.passivation === undefined) return Either.right(undefined)
  const problem = passivationProblem(grain.passivation)
  if (problem !== undefined) return invalid("passivation", problem)
  switch (grain.passivation._tag) {
    case "Idle":
      return Either.right(Duration.millis(grain.passivation.timeoutMillis))
    case "Never":
      return Either.right(Duration.infinity)
    case "MessageCount":
      return Either.right(undefined)
  }
}

const makeKind = <Msg, A, E, R>(
  grain: Grain<Msg, any, unknown, R>,
  message: Schema.Schema<Msg, unknown>,
  reply: Schema.Schema<A, unknown> | undefined,
  error: Schema.Schema<E, unknown>,
  options: { readonly maxIdleTime?: Duration.DurationInput; readonly persisted?: boolean }
): ClusterGrain<Msg, A, E, R> => {
  if (internal.kindsByGrain.has(grain)) throw new RangeError(`grain kind "${grain.name}" is already a cluster grain`)
  const idle = idleTimeOf(grain, options.maxIdleTime)
  const persisted = options.persisted ?? false
  const self: ClusterGrain<Msg, A, E, R> = Object.assign(Object.create(Proto), {
    name: grain.name,
    grain,
    message,
    reply,
    error,
    maxIdleTime: Either.getOrUndefined(idle),
    persisted,
    entity: internal.makeEntity(grain.name, message, reply, error, persisted)
  })
  if (Either.isLeft(idle)) problems.set(self, idle.left)
  internal.kindsByGrain.set(grain, self)
  return self
}

/**
 * Makes a grain kind a cluster grain. The entity type is the kind's name. A grain kind can be made a cluster grain
 * once (a second call throws); `tellGrain(kind, ...)` inside cluster grains finds it by the `Grain` value. Without an
 * `error` schema, `ctx.err` values travel as `Schema.Defect` (name and message) and `E` is `unknown`.
 *
 * An unusable `maxIdleTime` (zero, negative, not a duration) or kind passivation (`Passivation.idle("soon")`) is
 * checked as `Grains.layer` checks local kinds: `ClusterGrain.layer` with this kind fails with
 * `Grain.InvalidGrainKind` (field `maxIdleTime` or `passivation`) and hosts nothing.
 *
 * @example
 * ```ts
 * import { Clock, Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * const DeviceMsg = Schema.Union(
 *   Schema.TaggedStruct("Ping", {}),
 *   Schema.TaggedStruct("LastSeen", {})
 * )
 *
 * const Device = Grain.make<typeof DeviceMsg.Type>()({
 *   name: "device",
 *   onActivate: () => Clock.currentTimeMillis,
 *   onReceive: (ctx, lastSeen) =>
 *     ctx.message._tag === "Ping" ? Clock.currentTimeMillis : Effect.as(ctx.reply(lastSeen), lastSeen)
 * })
 *
 * const DeviceGrain = ClusterGrain.make(Device, { message: DeviceMsg, reply: Schema.Number, maxIdleTime: "5 minutes" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export function make<Msg, MI, R, A = void, AI = void>(
  grain: Grain<Msg, any, unknown, R>,
  options: Options<Msg, MI, A, AI, unknown, unknown> & { readonly error?: undefined }
): ClusterGrain<Msg, A, unknown, R>
/**
 * Makes a grain kind a cluster grain whose `ctx.err` values are `E`, carried by the `error` schema.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * const Payment = ClusterGrain.make(
 *   Grain.make<number>()({ name: "payment", onReceive: (ctx) => (ctx.message > 0 ? ctx.noErr : ctx.err("refused")) }),
 *   { message: Schema.Number, error: Schema.Literal("refused") }
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export function make<Msg, MI, R, A, AI, E, EI>(
  grain: Grain<Msg, any, unknown, R>,
  options: Options<Msg, MI, A, AI, E, EI> & { readonly error: Schema.Schema<E, EI> }
): ClusterGrain<Msg, A, E, R>
export function make<Msg, MI, R, A, AI, E, EI>(
  grain: Grain<Msg, any, unknown, R>,
  options: Options<Msg, MI, A, AI, E, EI>
): ClusterGrain<Msg, A, E, R> | ClusterGrain<Msg, A, unknown, R> {
  const message = internal.onWire(options.message)
  const reply = options.reply === undefined ? undefined : internal.onWire(options.reply)
  return options.error === undefined
    ? makeKind(grain, message, reply, internal.onWire(Schema.Defect), options)
    : makeKind(grain, message, reply, internal.onWire(options.error), options)
}

/**
 * True for a cluster grain.
 *
 * @example
 * ```ts
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * console.log(ClusterGrain.isClusterGrain({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isClusterGrain = (u: unknown): u is ClusterGrain<unknown, unknown, unknown, unknown> =>
  Predicate.hasProperty(u, TypeId)

/**
 * The message cannot reach its grain: the runner that owns the grain's shard has no `ClusterGrain.layer`
 * registering the kind (checked on the sending runner, no wait), or reminders were used from a grain that no
 * `ClusterGrain.layer` on this runner hosts. A tag of its own: the single-process `Grain.UnknownGrainKind` (a kind
 * missing from a `Grains` layer, and `tellGrain` from inside a cluster grain) has other fields.
 *
 * @example
 * ```ts
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * console.log(new ClusterGrain.UnknownClusterGrainKind({ kind: "device", key: "d-1", detail: "not registered" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const UnknownClusterGrainKind: typeof internal.UnknownClusterGrainKind = internal.UnknownClusterGrainKind

/**
 * @since 0.1.0
 * @category errors
 */
export type UnknownClusterGrainKind = internal.UnknownClusterGrainKind

/**
 * The message does not encode with the kind's message schema (checked before sending), or the hosting runner
 * could not decode it.
 *
 * @example
 * ```ts
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * console.log(new ClusterGrain.InvalidGrainMessage({ grain: "device/d-1", issue: "Expected string" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidGrainMessage: typeof internal.InvalidGrainMessage = internal.InvalidGrainMessage

/**
 * @since 0.1.0
 * @category errors
 */
export type InvalidGrainMessage = internal.InvalidGrainMessage

/**
 * The grain's reply (or `ctx.err` value) does not encode with the kind's reply (or error) schema on the hosting
 * runner, or does not decode on the asking one.
 *
 * @example
 * ```ts
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * console.log(new ClusterGrain.InvalidGrainReply({ grain: "device/d-1", issue: "Expected number" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidGrainReply: typeof internal.InvalidGrainReply = internal.InvalidGrainReply

/**
 * @since 0.1.0
 * @category errors
 */
export type InvalidGrainReply = internal.InvalidGrainReply

/**
 * The cluster did not accept a told message within the send timeout: no runner registers the kind for the
 * grain's shard, or runners or storage are unreachable.
 *
 * @example
 * ```ts
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * console.log(new ClusterGrain.GrainSendTimeout({ grain: "device/d-1", timeoutMillis: 5000 }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const GrainSendTimeout: typeof internal.GrainSendTimeout = internal.GrainSendTimeout

/**
 * @since 0.1.0
 * @category errors
 */
export type GrainSendTimeout = internal.GrainSendTimeout

/**
 * Why handing a message to the cluster failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type SendError = host.ClientError

/**
 * Why an ask to a cluster grain failed: a bad timeout (`InvalidTimerDelay`, nothing sent), a send error, the ask
 * timeout, or what the grain runtime reports (as in a single process: `GrainReplyError` for `ctx.err`,
 * `GrainMessageUnhandled`, `GrainFailed`, `GrainActivationFailed`, `AskUndeliverable`).
 *
 * @since 0.1.0
 * @category errors
 */
export type AskError =
  | SendError
  | InvalidTimerDelay
  | AskTimeout
  | GrainReplyError
  | GrainMessageUnhandled
  | GrainFailed
  | GrainActivationFailed
  | AskUndeliverable

/**
 * Tells grain (kind, key) from anywhere in the cluster, activating it where the cluster places it. Succeeds once
 * the cluster has accepted the message (persisted kinds: once it is stored), bounded by `timeout` (default 5 s).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * const Counter = ClusterGrain.make(
 *   Grain.make<number>()({
 *     name: "counter",
 *     onActivate: () => Effect.succeed(0),
 *     onReceive: (ctx, n) => Effect.succeed(n + ctx.message)
 *   }),
 *   { message: Schema.Number }
 * )
 * const program = ClusterGrain.tell(Counter, "c-1", 5)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const tell = <Msg, A, E>(
  kind: ClusterGrain<Msg, A, E, unknown>,
  key: string,
  message: NoInfer<Msg>,
  options?: { readonly timeout?: Duration.DurationInput }
): Effect.Effect<void, SendError | GrainSendTimeout | InvalidTimerDelay, Sharding> =>
  Either.match(internal.sendTimeoutMillis(options?.timeout), {
    onLeft: (invalid) => Effect.fail(invalid),
    onRight: (timeoutMillis) => host.tell(kind, key, message, timeoutMillis)
  })

/**
 * Asks grain (kind, key) from anywhere in the cluster and waits for its signal: `ctx.reply(value)` succeeds with
 * the value decoded by the reply schema, `noErr` with undefined, `err(e)` fails with `GrainReplyError`. The
 * timeout (default 5 s) does not interrupt the grain's handler.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * const Echo = ClusterGrain.make(
 *   Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message.toUpperCase()) }),
 *   { message: Schema.String, reply: Schema.String }
 * )
 * const program = ClusterGrain.ask(Echo, "e-1", "hello", { timeout: "2 seconds" })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const ask = <Msg, A, E>(
  kind: ClusterGrain<Msg, A, E, unknown>,
  key: string,
  message: NoInfer<Msg>,
  options?: { readonly timeout?: Duration.DurationInput }
): Effect.Effect<A | undefined, AskError, Sharding> => {
  const grain = `${kind.name}/${key}`
  const timeoutMillis = askTimeoutMillis(options?.timeout, internal.timeoutMillisOf(undefined))
  if (Either.isLeft(timeoutMillis)) return Effect.fail(timeoutMillis.left)
  const millis = timeoutMillis.right
  return host
    .ask(kind, key, message, millis, () => new AskTimeout({ recipient: `grain ${grain}`, timeoutMillis: millis }))
    .pipe(
      Effect.mapError((error): AskError => {
        switch (error._tag) {
          case "ReplyError":
            return new GrainReplyError({ grain, error: error.error })
          case "Unhandled":
            return new GrainMessageUnhandled({ grain })
          case "Failed":
            return new GrainFailed({ grain, cause: error.cause })
          case "ActivationFailed":
            return new GrainActivationFailed({ grain, cause: error.cause })
          case "Undeliverable":
            return new AskUndeliverableError({ recipient: `grain ${grain}`, reason: error.reason })
          case "InvalidReply":
            return new internal.InvalidGrainReply({ grain, issue: error.issue })
          default:
            return error
        }
      })
    )
}

type KindRequirements<Kinds extends ReadonlyArray<Any>> =
  Kinds[number] extends ClusterGrain<any, any, any, infer R> ? R : never

/**
 * Hosts cluster grain kinds on this runner: registers each as an entity with `Sharding`, and runs their
 * activations on the `ActorSystem`. Provide the same kinds on every runner of a shard group. If a `Reminders`
 * service is in context, reminders of these kinds are delivered here. The kinds are checked first, as `Grains.layer`
 * checks local ones: a duplicate name, a value not made by `make`, an unusable `maxIdleTime` or kind passivation fails
 * the layer with `Grain.InvalidGrainKind` (its `field` says which) and nothing is hosted.
 *
 * @example
 * ```ts
 * import { TestRunner } from "@effect/cluster"
 * import { Effect, Layer, Schema } from "effect"
 * import { ActorSystem, Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 *
 * const Echo = ClusterGrain.make(
 *   Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message) }),
 *   { message: Schema.String, reply: Schema.String }
 * )
 *
 * const Runner = ClusterGrain.layer([Echo]).pipe(
 *   Layer.provideMerge(TestRunner.layer),
 *   Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
 * )
 * const program = ClusterGrain.ask(Echo, "e-1", "hi").pipe(Effect.provide(Runner))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const Kinds extends ReadonlyArray<Any>>(
  kinds: Kinds
): Layer.Layer<never, InvalidGrainKind, Sharding | ActorSystem | KindRequirements<Kinds>> =>
  host.layer<KindRequirements<Kinds>>(kinds, (kind) => problems.get(kind))
