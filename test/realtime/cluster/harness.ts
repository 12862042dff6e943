/**
 * Runner processes for the real-clock cluster tests: start them with `node --import tsx`, wait for a line, kill
 * them, and stop them for sure (SIGTERM, then SIGKILL after a grace period). Temp directories are removed at the end.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** The little of better-sqlite3 the harness uses (the package ships no types and we add no dependency for them). */
interface SqliteDatabase {
  pragma(source: string): unknown
  prepare(source: string): { all(...params: ReadonlyArray<unknown>): Array<unknown> }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (
  filename: string,
  options: { readonly readonly: boolean; readonly fileMustExist: boolean }
) => SqliteDatabase

export interface RunnerProcess {
  readonly name: string
  readonly port: number
  readonly child: ChildProcess
  /** Everything the process printed, for the failure message. */
  readonly output: () => string
  readonly exited: Promise<number | null>
}

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

export const tempDir = (label: string): { readonly dir: string; readonly remove: () => void } => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tickwork-${label}-`))
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

export const startRunner = (script: string, name: string, port: number, env: Record<string, string>): RunnerProcess => {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    env: { ...process.env, ...env, PORT: String(port) },
    // stdin stays open for the child's life: it exits when it ends (see exitAfterSignal), so it cannot outlive us.
    stdio: ["pipe", "pipe", "pipe"]
  })
  let output = ""
  child.stdout?.on("data", (chunk) => (output += chunk))
  child.stderr?.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { name, port, child, output: () => output, exited }
}

/** Resolves when `runner` has printed `line`; rejects after `timeoutMillis` or if it exits first. */
export const waitForLine = (runner: RunnerProcess, line: string, timeoutMillis: number): Promise<void> =>
  new Promise((resolve, reject) => {
    const check = () => runner.output().split("\n").includes(line)
    if (check()) return resolve()
    const timer = setTimeout(() => {
      cleanup()
      reject(new Error(`${runner.name} did not print "${line}" within ${timeoutMillis} ms:\n${runner.output()}`))
    }, timeoutMillis)
    const onData = () => {
      if (check()) {
        cleanup()
        resolve()
      }
    }
    const onExit = (code: number | null) => {
      cleanup()
      reject(new Error(`${runner.name} exited (${code}) before printing "${line}":\n${runner.output()}`))
    }
    const cleanup = () => {
      clearTimeout(timer)
      runner.child.stdout?.off("data", onData)
      runner.child.off("exit", onExit)
    }
    runner.child.stdout?.on("data", onData)
    runner.child.once("exit", onExit)
  })

/** Polls `condition` every 100 ms; rejects with `describe()` after `timeoutMillis`. */
export const waitUntil = async (
  condition: () => boolean,
  timeoutMillis: number,
  describe: () => string
): Promise<void> => {
  const deadline = Date.now() + timeoutMillis
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMillis} ms: ${describe()}`)
    await sleep(100)
  }
}

export const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/**
 * Stops the runners: SIGTERM, then SIGKILL for any still running after `graceMillis`. Resolves with how each ended:
 * "exited" (on its own, within the grace period), "killed" or "already dead".
 */
export const stopAll = async (
  runners: ReadonlyArray<RunnerProcess>,
  graceMillis: number
): Promise<ReadonlyArray<"exited" | "killed" | "already dead">> =>
  Promise.all(
    runners.map(async (runner) => {
      if (runner.child.exitCode !== null || runner.child.signalCode !== null) return "already dead" as const
      runner.child.kill("SIGTERM")
      const inTime = await Promise.race([runner.exited.then(() => true), sleep(graceMillis).then(() => false)])
      if (inTime) return "exited" as const
      runner.child.kill("SIGKILL")
      await runner.exited
      return "killed" as const
    })
  )

/** Opens the SQLite file read-only for one query. */
export const query = <A>(file: string, sql: string, ...params: ReadonlyArray<unknown>): Array<A> => {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    db.pragma("busy_timeout = 2000")
    return db.prepare(sql).all(...params) as Array<A>
  } finally {
    db.close()
  }
}

/** Like `query`, but an empty result while the tables do not exist yet. */
export const queryIfReady = <A>(file: string, sql: string, ...params: ReadonlyArray<unknown>): Array<A> => {
  try {
    return query<A>(file, sql, ...params)
  } catch (error) {
    if (error instanceof Error && /no such table|unable to open|does not exist/.test(error.message)) return []
    throw error
  }
}
