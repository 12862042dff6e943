/**
 * How a parent treats a child that failed while handling a message (a typed error or a defect in `receive`).
 *
 * The decision is made per failure by the parent's `SupervisorStrategy`; top-level actors are supervised by the
 * system's guardian, whose strategy is set in `ActorSystem.layer` options (restart by default, like Akka classic).
 *
 * @since 0.1.0
 */
import type * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import { intervalMillis } from "./internal/duration.js"

/**
 * What happens to a failed child.
 *
 * - `resume`: keep the state, drop the failing message, go on with the next one; timers keep running.
 * - `restart`: cancel the incarnation's timers, stop its children, run `preRestart`, build fresh state with `preStart`,
 *   run `postRestart`; the mailbox is kept (the failing message is not retried).
 * - `stop`: stop the child (its `postStop` runs; queued messages go to dead letters).
 * - `escalate`: stop the child and fail the parent with the same cause, so the grandparent decides.
 *
 * @since 0.1.0
 * @category models
 */
export type Directive = "resume" | "restart" | "stop" | "escalate"

/**
 * A parent's policy for its failed children.
 *
 * @example
 * ```ts
 * import { Supervision } from "tickwork"
 *
 * const strategy = Supervision.restart({ maxRestarts: 3, within: "1 minute" })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface SupervisorStrategy {
  readonly decide: (cause: Cause.Cause<unknown>) => Directive
  /** Restarts allowed inside `withinMillis` before the child is stopped instead. */
  readonly maxRestarts: number
  readonly withinMillis: number
}

/**
 * Restart a failed child, at most `maxRestarts` times within `within` (default: unlimited); past the limit the child
 * is stopped.
 *
 * @example
 * ```ts
 * import { Supervision } from "tickwork"
 *
 * const strategy = Supervision.restart({ maxRestarts: 5, within: "10 seconds" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const restart = (options?: {
  readonly maxRestarts?: number
  readonly within?: Duration.DurationInput
}): SupervisorStrategy => decider(() => "restart", options)

/**
 * Stop a failed child.
 *
 * @example
 * ```ts
 * import { Supervision } from "tickwork"
 *
 * const strategy = Supervision.stop
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const stop: SupervisorStrategy = decider(() => "stop")

/**
 * Keep a failed child's state and go on with its next message.
 *
 * @example
 * ```ts
 * import { Supervision } from "tickwork"
 *
 * const strategy = Supervision.resume
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const resume: SupervisorStrategy = decider(() => "resume")

/**
 * Fail the parent with the child's cause.
 *
 * @example
 * ```ts
 * import { Supervision } from "tickwork"
 *
 * const strategy = Supervision.escalate
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const escalate: SupervisorStrategy = decider(() => "escalate")

/**
 * A strategy that looks at the cause, e.g. resume on a typed error and restart on a defect.
 *
 * @example
 * ```ts
 * import { Cause } from "effect"
 * import { Supervision } from "tickwork"
 *
 * const strategy = Supervision.decider((cause) => (Cause.isFailType(cause) ? "resume" : "restart"), {
 *   maxRestarts: 10,
 *   within: "1 minute"
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export function decider(
  decide: (cause: Cause.Cause<unknown>) => Directive,
  options?: { readonly maxRestarts?: number; readonly within?: Duration.DurationInput }
): SupervisorStrategy {
  // Kept as given and checked when an actor with this strategy is spawned: a bad value fails that spawn with
  // `ActorSystem.InvalidActorDefinition`, never a throw here (`within` that is not a duration reads NaN).
  const maxRestarts = options?.maxRestarts ?? Number.POSITIVE_INFINITY
  const within = options?.within === undefined ? Either.right(Number.POSITIVE_INFINITY) : intervalMillis(options.within)
  return { decide, maxRestarts, withinMillis: Either.getOrElse(within, () => Number.NaN) }
}
