// Three runner processes on loopback sharing one SQLite file, with a cluster-wide cron every 2 seconds: each instant
// runs once, on whichever runner owns it. `npx tsx docs/examples/cluster-runners.ts` starts the three runners (as
// child processes of this script), lets them run for 15 s, then stops them. One runner alone:
// `npx tsx docs/examples/cluster-runners.ts runner 34431 cluster.db`.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeRuntime } from "@effect/platform-node"
import { DateTime, Effect, Layer } from "effect"
import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"

/** One runner: the socket runner on `port` over the SQLite file `db`, plus the schedules every runner registers. */
const runner = (port: number, db: string) => {
  const Runner = ClusterRunner.layer({ host: "127.0.0.1", port, storage: ClusterRunner.sqlite(db) })

  // Every runner registers the same schedule under the same reference; one of them runs each instant.
  const Heartbeat = ClusterScheduler.layer(
    "*/2 * * * * ?",
    (fire) => Effect.log(`fired ${DateTime.formatIso(fire.instant)} (${fire.late.pipe(String)} late)`),
    ClusterScheduler.withTimerReference("heartbeat")
  )

  NodeRuntime.runMain(Layer.launch(Heartbeat.pipe(Layer.provide(Runner))))
}

/** Starts three runners as child processes, prints their output with a prefix, stops them after `millis`. */
const demo = async (millis: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tickwork-cluster-"))
  const db = path.join(dir, "cluster.db")
  const children = [34431, 34432, 34433].map((port) => {
    // tsx resolved from this file, not from the working directory: the demo runs from anywhere.
    const tsx = import.meta.resolve("tsx")
    const child = spawn(process.execPath, ["--import", tsx, import.meta.filename, "runner", String(port), db], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    const print = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) if (line.trim() !== "") console.log(`[:${port}] ${line}`)
    }
    child.stdout.on("data", print)
    child.stderr.on("data", print)
    return new Promise<void>((resolve) => {
      setTimeout(() => child.kill("SIGTERM"), millis)
      // A runner that does not stop within 10 s of SIGTERM is killed.
      setTimeout(() => child.kill("SIGKILL"), millis + 10_000).unref()
      child.once("exit", () => resolve())
    })
  })
  await Promise.all(children)
  fs.rmSync(dir, { recursive: true, force: true })
}

// `npx tsx docs/examples/cluster-runners.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) {
  const [mode, port, db] = process.argv.slice(2)
  if (mode === "runner") runner(Number(port), db ?? "tickwork-cluster.db")
  else void demo(15_000)
}
