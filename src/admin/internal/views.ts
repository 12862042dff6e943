/**
 * What the read-only endpoints show, taken from the running system and Effect's metric registry: the lateness
 * histogram, tickwork's counters and gauges, and the actors' timers.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricKeyType from "effect/MetricKeyType"
import * as MetricState from "effect/MetricState"
import type { ActorSystemService } from "../../ActorSystem.js"
import type { ActorCell } from "../../internal/actorCell.js"
import { systemOf } from "../../internal/actorSystem.js"
import { tickLateness } from "../../Metrics.js"
import type { Lateness, MetricValue, OwnerTimers } from "../AdminApi.js"

/** The histogram with per-bucket counts (Effect keeps them cumulative, as Prometheus does). */
export const lateness: Effect.Effect<typeof Lateness.Type> = Effect.map(Metric.value(tickLateness), (state) => {
  let below = 0
  const buckets = state.buckets.map(([upTo, cumulative]) => {
    const count = cumulative - below
    below = cumulative
    return { upToMillis: upTo, count }
  })
  return state.count === 0
    ? { count: 0, sumMillis: 0, buckets }
    : { count: state.count, sumMillis: state.sum, minMillis: state.min, maxMillis: state.max, buckets }
})

/** Every `tickwork_*` counter and gauge in the registry, sorted by name then tags. */
export const metrics: Effect.Effect<ReadonlyArray<typeof MetricValue.Type>> = Effect.map(Metric.snapshot, (pairs) => {
  const values: Array<typeof MetricValue.Type> = []
  for (const { metricKey, metricState } of pairs) {
    if (!metricKey.name.startsWith("tickwork_")) continue
    const tags = Object.fromEntries(metricKey.tags.map((label) => [label.key, label.value]))
    if (MetricKeyType.isCounterKey(metricKey.keyType) && MetricState.isCounterState(metricState)) {
      values.push({ name: metricKey.name, type: "counter", tags, value: Number(metricState.count) })
    } else if (MetricKeyType.isGaugeKey(metricKey.keyType) && MetricState.isGaugeState(metricState)) {
      values.push({ name: metricKey.name, type: "gauge", tags, value: Number(metricState.value) })
    }
  }
  const order = (m: typeof MetricValue.Type) => `${m.name} ${JSON.stringify(m.tags)}`
  return values.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))
})

const timersOf = (cell: ActorCell): typeof OwnerTimers.Type => ({
  owner: cell.path,
  timers: cell.timerInfos().map((info) => ({
    key: info.key,
    kind: info.kind,
    mode: info.mode,
    ...(info.intervalMillis === undefined ? {} : { intervalMillis: info.intervalMillis }),
    ...(info.expression === undefined ? {} : { expression: info.expression }),
    ...(info.nextDue === undefined ? {} : { nextDue: info.nextDue })
  }))
})

/**
 * The timers of the actor at `owner` (undefined: no live actor there), or, without an owner, of the first `limit`
 * actors that have any.
 */
export const ownerTimers = (
  system: ActorSystemService,
  owner: string | undefined,
  limit: number
): Effect.Effect<ReadonlyArray<typeof OwnerTimers.Type> | undefined> =>
  Effect.sync(() => {
    const cells = systemOf(system)?.actorCells ?? new Set<ActorCell>()
    if (owner !== undefined) {
      for (const cell of cells) if (cell.path === owner) return [timersOf(cell)]
      return undefined
    }
    const found: Array<typeof OwnerTimers.Type> = []
    for (const cell of cells) {
      if (found.length >= limit) break
      if (cell.timerCount > 0) found.push(timersOf(cell))
    }
    return found
  })
