/**
 * The system's publish/subscribe bus. Actors subscribe to an event type; the system publishes `DeadLetter` and
 * `SchedulerError` on it, and user code may publish its own events.
 *
 * A subscription ends with `unsubscribe` or when the subscribed actor stops.
 *
 * @since 0.1.0
 */
import type * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { ActorRef } from "./ActorRef.js"

/**
 * A message that could not be delivered: its recipient had stopped, or its bounded mailbox was full.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem, EventStream } from "tickwork"
 *
 * const DeadLetterLogger = Actor.make<EventStream.DeadLetter>()({
 *   receive: (letter) => Effect.logWarning(`undeliverable to ${letter.recipient}: ${letter.reason}`)
 * })
 *
 * const watchDeadLetters = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   const logger = yield* system.spawn(DeadLetterLogger, "dead-letter-logger")
 *   yield* system.eventStream.subscribe(logger, EventStream.DeadLetter)
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class DeadLetter extends Data.TaggedClass("DeadLetter")<{
  readonly message: unknown
  readonly sender: ActorRef<any> | undefined
  /** The recipient's path. */
  readonly recipient: string
  readonly reason: "stopped" | "mailbox-full"
}> {}

/**
 * A system-scheduler entry failed: a function task failed (typed error or defect), or delivering a scheduled message
 * threw (a custom `ActorRef` whose `unsafeTell` throws). It is also logged at error level; a repeating schedule keeps
 * its schedule. A message handler's failure is never published here: the target's supervision owns it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor, ActorSystem, EventStream } from "tickwork"
 *
 * const SchedulerAlarm = Actor.make<EventStream.SchedulerError>()({
 *   receive: (event) => Effect.logError("a scheduled task failed", event.cause)
 * })
 *
 * const alarm = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   const ref = yield* system.spawn(SchedulerAlarm, "scheduler-alarm")
 *   yield* system.eventStream.subscribe(ref, EventStream.SchedulerError)
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class SchedulerError extends Data.TaggedClass("SchedulerError")<{
  readonly cause: Cause.Cause<unknown>
  /** The schedule's reference, when it was made under one. */
  readonly reference?: string | undefined
  /** The path of a message schedule's target. */
  readonly target?: string | undefined
}> {}

/**
 * `subscribe` was given something that cannot subscribe: a subscriber that is not an `ActorRef`, or a classifier that
 * is neither a class nor an object with an `is` function.
 *
 * @example
 * ```ts
 * import { EventStream } from "tickwork"
 *
 * console.log(new EventStream.InvalidSubscription({ reason: "the classifier must be a class" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSubscription extends Data.TaggedError("InvalidSubscription")<{ readonly reason: string }> {
  override get message(): string {
    return `invalid event stream subscription: ${this.reason}`
  }
}

/**
 * What a subscription selects: a class (matched with `instanceof`) or a refinement.
 *
 * @since 0.1.0
 * @category models
 */
export type Classifier<A> = (abstract new (...args: any) => A) | { readonly is: (u: unknown) => u is A }

/**
 * The bus.
 *
 * @since 0.1.0
 * @category models
 */
export interface EventStream {
  /**
   * Delivers every published event matching `classifier` to `subscriber`. Subscribing twice is idempotent. A
   * subscriber that is not an `ActorRef`, or a classifier that is neither a class nor an object with an `is` function,
   * fails with `InvalidSubscription`. A subscriber or classifier that throws while an event is published misses that
   * event (the throw is logged at error level); the other subscribers and the publisher are not affected.
   */
  readonly subscribe: <A>(
    subscriber: ActorRef<A>,
    classifier: Classifier<A>
  ) => Effect.Effect<void, InvalidSubscription>
  /** Ends one subscription, or all of `subscriber`'s when no classifier is given. */
  readonly unsubscribe: (subscriber: ActorRef<any>, classifier?: Classifier<unknown>) => Effect.Effect<void>
  /** Publishes `event` to every matching subscriber. */
  readonly publish: (event: unknown) => Effect.Effect<void>
}
