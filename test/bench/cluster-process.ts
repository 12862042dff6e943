/**
 * The cluster bench's side of its runner processes (test/bench/cluster-runner.ts): start one, send it commands and
 * wait for the answers, collect the deliveries and cron instants every runner prints, kill or stop it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "cluster-runner.ts")

/** A TCP port that was free a moment ago. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/**
 * Extra Node options for the runner processes, e.g. `TICKWORK_BENCH_RUNNER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p"`
 * to profile them (Node refuses `--cpu-prof` in NODE_OPTIONS).
 */
const NODE_ARGS = (process.env.TICKWORK_BENCH_RUNNER_NODE_ARGS ?? "").split(/\s+/).filter((arg) => arg !== "")

export type System = "t" | "p"

/**
 * Deliveries of ids [0, capacity) of both systems, from every runner: when each was first delivered, how many times,
 * and its due time. Ids a measurement uses are disjoint from the ones before it, so one collector serves a run.
 */
export class Deliveries {
  readonly first: Record<System, Float64Array>
  readonly due: Record<System, Float64Array>
  readonly times: Record<System, Uint8Array>
  readonly byRunner: Record<System, Uint8Array>
  readonly counts: Record<System, number> = { t: 0, p: 0 }

  constructor(readonly capacity: number) {
    this.first = { t: new Float64Array(capacity), p: new Float64Array(capacity) }
    this.due = { t: new Float64Array(capacity), p: new Float64Array(capacity) }
    this.times = { t: new Uint8Array(capacity), p: new Uint8Array(capacity) }
    this.byRunner = { t: new Uint8Array(capacity), p: new Uint8Array(capacity) }
  }

  record(system: System, id: number, due: number, at: number, runner: number): void {
    if (id < 0 || id >= this.capacity) return
    if (this.times[system][id] === 0) {
      this.first[system][id] = at
      this.due[system][id] = due
      this.byRunner[system][id] = runner
      this.counts[system]++
    }
    if (this.times[system][id]! < 255) this.times[system][id]!++
  }

  /** How many of ids [from, to) were delivered. */
  delivered(system: System, from: number, to: number): number {
    let n = 0
    for (let id = from; id < to; id++) if (this.times[system][id]! > 0) n++
    return n
  }

  /** Ids of [from, to) delivered more than once. */
  duplicates(system: System, from: number, to: number): number {
    let n = 0
    for (let id = from; id < to; id++) if (this.times[system][id]! > 1) n++
    return n
  }

  /** Lateness (first delivery − due, ms) of the delivered ids of [from, to), sorted. */
  lateness(system: System, from: number, to: number, filter?: (id: number) => boolean): Float64Array {
    const values: Array<number> = []
    for (let id = from; id < to; id++) {
      if (this.times[system][id]! > 0 && (filter === undefined || filter(id))) {
        values.push(this.first[system][id]! - this.due[system][id]!)
      }
    }
    return Float64Array.from(values).sort()
  }

  /** The last first-delivery time of ids [from, to) (NaN when none). */
  lastAt(system: System, from: number, to: number): number {
    let last = Number.NaN
    for (let id = from; id < to; id++) {
      if (this.times[system][id]! > 0 && !(this.first[system][id]! <= last)) last = this.first[system][id]!
    }
    return last
  }

