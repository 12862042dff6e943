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
 * The kinds of timer a metric may be tagged with (`timer_kind`).
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
 * belonged to a dead incarnation) while the tick waited in the mailbox, or the owner had stopped.
 *
 * @since 0.1.0
 * @category models
 */
export type DropReason = "mailbox_full" | "stale" | "owner_stopped"

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
export const timerFaults = (kind: string): Metric.Metric.Counter<number> =>
  Metric.fromMetricKey(
    MetricKey.counter("tickwork_timer_faults_total", {
      description: "timers whose firing threw or failed",
      incremental: true
    }).pipe(MetricKey.tagged("timer_kind", kind))
  ) as Metric.Metric.Counter<number>

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
  Metric.fromMetricKey(
    MetricKey.counter("tickwork_engine_restarts_total", {
      description: "timer engine restarts after its driver fiber died",
      incremental: true
    }).pipe(MetricKey.tagged("system", system))
  ) as Metric.Metric.Counter<number>

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
export const ticksDelivered = (kind: TimerKind): Metric.Metric.Counter<number> => deliveredByKind[kind]

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
export const ticksDropped = (reason: DropReason): Metric.Metric.Counter<number> => droppedByReason[reason]

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

// Tags live in the metric key, so an update passes the same empty tag array and hits Effect's hook cache.
const counter = (name: string, description: string, tag: string, value: string): Metric.Metric.Counter<number> =>
  Metric.fromMetricKey(
    MetricKey.counter(name, { description, incremental: true }).pipe(MetricKey.tagged(tag, value))
  ) as Metric.Metric.Counter<number>

const timerKinds: ReadonlyArray<TimerKind> = [
  "actor_timer",
  "receive_timeout",
  "scheduler_message",
  "scheduler_function",
  "grain_timer",
  "spot_timer",
  "entity_timer"
]
const dropReasons: ReadonlyArray<DropReason> = ["mailbox_full", "stale", "owner_stopped"]

const deliveredByKind = Object.fromEntries(
  timerKinds.map((kind) => [
    kind,
    counter("tickwork_ticks_delivered_total", "ticks handed to handlers", "timer_kind", kind)
  ])
) as Record<TimerKind, Metric.Metric.Counter<number>>

const droppedByReason = Object.fromEntries(
  dropReasons.map((reason) => [reason, counter("tickwork_ticks_dropped_total", "ticks dropped", "reason", reason)])
) as Record<DropReason, Metric.Metric.Counter<number>>
