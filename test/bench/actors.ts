/**
 * Actor scenario: N actors, each with one periodic timer, on the real clock. For each design it measures, over a
 * window that opens after every timer runs and the heap was read:
 *
 * - share of expected ticks handled (expected = actors × window / interval),
 * - tick lateness p50 / p99 / max, taken at handler start against the tick's due time as the timer defines it,
 * - CPU % of one core (`process.cpuUsage`, all threads) and event-loop utilization,
 * - heap per actor (after gc, against the heap before anything was started).
 *
 * Designs:
 * - tickwork: one actor per timer, `ctx.timers.startTimerAtFixedRate`; due = start + n × interval (fixed grid).
 * - node: `setInterval` calling a counting callback. Node's repeat is fixed-delay (the next run is `interval` after
 *   the callback started), so due = previous callback start + interval; drift shows up as missing ticks.
 * - naive Effect (DESIGN §2): per actor one fiber `Effect.repeat(Queue.offer, Schedule.fixed(interval))` and an
 *   unbounded `Queue` drained by one consumer fiber. `Schedule.fixed` keeps a grid and skips missed runs; each tick
 *   carries the grid slot it fired for, due = that slot (so lateness includes queueing, skipped ticks show as missing).
 */
import * as v8 from "node:v8"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { Actor, ActorSystem } from "../../src/index.js"
import {
  fmtBytes,
  fmtCount,
  fmtInt,
  fmtNum,
  fmtPercent,
  fmtRatio,
  heapAfterGc,
  type LatenessSummary,
  latenessCells,
  openCpuWindow,
  sleep,
  type TargetRow,
  TickRecorder,
  TimerLagProbe,
  table
} from "./stats.js"

export interface ActorsOptions {
  /** The scenario's name (`--only=<name>`). */
  readonly name: string
  readonly actors: number
  readonly intervalMillis: number
  /** Length of the measured window (rounded to a whole number of intervals). */
  readonly windowMillis: number
  /** Minimum time between the last timer start and the heap reading / window. */
  readonly warmupMillis: number
  /**
   * Longest warm-up: after `warmupMillis` the bench waits (in probes of 500 ms) until the design is caught up, i.e.
   * fewer than 1% of its ticks are more than one interval late, but no longer than this.
   */
  readonly maxWarmupMillis: number
  /**
   * The issue's size when this run measures fewer actors (quick mode): printed and kept in the JSON, so a sized-down
   * run is never mistaken for the target's.
   */
  readonly targetActors?: number
}

export interface DesignResult {
  readonly design: string
  readonly actors: number
  /** Milliseconds to start every actor/timer (until control came back to the bench). */
  readonly startMillis: number
  /** tickwork: the part of `startMillis` spent spawning the actors (before their timers were started). */
  readonly spawnMillis?: number
  /** Milliseconds from the end of the start to the heap reading. */
  readonly warmupMillis: number
  /** False when the warm-up hit `maxWarmupMillis` with the design still behind (the window then sees a backlog). */
  readonly caughtUp: boolean
  readonly windowMillis: number
  readonly handled: number
  readonly expected: number
  readonly share: number
  /**
   * Share of the ticks that fell due: the same as `share` for fixed-rate designs; for a fixed-delay design
   * (`setInterval`) handled / (handled + ticks overdue when the window closed).
   */
  readonly dueShare: number
  /** Ticks handled per second of the window. */
  readonly ticksPerSec: number
  readonly latenessMillis: LatenessSummary
  readonly cpuPercent: number
  /** CPU time per handled tick, in microseconds. */
  readonly cpuMicrosPerTick: number
  readonly eventLoopUtilization: number
  readonly heapBytesPerActor: number
  /** Milliseconds to stop everything (close the scope / clear the intervals). */
  readonly stopMillis: number
  /**
   * How late a Node timer probe (every 50 ms) ran during the window. Seconds here mean the design kept the microtask
   * queue busy and starved Node's timers and I/O.
   */
  readonly timerLagMillis: { readonly maxMillis: number; readonly meanMillis: number; readonly probes: number }
  /**
   * Times per second the process gave up the CPU to wait (voluntary context switches, all threads): each is a
   * wake-up the OS must grant again, which costs scheduling delay when other processes compete for the cores.
   */
  readonly waitsPerSec: number
}

