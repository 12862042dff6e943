/**
 * The rate of `Reminders.registerManyFor` on one runner, in this process (no runner processes, no network but the
 * storage's): N registrations of one-shot reminders due far ahead, as calls of BATCH, 1, 2 and 4 calls in flight.
 * Prints, per setting, the median of ROUNDS rounds: reminders/s, the CPU of this process per registration and, when
 * the storage is a local PostgreSQL (its processes readable in /proc), the CPU of the server's processes (all of them:
 * another client's work counts too). Each round starts from an empty table. For profiling the registration path
 * quickly (`node --cpu-prof --import tsx`); the cluster bench (test/bench/cluster.ts) measures the targets.
 *
 *   STORAGE=pg:postgres://postgres@127.0.0.1:5432/tw_reg npx tsx test/bench/register-inprocess.ts
 *   N=100000 BATCH=1000 ROUNDS=3 IN_FLIGHT=1,2,4 STORAGE=sqlite
 */
import { readdirSync, readFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { Grain } from "tickwork"
import { ClusterGrain, Reminders } from "tickwork/cluster"
import * as InProcessRunner from "./inprocess-runner.js"

const N = Number(process.env.N ?? "100000")
const BATCH = Number(process.env.BATCH ?? "1000")
const G = Number(process.env.G ?? "10000")
const ROUNDS = Number(process.env.ROUNDS ?? "3")
const IN_FLIGHT = (process.env.IN_FLIGHT ?? "1,2,4").split(",").map(Number)
const STORAGE = process.env.STORAGE ?? "sqlite"

const Fire = Schema.TaggedStruct("Fire", { id: Schema.Number, round: Schema.Number, label: Schema.String })

const Subject = ClusterGrain.make(
  Grain.make<typeof Fire.Type>()({ name: "register-grain", onReceive: () => Effect.void }),
  { message: Fire }
)

const pg = STORAGE.startsWith("pg:")
const tablePrefix = `regbench${process.pid}`

const Live = InProcessRunner.layer(Subject, {
  name: "register-bench",
  tablePrefix,
  storage: InProcessRunner.storageOf(STORAGE)
})

/** CPU microseconds of every process named postgres (0 where /proc says nothing). */
const serverMicros = (): number => {
  if (!pg) return 0
  const tick = 1e6 / 100 // USER_HZ
  let total = 0
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const close = stat.lastIndexOf(")")
      if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue
      const fields = stat.slice(close + 2).split(" ")
      total += (Number(fields[11]) + Number(fields[12])) * tick
    } catch {
      // gone meanwhile
    }
  }
  return total
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

const round = (r: number, inFlight: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM ${sql(`${tablePrefix}_tickwork_reminders`)}`
    const now = yield* Clock.currentTimeMillis
    const due = now + 86_400_000
    const registrations = Array.from({ length: N }, (_, i) => ({
      key: `g${i % G}`,
      name: `r${r}-${i}`,
      message: { _tag: "Fire" as const, id: i, round: r, label: "renew subscription" },
      schedule: Reminders.at(due)
    }))
    const batches = Array.from({ length: Math.ceil(N / BATCH) }, (_, b) =>
      registrations.slice(b * BATCH, (b + 1) * BATCH)
    )
    const cpu0 = process.cpuUsage()
    const server0 = serverMicros()
    const t0 = performance.now()
    yield* Effect.forEach(batches, (batch) => Reminders.registerManyFor(Subject, batch), {
      concurrency: inFlight,
      discard: true
    })
    const wall = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    const server = serverMicros() - server0
    return { rate: (N / wall) * 1000, runner: (cpu.user + cpu.system) / N, server: server / N }
  })

Effect.gen(function* () {
  console.log(`registration in-process: N=${N} batch=${BATCH} grains=${G} storage=${STORAGE}`)
  yield* Effect.sleep(2_000) // the runner takes its shards
  yield* round(0, 4) // warm-up
  for (const inFlight of IN_FLIGHT) {
    const runs = []
    for (let r = 1; r <= ROUNDS; r++) runs.push(yield* round(r, inFlight))
    console.log(
      `${inFlight} in flight: ${median(runs.map((x) => x.rate)).toFixed(0)}/s ` +
        `(rounds ${runs.map((x) => x.rate.toFixed(0)).join(", ")}), ` +
        `runner ${median(runs.map((x) => x.runner)).toFixed(1)} µs CPU a registration` +
        (pg ? `, server ${median(runs.map((x) => x.server)).toFixed(1)} µs` : "")
    )
  }
  const sql = yield* SqlClient.SqlClient
  if (pg) {
    const tables = yield* sql<{ readonly table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_name LIKE ${`${tablePrefix}\\_%`}`
    for (const { table_name } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(table_name)} CASCADE`
  }
}).pipe(Effect.provide(Live), Effect.scoped, Effect.runPromise)
