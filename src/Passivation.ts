/**
 * When an idle grain is deactivated (passivated). Set per grain kind, with a default for all kinds in
 * `Grains.layer`. Shutdown and a failure also deactivate a grain, whatever the strategy.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import { intervalMillis } from "./internal/duration.js"

/**
 * Where a constructor leaves why its argument is unusable: not enumerable, not in JSON. `Grains.layer` (and the
 * cluster's grain host) read it through the same global symbol and fail with a typed error naming it.
 */
const ProblemKey = Symbol.for("tickwork/Passivation/problem")

const unusable = <P extends Passivation>(strategy: P, reason: string): P =>
  Object.defineProperty(strategy, ProblemKey, { value: reason, enumerable: false })

/**
 * A passivation strategy.
 *
 * - `Idle`: deactivate after `timeoutMillis` without messages. By default timer ticks do not count as activity;
 *   ticks of timers registered with `withTimerKeepAlive()` do.
 * - `MessageCount`: deactivate after handling `count` messages (delivered ticks count).
 * - `Never`: stay active until shutdown or failure.
 *
 * @since 0.1.0
 * @category models
 */
export type Passivation =
  | { readonly _tag: "Idle"; readonly timeoutMillis: number }
  | { readonly _tag: "MessageCount"; readonly count: number }
  | { readonly _tag: "Never" }

/**
 * Deactivate after `timeout` without messages. The timeout must be a finite duration of at least 1 ms (the timer
 * engine's resolution); anything else (`"soon"`, 0, -1, NaN, Infinity) makes the layer that registers the strategy
 * fail with a typed error naming it (`Grain.InvalidGrainKind` or `Grains.InvalidGrainsOptions`). This constructor
 * never throws.
 *
 * @example
 * ```ts
 * import { Passivation } from "tickwork"
 *
 * const strategy = Passivation.idle("5 minutes")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const idle = (timeout: Duration.DurationInput): Passivation => {
  const checked = intervalMillis(timeout)
  return checked._tag === "Right"
    ? { _tag: "Idle", timeoutMillis: checked.right }
    : unusable(
        { _tag: "Idle", timeoutMillis: checked.left.intervalMillis },
        `Passivation.idle: the timeout ${checked.left.reason}`
      )
}

/**
 * Deactivate after handling `count` messages (ticks included). `count` must be a whole number >= 1; anything else
 * makes the layer that registers the strategy fail with a typed error naming it. This constructor never throws.
 *
 * @example
 * ```ts
 * import { Passivation } from "tickwork"
 *
 * const strategy = Passivation.messageCount(1000)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const messageCount = (count: number): Passivation => ({ _tag: "MessageCount", count })

/**
 * Never passivate.
 *
 * @example
 * ```ts
 * import { Passivation } from "tickwork"
 *
 * const strategy = Passivation.never
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const never: Passivation = { _tag: "Never" }

/**
 * The default: deactivate after 15 minutes without messages.
 *
 * @example
 * ```ts
 * import { Passivation } from "tickwork"
 *
 * console.log(Passivation.defaultStrategy)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultStrategy: Passivation = { _tag: "Idle", timeoutMillis: 15 * 60_000 }