export interface ActorsResult {
  readonly scenario: string
  readonly options: ActorsOptions
  readonly tickwork: DesignResult
  readonly baselines: { readonly nodeSetInterval: DesignResult; readonly naiveEffect: DesignResult | undefined }
  /** Why the naive design ran with fewer actors than the others, or not at all. */
  readonly naiveNote: string | undefined
  /** tickwork / baseline for each metric. */
  readonly ratios: {
    readonly vsNode: Ratios
    readonly vsNaiveEffect: Ratios | undefined
  }
  readonly targets: ReadonlyArray<TargetRow>
}

export interface Ratios {
  readonly share: number
  readonly latenessP50: number
  readonly latenessP99: number
  readonly cpu: number
  readonly cpuPerTick: number
  readonly heapPerActor: number
}

/** A design under test: starts one timer per actor and returns how to stop them all. */
export interface Design {
  readonly name: string
  readonly start: (
    recorder: TickRecorder,
    options: ActorsOptions
  ) => Promise<{
    readonly stop: () => Promise<void>
    readonly spawnMillis?: number
    /**
     * Fixed-delay designs only: how many timers have a tick that fell due before `now` and has not run. Such a design
     * never skips a tick (each falls due `interval` after the previous one ran), so its share of the nominal rate
     * measures drift; the ticks that fell due and were not handled are these.
     */
    readonly overdue?: (now: number) => number
  }>
}

// ---------------------------------------------------------------- designs

type TickerMsg = "start" | "tick"

interface TickerState {
  start: number
  n: number
}

/**
 * Spawns every actor first, then tells each to start its timer: spawning is measured apart (`spawnMillis`) and the
 * timers start in one burst, as the baselines' do. Starting the timer in `preStart` instead would make the first
 * actors' ticks compete with the remaining spawns and build a backlog before the window opens.
 */
export const tickwork: Design = {
  name: "tickwork actors (startTimerAtFixedRate)",
  start: async (recorder, { actors, intervalMillis }) => {
    const Ticker = Actor.make<TickerMsg>()({
      preStart: () => Effect.sync((): TickerState => ({ start: 0, n: 0 })),
      receive: (msg, ctx, state) => {
        if (msg === "start") {
          state.start = performance.now()
          return Effect.as(Effect.orDie(ctx.timers.startTimerAtFixedRate("tick", "tick", intervalMillis)), state)
        }
        return Effect.sync(() => {
          const now = performance.now()
          state.n++
          recorder.record(now - (state.start + state.n * intervalMillis), now)
          return state
        })
      }
    })
    const runtime = ManagedRuntime.make(ActorSystem.layer({ name: "bench-actors" }))
    const t0 = performance.now()
    const refs = await runtime.runPromise(
      Effect.flatMap(ActorSystem.ActorSystem, (system) =>
        Effect.forEach(
          Array.from({ length: actors }, (_, i) => i),
          (i) => system.spawn(Ticker, `t${i}`)
        )
      )
    )
    const spawnMillis = performance.now() - t0
    await runtime.runPromise(Effect.forEach(refs, (ref) => ref.tell("start"), { discard: true }))
    // Disposing closes the layer's scope: every actor stops, every timer is cancelled, the driver ends.
    return { stop: () => runtime.dispose(), spawnMillis }
  }
}

/**
 * tickwork with Node's repeat semantics: `startTimerWithFixedDelay`, each tick `interval` after the previous one was
 * sent. Lateness and overdue ticks are counted as for `setInterval` (due = previous handled + interval), so the two
 * compare like for like under contention, where a fixed-rate design would also count the ticks a stall made it owe.
 */
