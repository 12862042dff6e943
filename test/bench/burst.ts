/**
 * Timers delivered into handlers, many at once: the burst and drain scenarios, and the actor rows of the linearity
 * table. Implementations:
 *
 * - tickwork: `system.scheduler.scheduleOnce(delay, actor, i)` to one of `SINK_ACTORS` actors, whose handler records
 *   the timer's lateness. A message schedule is what "a timer handled" means for actors (the message reaches a
 *   handler through the mailbox); `scheduleOnceFunction` would fork a fiber per task instead, and is not measured.
 * - node: `setTimeout(callback, delay, i)`, whose callback records the same figure.
 *
 * Timer i is meant to be due at `due[i]` (performance.now() millis); its delay is taken when it is scheduled
 * (`ceil(due[i] - now)`, at least 1 ms, for both implementations). Every timer is scheduled before the first is due:
 * the lead is 2.5 µs per timer; a size whose scheduling overran it is run again with a longer lead, and flagged if
 * that overran too.
 */
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Actor, type ActorRef, ActorSystem } from "../../src/index.js"
import {
  blockUntil,
  CompletionRecorder,
  fmtCount,
  fmtInt,
  fmtNum,
  fmtRate,
  fmtRatio,
  fullGc,
  type LatenessSummary,
  latenessCells,
  openCpuWindow,
  sleep,
  type TargetRow,
  table
} from "./stats.js"

/** How many actors the tickwork implementation spreads the timers over ("a few actors"). */
export const SINK_ACTORS = 16

/** Where a handled timer is recorded; swapped between runs. */
interface Sink {
  due: Float64Array
  recorder: CompletionRecorder
}

export interface SpreadImpl {
  readonly name: string
  /** Schedules timers 0..n-1, timer i due at `due[i]`; resolves once all are scheduled. */
  readonly schedule: (n: number, due: Float64Array) => Promise<void>
  readonly dispose: () => Promise<void>
}

const delayTo = (due: number): number => Math.max(1, Math.ceil(due - performance.now()))

/**
 * Each implementation keeps one far-off timer pending for its whole run, as a live system does. Without it, nothing of
 * an implementation's timer kinds is alive between rounds, the forced collections before each round free their hidden
 * classes, and every round starts from deoptimized code (Node's `TimersList` and tickwork's entries alike): V8 traces
 * this as "marking dependent code for deoptimization, reason: weak objects", ~30 functions per round.
 */
const KEEP_ALIVE_MILLIS = 3_600_000

export const TICKWORK_IMPL = `tickwork scheduleOnce → ${SINK_ACTORS} actors`
export const NODE_IMPL = "node setTimeout"

const tickworkImpl = async (sink: Sink): Promise<SpreadImpl> => {
  const Receiver = Actor.make<number>()({
    receive: (i) =>
      Effect.sync(() => {
        const now = performance.now()
        sink.recorder.record(now - sink.due[i]!, now)
      })
  })
  const runtime = ManagedRuntime.make(ActorSystem.layer({ name: "bench-burst" }))
  const [system, refs] = await runtime.runPromise(
    Effect.flatMap(ActorSystem.ActorSystem, (system) =>
      Effect.map(
        Effect.forEach(
          Array.from({ length: SINK_ACTORS }, (_, i) => i),
          (i) => system.spawn(Receiver, `sink-${i}`)
        ),
        (refs) => [system, refs] as const
      )
    )
  )
  const scheduler = system.scheduler
  const targets: ReadonlyArray<ActorRef.ActorRef<number>> = refs
  await runtime.runPromise(scheduler.scheduleOnce(KEEP_ALIVE_MILLIS, targets[0]!, -1))
  return {
    name: TICKWORK_IMPL,
    schedule: (n, due) =>
      runtime.runPromise(
        Effect.gen(function* () {
          for (let i = 0; i < n; i++) yield* scheduler.scheduleOnce(delayTo(due[i]!), targets[i % SINK_ACTORS]!, i)
        })
      ),
    dispose: () => runtime.dispose()
  }
}

const nodeImpl = (sink: Sink): SpreadImpl => {
  const onFire = (i: number) => {
    const now = performance.now()
    sink.recorder.record(now - sink.due[i]!, now)
  }
  const keepAlive = setTimeout(() => {}, KEEP_ALIVE_MILLIS)
  return {
    name: NODE_IMPL,
    schedule: async (n, due) => {
      for (let i = 0; i < n; i++) setTimeout(onFire, delayTo(due[i]!), i)
    },
    dispose: async () => clearTimeout(keepAlive)
  }
}

