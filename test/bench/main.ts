/**
 * `npm run bench [-- --quick] [-- --json]`: the engine and actor benchmarks, run one after the other in one process.
 *
 * Heap readings need `global.gc`, so when it is missing this file re-runs itself as
 * `node --expose-gc --no-flush-bytecode --import tsx test/bench/main.ts ...args` and exits with the child's status.
 *
 * --quick          smaller sizes and shorter windows (about a minute in all)
 * --json           also writes every figure to bench-results/latest.json
 * --only=engine    runs one scenario (or --only=actors)
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { ActorsResult } from "./actors.js"
import type { EngineResult } from "./engine.js"
import { fullGc, sleep } from "./stats.js"

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

const usage = "usage: npm run bench [-- --quick] [-- --json] [-- --only=engine|actors]"

const main = async (): Promise<void> => {
  let quick = false
  let json = false
  let only: "engine" | "actors" | undefined
  for (const arg of process.argv.slice(2)) {
    if (arg === "--quick") quick = true
    else if (arg === "--json") json = true
    else if (arg === "--only=engine" || arg === "--only=actors") only = arg === "--only=engine" ? "engine" : "actors"
    else {
      console.error(`bench: unknown argument ${arg}\n${usage}`)
      process.exit(2)
    }
  }
  const started = performance.now()
  const mode = quick ? "quick" : "default"
  log(`bench (${mode}): node ${process.version}, ${os.cpus().length} CPU(s) ${os.cpus()[0]?.model ?? ""}`)

  const sections: Array<string> = []
  const scenarios: Array<EngineResult | ActorsResult> = []
  const seconds: Record<string, number> = {}

  if (only !== "actors") {
    // Loaded here, not at the top: the parent process that only re-spawns itself with --expose-gc skips them.
    const { formatEngine, runEngine } = await import("./engine.js")
    log("engine ...")
    const t0 = performance.now()
    const engine = await runEngine(
      { sizes: quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000], minMillis: quick ? 250 : 1_000 },
      log
    )
    seconds.engine = (performance.now() - t0) / 1000
    sections.push(formatEngine(engine))
    scenarios.push(engine)
    fullGc()
    await sleep(200)
  }

  if (only !== "engine") {
    const { formatActors, runActors } = await import("./actors.js")
    log("actors ...")
    const t0 = performance.now()
    const actors = await runActors(
      {
        actors: 10_000,
        intervalMillis: 100,
        windowMillis: quick ? 5_000 : 10_000,
        warmupMillis: quick ? 500 : 1_000,
        maxWarmupMillis: quick ? 2_500 : 15_000
      },
      log
    )
    seconds.actors = (performance.now() - t0) / 1000
    sections.push(formatActors(actors))
    scenarios.push(actors)
    fullGc()
  }

  seconds.total = (performance.now() - started) / 1000
  const timing = Object.entries(seconds)
    .map(([name, s]) => `${name} ${s.toFixed(1)} s`)
    .join(", ")
  const cpus = os.cpus()
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
  console.log(
    [
      "",
      `tickwork bench (${mode}) — node ${process.version}, ${cpus.length} CPU(s) ${cpus[0]?.model ?? ""}, ` +
        `${os.platform()}/${os.arch()}, load average ${load}`,
      "",
      sections.join("\n\n"),
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
        only: only ?? null,
        node: process.version,
        platform: `${os.platform()}/${os.arch()}`,
        cpus: cpus.length,
        cpuModel: cpus[0]?.model,
        loadAverage: os.loadavg(),
        seconds
      },
      scenarios
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
