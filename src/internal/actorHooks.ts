/**
 * Internal lifecycle hooks that runtimes built on actors (grains, entities) attach to an actor definition. They are
 * not part of the public `Actor` model.
 */
import type { ActorRef } from "../ActorRef.js"
import type { TimerInfo } from "../Timers.js"

export const HooksKey: unique symbol = Symbol.for("tickwork/internal/ActorHooks")

export interface ActorHooks {
  /**
   * Receives the user messages left in the mailbox when the actor stops, instead of dead letters. `owner` is what
   * the actor's cell carries (see `spawnOwned`), so one set of hooks serves every actor of a kind.
   */
  readonly undelivered?: (owner: unknown, message: unknown, sender: ActorRef<any> | undefined) => void
  /** Called once the actor has terminated and its mailbox is drained. */
  readonly terminated?: (owner: unknown) => void
  /** The timers the runtime keeps for `owner`, for inspection (`Schedules.timersOf`). */
  readonly timerInfos?: (owner: unknown) => ReadonlyArray<TimerInfo>
}

export const hooksOf = (actor: object): ActorHooks | undefined => (actor as { [HooksKey]?: ActorHooks })[HooksKey]

export const withHooks = <A extends object>(actor: A, hooks: ActorHooks): A =>
  Object.assign(Object.create(Object.getPrototypeOf(actor)), actor, { [HooksKey]: hooks })
