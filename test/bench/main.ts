/**
 * `npm run bench [-- --quick] [-- --json] [-- --only=<scenario>[,<scenario>...]]`: the performance issue's
 * benchmarks, run one after the other in one process, each with its baselines (raw Node, naive Effect) in the same
 * run, then a summary of every target with the measured value, the baseline and pass/fail.
 *
 * Heap readings need `global.gc`, so when it is missing this file re-runs itself as
 * `node --expose-gc --no-flush-bytecode --import tsx test/bench/main.ts ...args` and exits with the child's status.
 *
 * --quick          smaller sizes and shorter windows (about a minute in all); sized-down rows say so
 * --json           also writes every figure to bench-results/latest.json (one object per scenario)
 * --only=<names>   runs some scenarios (comma-separated, or the flag repeated): engine, actors, actors-100k, push,
 *                  push-contended, memory, burst, drain, linearity, tracing, cluster
 * --size=<n>       cluster: grow one PostgreSQL runner's pending set to n reminders (default 50k; the issue's 1000000)
 * --recovery=<n>   cluster: overdue reminders of each kind at a full restart (default 5k; the issue's 100000)
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { EngineResult } from "./engine.js"
import { fullGc, loadAverage, sleep, type TargetRow, table } from "./stats.js"

const CHILD_ENV = "TICKWORK_BENCH_CHILD"
const self = fileURLToPath(import.meta.url)
const root = path.resolve(path.dirname(self), "../..")

const respawnWithGc = (): never => {
  if (process.env[CHILD_ENV] === "1") {
    console.error("bench: global.gc is still missing after re-spawning with --expose-gc")
    process.exit(1)
  }
  const child = spawnSync(
    process.execPath,
    ["--expose-gc", "--no-flush-bytecode", "--import", import.meta.resolve("tsx"), self, ...process.argv.slice(2)],
    { stdio: "inherit", env: { ...process.env, [CHILD_ENV]: "1" } }
  )
  if (child.error !== undefined) throw child.error
  process.exit(child.status ?? 1)
}

const log = (line: string): void => {
  process.stderr.write(`${line}\n`)
}

const SCENARIOS = [
  "engine",
  "actors",
  "actors-100k",
  "push",
  "push-contended",
  "memory",
  "burst",
  "drain",
  "linearity",
  "tracing",
  "cluster"
] as const
type ScenarioName = (typeof SCENARIOS)[number]

/** Pending-timer counts of the engine rows; the linearity scenario reuses the engine result only for the same list. */
const engineSizes = (quick: boolean): ReadonlyArray<number> =>
  quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]

const usage =
  "usage: npm run bench [-- --quick] [-- --json] [-- --only=<scenario>[,...]] [-- --size=<n>] [-- --recovery=<n>]" +
  `  scenarios: ${SCENARIOS.join(", ")}`

/** What every scenario result carries: its name (the JSON's `scenario`) and its rows of the final summary. */
interface Outcome {
  readonly scenario: string
  readonly targets: ReadonlyArray<TargetRow>
}

interface Scenario {
  readonly name: ScenarioName
  /** Runs the scenario: the printed section and the result (written to the JSON as is). */
  readonly run: (
    quick: boolean,
    log: (line: string) => void,
    sizes: ClusterSizes
  ) => Promise<{ readonly text: string; readonly result: Outcome }>
}

/** `--size=<n>` (the cluster's largest pending set) and `--recovery=<n>` (overdue reminders at a restart). */
interface ClusterSizes {
  readonly size: number | undefined
  readonly recovery: number | undefined
}

/** The cluster pending set's steps: decades from 10k up to `largest`, then `largest` itself. */
const growthSteps = (largest: number): ReadonlyArray<number> => {
  const steps: Array<number> = []
  for (let n = 10_000; n < largest; n *= 10) steps.push(n)
  steps.push(largest)
  return steps
}

/** The engine result of this run, for the linearity table (set by the engine scenario when it ran). */
let engineOfThisRun: EngineResult | undefined

