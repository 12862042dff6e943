/**
 * Actors defined as data plus Effect handlers: no base classes.
 *
 * An actor's state lives in the value its handlers return. `preStart` builds the state of an incarnation, `receive`
 * maps (message, state) to the next state, `postStop` and the restart hooks clean up. Everything runs on the actor's
 * one fiber, one message at a time.
 *
 * @since 0.1.0
 */
import type * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import type { ActorRef } from "./ActorRef.js"
import type { ActorSystemService, SpawnError } from "./ActorSystem.js"
import type { SupervisorStrategy } from "./Supervision.js"
import type { InvalidTimerDelay } from "./TimerError.js"
import type { TimerScheduler } from "./Timers.js"

/**
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/Actor")

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * What an actor sees while it runs. Every member is a property that works on its own, so destructuring is safe
 * (`const { spawn, timers } = ctx`): an operation with arguments is a function returning an `Effect`, one without is
 * the `Effect` itself (`cancelReceiveTimeout`). `sender` is read when it is read: take it while handling the message.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActorContext<Msg> {
  readonly self: ActorRef<Msg>
  readonly path: string
  readonly system: ActorSystemService
  /** The parent, or undefined for a top-level actor. */
  readonly parent: ActorRef<never> | undefined
  /** The sender of the message being handled, when it gave one. */
  readonly sender: ActorRef<any> | undefined
  /** This incarnation's keyed timers. */
  readonly timers: TimerScheduler<Msg>
  /** The live children. */
  readonly children: ReadonlyArray<ActorRef<never>>
  /** Spawns a child supervised by this actor; the name is generated when omitted. */
  readonly spawn: <M, S, E, R>(actor: Actor<M, S, E, R>, name?: string) => Effect.Effect<ActorRef<M>, SpawnError, R>
  /** Stops a child (or this actor) after the message being handled; waits when it is another actor. */
  readonly stop: (ref: ActorRef<never>) => Effect.Effect<void>
  /**
   * Sends `message` to self after `timeout` without user messages, and again after each further `timeout` of
   * silence. Ticks (timers, scheduler messages) and the timeout message itself do not count as activity.
   */
  readonly setReceiveTimeout: (timeout: Duration.DurationInput, message: Msg) => Effect.Effect<void, InvalidTimerDelay>
  readonly cancelReceiveTimeout: Effect.Effect<void>
}

/**
 * An actor definition: the handlers of one kind of actor. Spawn it with `ActorSystem.spawn` or `context.spawn`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Actor<in out Msg, in out S = void, out E = never, out R = never> extends Pipeable {
  readonly [TypeId]: TypeId
  readonly preStart: (context: ActorContext<Msg>) => Effect.Effect<S, E, R>
  readonly receive: (message: Msg, context: ActorContext<Msg>, state: S) => Effect.Effect<S, E, R>
  readonly postStop: (context: ActorContext<Msg>, state: S) => Effect.Effect<void, never, R>
  readonly preRestart: (
    context: ActorContext<Msg>,
    state: S,
    cause: Cause.Cause<unknown>
  ) => Effect.Effect<void, never, R>
  readonly postRestart: (
    context: ActorContext<Msg>,
    state: S,
    cause: Cause.Cause<unknown>
  ) => Effect.Effect<void, never, R>
  /** How this actor supervises its children. */
  readonly supervisorStrategy: SupervisorStrategy | undefined
  /** Bounded mailbox capacity, or undefined for the system default. */
  readonly mailboxCapacity: number | undefined
}

/**
 * The handlers `make` accepts; only `receive` is required.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handlers<Msg, S, E, R> {
  /** Builds the state of a new incarnation (start and every restart). A failure here stops the actor. */
  readonly preStart?: (context: ActorContext<Msg>) => Effect.Effect<S, E, R>
  readonly receive: (message: Msg, context: ActorContext<Msg>, state: S) => Effect.Effect<S, E, R>
  readonly postStop?: (context: ActorContext<Msg>, state: S) => Effect.Effect<void, never, R>
  /** Runs on the failed incarnation before a restart; by default it runs `postStop`. */
  readonly preRestart?: (
    context: ActorContext<Msg>,
    state: S,
    cause: Cause.Cause<unknown>
  ) => Effect.Effect<void, never, R>
  /** Runs on the new incarnation after its `preStart`. */
  readonly postRestart?: (
    context: ActorContext<Msg>,
    state: S,
    cause: Cause.Cause<unknown>
  ) => Effect.Effect<void, never, R>
  readonly supervisorStrategy?: SupervisorStrategy
  readonly mailboxCapacity?: number
}

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }
}

