import * as Effect from "effect/Effect"
import { pipeArguments } from "effect/Pipeable"
import type { ActorRef } from "../ActorRef.js"
import type { LogContext } from "../LogContext.js"
import { captureFrom } from "./logContext.js"

export const ActorRefTypeId: unique symbol = Symbol.for("tickwork/ActorRef")
export type ActorRefTypeId = typeof ActorRefTypeId

/** How a delivery went; ask turns the failures into typed errors at once. */
export type Delivery = "delivered" | "stopped" | "mailbox-full"

/** The common shape of every ActorRef implementation. */
export abstract class BaseRef<Msg> implements ActorRef<Msg> {
  // On the prototype: a field would cost every ref (every actor) a slot.
  get [ActorRefTypeId](): ActorRefTypeId {
    return ActorRefTypeId
  }
  abstract readonly path: string
  /** Delivers without suspending; `logContext` is the sender's diagnostic context, if any. */
  abstract deliver(message: Msg, sender: ActorRef<any> | undefined, logContext: LogContext | undefined): Delivery
  /** The ask timeout used when the caller gives none. */
  get defaultAskTimeoutMillis(): number {
    return 5_000
  }

  tell(message: Msg, sender?: ActorRef<any>): Effect.Effect<void> {
    return Effect.withFiberRuntime((fiber) => {
      this.deliver(message, sender, captureFrom(fiber))
      return Effect.void
    })
  }

  unsafeTell(message: Msg, sender?: ActorRef<any>): void {
    this.deliver(message, sender, undefined)
  }

  toString(): string {
    return `ActorRef(${this.path})`
  }

  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }
}

/** A ref backed by a function instead of a mailbox: ask's reply slot, test probes, dead letters. */
export class FunctionRef<Msg> extends BaseRef<Msg> {
  constructor(
    readonly path: string,
    private readonly onMessage: (message: Msg, sender: ActorRef<any> | undefined) => Delivery
  ) {
    super()
  }

  deliver(message: Msg, sender: ActorRef<any> | undefined): Delivery {
    return this.onMessage(message, sender)
  }
}
