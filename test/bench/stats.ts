/**
 * Helpers shared by the bench scenarios: gc and heap readings, CPU windows, percentiles, lateness recording and a
 * plain-text table printer. Bench code reads the real clock on purpose (`performance.now()`).
 */
import * as os from "node:os"
import { type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"

/** Forces a full collection (twice: the first pass may leave weak/finalizer work for the second). */
export const fullGc = (): void => {
  const gc = globalThis.gc
  if (gc === undefined) throw new Error("run node with --expose-gc (main.ts re-spawns itself with it)")
  gc()
  gc()
}

/** Heap used after a full collection, in bytes. */
export const heapAfterGc = (): number => {
  fullGc()
  return process.memoryUsage().heapUsed
}

export const sleep = (millis: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, millis))

/** A window over which CPU time, wall time, event-loop utilization and garbage-collection pauses are measured. */
export interface CpuWindow {
  /** Wall milliseconds since the window opened. */
  readonly wallMillis: () => number
  /**
   * Closes the window: CPU % of one core (user + system, all threads), event-loop utilization (0..1), and the
   * collections that started in it (count, and their pauses' total milliseconds).
   */
  readonly close: () => {
    readonly wallMillis: number
    readonly cpuPercent: number
    readonly elu: number
    readonly gcPauses: number
    readonly gcMillis: number
  }
}

/**
 * Collections' pauses (start, duration), as V8 reports them, while a window is open: the observer runs only then, so
 * that the memory scenario's heap readings do not count its records.
 */
let gcObserver: PerformanceObserver | undefined
let openWindows = 0
const gcEntries: Array<{ readonly start: number; readonly millis: number }> = []
const keepGcEntries = (entries: ReadonlyArray<PerformanceEntry>): void => {
  for (const entry of entries) gcEntries.push({ start: entry.startTime, millis: entry.duration })
}

export const openCpuWindow = (): CpuWindow => {
  if (openWindows++ === 0) {
    gcObserver = new PerformanceObserver((list) => keepGcEntries(list.getEntries()))
    gcObserver.observe({ entryTypes: ["gc"] })
  }
  const observer = gcObserver!
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  const elu0 = performance.eventLoopUtilization()
  return {
    wallMillis: () => performance.now() - t0,
    close: () => {
      const wallMillis = performance.now() - t0
      const cpu = process.cpuUsage(cpu0)
      const elu = performance.eventLoopUtilization(elu0)
      // Entries reach the observer's callback later; take the ones still buffered now.
      keepGcEntries(observer.takeRecords())
      const inWindow = gcEntries.filter((entry) => entry.start >= t0 && entry.start <= t0 + wallMillis)
      if (--openWindows === 0) {
        observer.disconnect()
        gcEntries.length = 0
      }
      return {
        wallMillis,
        cpuPercent: ((cpu.user + cpu.system) / 1000 / wallMillis) * 100,
        elu: elu.utilization,
        gcPauses: inWindow.length,
        gcMillis: inWindow.reduce((sum, entry) => sum + entry.millis, 0)
      }
    }
  }
}

/** The `q` quantile (0..1) of sorted values, nearest-rank. */
export const quantile = (sorted: Float64Array, q: number): number => {
  if (sorted.length === 0) return Number.NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[i]!
}

export interface LatenessSummary {
  readonly samples: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

/**
 * A promise that resolves at a deadline: by a Node timer, or by `check` (called by the recorders on every event)
 * when a design keeps the microtask queue so busy that Node timers do not run. Arming it again resolves the
 * previous promise first.
 */
class Alarm {
  private deadline = Number.POSITIVE_INFINITY
  private resolve: (() => void) | undefined = undefined
  private timer: NodeJS.Timeout | undefined = undefined

  arm(deadline: number): Promise<void> {
    this.fire()
    return new Promise((resolve) => {
      this.deadline = deadline
      this.resolve = resolve
      this.timer = setTimeout(() => this.fire(), Math.max(0, deadline - performance.now()))
    })
  }

  check(now: number): void {
    if (now >= this.deadline) this.fire()
  }

  fire(): void {
    const resolve = this.resolve
    if (resolve === undefined) return
    this.resolve = undefined
    this.deadline = Number.POSITIVE_INFINITY
    clearTimeout(this.timer)
    resolve()
  }
}

/**
 * Counts ticks and records their lateness while the window is open. Samples go to a preallocated Float64Array
 * (outside the JS heap, so it does not distort heap readings); beyond its capacity only the count grows.
 *
 * It is also the bench's alarm clock (`until`): a design under overload can keep the microtask queue busy so long
 * that Node timers never run, so every recorded tick checks the deadline too.
 */
export class TickRecorder {
  open = false
  count = 0
  private readonly samples: Float64Array
  private n = 0
  private readonly alarm = new Alarm()
  /** Ticks since `resetRecent`, and how many of them were later than `lateThreshold` (open window or not). */
  recentCount = 0
  recentLate = 0

  constructor(
    capacity: number,
    private readonly lateThreshold: number
  ) {
    this.samples = new Float64Array(capacity)
  }

  resetRecent(): void {
    this.recentCount = 0
    this.recentLate = 0
  }

  /** Records one tick handled at `now` (performance.now()) that was `latenessMillis` late. */
  record(latenessMillis: number, now: number): void {
    this.recentCount++
    if (latenessMillis > this.lateThreshold) this.recentLate++
    if (this.open) {
      this.count++
      if (this.n < this.samples.length) this.samples[this.n++] = latenessMillis
    }
    this.alarm.check(now)
  }

