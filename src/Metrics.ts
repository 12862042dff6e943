/**
 * Timer metrics, as Effect `Metric`s with low-cardinality tags (timer kind, drop reason). Export them with any
 * Effect metrics exporter; tests read them with `Metric.value`.
 *
 * The hot path updates them synchronously with fixed tag sets, so a tick costs no extra effect.
 *
 * @since 0.1.0
 */
import * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"
import { latenessKey } from "./internal/metricKeys.js"

/**
 * The kinds of timer tickwork arms, as metrics tag them (`timer_kind`). The metrics take any kind's name: a timer kind
 * added later needs no change here.
 *
 * @since 0.1.0
 * @category models
 */
export type TimerKind =
  | "actor_timer"
  | "receive_timeout"
  | "scheduler_message"
  | "scheduler_function"
  | "grain_timer"
  | "spot_timer"
  | "entity_timer"

/**
 * Why a tick was dropped (`reason`): the owner's bounded mailbox was full, the timer was cancelled or replaced (or
 * belonged to a dead incarnation) while the tick waited in the mailbox, the owner had stopped, or (`missed`) an entity
 * periodic timer's invocation came due while the previous one was still queued or running, or while the process was
 * paused, or a Spot timer's overrun policy dropped the tick (the delivered tick's `skippedTicks`).
 *
 * @since 0.1.0
 * @category models
 */
export type DropReason = "mailbox_full" | "stale" | "owner_stopped" | "missed"

/**
 * Timers armed in the timer engine of the system named `system` (a gauge tagged `system`).
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const armed = Metric.value(Metrics.activeTimers("app")).pipe(Effect.map((state) => state.value))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const activeTimers = (system: string): Metric.Metric.Gauge<number> =>
  Metric.fromMetricKey(
    MetricKey.gauge("tickwork_timers_active", { description: "timers armed in the timer engine" }).pipe(
      MetricKey.tagged("system", system)
    )
  ) as Metric.Metric.Gauge<number>

/**
 * Timers whose firing threw or failed, by timer kind (`timer_kind`, a `TimerKind`). Each fault is caught at the timer
 * that caused it and logged at error level; the engine and every other timer go on (see docs/reliability.md).
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const faults = Metric.value(Metrics.timerFaults("scheduler_message")).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const timerFaults = (kind: TimerKind | (string & {})): Metric.Metric.Counter<number> =>
  counter("tickwork_timer_faults_total", "timers whose firing threw or failed", "timer_kind", kind)

/**
 * Restarts of a system's timer engine after its driver fiber ended other than by shutdown (a gauge would hide them:
 * a counter tagged `system`). Every pending timer is kept across a restart.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const restarts = Metric.value(Metrics.engineRestarts("app")).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const engineRestarts = (system: string): Metric.Metric.Counter<number> =>
  counter("tickwork_engine_restarts_total", "timer engine restarts after its driver fiber died", "system", system)

/**
 * What happened to named schedules (`Schedules`), by `event`: `paused`, `resumed`, `triggered`, `missed` (instants
 * a misfire did not run), `overlap` (a task instant that came while a run was going), `retry` (a failed run tried
 * again), `paused_on_failure`, `storage_retry` (a durable reminder's delivery whose storage failed, tried again).
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const pauses = Metric.value(Metrics.scheduleEvents("paused")).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const scheduleEvents = (
  event: "paused" | "resumed" | "triggered" | "missed" | "overlap" | "retry" | "paused_on_failure" | "storage_retry"
): Metric.Metric.Counter<number> =>
  counter("tickwork_schedule_events_total", "what happened to named schedules", "event", event)

/**
 * Ticks handed to their handler, by timer kind.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const delivered = Metric.value(Metrics.ticksDelivered("actor_timer")).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const ticksDelivered = (kind: TimerKind | (string & {})): Metric.Metric.Counter<number> =>
  counter("tickwork_ticks_delivered_total", "ticks handed to handlers", "timer_kind", kind)

/**
 * Ticks dropped, by reason.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const full = Metric.value(Metrics.ticksDropped("mailbox_full")).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const ticksDropped = (reason: DropReason): Metric.Metric.Counter<number> =>
  counter("tickwork_ticks_dropped_total", "ticks dropped", "reason", reason)

/**
 * How late the engine fired timers, in milliseconds after their due time.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Metrics } from "tickwork"
 *
 * const lateness = Metric.value(Metrics.tickLateness).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export const tickLateness: Metric.Metric.Histogram<number> = Metric.fromMetricKey(latenessKey)

// Tags live in the metric key, so an update passes the same empty tag array and hits Effect's hook cache. A counter is
// made the first time its tag value is asked for, so a new timer kind needs nothing here.
const counters = new Map<string, Map<string, Metric.Metric.Counter<number>>>()

const counter = (name: string, description: string, tag: string, value: string): Metric.Metric.Counter<number> => {
  let byValue = counters.get(name)
  if (byValue === undefined) counters.set(name, (byValue = new Map()))
  let made = byValue.get(value)
  if (made === undefined) {
    made = Metric.fromMetricKey(
      MetricKey.counter(name, { description, incremental: true }).pipe(MetricKey.tagged(tag, value))
    ) as Metric.Metric.Counter<number>
    byValue.set(value, made)
  }
  return made
}