const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "engine",
    run: async (quick, log) => {
      // Modules load lazily: the parent process that only re-spawns itself with --expose-gc skips them.
      const { engineTargets, formatEngine, runEngine } = await import("./engine.js")
      const engine = await runEngine({ sizes: engineSizes(quick), minMillis: quick ? 200 : 1_000 }, log)
      engineOfThisRun = engine
      return { text: formatEngine(engine), result: { ...engine, targets: engineTargets(engine) } }
    }
  },
  {
    name: "actors",
    run: async (quick, log) => {
      const { formatActors, runActors } = await import("./actors.js")
      const result = await runActors(
        {
          name: "actors",
          actors: 10_000,
          intervalMillis: 100,
          windowMillis: quick ? 1_000 : 10_000,
          warmupMillis: quick ? 500 : 1_000,
          maxWarmupMillis: quick ? 1_500 : 15_000
        },
        { runNaive: true },
        log
      )
      return { text: formatActors(result), result }
    }
  },
  {
    name: "actors-100k",
    run: async (quick, log) => {
      const { formatActors, runActors } = await import("./actors.js")
      const result = await runActors(
        {
          name: "actors-100k",
          actors: quick ? 10_000 : 100_000,
          targetActors: 100_000,
          intervalMillis: 1_000,
          windowMillis: quick ? 2_000 : 10_000,
          warmupMillis: quick ? 1_000 : 2_000,
          maxWarmupMillis: quick ? 1_500 : 20_000
        },
        // Quick mode has no room for a third design at 1 s ticks; the full run measures it.
        { runNaive: !quick },
        log
      )
      return { text: formatActors(result), result }
    }
  },
  {
    name: "push",
    run: async (quick, log) => {
      const { formatPush, runPush } = await import("./push.js")
      const result = await runPush(
        quick
          ? {
              startRate: 100_000,
              capRate: 100_000,
              maxActors: 20_000,
              bisectSteps: 0,
              windowMillis: 1_000,
              warmupMillis: 500,
              maxWarmupMillis: 1_000,
              budgetMillis: 8_000
            }
          : {
              startRate: 50_000,
              capRate: 3_200_000,
              maxActors: 20_000,
              bisectSteps: 2,
              windowMillis: 3_000,
              warmupMillis: 1_000,
              maxWarmupMillis: 4_000,
              budgetMillis: 90_000
            },
        log
      )
      return { text: formatPush(result), result }
    }
  },
  {
    name: "push-contended",
    run: async (quick, log) => {
      const { formatPush, runPushContended } = await import("./push.js")
      const result = await runPushContended(
        {
          startRate: 25_000,
          capRate: quick ? 400_000 : 3_200_000,
          maxActors: 20_000,
          bisectSteps: quick ? 1 : 2,
          windowMillis: quick ? 1_000 : 3_000,
          warmupMillis: quick ? 500 : 1_000,
          maxWarmupMillis: quick ? 1_500 : 4_000,
          budgetMillis: quick ? 60_000 : 120_000
        },
        log
      )
      return { text: formatPush(result), result }
    }
  },
  {
    name: "memory",
    run: async (quick, log) => {
      const { formatMemory, runMemory } = await import("./memory.js")
      const result = await runMemory(
        {
          idleActors: quick ? [10_000] : [10_000, 100_000],
          manyTimers: quick ? 50_000 : 1_000_000,
          singleTimerActivations: quick ? 5_000 : 100_000,
          readyTimeoutMillis: quick ? 10_000 : 120_000
        },
        log
      )
      return { text: formatMemory(result), result }
    }
  },
  {
    name: "burst",
    run: async (quick, log) => {
      const { formatBurst, runBurst } = await import("./burst.js")
      const result = await runBurst({ timers: quick ? 100_000 : 1_000_000, targetTimers: 1_000_000 }, log)
      return { text: formatBurst(result), result }
    }
  },
  {
    name: "drain",
    run: async (quick, log) => {
      const { formatDrain, runDrain } = await import("./burst.js")
      const result = await runDrain({ timers: quick ? 100_000 : 1_000_000, targetTimers: 1_000_000 }, log)
      return { text: formatDrain(result), result }
    }
  },
  {
    name: "linearity",
    run: async (quick, log) => {
      const { formatLinearity, runLinearity } = await import("./linearity.js")
      const sizes = engineSizes(quick)
      let engine = engineOfThisRun
      const fromThisRun = engine !== undefined && sizes.every((n) => engine?.rows.some((r) => r.pending === n))
      if (!fromThisRun) {
        const { runEngine } = await import("./engine.js")
        engine = await runEngine({ sizes, minMillis: quick ? 250 : 500 }, log)
      }
      const result = await runLinearity(
        { sizes, ratePerSec: 100_000 },
        engine!,
        fromThisRun ? "engine scenario of this run" : "measured by the linearity scenario",
        log
      )
      return { text: formatLinearity(result), result }
    }
  },
  {
    name: "tracing",
    run: async (quick, log) => {
      const { formatTracing, runTracing } = await import("./tracing.js")
      const result = await runTracing({ ticks: quick ? 100_000 : 500_000, rounds: quick ? 3 : 5 }, log)
      return { text: formatTracing(result), result }
    }
  },
  {
    name: "cluster",
    run: async (quick, log, { size, recovery }) => {
      const { formatCluster, runCluster } = await import("./cluster.js")
      const result = await runCluster(
        {
          oneAtATime: quick ? 300 : 1_000,
          batched: quick ? 1_000 : 5_000,
          concurrency: 50,
          callers: [50, 500],
          batchesInFlight: [1, 2, 4],
          largeBatch: quick ? 4_000 : 20_000,
          lateness: quick ? [500] : [1_000],
          windowMillis: 5_000,
          retained: quick ? 1_000 : 5_000,
          crons: quick ? 5 : 10,
          cronMillis: quick ? 5_000 : 10_000,
          sizes: size !== undefined ? growthSteps(size) : quick ? [5_000] : [10_000, 50_000],
          recovery: recovery ?? (quick ? 1_000 : 5_000),
          killed: quick ? 500 : 2_000,
          killedWindowMillis: quick ? 10_000 : 20_000
        },
        log
      )
      return { text: formatCluster(result), result }
    }
  }
]

