/**
 * A handle to an actor: the only way to talk to it. Refs are cheap values; a ref to a stopped actor stays valid and
 * routes what it is told to dead letters.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type { Pipeable } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import { askTimeoutMillis } from "./internal/askTimeout.js"
import { currentLogContext } from "./internal/logContext.js"
import { ActorRefTypeId, BaseRef, FunctionRef } from "./internal/refs.js"
import type { InvalidTimerDelay } from "./TimerError.js"

/**
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: typeof ActorRefTypeId = ActorRefTypeId

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A handle to an actor that accepts `Msg`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActorRef<in Msg> extends Pipeable {
  readonly [TypeId]: TypeId
  /** The actor's path, e.g. `/user/orders/order-42`. */
  readonly path: string
  /**
   * Sends fire-and-forget. The sender's log annotations travel with the message. A message to a stopped actor, or to
   * a full bounded mailbox, is published as a `DeadLetter`.
   */
  tell(message: Msg, sender?: ActorRef<any>): Effect.Effect<void>
  /** `tell` without the effect wrapper and without log context, for code outside a fiber. */
  unsafeTell(message: Msg, sender?: ActorRef<any>): void
}

/**
 * True for any ActorRef.
 *
 * @example
 * ```ts
 * import { ActorRef } from "tickwork"
 *
 * console.log(ActorRef.isActorRef({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isActorRef = (u: unknown): u is ActorRef<unknown> => Predicate.hasProperty(u, TypeId)

/**
 * `ask` got no reply in time.
 *
 * @example
 * ```ts
 * import { ActorRef } from "tickwork"
 *
 * const error = new ActorRef.AskTimeout({ recipient: "/user/a", timeoutMillis: 1000 })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class AskTimeout extends Data.TaggedError("AskTimeout")<{
  readonly recipient: string
  readonly timeoutMillis: number
}> {
  override get message(): string {
    return `no reply from ${this.recipient} within ${this.timeoutMillis} ms`
  }
}

/**
 * `ask`'s question could not be delivered: the recipient had stopped or its bounded mailbox was full.
 *
 * @example
 * ```ts
 * import { ActorRef } from "tickwork"
 *
 * const error = new ActorRef.AskUndeliverable({ recipient: "/user/a", reason: "stopped" })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class AskUndeliverable extends Data.TaggedError("AskUndeliverable")<{
  readonly recipient: string
  readonly reason: "stopped" | "mailbox-full"
}> {
  override get message(): string {
    return `could not ask ${this.recipient}: ${this.reason}`
  }
}

/**
 * Sends `message` to `self`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorRef } from "tickwork"
 *
 * const greet = (ref: ActorRef.ActorRef<string>) => ActorRef.tell(ref, "hello")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const tell: {
  <Msg>(message: Msg, sender?: ActorRef<any>): (self: ActorRef<Msg>) => Effect.Effect<void>
  <Msg>(self: ActorRef<Msg>, message: Msg, sender?: ActorRef<any>): Effect.Effect<void>
} = dual(
  (args) => isActorRef(args[0]) && args.length >= 2,
  <Msg>(self: ActorRef<Msg>, message: Msg, sender?: ActorRef<any>): Effect.Effect<void> => self.tell(message, sender)
)

/**
 * Sends the message built by `make` with a reply-to ref and waits for the first reply.
 *
 * Fails with `AskUndeliverable` at once when the question cannot be delivered and with `AskTimeout` when no reply
 * arrives within `timeout` (default: the system's `askTimeout`, 5 seconds unless configured). The time is Effect's
 * `Clock`, so `TestClock` drives it. A `timeout` that is not a duration, not finite, negative or zero fails with
 * `TimerError.InvalidTimerDelay` before the question is sent.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorRef } from "tickwork"
 *
 * type Msg = { readonly _tag: "GetCount"; readonly replyTo: ActorRef.ActorRef<number> }
 *
 * const question = (replyTo: ActorRef.ActorRef<number>): Msg => ({ _tag: "GetCount", replyTo })
 *
 * const count = (counter: ActorRef.ActorRef<Msg>) =>
 *   ActorRef.ask(counter, question, "1 second").pipe(
 *     // a timeout such as "soon", -1 or 0 would fail here, before anything is sent
 *     Effect.catchTag("InvalidTimerDelay", (error) => Effect.dieMessage(error.message))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const ask = <Msg, A>(
  self: ActorRef<Msg>,
  make: (replyTo: ActorRef<A>) => NoInfer<Msg>,
  timeout?: Duration.DurationInput
): Effect.Effect<A, AskTimeout | AskUndeliverable | InvalidTimerDelay> =>
  Effect.gen(function* () {
    const timeoutMillis = yield* askTimeoutMillis(
      timeout,
      self instanceof BaseRef ? self.defaultAskTimeoutMillis : 5_000
    )
    const reply = yield* Deferred.make<A>()
    const replyTo = new FunctionRef<A>(`${self.path}/$ask`, (answer) => {
      Deferred.unsafeDone(reply, Effect.succeed(answer))
      return "delivered"
    })
    if (!(self instanceof BaseRef)) {
      yield* self.tell(make(replyTo))
    } else {
      const delivery = self.deliver(make(replyTo), undefined, yield* currentLogContext)
      if (delivery !== "delivered") return yield* new AskUndeliverable({ recipient: self.path, reason: delivery })
    }
    return yield* Deferred.await(reply).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(timeoutMillis),
        onTimeout: () => new AskTimeout({ recipient: self.path, timeoutMillis })
      })
    )
  })