export const tickworkFixedDelay: Design = {
  name: "tickwork actors (startTimerWithFixedDelay)",
  start: async (recorder, { actors, intervalMillis }) => {
    const states: Array<{ due: number }> = []
    const Ticker = Actor.make<TickerMsg>()({
      preStart: () =>
        Effect.sync(() => {
          const state = { due: Number.POSITIVE_INFINITY }
          states.push(state)
          return state
        }),
      receive: (msg, ctx, state) => {
        if (msg === "start") {
          state.due = performance.now() + intervalMillis
          return Effect.as(Effect.orDie(ctx.timers.startTimerWithFixedDelay("tick", "tick", intervalMillis)), state)
        }
        return Effect.sync(() => {
          const now = performance.now()
          recorder.record(now - state.due, now)
          state.due = now + intervalMillis
          return state
        })
      }
    })
    const runtime = ManagedRuntime.make(ActorSystem.layer({ name: "bench-actors-fixed-delay" }))
    const t0 = performance.now()
    const refs = await runtime.runPromise(
      Effect.flatMap(ActorSystem.ActorSystem, (system) =>
        Effect.forEach(
          Array.from({ length: actors }, (_, i) => i),
          (i) => system.spawn(Ticker, `t${i}`)
        )
      )
    )
    const spawnMillis = performance.now() - t0
    await runtime.runPromise(Effect.forEach(refs, (ref) => ref.tell("start"), { discard: true }))
    return {
      stop: () => runtime.dispose(),
      spawnMillis,
      overdue: (now) => {
        let n = 0
        for (const state of states) if (state.due < now) n++
        return n
      }
    }
  }
}

export const nodeSetInterval: Design = {
  name: "node setInterval (baseline)",
  start: async (recorder, { actors, intervalMillis }) => {
    const handles: Array<NodeJS.Timeout> = []
    const states: Array<{ due: number; n: number }> = []
    for (let i = 0; i < actors; i++) {
      const state = { due: performance.now() + intervalMillis, n: 0 }
      handles.push(
        setInterval(() => {
          const now = performance.now()
          state.n++
          recorder.record(now - state.due, now)
          state.due = now + intervalMillis
        }, intervalMillis)
      )
      states.push(state)
    }
    return {
      overdue: (now) => {
        let n = 0
        for (const state of states) if (state.due < now) n++
        return n
      },
      stop: async () => {
        for (const handle of handles) clearInterval(handle)
      }
    }
  }
}