export interface SpreadRun {
  readonly impl: string
  readonly timers: number
  readonly handled: number
  /** How long scheduling every timer took. */
  readonly scheduleMillis: number
  /** From the start of scheduling to the first due instant. */
  readonly leadMillis: number
  /** False when scheduling overran the lead (the first timers were then late before they were even scheduled). */
  readonly scheduledInTime: boolean
  /** True when this is the second try of a size whose first try overran its lead (with a longer lead). */
  readonly retried: boolean
  /** From the first due time (burst) or from the end of the stall (drain) to the last timer handled. */
  readonly allHandledMillis: number
  readonly latenessMillis: LatenessSummary
  readonly cpuPercent: number
  /** Garbage collections that started in the same window, and their pauses' total milliseconds. */
  readonly gcPauses: number
  readonly gcMillis: number
  /** CPU % and time per handled timer, from the first due instant (drain: the end of the stall) to the last handled. */
  readonly cpuMicrosPerTimer: number
}

/** Makes the implementations, each with its own sink; the caller disposes them. */
const makeImpls = async (): Promise<Array<{ readonly impl: SpreadImpl; readonly sink: Sink }>> => {
  const pair = async (make: (sink: Sink) => SpreadImpl | Promise<SpreadImpl>) => {
    const sink: Sink = { due: new Float64Array(0), recorder: new CompletionRecorder(0) }
    return { impl: await make(sink), sink }
  }
  return [await pair(tickworkImpl), await pair(nodeImpl)]
}

/**
 * Schedules `n` timers due over `[T, T + windowMillis)` in random order (T: after the lead), waits until all are
 * handled (or `timeoutMillis` after the window), and reports. With `stallMillis`, the thread is kept busy from the
 * end of scheduling until `stallMillis` past the last due time, and the clock for `allHandledMillis` starts when the
 * stall ends (the drain).
 */
const runOnce = async (
  entry: { readonly impl: SpreadImpl; readonly sink: Sink },
  n: number,
  windowMillis: number,
  leadMillis: number,
  options: { readonly stallMillis?: number; readonly timeoutMillis: number }
): Promise<SpreadRun> => {
  const { impl, sink } = entry
  const due = new Float64Array(n)
  sink.due = due
  sink.recorder = new CompletionRecorder(n)
  fullGc()
  const t0 = performance.now()
  const first = t0 + leadMillis
  for (let i = 0; i < n; i++) due[i] = first + Math.random() * windowMillis
  await impl.schedule(n, due)
  const scheduled = performance.now()
  let from = first
  if (options.stallMillis !== undefined) {
    blockUntil(first + windowMillis + options.stallMillis)
    from = performance.now()
  } else {
    // A Node timer, ordered before the first due instant: nothing else runs on it.
    await sleep(first - performance.now() - 1)
  }
  // Opened at the first due instant (drain: after the stall, which is not charged to the timers).
  const window = openCpuWindow()
  await sink.recorder.done(first + windowMillis + (options.stallMillis ?? 0) + options.timeoutMillis)
  const cpu = window.close()
  const recorder = sink.recorder
  return {
    impl: impl.name,
    timers: n,
    handled: recorder.count,
    scheduleMillis: scheduled - t0,
    leadMillis,
    scheduledInTime: scheduled < first,
    retried: false,
    allHandledMillis: recorder.lastAt - from,
    latenessMillis: recorder.summary(),
    cpuPercent: cpu.cpuPercent,
    gcPauses: cpu.gcPauses,
    gcMillis: cpu.gcMillis,
    cpuMicrosPerTimer: (cpu.cpuPercent * cpu.wallMillis * 10) / recorder.count
  }
}

/**
 * The time given to schedule n timers before the first is due: 2.5 µs per timer (both implementations schedule 1M
 * in 0.7-1.7 s on the 2-core machine the bench was written on). A run that overruns it is run again with more.
 */
const leadFor = (n: number): number => 300 + n * 0.0025

