/**
 * When an idle grain is deactivated (passivated). Set per grain kind, with a default for all kinds in
 * `Grains.layer`. Shutdown and a failure also deactivate a grain, whatever the strategy.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"

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
 * Deactivate after `timeout` without messages. A timeout that is not a positive finite duration is a programmer
 * error and throws.
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
  const timeoutMillis = Duration.toMillis(Duration.decode(timeout))
  if (!(timeoutMillis > 0 && Number.isFinite(timeoutMillis))) {
    throw new RangeError(`idle passivation timeout must be a positive finite duration, got ${String(timeout)}`)
  }
  return { _tag: "Idle", timeoutMillis }
}

/**
 * Deactivate after handling `count` messages (ticks included). `count` must be a positive integer, else it throws.
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
export const messageCount = (count: number): Passivation => {
  if (!(Number.isInteger(count) && count > 0))
    throw new RangeError(`message count must be a positive integer, got ${count}`)
  return { _tag: "MessageCount", count }
}

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