const naiveEffect: Design = {
  name: "naive Effect (fiber per timer + Queue)",
  start: async (recorder, { actors, intervalMillis }) => {
    const scope = Effect.runSync(Scope.make())
    const one = Effect.gen(function* () {
      const queue = yield* Queue.unbounded<number>()
      let anchor = -1
      const offer = Effect.suspend(() => {
        const now = performance.now()
        if (anchor < 0) anchor = now
        // The grid slot Schedule.fixed fired for (1 ms of tolerance: the schedule wakes on Date.now millis).
        const slot = anchor + Math.floor((now - anchor + 1) / intervalMillis) * intervalMillis
        return Queue.offer(queue, slot)
      })
      const timer = Effect.zipRight(Effect.sleep(intervalMillis), Effect.repeat(offer, Schedule.fixed(intervalMillis)))
      const consumer = Effect.forever(
        Effect.flatMap(Queue.take(queue), (slot) =>
          Effect.sync(() => {
            const now = performance.now()
            recorder.record(now - slot, now)
          })
        )
      )
      yield* Effect.forkIn(consumer, scope)
      yield* Effect.forkIn(timer, scope)
    })
    await Effect.runPromise(Effect.forEach(Array.from({ length: actors }), () => one, { discard: true }))
    // Closing the scope interrupts every timer and consumer fiber.
    return { stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
  }
}

// ---------------------------------------------------------------- measurement

export const runDesign = async (
  design: Design,
  options: ActorsOptions,
  log: (line: string) => void
): Promise<DesignResult> => {
  const { actors, intervalMillis, warmupMillis, maxWarmupMillis } = options
  // A whole number of intervals: timers started together tick in phase, and a window of 1.5 intervals would see one
  // tick of some actors and two of others.
  const windowMillis = Math.max(1, Math.round(options.windowMillis / intervalMillis)) * intervalMillis
  const recorder = new TickRecorder(Math.ceil(((actors * windowMillis) / intervalMillis) * 1.5), intervalMillis)
  const h0 = heapAfterGc()
  const t0 = performance.now()
  const { stop, spawnMillis, overdue } = await design.start(recorder, options)
  const started = performance.now()
  const startMillis = started - t0
  // Deadlines go through the recorder: under overload Node timers may not run until the design is stopped.
  await recorder.until(started + warmupMillis)
  let caughtUp = false
  for (;;) {
    recorder.resetRecent()
    const p0 = performance.now()
    await recorder.until(p0 + 500)
    if (recorder.recentCount > 0 && recorder.recentLate < 0.01 * recorder.recentCount) {
      caughtUp = true
      break
    }
    if (performance.now() - started >= maxWarmupMillis) break
  }
  const warmedMillis = performance.now() - started
  const h1 = heapAfterGc()
  // Let the ticks delayed by the gc pause drain before the window opens.
  await recorder.until(performance.now() + Math.min(2 * intervalMillis, 500))
  recorder.open = true
  const switches0 = process.resourceUsage().voluntaryContextSwitches
  const window = openCpuWindow()
  const probe = new TimerLagProbe()
  probe.start()
  await recorder.until(performance.now() + windowMillis)
  recorder.open = false
  const measured = window.close()
  const switches = process.resourceUsage().voluntaryContextSwitches - switches0
  const overdueAtClose = overdue?.(performance.now())
  const timerLagMillis = probe.stop()
  const t1 = performance.now()
  await stop()
  const stopMillis = performance.now() - t1
  const expected = (actors * measured.wallMillis) / intervalMillis
  const result: DesignResult = {
    design: design.name,
    actors,
    startMillis,
    ...(spawnMillis === undefined ? {} : { spawnMillis }),
    warmupMillis: warmedMillis,
    caughtUp,
    windowMillis: measured.wallMillis,
    handled: recorder.count,
    expected,
    share: recorder.count / expected,
    dueShare:
      overdueAtClose === undefined ? recorder.count / expected : recorder.count / (recorder.count + overdueAtClose),
    ticksPerSec: (recorder.count / measured.wallMillis) * 1000,
    latenessMillis: recorder.summary(),
    cpuPercent: measured.cpuPercent,
    cpuMicrosPerTick: (measured.cpuPercent * measured.wallMillis * 10) / recorder.count,
    eventLoopUtilization: measured.elu,
    heapBytesPerActor: (h1 - h0) / actors,
    stopMillis,
    timerLagMillis,
    waitsPerSec: (switches / measured.wallMillis) * 1000
  }
  log(
    `  ${design.name}: ${fmtPercent(result.share)} of ticks, p99 ${fmtNum(result.latenessMillis.p99)} ms, ` +
      `CPU ${fmtNum(result.cpuPercent, 0)}%, ${fmtBytes(result.heapBytesPerActor)}/actor` +
      `, Node timer lag max ${fmtInt(result.timerLagMillis.maxMillis)} ms, start ${fmtNum(startMillis / 1000)} s` +
      (spawnMillis === undefined ? "" : ` (spawn ${fmtNum(spawnMillis / 1000)} s)`)
  )
  return result
}

const ratios = (a: DesignResult, b: DesignResult): Ratios => ({
  share: a.share / b.share,
  latenessP50: a.latenessMillis.p50 / b.latenessMillis.p50,
  latenessP99: a.latenessMillis.p99 / b.latenessMillis.p99,
  cpu: a.cpuPercent / b.cpuPercent,
  cpuPerTick: a.cpuMicrosPerTick / b.cpuMicrosPerTick,
  heapPerActor: a.heapBytesPerActor / b.heapBytesPerActor
})

/** Heap per actor of the naive design, measured at 10k (17.7-17.9 KB): what sizing it down is based on. */
const NAIVE_BYTES_PER_ACTOR = 18 * 1024

/**
 * The naive design holds two fibers and a Queue per actor. It runs at full size while its estimated heap stays under
 * half of V8's heap limit; beyond that it is sized down (and the output says so) rather than crash the bench.
 */
const naiveSize = (actors: number): { readonly actors: number; readonly note: string | undefined } => {
  const budget = v8.getHeapStatistics().heap_size_limit / 2
  if (actors * NAIVE_BYTES_PER_ACTOR <= budget) return { actors, note: undefined }
  const fit = Math.floor(budget / NAIVE_BYTES_PER_ACTOR / 1000) * 1000
  return {
    actors: fit,
    note:
      `naive Effect sized down to ${fmtInt(fit)} actors: at ~18 KB per actor ${fmtInt(actors)} would need ` +
      `${fmtBytes(actors * NAIVE_BYTES_PER_ACTOR)}, over half the ${fmtBytes(budget * 2)} heap limit`
  }
}

export const runActors = async (
  options: ActorsOptions,
  { runNaive }: { readonly runNaive: boolean },
  log: (line: string) => void
): Promise<ActorsResult> => {
  const tw = await runDesign(tickwork, options, log)
  heapAfterGc()
  await sleep(200)
  const node = await runDesign(nodeSetInterval, options, log)
  heapAfterGc()
  await sleep(200)
  const sized = runNaive
    ? naiveSize(options.actors)
    : { actors: 0, note: "naive Effect skipped in quick mode (no time left under a minute); the full run measures it" }
  if (sized.note !== undefined) log(`  ${sized.note}`)
  const naive = sized.actors === 0 ? undefined : await runDesign(naiveEffect, { ...options, actors: sized.actors }, log)
  heapAfterGc()
  await sleep(200)
  return {
    scenario: options.name,
    options,
    tickwork: tw,
    baselines: { nodeSetInterval: node, naiveEffect: naive },
    naiveNote: sized.note,
    ratios: { vsNode: ratios(tw, node), vsNaiveEffect: naive === undefined ? undefined : ratios(tw, naive) },
    targets: actorTargets(options, tw, node)
  }
}

const sizeLabel = (options: ActorsOptions): string =>
  `${fmtCount(options.actors)} actors × ${options.intervalMillis >= 1000 ? `${options.intervalMillis / 1000} s` : `${options.intervalMillis} ms`}`

/** The issue's actor targets: ≥ 99% of ticks handled, p99 lateness ≤ 20 ms, CPU ≤ 60% of one core. */
const actorTargets = (options: ActorsOptions, tw: DesignResult, node: DesignResult): Array<TargetRow> => {
  const note =
    options.targetActors === undefined || options.targetActors === options.actors
      ? {}
      : { note: `sized down from ${fmtInt(options.targetActors)} actors (quick mode)` }
  const label = sizeLabel(options)
  return [
    {
      target: `actors ${label}: handled ≥ 99%`,
      measured: fmtPercent(tw.share),
      baseline: `node ${fmtPercent(node.share)}`,
      pass: tw.share >= 0.99,
      ...note
    },
    {
      target: `actors ${label}: p99 lateness ≤ 20 ms`,
      measured: `${fmtNum(tw.latenessMillis.p99)} ms`,
      baseline: `node ${fmtNum(node.latenessMillis.p99)} ms`,
      pass: tw.latenessMillis.p99 <= 20,
      ...note
    },
    {
      target: `actors ${label}: CPU ≤ 60% of a core`,
      measured: `${fmtNum(tw.cpuPercent, 0)}%`,
      baseline: `node ${fmtNum(node.cpuPercent, 0)}%`,
      pass: tw.cpuPercent <= 60,
      ...note
    }
  ]
}

export const formatActors = (result: ActorsResult): string => {
  const { actors, intervalMillis, windowMillis, targetActors } = result.options
  const naive = result.baselines.naiveEffect
  const designs = [result.tickwork, result.baselines.nodeSetInterval, ...(naive === undefined ? [] : [naive])]
  const rows = designs.map((d) => [
    d.design,
    fmtInt(d.actors),
    fmtInt(d.handled),
    fmtInt(d.expected),
    fmtPercent(d.share),
    ...latenessCells(d.latenessMillis),
    fmtNum(d.cpuPercent, 0),
    fmtNum(d.cpuMicrosPerTick, 1),
    fmtNum(d.eventLoopUtilization, 2),
    fmtInt(d.timerLagMillis.maxMillis),
    fmtBytes(d.heapBytesPerActor),
    fmtNum(d.startMillis / 1000),
    `${fmtNum(d.warmupMillis / 1000)}${d.caughtUp ? "" : "*"}`,
    fmtNum(d.stopMillis / 1000)
  ])
  const tw = result.tickwork
  const ratioRow = (label: string, base: DesignResult) => [
    label,
    fmtRatio(tw.share, base.share),
    fmtRatio(tw.latenessMillis.p50, base.latenessMillis.p50),
    fmtRatio(tw.latenessMillis.p99, base.latenessMillis.p99),
    fmtRatio(tw.cpuPercent, base.cpuPercent),
    fmtRatio(tw.cpuMicrosPerTick, base.cpuMicrosPerTick),
    fmtRatio(tw.heapBytesPerActor, base.heapBytesPerActor)
  ]
  const notes = [
    ...(targetActors !== undefined && targetActors !== actors
      ? [`NOTE: sized down from ${fmtInt(targetActors)} actors to ${fmtInt(actors)} (quick mode); run without --quick.`]
      : []),
    ...(result.naiveNote === undefined ? [] : [`NOTE: ${result.naiveNote}.`])
  ]
  return [
    `Actors [${result.scenario}]: ${fmtInt(actors)} × ${intervalMillis} ms periodic timer, real clock, ` +
      `${(windowMillis / 1000).toFixed(0)} s window (${fmtInt((actors * 1000) / intervalMillis)} ticks/s expected)`,
    ...notes,
    table(
      [
        "design",
        "actors",
        "handled",
        "expected",
        "share",
        "late p50 ms",
        "p99 ms",
        "max ms",
        "CPU %",
        "µs/tick",
        "ELU",
        "timer lag ms",
        "heap/actor",
        "start s",
        "warm-up s",
        "stop s"
      ],
      rows
    ),
    "",
    table(
      ["tickwork vs", "share", "late p50", "late p99", "CPU", "CPU/tick", "heap/actor"],
      [
        ratioRow("node setInterval", result.baselines.nodeSetInterval),
        ...(naive === undefined ? [] : [ratioRow("naive Effect", naive)])
      ]
    ),
    "share: ticks handled in the window / actors × window / interval. Lateness: handler start − due, where due is",
    "the fixed grid (tickwork), previous run + interval (node: fixed-delay) or the Schedule.fixed slot (naive).",
    "CPU %: of one core, all threads; µs/tick: CPU time per handled tick; ELU: event-loop utilization.",
    "timer lag: max lateness of a 50 ms Node setTimeout probe during the window; close to the window length means the",
    "design never let the microtask queue drain, which starves Node timers and I/O.",
    "start: creating every timer (tickwork: spawning the actors, then telling each to start its timer); warm-up:",
    "until < 1% of ticks are over one interval late (* = not reached: the window includes catching up on a backlog,",
    "so share can exceed 100%); stop: closing the scope / clearing the intervals."
  ].join("\n")
}
