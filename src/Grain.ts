/**
 * Grains: virtual actors. A grain kind is defined by `onActivate`, `onReceive` and `onDeactivate`; a grain is
 * identified by (kind, key). Telling a grain by identity activates it on demand, and exactly one activation per
 * identity exists in the system. An idle grain is passivated (deactivated) by its kind's `Passivation` strategy; a
 * message arriving while the grain deactivates waits for the next activation, so nothing is lost.
 *
 * The grain's state is what `onActivate` returns and `onReceive` maps to the next state, as with `Actor`. Grain
 * timers (`GrainTimers`) are available on both the context and the props.
 *
 * @since 0.1.0
 */
import type * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import type { ActorRef } from "./ActorRef.js"
import type { GrainTimers } from "./GrainTimers.js"
import type { Passivation } from "./Passivation.js"

/**
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/Grain")

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A grain's identity.
 *
 * @since 0.1.0
 * @category models
 */
export interface GrainIdentity {
  readonly kind: string
  readonly key: string
}

/**
 * What a grain sees in `onActivate` and `onDeactivate`. Its operations are methods: call them on the object
 * (`props.schedule(...)`), not detached.
 *
 * @since 0.1.0
 * @category models
 */
export interface GrainProps<Msg> extends GrainTimers<Msg> {
  readonly identity: GrainIdentity
  /** Tells another grain (activating it if needed). */
  readonly tellGrain: <M>(
    kind: Grain<M, any, any, any>,
    key: string,
    message: NoInfer<M>
  ) => Effect.Effect<void, UnknownGrainKind | InvalidGrainKey>
  /** Tells an actor. */
  readonly tellActor: <M>(actor: ActorRef<M>, message: NoInfer<M>) => Effect.Effect<void>
}

/**
 * What a grain sees in `onReceive`: the message and the reply signals. Signal at most once per message (a second
 * signal is a defect); a message handled without a signal counts as `noErr`. On a tell or a timer tick there is no
 * one to answer: `err` and `unhandled` are logged as warnings.
 *
 * @since 0.1.0
 * @category models
 */
export interface GrainContext<Msg> extends GrainProps<Msg> {
  readonly message: Msg
  /** True when the message is a timer tick. */
  readonly isTick: boolean
  /** Answers an `ask` with `value`. */
  readonly reply: (value: unknown) => Effect.Effect<void>
  /** Signals success without a value. */
  readonly noErr: Effect.Effect<void>
  /** Signals a failure: `ask` fails with `GrainReplyError` carrying `error`. */
  readonly err: (error: unknown) => Effect.Effect<void>
  /** Signals that the grain does not handle this message: `ask` fails with `GrainMessageUnhandled`. */
  readonly unhandled: Effect.Effect<void>
}

/**
 * A grain kind.
 *
 * @since 0.1.0
 * @category models
 */
export interface Grain<in out Msg, in out S = void, out E = never, out R = never> extends Pipeable {
  readonly [TypeId]: TypeId
  /** The kind's name, unique within a `Grains` layer. */
  readonly name: string
  readonly onActivate: (props: GrainProps<Msg>) => Effect.Effect<S, E, R>
  readonly onReceive: (context: GrainContext<Msg>, state: S) => Effect.Effect<S, E, R>
  readonly onDeactivate: (props: GrainProps<Msg>, state: S) => Effect.Effect<void, never, R>
  /** Overrides the layer's default passivation for this kind. */
  readonly passivation: Passivation | undefined
  readonly mailboxCapacity: number | undefined
}

/**
 * The handlers `make` accepts; only `name` and `onReceive` are required.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handlers<Msg, S, E, R> {
  readonly name: string
  readonly onActivate?: (props: GrainProps<Msg>) => Effect.Effect<S, E, R>
  readonly onReceive: (context: GrainContext<Msg>, state: S) => Effect.Effect<S, E, R>
  readonly onDeactivate?: (props: GrainProps<Msg>, state: S) => Effect.Effect<void, never, R>
  readonly passivation?: Passivation
  /** A bounded mailbox: a tick on a full mailbox is dropped (logged, counted); the timer keeps firing. */
  readonly mailboxCapacity?: number
}

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }
}

/**
 * Defines a grain kind: give the message type, then the handlers. The state type is inferred from `onActivate`. A
 * data constructor: it never throws. `Grains.layer` checks the kind (a non-empty name, handlers that are functions, a
 * usable passivation, a mailbox capacity that is a whole number >= 1) and fails with `InvalidGrainKind` otherwise.
 *
 * @example
 * ```ts
 * import { Clock, Effect } from "effect"
 * import { Grain } from "tickwork"
 *
 * type DeviceMsg = { readonly _tag: "Ping" } | { readonly _tag: "CheckLiveness" }
 *
 * const Device = Grain.make<DeviceMsg>()({
 *   name: "device",
 *   onActivate: (props) =>
 *     Effect.zipRight(
 *       Effect.orDie(props.schedule({ _tag: "CheckLiveness" }, "30 seconds")),
 *       Clock.currentTimeMillis
 *     ),
 *   onReceive: (ctx, lastSeen) =>
 *     ctx.message._tag === "Ping"
 *       ? Clock.currentTimeMillis
 *       : Effect.as(Effect.logInfo(`last seen at ${lastSeen}`), lastSeen)
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make =
  <Msg>() =>
  <S = void, E = never, R = never>(handlers: Handlers<Msg, S, E, R>): Grain<Msg, S, E, R> => {
    // a JavaScript caller may pass nothing: `Grains.layer` then reports the missing name
    const given: Partial<Handlers<Msg, S, E, R>> = handlers ?? {}
    return Object.assign(Object.create(Proto), {
      name: given.name,
      onActivate: given.onActivate ?? ((() => Effect.void) as never),
      onReceive: given.onReceive,
      onDeactivate: given.onDeactivate ?? (() => Effect.void),
      passivation: given.passivation,
      mailboxCapacity: given.mailboxCapacity
    })
  }

/**
 * True for a grain kind.
 *
 * @example
 * ```ts
 * import { Grain } from "tickwork"
 *
 * console.log(Grain.isGrain({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isGrain = (u: unknown): u is Grain<unknown, unknown, unknown, unknown> => Predicate.hasProperty(u, TypeId)

/**
 * The grain kind is not registered in the `Grains` layer. From inside a cluster grain, `tellGrain` fails with it too
 * when the kind is not a cluster grain or no runner can take the message; `detail` then says which.
 *
 * @example
 * ```ts
 * import { Grain } from "tickwork"
 *
 * console.log(new Grain.UnknownGrainKind({ kind: "device" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownGrainKind extends Data.TaggedError("UnknownGrainKind")<{
  readonly kind: string
  /** Why the kind cannot be reached, when it is not simply missing from the `Grains` layer. */
  readonly detail?: string
}> {
  override get message(): string {
    return this.detail === undefined
      ? `grain kind "${this.kind}" is not registered in the Grains layer`
      : `grain kind "${this.kind}" cannot be reached: ${this.detail}`
  }
}

