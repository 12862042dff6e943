/**
 * The hot path's side of the tick metrics.
 *
 * Updating an Effect metric costs a hook lookup and a call per value, ~15% of a tick whose handler does little (1M
 * overdue ticks drained into `Effect.sync` handlers). So deliveries are counted in plain numbers and latenesses kept
 * in a typed buffer, and `flushMetrics` hands them to Effect's metrics: at the end of every dispatcher flush (the
 * driver runs one after each batch it fires) and batch fiber, after a function task's run, and whenever the buffer is
 * full. Anyone reading a metric after a turn of the timer driver or of the dispatcher sees every tick of it. Dropped
 * ticks are rare and go straight to their counter. (Buffered, a drain of 1M overdue ticks ran ~8% faster than with
 * one histogram update per tick as it fired.)
 */

import * as Metric from "effect/Metric"
import type * as MetricHook from "effect/MetricHook"
import type * as MetricLabel from "effect/MetricLabel"
import { type DropReason, ticksDelivered, ticksDropped } from "../Metrics.js"
import { latenessKey } from "./metricKeys.js"

/** One shared empty tag array: Effect caches a metric's hook per tag-array identity. */
const NO_TAGS: ReadonlyArray<MetricLabel.MetricLabel> = []

const LATENESS_BUFFER = 4_096

/** Deliveries since the last flush, by the kinds that had any. */
const delivered: Record<string, number> = {}
let deliveredPending = false
const lateness = new Float64Array(LATENESS_BUFFER)
let latenessCount = 0

export const recordDelivered = (kind: string): void => {
  delivered[kind] = (delivered[kind] ?? 0) + 1
  deliveredPending = true
}

export const recordLateness = (millis: number): void => {
  lateness[latenessCount++] = millis
  if (latenessCount === LATENESS_BUFFER) flushLateness()
}

export const recordDropped = (reason: DropReason, count = 1): void => ticksDropped(reason).unsafeUpdate(count, NO_TAGS)

/**
 * The lateness histogram's hook in Effect's registry (`Metric.globalMetricRegistry`), the one `tickLateness` updates:
 * taken once, so a flushed value skips the metric's hook lookup. Effect still takes histogram values one at a time.
 */
let latenessHook: MetricHook.MetricHook<number, unknown> | undefined

const flushLateness = (): void => {
  const count = latenessCount
  latenessCount = 0
  const hook = (latenessHook ??= Metric.globalMetricRegistry.get(latenessKey))
  for (let i = 0; i < count; i++) hook.update(lateness[i]!)
}

/** Hands what was counted since the last flush to Effect's metrics. Cheap when there is nothing. */
export const flushMetrics = (): void => {
  if (latenessCount > 0) flushLateness()
  if (!deliveredPending) return
  deliveredPending = false
  for (const kind in delivered) {
    const count = delivered[kind]!
    if (count > 0) {
      delivered[kind] = 0
      ticksDelivered(kind).unsafeUpdate(count, NO_TAGS)
    }
  }
}