/** Runs each implementation at each size: warm-up rounds of 10k timers first (JIT), then the measured round. */
const runSpread = async (
  sizes: ReadonlyArray<number>,
  windowFor: (n: number) => number,
  options: { readonly stallMillis?: number; readonly timeoutMillis: number },
  log: (line: string) => void,
  label: string
): Promise<Array<SpreadRun>> => {
  const runs: Array<SpreadRun> = []
  for (const entry of await makeImpls()) {
    try {
      // Warm-up rounds (compiled code); not reported.
      for (let i = 0; i < 2; i++) await runOnce(entry, 10_000, 50, 200, { timeoutMillis: 5_000 })
      for (const n of sizes) {
        let run = await runOnce(entry, n, windowFor(n), leadFor(n), options)
        if (!run.scheduledInTime) {
          // Scheduling cost grows faster than n (gc); one more try, with a lead sized from the one that overran.
          log(
            `  ${label} ${run.impl} @ ${fmtInt(n)}: scheduling took ${fmtInt(run.scheduleMillis)} ms, over the lead: again`
          )
          run = { ...(await runOnce(entry, n, windowFor(n), 500 + 1.5 * run.scheduleMillis, options)), retried: true }
        }
        log(
          `  ${label} ${run.impl} @ ${fmtInt(n)}: ${fmtInt(run.handled)} handled in ${fmtNum(run.allHandledMillis)} ms, ` +
            `p99 ${fmtNum(run.latenessMillis.p99)} ms, ${fmtNum(run.cpuMicrosPerTimer, 2)} µs/timer` +
            (run.scheduledInTime ? "" : ` (scheduling took ${fmtNum(run.scheduleMillis)} ms, over the lead!)`)
        )
        runs.push(run)
        await sleep(100)
      }
    } finally {
      await entry.impl.dispose()
    }
  }
  return runs
}

export const pick = (runs: ReadonlyArray<SpreadRun>, impl: string, n: number): SpreadRun | undefined =>
  runs.find((r) => r.impl === impl && r.timers === n)

// ---------------------------------------------------------------- burst

export interface BurstResult {
  readonly scenario: "burst"
  readonly timers: number
  readonly windowMillis: number
  readonly sinkActors: number
  readonly tickwork: SpreadRun
  readonly baselines: { readonly nodeSetTimeout: SpreadRun }
  readonly targets: ReadonlyArray<TargetRow>
}

/** "All handled in ~1 s": the last timer handled at most 10% after the end of the 1 s window. */
const BURST_SLACK = 1.1

export const runBurst = async (
  options: { readonly timers: number; readonly targetTimers: number },
  log: (line: string) => void
): Promise<BurstResult> => {
  const windowMillis = 1_000
  const runs = await runSpread([options.timers], () => windowMillis, { timeoutMillis: 30_000 }, log, "burst")
  const tw = pick(runs, TICKWORK_IMPL, options.timers)!
  const node = pick(runs, NODE_IMPL, options.timers)!
  const sized =
    options.timers === options.targetTimers
      ? {}
      : { note: `sized down from ${fmtInt(options.targetTimers)} timers (quick mode)` }
  const n = fmtCount(options.timers)
  return {
    scenario: "burst",
    timers: options.timers,
    windowMillis,
    sinkActors: SINK_ACTORS,
    tickwork: tw,
    baselines: { nodeSetTimeout: node },
    targets: [
      {
        target: `burst ${n} due in 1 s: all handled in ≤ ${BURST_SLACK} s`,
        measured: `${fmtInt(tw.handled)} in ${fmtNum(tw.allHandledMillis / 1000, 2)} s`,
        baseline: `node ${fmtNum(node.allHandledMillis / 1000, 2)} s`,
        pass: tw.handled === tw.timers && tw.allHandledMillis <= BURST_SLACK * windowMillis,
        ...sized
      },
      {
        target: `burst ${n}: p99 lateness ≤ node's`,
        measured: `${fmtNum(tw.latenessMillis.p99)} ms`,
        baseline: `node ${fmtNum(node.latenessMillis.p99)} ms`,
        pass: tw.latenessMillis.p99 <= node.latenessMillis.p99,
        ...sized
      }
    ]
  }
}

const spreadTable = (runs: ReadonlyArray<SpreadRun>, first: string): string =>
  table(
    [
      "implementation",
      "timers",
      "handled",
      "schedule ms",
      "lead ms",
      first,
      "late p50 ms",
      "p99 ms",
      "max ms",
      "CPU %",
      "µs/timer",
      "GC pauses"
    ],
    runs.map((r) => [
      r.impl,
      fmtInt(r.timers),
      fmtInt(r.handled),
      `${fmtInt(r.scheduleMillis)}${r.scheduledInTime ? "" : "!"}${r.retried ? " again" : ""}`,
      fmtInt(r.leadMillis),
      fmtInt(r.allHandledMillis),
      ...latenessCells(r.latenessMillis),
      fmtNum(r.cpuPercent, 0),
      fmtNum(r.cpuMicrosPerTimer, 2),
      `${r.gcPauses}: ${fmtNum(r.gcMillis)} ms`
    ])
  )