/**
 * `Grains.layer` was given a kind it cannot run: not made by `Grain.make`, an empty or blank name, a name given twice,
 * a name another `Grains` layer of the system registered for another kind (one kind per name and system), a handler that is not a function, an unusable passivation (`Passivation.idle("soon")`, `messageCount(0)`), or a
 * mailbox capacity that is not a whole number >= 1. `field` names what is wrong; the layer fails and starts nothing.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem, Grain, Grains, Passivation } from "tickwork"
 *
 * const Echo = Grain.make<string>()({
 *   name: "echo",
 *   passivation: Passivation.messageCount(0),
 *   onReceive: (ctx) => ctx.reply(ctx.message)
 * })
 *
 * const program = Grains.ask(Echo, "a", "hello").pipe(
 *   Effect.provide(Grains.layer([Echo]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "app" })))),
 *   // "invalid grain kind echo (passivation): the message count must be a whole number >= 1, got 0"
 *   Effect.catchTag("InvalidGrainKind", (error) => Effect.logError(error.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidGrainKind extends Data.TaggedError("InvalidGrainKind")<{
  /** The kind's name, as given. */
  readonly kind: string
  /** What is wrong: `kind`, `name`, `onActivate`, `onReceive`, `onDeactivate`, `passivation` or `mailboxCapacity`. */
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid grain kind ${this.kind} (${this.field}): ${this.reason}`
  }
}

/**
 * A grain was addressed with a key that is not a non-empty string (an id that was `undefined`, a number, `""`).
 * Nothing is sent and no grain is activated: a key is never converted.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain, Grains } from "tickwork"
 *
 * const Device = Grain.make<"ping">()({ name: "device", onReceive: () => Effect.void })
 * const ids = new Map<string, string>()
 *
 * const ping = (user: string) =>
 *   Grains.tell(Device, ids.get(user)!, "ping").pipe(
 *     Effect.catchTag("InvalidGrainKey", (error) => Effect.logWarning(error.message))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidGrainKey extends Data.TaggedError("InvalidGrainKey")<{
  readonly kind: string
  /** The key as given, shown as text. */
  readonly key: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid key ${this.key} for grain kind ${this.kind}: ${this.reason}`
  }
}

/**
 * `onActivate` failed (error or defect): no activation exists and no timer runs; messages that waited for the
 * activation fail with this error (asks) or become dead letters (tells).
 *
 * @example
 * ```ts
 * import { Cause } from "effect"
 * import { Grain } from "tickwork"
 *
 * console.log(new Grain.GrainActivationFailed({ grain: "device/1", cause: Cause.fail("no db") }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class GrainActivationFailed extends Data.TaggedError("GrainActivationFailed")<{
  readonly grain: string
  readonly cause: Cause.Cause<unknown>
}> {
  override get message(): string {
    return `activation of grain ${this.grain} failed`
  }
}

/**
 * `onReceive` failed while handling an asked message; the grain was deactivated.
 *
 * @example
 * ```ts
 * import { Cause } from "effect"
 * import { Grain } from "tickwork"
 *
 * console.log(new Grain.GrainFailed({ grain: "device/1", cause: Cause.die("bug") }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class GrainFailed extends Data.TaggedError("GrainFailed")<{
  readonly grain: string
  readonly cause: Cause.Cause<unknown>
}> {
  override get message(): string {
    return `grain ${this.grain} failed while handling the message and was deactivated`
  }
}

/**
 * The grain answered an `ask` with `ctx.err(error)`.
 *
 * @example
 * ```ts
 * import { Grain } from "tickwork"
 *
 * console.log(new Grain.GrainReplyError({ grain: "order/7", error: "out of stock" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class GrainReplyError extends Data.TaggedError("GrainReplyError")<{
  readonly grain: string
  readonly error: unknown
}> {
  override get message(): string {
    return `grain ${this.grain} replied with an error`
  }
}

/**
 * The grain answered an `ask` with `ctx.unhandled`.
 *
 * @example
 * ```ts
 * import { Grain } from "tickwork"
 *
 * console.log(new Grain.GrainMessageUnhandled({ grain: "order/7" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class GrainMessageUnhandled extends Data.TaggedError("GrainMessageUnhandled")<{ readonly grain: string }> {
  override get message(): string {
    return `grain ${this.grain} did not handle the message`
  }
}
