/**
 * Real processes, real clock: three runners on loopback over one SQLite file. Each test runs for ~30 s once its
 * runners are up, and always stops its processes (SIGTERM, then SIGKILL) and removes its files.
 */
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import {
  freePort,
  queryIfReady,
  type RunnerProcess,
  sleep,
  startRunner,
  stopAll,
  tempDir,
  waitForLine,
  waitUntil
} from "./cluster/harness.js"

const here = path.dirname(new URL(import.meta.url).pathname)

/** How long a runner process may take to start (compiling with tsx and opening SQLite: seconds on a loaded machine). */
const READY_MILLIS = 60_000

interface Fired {
  readonly instant: number
  readonly fired_at: number
  readonly runner: string
}

describe("cluster on three runner processes (real clock)", () => {
  it(
    "an every-second cron while one runner is SIGKILLed: every instant fired exactly once, none missing",
    async () => {
      const { dir, remove } = tempDir("cluster-cron")
      const db = path.join(dir, "cluster.db")
      const runners: Array<RunnerProcess> = []
      const firedRows = () =>
        queryIfReady<Fired>(
          db,
          "SELECT instant, fired_at, runner FROM cluster_tickwork_cron_fired WHERE reference = ? ORDER BY instant",
          "every-second"
        )
      try {
        const ports = [await freePort(), await freePort(), await freePort()]
        // The first runner creates the tables; the others join a moment later.
        runners.push(startRunner(path.join(here, "cluster/cron-runner.ts"), "runner-1", ports[0]!, { DB: db }))
        await waitForLine(runners[0]!, "ready", READY_MILLIS)
        runners.push(startRunner(path.join(here, "cluster/cron-runner.ts"), "runner-2", ports[1]!, { DB: db }))
        runners.push(startRunner(path.join(here, "cluster/cron-runner.ts"), "runner-3", ports[2]!, { DB: db }))
        await Promise.all(runners.slice(1).map((runner) => waitForLine(runner, "ready", READY_MILLIS)))

        // Let the three share the shards and fire a few instants.
        await waitUntil(
          () => new Set(firedRows().map((row) => row.runner)).size >= 2 && firedRows().length >= 3,
          10_000,
          () => `fired so far: ${JSON.stringify(firedRows())}`
        )
        // Kill the runner that holds the shard of the next instant's stored message: that instant, and the chain
        // behind it, can only run once its shards have moved to another runner.
        let victim: RunnerProcess | undefined
        await waitUntil(
          () => {
            const owner = queryIfReady<{ readonly address: string }>(
              db,
              `SELECT l.address FROM cluster_messages m JOIN cluster_locks l ON l.shard_id = m.shard_id
             WHERE m.entity_type = ? AND m.processed = 0 AND m.deliver_at > ? ORDER BY m.deliver_at LIMIT 1`,
              "tickwork/ClusterScheduler/every-second",
              Date.now() + 200
            )[0]
            victim = owner && runners.find((runner) => owner.address.endsWith(`:${runner.port}`))
            return victim !== undefined
          },
          10_000,
          () => "no stored next instant with a shard owner"
        )
        const victimAddress = `127.0.0.1:${victim!.port}`
        victim!.child.kill("SIGKILL")
        await victim!.exited
        const killedAt = Date.now()

        // Keep going for ~8 s of the cron after the kill, then wait for the last instant of that window to be fired.
        await sleep(8_000)
        const windowEnd = Math.floor(killedAt / 1000) * 1000 + 8_000
        await waitUntil(
          () => firedRows().some((row) => row.instant >= windowEnd),
          12_000,
          () => `no instant at or after ${new Date(windowEnd).toISOString()}: ${JSON.stringify(firedRows().slice(-5))}`
        )

        const rows = firedRows()
        const first = rows[0]!.instant
        const window = rows.filter((row) => row.instant <= windowEnd)
        const instants = window.map((row) => row.instant)
        // Exactly once: no instant twice (the table's primary key would refuse it; count anyway).
        assert.strictEqual(new Set(instants).size, instants.length)
        // None missing: every second from the first instant to the end of the window.
        const expected = Array.from({ length: (windowEnd - first) / 1000 + 1 }, (_, i) => first + i * 1000)
        assert.deepStrictEqual(instants, expected)
        assert.isAtLeast(instants.length, 10)
        // After the kill, the victim fired nothing; the others took its instants over.
        const after = window.filter((row) => row.fired_at > killedAt)
        assert.isTrue(after.length > 0)
        assert.isTrue(after.every((row) => row.runner !== victimAddress))
        const lateness = window.map((row) => row.fired_at - row.instant)
        console.log(
          `cron on 3 runners: ${instants.length} instants once each; killed ${victim!.name} at ` +
            `+${killedAt - first} ms; worst lateness ${Math.max(...lateness)} ms (fail-over catch-up), ` +
            `median ${lateness.sort((a, b) => a - b)[Math.floor(lateness.length / 2)]} ms`
        )
      } finally {
        const ends = await stopAll(runners, 6_000)
        console.log(`runner shutdown: ${ends.join(", ")}`)
        remove()
      }
    },
    45_000 + 2 * READY_MILLIS
  )

  it(
    "a reminder registered before a full restart of all runners, due while none is up, fires once after it",
    async () => {
      const { dir, remove } = tempDir("cluster-reminder")
      const db = path.join(dir, "cluster.db")
      const script = path.join(here, "cluster/reminder-runner.ts")
      const everyone: Array<RunnerProcess> = []
      const fired = () =>
        everyone.flatMap((runner) =>
          runner
            .output()
            .split("\n")
            .filter((line) => line.startsWith("fired "))
            .map((line) => ({ runner: runner.name, key: line.split(" ")[1], at: Number(line.split(" ")[2]) }))
        )
      try {
        const ports = [await freePort(), await freePort(), await freePort()]
        // Before: three runners. The last one to start registers the reminder, due in 6 s: starting it last keeps the
        // other processes' start-up (seconds on a loaded machine) out of the time the restart below must fit in.
        const before = [
          startRunner(script, "before-1", ports[0]!, { DB: db }),
          startRunner(script, "before-2", ports[1]!, { DB: db })
        ]
        everyone.push(...before)
        await Promise.all(before.map((runner) => waitForLine(runner, "ready", READY_MILLIS)))
        const registrar = startRunner(script, "before-3", ports[2]!, { DB: db, REGISTER: "6000" })
        before.push(registrar)
        everyone.push(registrar)
        await waitForLine(registrar, "ready", READY_MILLIS)
        await waitUntil(
          () => registrar.output().includes("registered "),
          10_000,
          () => `no registration: ${registrar.output()}`
        )
        const due = Number(/registered (\d+)/.exec(registrar.output())![1])
        // The whole cluster goes down before the reminder is due.
        const stopped = await stopAll(before, 6_000)
        const downAt = Date.now()
        assert.isBelow(downAt, due, "the runners took too long to stop: the reminder came due before the restart")
        assert.deepStrictEqual(fired(), [])

        // The reminder comes due while no runner is up: it must fire once on recovery.
        await sleep(due + 500 - Date.now())
        // After: three new runner processes on the same storage.
        const after = ports.map((port, i) => startRunner(script, `after-${i + 1}`, port, { DB: db }))
        everyone.push(...after)
        await Promise.all(after.map((runner) => waitForLine(runner, "ready", READY_MILLIS)))
        const upAt = Date.now()
        await waitUntil(
          () => fired().length > 0,
          15_000,
          () => `the reminder did not fire after the restart:\n${after.map((runner) => runner.output()).join("\n")}`
        )
        // Give a duplicate the chance to show up.
        await sleep(2_000)
        const fires = fired()
        assert.strictEqual(fires.length, 1, JSON.stringify(fires))
        assert.strictEqual(fires[0]!.key, "alarm-1")
        assert.isTrue(fires[0]!.runner.startsWith("after-"))
        assert.isAtLeast(fires[0]!.at, due)
        console.log(
          `reminder across a full restart: down ${due - downAt} ms before due (stop: ${stopped.join(", ")}), ` +
            `up ${upAt - due} ms after due, fired ${fires[0]!.at - due} ms after due on ${fires[0]!.runner}`
        )
      } finally {
        const ends = await stopAll(everyone, 6_000)
        console.log(`runner shutdown: ${ends.join(", ")}`)
        remove()
      }
    },
    45_000 + 2 * READY_MILLIS
  )
})