const fail = (message: string): never => {
  console.error(`bench: ${message}\n${usage}`)
  process.exit(2)
}

const parseArgs = (argv: ReadonlyArray<string>) => {
  let quick = false
  let json = false
  let size: number | undefined
  let recovery: number | undefined
  const count = (arg: string): number => {
    const n = Number(arg.slice(arg.indexOf("=") + 1))
    return Number.isInteger(n) && n > 0 ? n : fail(`${arg}: not a positive integer`)
  }
  const only = new Set<ScenarioName>()
  for (const arg of argv) {
    if (arg === "--quick") quick = true
    else if (arg === "--json") json = true
    else if (arg.startsWith("--size=")) size = count(arg)
    else if (arg.startsWith("--recovery=")) recovery = count(arg)
    else if (arg.startsWith("--only=")) {
      const names = arg.slice("--only=".length).split(",")
      for (const name of names) {
        const known = SCENARIOS.find((s) => s === name)
        if (known === undefined) fail(`unknown scenario "${name}" in ${arg}`)
        else only.add(known)
      }
    } else fail(`unknown argument ${arg}`)
  }
  return { quick, json, only, sizes: { size, recovery } }
}

const formatSummary = (rows: ReadonlyArray<TargetRow>): string =>
  table(
    ["target (issue 6)", "tickwork", "baseline (same run)", "result", "note"],
    rows.map((r) => [
      r.target,
      r.measured,
      r.baseline,
      r.pass === undefined ? "-" : r.pass ? "pass" : "FAIL",
      r.note ?? ""
    ])
  )

const main = async (): Promise<void> => {
  const { quick, json, only, sizes: clusterSizes } = parseArgs(process.argv.slice(2))
  const selected = scenarios.filter((s) => only.size === 0 || only.has(s.name))
  const started = performance.now()
  const mode = quick ? "quick" : "default"
  const cpus = os.cpus()
  const machine = `node ${process.version}, ${cpus.length} CPU(s) ${cpus[0]?.model ?? ""}, ${os.platform()}/${os.arch()}`
  const loadAtStart = loadAverage()
  log(`bench (${mode}): ${machine}, load average ${loadAtStart}`)

  const sections: Array<string> = []
  const results: Array<Outcome> = []
  const seconds: Record<string, number> = {}
  const loads: Record<string, string> = {}
  for (const scenario of selected) {
    loads[scenario.name] = loadAverage()
    log(`${scenario.name} ... (load average ${loads[scenario.name]})`)
    const t0 = performance.now()
    const { text, result } = await scenario.run(quick, log, clusterSizes)
    seconds[scenario.name] = (performance.now() - t0) / 1000
    sections.push(
      `${text}\n(${scenario.name}: ${seconds[scenario.name]!.toFixed(1)} s, load average at start ${loads[scenario.name]})`
    )
    results.push(result)
    fullGc()
    await sleep(200)
  }
  seconds.total = (performance.now() - started) / 1000
  const loadAtEnd = loadAverage()
  const targets = results.flatMap((r) => r.targets)
  const timing = Object.entries(seconds)
    .map(([name, s]) => `${name} ${s.toFixed(1)} s`)
    .join(", ")
  console.log(
    [
      "",
      `tickwork bench (${mode}) — ${machine}`,
      `load average (1, 5, 15 min): ${loadAtStart} at start, ${loadAtEnd} at the end; the machine is shared, so ` +
        "compare rows within one run",
      "",
      sections.join("\n\n"),
      "",
      `Summary (${mode}${only.size === 0 ? "" : `, only ${[...only].join(",")}`}; load average ${loadAtEnd})`,
      formatSummary(targets),
      `${targets.filter((t) => t.pass === true).length} pass, ${targets.filter((t) => t.pass === false).length} fail` +
        `, ${targets.filter((t) => t.pass === undefined).length} not measured`,
      "",
      timing
    ].join("\n")
  )

  if (json) {
    const dir = path.join(root, "bench-results")
    mkdirSync(dir, { recursive: true })
    const file = path.join(dir, "latest.json")
    const data = {
      meta: {
        date: new Date().toISOString(),
        mode,
        only: only.size === 0 ? null : [...only],
        node: process.version,
        platform: `${os.platform()}/${os.arch()}`,
        cpus: cpus.length,
        cpuModel: cpus[0]?.model,
        loadAverage: { start: loadAtStart, end: loadAtEnd, perScenario: loads },
        seconds
      },
      scenarios: results,
      summary: targets
    }
    writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`)
    console.log(`\nwrote ${file}`)
  }
}

if (globalThis.gc === undefined) respawnWithGc()
else
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
