/**
 * What an actor cell and the modules it is split into share: what a cell needs from its system (`CellHost`), the
 * entries the cell queues besides user messages, and the cell's small states.
 *
 * The cell is split as Akka splits its `ActorCell` (`dungeon/`): `actorCell.ts` delivery and the drain (Akka's
 * Dispatch), `faultHandling.ts` supervision and the stop sequence (FaultHandling), `actorTimers.ts` the keyed timers
 * (TimerSchedulerImpl) and `receiveTimeout.ts` the receive timeout (ReceiveTimeout).
 */
import type * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import type { Actor } from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import type { ActorSystemService, SpawnError } from "../ActorSystem.js"
import type { LogContext } from "../LogContext.js"
import type { SupervisorStrategy } from "../Supervision.js"
import type { ActorCell } from "./actorCell.js"
import type { Dispatcher } from "./dispatcher.js"
import type { FiberRefsCache } from "./fiberRefsCache.js"
import type { Delivery } from "./refs.js"
import type { TimerDriver } from "./timerDriver.js"

/**
 * The timers a runtime built on an actor keeps for one incarnation (an entity's, a Spot's). Registered on the cell, it
 * is stopped together with the incarnation's own timers at stop and restart, and counted in the system's stats.
 */
export interface TimerTable {
  readonly size: number
  stopTimers(): void
}

/** What a cell needs from its system. */
export interface CellHost {
  readonly driver: TimerDriver
  readonly dispatcher: Dispatcher
  readonly service: ActorSystemService
  readonly throughput: number
  readonly askTimeoutMillis: number
  readonly defaultMailboxCapacity: number
  readonly guardianStrategy: SupervisorStrategy
  readonly fiberRefsCache: FiberRefsCache
  spawnCell<M, S, E, R>(
    actor: Actor<M, S, E, R>,
    name: string | undefined,
    parent: ActorCell | undefined
  ): Effect.Effect<ActorRef<M>, SpawnError, R>
  deadLetter(message: unknown, sender: ActorRef<any> | undefined, recipient: string, reason: Delivery): void
  terminated(cell: ActorCell): void
  /** Arms the stop timeout of `cell` (once): when it passes before the actor has terminated, its stop is forced. */
  armStopDeadline(cell: ActorCell): void
  /** `effect`, interrupted with a warning naming the actor and `what` when it outlasts the stop timeout. */
  bounded(effect: Effect.Effect<void>, cell: ActorCell, what: string): Effect.Effect<void>
}

/** A user message that carries a sender or the sender's log context; a bare message is queued as itself. */
export class Envelope {
  constructor(
    readonly message: unknown,
    readonly sender: ActorRef<any> | undefined,
    readonly logContext: LogContext | undefined
  ) {}
}

class StopMessage {}

/** The system message that stops an actor after the message it is handling. */
export const STOP = new StopMessage()

/** The system message of a child that escalated its failure. */
export class ChildFailed {
  constructor(
    readonly child: ActorCell,
    readonly cause: Cause.Cause<unknown>
  ) {}
}

export enum Status {
  Starting = 0,
  Running = 1,
  Stopping = 2,
  Terminated = 3
}

/** The cell's boolean states, bits of `flags`. */
export enum Flag {
  /** A drain is queued or running. */
  Draining = 1,
  /** `forceStop` took over: a drain still queued must not run. */
  Forced = 2,
  Started = 4,
  PostStopPending = 8
}

/** How the dispatcher completes the effect a drain step returned. */
export enum Completion {
  /** `receive`: its value is the next state; a failure goes to supervision. */
  Receive = 0,
  /** A tick's own handler: the value is ignored; a failure goes to supervision. */
  Tick = 1,
  /** The actor's own machinery (start, stop, a child's escalation): a failure is an internal defect. */
  Internal = 2
}
