/**
 * Metric keys shared by the public metrics (`Metrics.ts`) and the hot path's flush (`metrics.ts`).
 */
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"

/** The key of `Metrics.tickLateness`; the flush takes its hook from Effect's registry once (see `metrics.ts`). */
export const latenessKey = MetricKey.histogram(
  "tickwork_tick_lateness_ms",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 14 }),
  "milliseconds between a timer's due time and its firing"
)