export const formatBurst = (result: BurstResult): string => {
  const tw = result.tickwork
  const node = result.baselines.nodeSetTimeout
  return [
    `Burst: ${fmtInt(result.timers)} one-shot timers due at random instants within one second, real clock ` +
      `(tickwork: message schedules to ${result.sinkActors} actors, handled in their receive)`,
    spreadTable([tw, node], "all handled ms"),
    `tickwork vs node: all handled ${fmtRatio(tw.allHandledMillis, node.allHandledMillis)}, ` +
      `p99 lateness ${fmtRatio(tw.latenessMillis.p99, node.latenessMillis.p99)}, ` +
      `CPU per timer ${fmtRatio(tw.cpuMicrosPerTimer, node.cpuMicrosPerTimer)}`,
    "all handled: from the first due instant to the last timer handled (1,000 ms at best). Lateness: handled − due.",
    "schedule ms: scheduling every timer, which must end within the lead (! = it overran: the first timers were late;",
    "a size that overran is run once more with a longer lead, marked 'again'). CPU and GC pauses (collections, and",
    "their total pause): from the first due instant on."
  ].join("\n")
}

// ---------------------------------------------------------------- drain

export interface DrainResult {
  readonly scenario: "drain"
  readonly timers: number
  readonly stallMillis: number
  readonly tickwork: SpreadRun & { readonly timersPerSec: number }
  readonly baselines: { readonly nodeSetTimeout: SpreadRun & { readonly timersPerSec: number } }
  readonly targets: ReadonlyArray<TargetRow>
}

const STALL_MILLIS = 200
const DRAIN_WINDOW_MILLIS = 50

export const runDrain = async (
  options: { readonly timers: number; readonly targetTimers: number },
  log: (line: string) => void
): Promise<DrainResult> => {
  const runs = await runSpread(
    [options.timers],
    () => DRAIN_WINDOW_MILLIS,
    { stallMillis: STALL_MILLIS, timeoutMillis: 30_000 },
    log,
    "drain"
  )
  const withRate = (r: SpreadRun) => ({ ...r, timersPerSec: (r.handled / r.allHandledMillis) * 1000 })
  const tw = withRate(pick(runs, TICKWORK_IMPL, options.timers)!)
  const node = withRate(pick(runs, NODE_IMPL, options.timers)!)
  return {
    scenario: "drain",
    timers: options.timers,
    stallMillis: STALL_MILLIS,
    tickwork: tw,
    baselines: { nodeSetTimeout: node },
    targets: [
      {
        target: `drain ${fmtCount(options.timers)} overdue: timers/s ≥ node's`,
        measured: `${fmtRate(tw.timersPerSec)}/s`,
        baseline: `node ${fmtRate(node.timersPerSec)}/s`,
        pass: tw.handled === tw.timers && tw.timersPerSec >= node.timersPerSec,
        ...(options.timers === options.targetTimers
          ? {}
          : { note: `sized down from ${fmtInt(options.targetTimers)} timers (quick mode)` })
      }
    ]
  }
}

export const formatDrain = (result: DrainResult): string => {
  const tw = result.tickwork
  const node = result.baselines.nodeSetTimeout
  return [
    `Drain: ${fmtInt(result.timers)} one-shot timers due within ${DRAIN_WINDOW_MILLIS} ms, the thread kept busy ` +
      `until ${result.stallMillis} ms after the last was due, then drained (real clock, no TestClock)`,
    spreadTable([tw, node], "drain ms"),
    table(
      ["implementation", "drained/s", "vs node"],
      [
        [tw.impl, fmtRate(tw.timersPerSec), fmtRatio(tw.timersPerSec, node.timersPerSec)],
        [node.impl, fmtRate(node.timersPerSec), "1"]
      ]
    ),
    "drain ms: from the end of the stall to the last timer handled; drained/s = handled / drain time. CPU and GC",
    "pauses: from the end of the stall on."
  ].join("\n")
}

// ---------------------------------------------------------------- linearity (the actor rows)

/** Timers delivered at a constant rate (`ratePerSec`), so that only the number of timers changes between sizes. */
export const runDelivered = (
  sizes: ReadonlyArray<number>,
  ratePerSec: number,
  log: (line: string) => void
): Promise<Array<SpreadRun>> =>
  runSpread(sizes, (n) => (n / ratePerSec) * 1000, { timeoutMillis: 30_000 }, log, "delivered")