  /** Resolves at `deadline` (performance.now() millis): by a Node timer or by the first tick recorded after it. */
  until(deadline: number): Promise<void> {
    return this.alarm.arm(deadline)
  }

  summary(): LatenessSummary {
    return summarize(this.samples.slice(0, this.n).sort())
  }
}

/**
 * How late Node timers run (a macrotask every `period` ms) while something else keeps the process busy. When the
 * microtask queue never drains, no timer runs at all: `stop` then counts the pending probe's lateness so far.
 */
export class TimerLagProbe {
  private max = 0
  private sum = 0
  private count = 0
  private due = 0
  private handle: NodeJS.Timeout | undefined = undefined

  constructor(private readonly period = 50) {}

  start(): void {
    this.arm()
  }

  private arm(): void {
    this.due = performance.now() + this.period
    this.handle = setTimeout(() => {
      this.sample(performance.now() - this.due)
      this.arm()
    }, this.period)
  }

  private sample(lag: number): void {
    this.count++
    this.sum += Math.max(0, lag)
    if (lag > this.max) this.max = lag
  }

  stop(): { readonly maxMillis: number; readonly meanMillis: number; readonly probes: number } {
    clearTimeout(this.handle)
    const pending = performance.now() - this.due
    if (pending > 0) this.sample(pending)
    return { maxMillis: this.max, meanMillis: this.count === 0 ? 0 : this.sum / this.count, probes: this.count }
  }
}

/**
 * Counts events that each have a due time, until `expected` were handled: lateness samples (off-heap, as in
 * `TickRecorder`), the time the last one was handled, and a promise that resolves when all were handled or at a
 * deadline (checked by a Node timer and by every recorded event, in case the design starves Node's timers).
 */
export class CompletionRecorder {
  count = 0
  lastAt = Number.NaN
  private readonly samples: Float64Array
  private readonly alarm = new Alarm()

  constructor(readonly expected: number) {
    this.samples = new Float64Array(expected)
  }

  /** Records one event handled at `now` (performance.now()) that was `latenessMillis` late. */
  record(latenessMillis: number, now: number): void {
    if (this.count < this.samples.length) this.samples[this.count] = latenessMillis
    this.count++
    this.lastAt = now
    if (this.count >= this.expected) this.alarm.fire()
    else this.alarm.check(now)
  }

  /** Resolves once `expected` events were recorded, or at `deadline` (performance.now() millis). */
  done(deadline: number): Promise<void> {
    return this.count >= this.expected ? Promise.resolve() : this.alarm.arm(deadline)
  }

  summary(): LatenessSummary {
    return summarize(this.samples.slice(0, Math.min(this.count, this.samples.length)).sort())
  }
}

/** Lateness figures of sorted samples. */
export const summarize = (sorted: Float64Array): LatenessSummary => {
  let sum = 0
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!
  return {
    samples: sorted.length,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length
  }
}

/** Keeps the thread busy (no timers, no I/O, no microtasks run) until `until` (performance.now() millis). */
export const blockUntil = (until: number): void => {
  while (performance.now() < until) {
    // busy: this is the stall the overdue timers pile up in
  }
}

export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor(sorted.length / 2)]!
}

/** The 1, 5 and 15 minute load averages, as printed. */
export const loadAverage = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")

/**
 * One line of the final summary: an issue-6 target, what this run measured, the baseline measured in the same run,
 * and whether the target is met (undefined: not measured or not comparable in this run).
 */
export interface TargetRow {
  readonly target: string
  readonly measured: string
  readonly baseline: string
  readonly pass: boolean | undefined
  /** Why the row is not what the issue names (sized down, skipped, a derived figure). */
  readonly note?: string
}

/** A random integer delay in [min, max] milliseconds. */
export const randomDelay = (min: number, max: number): number => min + Math.floor(Math.random() * (max - min + 1))

// ---------------------------------------------------------------- formatting

export const fmtInt = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-")

/** A size in short form: 1M, 100k, 10k. */
export const fmtCount = (n: number): string =>
  n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : fmtInt(n)

export const fmtNum = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

/** Ops per second in a compact form: 1.23M, 456k. */
export const fmtRate = (n: number): string => {
  if (!Number.isFinite(n)) return "-"
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)}k`
  return n.toFixed(0)
}

export const fmtPercent = (ratio: number, digits = 1): string =>
  Number.isFinite(ratio) ? `${(ratio * 100).toFixed(digits)}%` : "-"

export const fmtBytes = (n: number): string => {
  if (!Number.isFinite(n)) return "-"
  const abs = Math.abs(n)
  if (abs >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GB`
  if (abs >= 10 * 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MB`
  if (abs >= 10_240) return `${(n / 1024).toFixed(1)} KB`
  return `${n.toFixed(0)} B`
}

/** Lateness p50, p99 and max as table cells (ms). */
export const latenessCells = (l: LatenessSummary): Array<string> => [fmtNum(l.p50), fmtNum(l.p99), fmtNum(l.max)]

/** `a / b` as "1.23x", "-" when undefined. */
export const fmtRatio = (a: number, b: number): string => {
  const r = a / b
  return Number.isFinite(r) ? `${r >= 10 ? r.toFixed(0) : r.toFixed(2)}x` : "-"
}

/** A plain-text table: first column left-aligned, the rest right-aligned. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  const rule = widths.map((w) => "-".repeat(w)).join("  ")
  return [line(headers), rule, ...rows.map(line)].join("\n")
}
