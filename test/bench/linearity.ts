/**
 * Linearity scenario: per-timer figures at 10k / 100k / 1M timers in one table, with two ratios per row: growth (the
 * largest per-timer cost over the one at the smallest size) and flatness (largest over smallest).
 *
 * "Cost grows linearly" is judged by growth: a total cost a + b·N is linear, and its per-timer figure a/N + b falls
 * toward b as N grows; only a super-linear cost makes the per-timer figure rise. Flatness also counts a falling figure
 * (fixed costs of a run, which weigh most on the 10k run) against it; it is printed, not judged.
 *
 * - Engine rows (from the engine scenario of this run, or measured here when it did not run): nanoseconds per
 *   schedule+cancel pair with N pending, and heap bytes per pending timer.
 * - Actor rows: N one-shot timers delivered into actor handlers (message schedules to a few actors) at a constant
 *   100k timers/s, so that only the number of timers changes between sizes: CPU µs per handled timer and p99
 *   lateness. The baseline is Node `setTimeout` at the same rate.
 */
import { NODE_IMPL as NODE_DELIVERED, pick, runDelivered, type SpreadRun, TICKWORK_IMPL } from "./burst.js"
import { type EngineResult, NODE_IMPL, PUBLIC_IMPL } from "./engine.js"
import { fmtBytes, fmtInt, fmtNum, type TargetRow, table } from "./stats.js"

export interface LinearityOptions {
  readonly sizes: ReadonlyArray<number>
  /** Delivery rate of the actor rows, timers per second. */
  readonly ratePerSec: number
}

export interface LinearityRow {
  readonly metric: string
  readonly impl: string
  readonly unit: string
  /** Per-timer figure at each size, in `sizes` order. */
  readonly values: ReadonlyArray<number>
  /** max / min of `values`. */
  readonly flatness: number
  /** max of `values` / the value at the smallest size: how much the per-timer cost grows with size. */
  readonly growth: number
}

export interface LinearityResult {
  readonly scenario: "linearity"
  readonly sizes: ReadonlyArray<number>
  readonly ratePerSec: number
  readonly engineSource: "engine scenario of this run" | "measured by the linearity scenario"
  readonly rows: ReadonlyArray<LinearityRow>
  readonly delivered: ReadonlyArray<SpreadRun>
  readonly targets: ReadonlyArray<TargetRow>
}

/** "Linear": no size costs more than twice per timer what the smallest size does. */
const MAX_GROWTH = 2

const flatness = (values: ReadonlyArray<number>): number => Math.max(...values) / Math.min(...values)
const growth = (values: ReadonlyArray<number>): number => Math.max(...values) / values[0]!

const row = (metric: string, impl: string, unit: string, values: ReadonlyArray<number>): LinearityRow => ({
  metric,
  impl,
  unit,
  values,
  flatness: flatness(values),
  growth: growth(values)
})

export const runLinearity = async (
  options: LinearityOptions,
  engine: EngineResult,
  engineSource: LinearityResult["engineSource"],
  log: (line: string) => void
): Promise<LinearityResult> => {
  const { sizes } = options
  const delivered = await runDelivered(sizes, options.ratePerSec, log)
  type EngineRow = EngineResult["rows"][number]
  const valuesOf = <R>(find: (n: number) => R | undefined, f: (r: R) => number) =>
    sizes.map((n) => {
      const r = find(n)
      return r === undefined ? Number.NaN : f(r)
    })
  const engineValues = (impl: string, f: (r: EngineRow) => number) =>
    valuesOf((n) => engine.rows.find((r) => r.impl === impl && r.pending === n), f)
  const deliveredValues = (impl: string, f: (r: SpreadRun) => number) => valuesOf((n) => pick(delivered, impl, n), f)
  const engineImpls = [PUBLIC_IMPL, NODE_IMPL]
  const rows = [
    ...engineImpls.map((impl) =>
      row(
        "engine schedule+cancel",
        impl,
        "ns/pair",
        engineValues(impl, (r) => 1e9 / r.pairsPerSec)
      )
    ),
    ...engineImpls.map((impl) =>
      row(
        "engine heap per pending timer",
        impl,
        "B",
        engineValues(impl, (r) => r.bytesPerTimer)
      )
    ),
    ...[TICKWORK_IMPL, NODE_DELIVERED].map((impl) =>
      row(
        "actor timers delivered, CPU",
        impl,
        "µs/timer",
        deliveredValues(impl, (r) => r.cpuMicrosPerTimer)
      )
    )
  ]
  const sizeNote = sizes.includes(1_000_000)
    ? {}
    : { note: `sizes ${sizes.map((n) => fmtInt(n)).join(" / ")} (quick mode)` }
  const targets: Array<TargetRow> = rows
    .filter((r) => !r.impl.startsWith("node"))
    .map((r) => {
      const base = rows.find((b) => b.metric === r.metric && b.impl.startsWith("node"))
      return {
        target: `linearity: ${r.metric}, growth ≤ ${MAX_GROWTH}x from the smallest size`,
        measured: `${fmtNum(r.growth, 2)}x (flatness ${fmtNum(r.flatness, 2)}x)`,
        baseline: `node ${fmtNum(base?.growth ?? Number.NaN, 2)}x`,
        pass: Number.isFinite(r.growth) ? r.growth <= MAX_GROWTH : undefined,
        ...sizeNote
      }
    })
  return {
    scenario: "linearity",
    sizes,
    ratePerSec: options.ratePerSec,
    engineSource,
    rows,
    delivered,
    targets
  }
}

export const formatLinearity = (result: LinearityResult): string => {
  const fmt = (unit: string, v: number) => (unit === "B" ? fmtBytes(v) : fmtNum(v, unit === "ns/pair" ? 0 : 2))
  const deliveredRows = result.delivered.map((r) => [
    r.impl,
    fmtInt(r.timers),
    fmtInt(r.handled),
    fmtNum(r.latenessMillis.p50),
    fmtNum(r.latenessMillis.p99),
    fmtNum(r.cpuPercent, 0),
    fmtNum(r.cpuMicrosPerTimer, 2)
  ])
  return [
    `Linearity: per-timer cost at ${result.sizes.map((n) => fmtInt(n)).join(" / ")} timers ` +
      `(growth = largest / the smallest size's, flatness = largest / smallest; engine rows: ${result.engineSource})`,
    table(
      ["metric", "implementation", "unit", ...result.sizes.map((n) => fmtInt(n)), "growth", "flatness"],
      result.rows.map((r) => [
        r.metric,
        r.impl,
        r.unit,
        ...r.values.map((v) => fmt(r.unit, v)),
        `${fmtNum(r.growth, 2)}x`,
        `${fmtNum(r.flatness, 2)}x`
      ])
    ),
    "",
    `Actor timers delivered at ${fmtInt(result.ratePerSec)} timers/s (one-shots due at random instants over ` +
      `N / rate seconds):`,
    table(["implementation", "timers", "handled", "late p50 ms", "p99 ms", "CPU %", "µs/timer"], deliveredRows)
  ].join("\n")
}