const noStop = () => Effect.void

/**
 * Defines an actor. Give the message type first, then the handlers; the state type is inferred from `preStart`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorRef } from "tickwork"
 *
 * type Msg = { readonly _tag: "Add"; readonly n: number } | { readonly _tag: "Get"; readonly replyTo: ActorRef.ActorRef<number> }
 *
 * const Counter = Actor.make<Msg>()({
 *   preStart: () => Effect.succeed(0),
 *   receive: (msg, _ctx, count) =>
 *     msg._tag === "Add" ? Effect.succeed(count + msg.n) : Effect.as(msg.replyTo.tell(count), count)
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make =
  <Msg>() =>
  <S = void, E = never, R = never>(handlers: Handlers<Msg, S, E, R>): Actor<Msg, S, E, R> => {
    const postStop = handlers.postStop ?? noStop
    const self: Actor<Msg, S, E, R> = Object.assign(Object.create(Proto), {
      preStart: handlers.preStart ?? (() => Effect.void as Effect.Effect<any>),
      receive: handlers.receive,
      postStop,
      preRestart: handlers.preRestart ?? ((ctx: ActorContext<Msg>, state: S) => postStop(ctx, state)),
      postRestart: handlers.postRestart ?? noStop,
      supervisorStrategy: handlers.supervisorStrategy,
      mailboxCapacity: handlers.mailboxCapacity
    })
    return self
  }

/**
 * True for an actor definition.
 *
 * @example
 * ```ts
 * import { Actor } from "tickwork"
 *
 * console.log(Actor.isActor({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isActor = (u: unknown): u is Actor<unknown, unknown, unknown, unknown> => Predicate.hasProperty(u, TypeId)

/**
 * Gives the actor a bounded mailbox. A user message told to a full mailbox is not queued: it is published as a
 * `DeadLetter` with reason `"mailbox-full"` (and `ask` fails at once with `AskUndeliverable`); the sender never
 * blocks. A timer tick on a full mailbox is dropped, logged and counted, and its timer keeps firing. `Infinity` makes
 * the mailbox unbounded even when the system sets a default capacity. A capacity that is not a positive integer (or
 * `Infinity`) fails the spawn of this actor with `ActorSystem.InvalidActorDefinition`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor } from "tickwork"
 *
 * const Worker = Actor.make<string>()({ receive: (job) => Effect.logInfo(job) }).pipe(Actor.withMailboxCapacity(100))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const withMailboxCapacity: {
  (capacity: number): <Msg, S, E, R>(self: Actor<Msg, S, E, R>) => Actor<Msg, S, E, R>
  <Msg, S, E, R>(self: Actor<Msg, S, E, R>, capacity: number): Actor<Msg, S, E, R>
} = dual(
  2,
  <Msg, S, E, R>(self: Actor<Msg, S, E, R>, capacity: number): Actor<Msg, S, E, R> =>
    Object.assign(Object.create(Proto), self, { mailboxCapacity: capacity })
)

/**
 * Sets how the actor supervises its children.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, Supervision } from "tickwork"
 *
 * const Parent = Actor.make<string>()({ receive: () => Effect.void }).pipe(
 *   Actor.withSupervisorStrategy(Supervision.restart({ maxRestarts: 3, within: "1 minute" }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const withSupervisorStrategy: {
  (strategy: SupervisorStrategy): <Msg, S, E, R>(self: Actor<Msg, S, E, R>) => Actor<Msg, S, E, R>
  <Msg, S, E, R>(self: Actor<Msg, S, E, R>, strategy: SupervisorStrategy): Actor<Msg, S, E, R>
} = dual(
  2,
  <Msg, S, E, R>(self: Actor<Msg, S, E, R>, strategy: SupervisorStrategy): Actor<Msg, S, E, R> =>
    Object.assign(Object.create(Proto), self, { supervisorStrategy: strategy })
)