  /** Resolves once ids [from, to) of `system` are all delivered, or at `deadline` (epoch ms); true when all were. */
  async waitAll(system: System, from: number, to: number, deadline: number): Promise<boolean> {
    let checked = from
    for (;;) {
      while (checked < to && this.times[system][checked]! > 0) checked++
      if (checked >= to) return true
      if (Date.now() >= deadline) return false
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/** One cron instant as printed: schedule name, instant, when it ran, by which runner. */
export interface CronFire {
  readonly system: System
  readonly name: string
  readonly instant: number
  readonly at: number
  readonly runner: number
}

export interface RunnerProcess {
  readonly index: number
  readonly port: number
  readonly child: ChildProcess
  readonly ready: Promise<void>
  /** When it printed "ready" (epoch ms), NaN before. */
  readonly readyAt: () => number
  readonly exited: Promise<void>
  /** Sends a command and resolves with its answer (commands are answered in order). */
  readonly command: <A>(command: object) => Promise<A>
  /** The last lines of its stderr, for error messages. */
  readonly errors: () => string
}

export interface Storage {
  readonly kind: "sqlite" | "pg"
  /** What the runner gets as $STORAGE. */
  readonly spec: string
}

/** Every runner started, so that a phase can show what its runners wrote to stderr (warnings, errors). */
export const started: Array<RunnerProcess> = []

export const startRunner = async (
  index: number,
  storage: Storage,
  sinks: { readonly deliveries: Deliveries; readonly crons?: Array<CronFire> },
  env: Record<string, string> = {}
): Promise<RunnerProcess> => {
  const port = await freePort()
  const child = spawn(process.execPath, [...NODE_ARGS, "--expose-gc", "--import", import.meta.resolve("tsx"), script], {
    env: { ...process.env, ...env, PORT: String(port), STORAGE: storage.spec },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let readyAt = Number.NaN
  let stderr = ""
  const waiting: Array<{ resolve: (value: unknown) => void; reject: (error: Error) => void }> = []
  let onReady: () => void = () => {}
  let onExit: (error: Error) => void = () => {}
  const ready = new Promise<void>((resolve, reject) => {
    onReady = resolve
    onExit = reject
  })
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      const error = new Error(`runner ${index} exited (${code ?? signal}): ${stderr.slice(-2000)}`)
      onExit(error)
      for (const w of waiting.splice(0)) w.reject(error)
      resolve()
    })
  )
  // A rejection nobody waits for (the runner was killed on purpose) must not end the bench.
  ready.catch(() => {})
  let partial = ""
  child.stdout!.setEncoding("utf8")
  child.stdout!.on("data", (chunk: string) => {
    partial += chunk
    let start = 0
    let newline = partial.indexOf("\n", start)
    while (newline >= 0) {
      const line = partial.slice(start, newline)
      start = newline + 1
      newline = partial.indexOf("\n", start)
      const kind = line.charCodeAt(0)
      if (kind === 68 /* D */) {
        const [, system, id, due, at] = line.split(" ")
        sinks.deliveries.record(system as System, Number(id), Number(due), Number(at), index)
      } else if (kind === 67 /* C */) {
        const [, system, name, instant, at] = line.split(" ")
        sinks.crons?.push({
          system: system as System,
          name: name!,
          instant: Number(instant),
          at: Number(at),
          runner: index
        })
      } else if (kind === 82 /* R */) {
        waiting.shift()?.resolve(JSON.parse(line.slice(2)))
      } else if (line === "ready") {
        readyAt = Date.now()
        onReady()
      }
    }
    partial = partial.slice(start)
  })
  child.stderr!.setEncoding("utf8")
  child.stderr!.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-8000)
  })
  const runner: RunnerProcess = {
    index,
    port,
    child,
    ready,
    readyAt: () => readyAt,
    exited,
    errors: () => stderr.slice(-2000),
    command: <A>(command: object) =>
      new Promise<A>((resolve, reject) => {
        waiting.push({
          resolve: (value) => {
            const error = (value as { readonly error?: string }).error
            if (error !== undefined) reject(new Error(`runner ${index}: ${JSON.stringify(command)} failed: ${error}`))
            else resolve(value as A)
          },
          reject
        })
        child.stdin!.write(`${JSON.stringify(command)}\n`)
      })
  }
  started.push(runner)
  return runner
}

const sleep = (millis: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, millis))

/** SIGKILL: the runner gets no chance to release anything. */
export const kill = async (runner: RunnerProcess): Promise<void> => {
  if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGKILL")
  await runner.exited
}

/** SIGTERM, then SIGKILL after `graceMillis`. */
export const stop = async (runner: RunnerProcess, graceMillis = 8_000): Promise<void> => {
  if (runner.child.exitCode !== null || runner.child.signalCode !== null) return
  runner.child.kill("SIGTERM")
  const inTime = await Promise.race([runner.exited.then(() => true), sleep(graceMillis).then(() => false)])
  if (!inTime) await kill(runner)
}

export const tempDir = (label: string): { readonly dir: string; readonly remove: () => void } => {
  const dir = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), `tickwork-bench-${label}-`))
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) }
}
