/**
 * Where a durable delivery's time goes on one runner at its maximum rate: the restart with a backlog of overdue
 * reminders (issue 20's recovery), profiled.
 *
 * For each storage (PostgreSQL, SQLite) and system (t: tickwork reminders, p: plain @effect/cluster persisted
 * messages with `DeliverAt`), on fresh storage (it DROPS the `cluster*` tables of the database in the URL: give it a
 * scratch database):
 * 1. one runner (test/bench/cluster-runner.ts) registers N (5,000) of them on N distinct grains (entities), all due
 *    AHEAD ms ahead (tickwork: `registerManyFor`, 1,000 a call; plain: sends, 50 in flight);
 * 2. it is SIGKILLed before they are due; once all are overdue (+2 s) a new runner starts, with `--cpu-prof` and a
 *    preload that logs every SQL statement (test/bench/sql-trace-preload.mjs);
 * 3. time until every one is delivered; the steady state is the window between the 10th and the 90th percentile
 *    delivery: its rate, the runner's and the PostgreSQL backends' CPU (from /proc), pg_stat_activity sampled every
 *    100 ms, the statements and commits per delivery (from the trace), pg_stat_database's commits, and the profile's
 *    self time by function and package within the window (test/bench/cpuprofile-summary.ts).
 *
 *   TICKWORK_BENCH_PG_URL=postgres://postgres@127.0.0.1:5432/tw_x nice -n 19 npx tsx test/bench/restart-profile.ts
 *
 * Environment: STORAGES=pg,sqlite SYSTEMS=t,p N=5000 AHEAD_T=20000 AHEAD_P=40000 (ms) PROFILE=0 (no --cpu-prof)
 * PROF_ARGS="--no-turbo-inlining" (more V8 flags for the profiled runner) RUNNER_ENV='{"ARMING":"off"}' (more env for
 * the runners) OUT=<dir> (default bench-results/restart-profile-<time>). Prints a report and writes it, the profiles,
 * the SQL traces and report.json to OUT.
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { Deliveries as DeliveriesT, RunnerProcess, Storage, System } from "./cluster-process.js"
import { render, summarize } from "./cpuprofile-summary.js"

// pg and better-sqlite3 come with @effect/sql-pg and @effect/sql-sqlite-node, without type declarations here.
interface PgClient {
  connect(): Promise<void>
  query(text: string, values?: ReadonlyArray<unknown>): Promise<{ readonly rows: Array<Record<string, any>> }>
  end(): Promise<void>
}
interface SqliteDatabase {
  prepare(text: string): { get(): unknown }
  close(): void
}
const require = createRequire(import.meta.url)
const pg = require("pg") as { readonly Client: new (options: { readonly connectionString: string }) => PgClient }
const Database = require("better-sqlite3") as new (
  file: string,
  options: { readonly readonly: boolean }
) => SqliteDatabase

const PG_URL = process.env.TICKWORK_BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/tickwork_bench"
const STORAGES = (process.env.STORAGES ?? "pg,sqlite").split(",") as Array<"pg" | "sqlite">
const SYSTEMS = (process.env.SYSTEMS ?? "t,p").split(",") as Array<System>
const N = Number(process.env.N ?? "5000")
const AHEAD = { t: Number(process.env.AHEAD_T ?? "20000"), p: Number(process.env.AHEAD_P ?? "40000") }
const PROFILE = process.env.PROFILE !== "0"
/** TRACE=0: no SQL trace preload (its cost is ~2-5% of the runner's CPU; statement counts then unavailable). */
const TRACE = process.env.TRACE !== "0"
const RUNNER_ENV = JSON.parse(process.env.RUNNER_ENV ?? "{}") as Record<string, string>
const OUT = path.resolve(
  process.env.OUT ?? `bench-results/restart-profile-${new Date().toISOString().replace(/[:.]/g, "-")}`
)
fs.mkdirSync(OUT, { recursive: true })

// The runners' Node options are read once, when cluster-process.ts loads: set before importing it. Runner 0 is
// SIGKILLed (it writes no profile); only the restarted runner's profile is read.
const preload = path.join(path.dirname(new URL(import.meta.url).pathname), "sql-trace-preload.mjs")
process.env.TICKWORK_BENCH_RUNNER_NODE_ARGS = [
  process.env.TICKWORK_BENCH_RUNNER_NODE_ARGS ?? "",
  PROFILE ? `--cpu-prof --cpu-prof-dir=${OUT}` : "",
  process.env.PROF_ARGS ?? "",
  TRACE ? `--import=${preload}` : ""
].join(" ")
const { Deliveries, kill, startRunner, stop, tempDir } = await import("./cluster-process.js")

const sleep = (millis: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, millis))
const monoMicros = (): number => Number(process.hrtime.bigint() / 1000n)
/** A runner's `Date.now()` as the profile's clock (CLOCK_MONOTONIC µs): both processes read the same clocks. */
const wallToMono = (wall: number): number => monoMicros() - (Date.now() - wall) * 1000
const log = (line: string) => {
  console.log(line)
  fs.appendFileSync(path.join(OUT, "report.txt"), `${line}\n`)
}
const uptime = (): string => fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")

const CLK_TCK = 100
/** CPU seconds (user + system) a process has used, undefined once it is gone. */
const cpuOf = (pid: number, thread = false): number | undefined => {
  try {
    const stat = fs.readFileSync(thread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
  } catch {
    return undefined
  }
}
/** The machine's busy and total jiffies (all cores). */
const machine = (): { busy: number; total: number } => {
  const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const total = cpu.reduce((a, b) => a + b, 0)
  return { busy: total - cpu[3]! - cpu[4]!, total }
}

interface Sample {
  readonly mono: number
  readonly runnerCpu: number
  /** The runner's main thread alone (JavaScript; the rest is GC helper threads and libuv). */
  readonly runnerMainCpu: number
  readonly pgCpu: number
  readonly busy: number
  readonly total: number
  readonly active: number
  readonly idleInTx: number
  readonly backends: number
  readonly waits: Record<string, number>
  /** Messages marked processed so far (NaN when unread). */
  readonly processed: number
}

/** Samples the runner's and PostgreSQL backends' CPU, and pg_stat_activity, every 100 ms until stopped. */
const sampler = async (runnerPid: () => number | undefined, storage: Storage, system: string) => {
  const samples: Array<Sample> = []
  const usePg = storage.kind === "pg"
  const client = usePg ? new pg.Client({ connectionString: PG_URL }) : undefined
  await client?.connect()
  const sqlite = usePg ? undefined : new Database(storage.spec.slice("sqlite:".length), { readonly: true })
  // Done: plain messages marked processed (their reply stored); tickwork's one-shots deleted from the reminders table
  // (their row's removal is the delivery's last write), counted down from a large number.
  const processedSql =
    system === "t"
      ? "SELECT 1000000000 - COUNT(*) AS n FROM cluster_tickwork_reminders"
      : `SELECT COUNT(*) AS n FROM cluster_messages WHERE processed = ${usePg ? "TRUE" : "1"}`
  const own = client === undefined ? 0 : Number((await client.query("SELECT pg_backend_pid() AS pid")).rows[0]?.pid)
  const pgCpu = new Map<number, number>() // last CPU seen per backend (a backend that ended keeps its last value)
  let running = true
  const loop = (async () => {
    while (running) {
      let active = 0
      let idleInTx = 0
      let backends = 0
      const waits: Record<string, number> = {}
      if (client !== undefined) {
        const rows = (
          await client.query(
            `SELECT pid, state, wait_event_type, wait_event FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> $1 AND backend_type = 'client backend'`,
            [own]
          )
        ).rows as Array<{ pid: number; state: string; wait_event_type: string | null; wait_event: string | null }>
        for (const row of rows) {
          backends++
          if (row.state === "active") {
            active++
            const wait = row.wait_event_type === null ? "CPU" : `${row.wait_event_type}:${row.wait_event}`
            waits[wait] = (waits[wait] ?? 0) + 1
          } else if (row.state?.startsWith("idle in transaction")) idleInTx++
          const cpu = cpuOf(row.pid)
          if (cpu !== undefined) pgCpu.set(row.pid, cpu)
        }
        // Backends not listed now keep their last value.
        for (const pid of pgCpu.keys()) {
          const cpu = cpuOf(pid)
          if (cpu !== undefined) pgCpu.set(pid, cpu)
        }
      }
      let processed = Number.NaN
      try {
        processed = Number(
          client !== undefined
            ? (await client.query(processedSql)).rows[0]?.n
            : (sqlite!.prepare(processedSql).get() as { n: number }).n
        )
      } catch {
        // the table may not exist yet
      }
      const pid = runnerPid()
      const m = machine()
      samples.push({
        mono: monoMicros(),
        runnerCpu: pid === undefined ? Number.NaN : (cpuOf(pid) ?? Number.NaN),
        runnerMainCpu: pid === undefined ? Number.NaN : (cpuOf(pid, true) ?? Number.NaN),
        pgCpu: Array.from(pgCpu.values()).reduce((a, b) => a + b, 0),
        busy: m.busy,
        total: m.total,
        active,
        idleInTx,
        backends,
        waits,
        processed
      })
      await sleep(100)
    }
  })()
  return {
    samples,
    stop: async () => {
      running = false
      await loop
      await client?.end()
      sqlite?.close()
    }
  }
}

const pgStatDatabase = async () => {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    const row = (
      await client.query(
        `SELECT xact_commit::bigint AS commits, xact_rollback::bigint AS rollbacks, tup_inserted::bigint AS inserted,
           tup_updated::bigint AS updated, tup_deleted::bigint AS deleted, tup_returned::bigint AS returned,
           tup_fetched::bigint AS fetched, blks_hit::bigint AS hit, blks_read::bigint AS read
         FROM pg_stat_database WHERE datname = current_database()`
      )
    ).rows[0] as Record<string, string>
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]))
  } finally {
    await client.end()
  }
}

const freshStorage = async (kind: "pg" | "sqlite"): Promise<{ storage: Storage; remove: () => void }> => {
  if (kind === "sqlite") {
    const { dir, remove } = tempDir("restart-profile")
    return { storage: { kind, spec: `sqlite:${dir}/cluster.db` }, remove }
  }
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    const tables = (
      await client.query(
        `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'cluster%'`
      )
    ).rows as Array<{ tablename: string }>
    for (const t of tables) await client.query(`DROP TABLE IF EXISTS "${t.tablename}" CASCADE`)
  } finally {
    await client.end()
  }
  return { storage: { kind, spec: `pg:${PG_URL}` }, remove: () => {} }
}

/** A statement's shape: literals and parameter lists folded, cut short. */
const shapeOf = (sql: string): string =>
  sql
    .replace(/'[^']*'/g, "?")
    .replace(/\$\d+/g, "$")
    .replace(/\b\d+\b/g, "#")
    .replace(/(\(\$(, \$)*\))(, \(\$(, \$)*\))+/g, "$1,...")
    .replace(/\$(, \$)+/g, "$,...")
    .slice(0, 110)

const isWrite = (sql: string): boolean => /^\s*(INSERT|UPDATE|DELETE|WITH[\s\S]*\b(INSERT|UPDATE|DELETE)\b)/i.test(sql)

interface SqlLine {
  readonly start: number
  readonly duration: number
  readonly connection: string
  readonly inTx: boolean
  readonly sql: string
}
const readTrace = (file: string): Array<SqlLine> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => {
          const [start, duration, connection, inTx, ...rest] = line.split(" ")
          return {
            start: Number(start),
            duration: Number(duration),
            connection: connection!,
            inTx: inTx === "1",
            sql: rest.join(" ")
          }
        })
    : []

const at = (samples: ReadonlyArray<Sample>, mono: number): Sample =>
  samples.reduce((best, s) => (Math.abs(s.mono - mono) < Math.abs(best.mono - mono) ? s : best), samples[0]!)

const fmt = (n: number, digits = 1) => n.toFixed(digits)

const runOne = async (kind: "pg" | "sqlite", system: System) => {
  const label = `${kind}-${system === "t" ? "tickwork" : "plain"}`
  log(`\n=== ${label}: N=${N}, ${new Date().toISOString()}, load ${uptime()}`)
  const { storage, remove } = await freshStorage(kind)
  const deliveries: DeliveriesT = new Deliveries(N)
  const env = { GRAINS: String(N), SQL_TRACE_DIR: OUT, ...RUNNER_ENV }
  let runner: RunnerProcess | undefined
  try {
    runner = await startRunner(0, storage, { deliveries }, env)
    await runner.ready
    const due = Date.now() + AHEAD[system]
    const t0 = Date.now()
    const registered = await runner.command<{ n: number; millis: number; retries: number }>({
      op: "register",
      system,
      from: 0,
      to: N,
      dueFrom: due,
      dueTo: due,
      concurrency: 50,
      batch: system === "t" ? 1000 : 0,
      batchesInFlight: 1
    })
    const endedBeforeDue = due - Date.now()
    await kill(runner)
    const before = deliveries.delivered(system, 0, N)
    log(
      `registered ${registered.n} in ${registered.millis.toFixed(0)} ms (${registered.retries} retries), ` +
        `${Date.now() - t0} ms; SIGKILLed ${endedBeforeDue} ms before due; ${before} delivered before the kill`
    )
    await sleep(Math.max(0, due + 2_000 - Date.now()))
    const pgBefore = kind === "pg" ? await pgStatDatabase() : undefined
    let pid: number | undefined
    const sampling = await sampler(() => pid, storage, system)
    const spawnAt = Date.now()
    runner = await startRunner(1, storage, { deliveries }, env)
    pid = runner.child.pid
    await runner.ready
    const readyAt = runner.readyAt()
    const all = await deliveries.waitAll(system, 0, N, Date.now() + 300_000)
    const doneAt = Date.now()
    // Delivered is not done: @effect/cluster marks the message processed (and stores its reply) after the handler
    // returns, and for plain messages those writes trail the handlers. Done is every message marked processed.
    const processedBase = sampling.samples.find((s) => !Number.isNaN(s.processed))?.processed ?? 0
    for (const deadline = Date.now() + 300_000; Date.now() < deadline; ) {
      const lastSample = sampling.samples[sampling.samples.length - 1]
      if (lastSample !== undefined && lastSample.processed - processedBase >= N) break
      await sleep(100)
    }
    await sleep(300)
    await sampling.stop()
    // Backends report their counters to pg_stat_database at most once a second, and idle ones later.
    if (kind === "pg") await sleep(2_000)
    const pgAfter = kind === "pg" ? await pgStatDatabase() : undefined
    /** When (mono µs) the processed count first reached `count` (interpolated between samples). */
    const processedAt = (count: number): number => {
      const xs = sampling.samples.filter((s) => !Number.isNaN(s.processed))
      for (let i = 1; i < xs.length; i++) {
        const a = xs[i - 1]!
        const b = xs[i]!
        if (b.processed - processedBase >= count) {
          const da = a.processed - processedBase
          const db = b.processed - processedBase
          return db === da ? b.mono : a.mono + ((count - da) / (db - da)) * (b.mono - a.mono)
        }
      }
      return Number.NaN
    }
    const firsts = Array.from(deliveries.first[system].subarray(0, N))
      .filter((t) => t > 0)
      .sort((a, b) => a - b)
    const q = (p: number) => firsts[Math.min(firsts.length - 1, Math.floor(p * (firsts.length - 1)))]!
    const delivered = firsts.length
    const [t10, t50, t90, last] = [q(0.1), q(0.5), q(0.9), q(1)]
    const readyMono = wallToMono(readyAt)
    const [p10, p50, p90, p100] = [0.1, 0.5, 0.9, 1].map((f) => processedAt(Math.ceil(f * N)))
    const rel = (mono: number) => `${fmt((mono - readyMono) / 1000, 0)}`
    const steady = (0.8 * N) / ((p90! - p10!) / 1e6)
    const w0 = p10!
    const w1 = p90!
    const inWindow = Math.round(0.8 * N)
    log(
      `restart: ready ${readyAt - spawnAt} ms after spawn; ${delivered}/${N} handled${all ? "" : " (DEADLINE)"}, ` +
        `duplicates ${deliveries.duplicates(system, 0, N)}; handled: first ${q(0) - readyAt} ms after ready, ` +
        `p10 ${t10 - readyAt}, p50 ${t50 - readyAt}, p90 ${t90 - readyAt}, last ${last - readyAt} ms ` +
        `(${doneAt - spawnAt} ms after spawn); processed: p10 ${rel(p10!)}, p50 ${rel(p50!)}, p90 ${rel(p90!)}, ` +
        `all ${rel(p100!)} ms after ready`
    )
    log(
      `rate: handled ${fmt(delivered / ((last - readyAt) / 1000), 0)}/s from ready to last, p10-p90 ` +
        `${fmt((0.8 * delivered) / ((t90 - t10) / 1000), 0)}/s; processed ${fmt(N / ((p100! - readyMono) / 1e6), 0)}/s ` +
        `from ready to all, steady (p10-p90) ${fmt(steady, 0)}/s over ${fmt((w1 - w0) / 1000, 0)} ms; load ${uptime()}`
    )
    // Processed per second since ready: the backlog's intake (no message processed yet) shows as leading zeros.
    const perSecond: Array<number> = []
    let previous: Sample | undefined
    for (const sample of sampling.samples) {
      if (Number.isNaN(sample.processed)) continue
      const second = Math.floor((sample.mono - readyMono) / 1e6)
      if (previous !== undefined && second >= 0)
        perSecond[second] = (perSecond[second] ?? 0) + sample.processed - previous.processed
      previous = sample
    }
    log(`processed per second since ready: ${Array.from(perSecond, (n) => n ?? 0).join(" ")}`)
    // CPU within the steady window.
    const s0 = at(sampling.samples, w0)
    const s1 = at(sampling.samples, w1)
    const seconds = (s1.mono - s0.mono) / 1e6
    const inSamples = sampling.samples.filter((s) => s.mono >= w0 && s.mono <= w1)
    const mean = (f: (s: Sample) => number) => inSamples.reduce((a, s) => a + f(s), 0) / Math.max(1, inSamples.length)
    const waits: Record<string, number> = {}
    for (const s of inSamples) for (const [k, v] of Object.entries(s.waits)) waits[k] = (waits[k] ?? 0) + v
    const machineBusy = (s1.busy - s0.busy) / (s1.total - s0.total)
    log(
      `cpu in the window: runner ${fmt(((s1.runnerCpu - s0.runnerCpu) / seconds) * 100, 0)}% of a core ` +
        `(${fmt(((s1.runnerCpu - s0.runnerCpu) * 1e6) / inWindow, 0)} µs/delivery; main thread ` +
        `${fmt(((s1.runnerMainCpu - s0.runnerMainCpu) / seconds) * 100, 0)}%, ` +
        `${fmt(((s1.runnerMainCpu - s0.runnerMainCpu) * 1e6) / inWindow, 0)} µs/delivery)` +
        (kind === "pg"
          ? `, PostgreSQL backends ${fmt(((s1.pgCpu - s0.pgCpu) / seconds) * 100, 0)}% of a core ` +
            `(${fmt(((s1.pgCpu - s0.pgCpu) * 1e6) / inWindow, 0)} µs/delivery)`
          : "") +
        `; machine ${fmt(machineBusy * 200, 0)}% of 200%`
    )
    if (kind === "pg") {
      log(
        `pg_stat_activity (100 ms samples in the window): backends ${fmt(mean((s) => s.backends))}, active ` +
          `${fmt(
            mean((s) => s.active),
            2
          )}, idle in transaction ${fmt(
            mean((s) => s.idleInTx),
            2
          )}; active by wait: ` +
          Object.entries(waits)
            .sort((a, b) => b[1] - a[1])
            .map(([k, v]) => `${k} ${fmt(v / Math.max(1, inSamples.length), 2)}`)
            .join(", ")
      )
    }
    if (pgBefore !== undefined && pgAfter !== undefined) {
      const d = Object.fromEntries(Object.keys(pgAfter).map((k) => [k, pgAfter[k]! - pgBefore[k]!]))
      log(
        `pg_stat_database over the whole restart, per delivery: commits ${fmt(d.commits! / N, 2)}, rollbacks ` +
          `${fmt(d.rollbacks! / N, 2)}, inserted ${fmt(d.inserted! / N, 2)}, updated ${fmt(d.updated! / N, 2)}, ` +
          `deleted ${fmt(d.deleted! / N, 2)}, rows returned ${fmt(d.returned! / N, 0)}, fetched ${fmt(d.fetched! / N, 1)}`
      )
    }
    // Statements.
    await stop(runner, 15_000)
    const trace = readTrace(path.join(OUT, `sql-${pid}.log`))
    const windowed = trace.filter((l) => l.start >= w0 && l.start <= w1)
    const whole = trace.filter((l) => l.start >= readyMono && l.start <= p100!)
    const sqlReport = (lines: ReadonlyArray<SqlLine>, per: number, what: string) => {
      const shapes = new Map<string, { count: number; micros: number }>()
      let commits = 0
      let autocommitWrites = 0
      let autocommitReads = 0
      let micros = 0
      for (const l of lines) {
        const shape = shapeOf(l.sql)
        const e = shapes.get(shape) ?? { count: 0, micros: 0 }
        e.count++
        e.micros += l.duration
        micros += l.duration
        shapes.set(shape, e)
        if (/^COMMIT/i.test(l.sql)) commits++
        else if (!l.inTx && !/^(BEGIN|ROLLBACK|SAVEPOINT|RELEASE)/i.test(l.sql)) {
          if (isWrite(l.sql)) autocommitWrites++
          else autocommitReads++
        }
      }
      log(
        `SQL ${what}: ${lines.length} statements, ${fmt(lines.length / per, 2)}/delivery; COMMITs ${fmt(commits / per, 2)} + ` +
          `writes outside a transaction ${fmt(autocommitWrites / per, 2)} = ${fmt((commits + autocommitWrites) / per, 2)} ` +
          `durable commits/delivery; reads outside a transaction ${fmt(autocommitReads / per, 2)}/delivery; ` +
          `${kind === "pg" ? "round-trip" : "driver"} time ${fmt(micros / 1000 / per, 2)} ms/delivery (summed)`
      )
      for (const [shape, e] of Array.from(shapes)
        .sort((a, b) => b[1].count - a[1].count)
        .slice(0, 20)) {
        log(
          `  ${fmt(e.count / per, 3).padStart(7)}/delivery ${fmt(e.micros / e.count / 1000, 2).padStart(7)} ms avg  ${shape}`
        )
      }
    }
    if (TRACE) {
      sqlReport(windowed, inWindow, "in the steady window")
      sqlReport(whole, N, "from ready to the last processed")
    }
    // Profile.
    let profileSummary: ReturnType<typeof summarize> | undefined
    if (PROFILE) {
      // The runner's main thread writes the first profile (.001); tsx's loader thread another.
      const files = fs
        .readdirSync(OUT)
        .filter((f) => f.endsWith(".cpuprofile") && f.includes(`.${pid}.`))
        .sort()
      for (const extra of files.slice(1)) fs.rmSync(path.join(OUT, extra))
      const file = files[0]
      if (file === undefined) log("no profile written")
      else {
        const renamed = path.join(OUT, `${label}.cpuprofile`)
        fs.renameSync(path.join(OUT, file), renamed)
        const profile = JSON.parse(fs.readFileSync(renamed, "utf8"))
        profileSummary = summarize(profile, w0, w1, [
          "deliver src/cluster/Reminders.ts",
          "src/cluster/",
          "sql-pg",
          "@effect/sql/",
          "@effect/cluster/",
          "@effect/rpc/",
          "(garbage collector)"
        ])
        log(`profile ${renamed}, steady window (processed p10-p90, ${fmt(w0, 0)}-${fmt(w1, 0)} µs):`)
        log(render(profileSummary, 25, inWindow))
        log("profile, the whole restart (ready to all processed):")
        log(render(summarize(profile, readyMono, p100!), 10, N))
      }
    }
    fs.writeFileSync(
      path.join(OUT, `${label}.json`),
      JSON.stringify(
        {
          label,
          N,
          registered,
          before,
          readyAt,
          spawnAt,
          handled: { t10, t50, t90, last },
          processed: { p10, p50, p90, p100, readyMono },
          steady,
          samples: sampling.samples
        },
        null,
        1
      )
    )
  } finally {
    if (runner !== undefined) await kill(runner)
    remove()
  }
}

log(`restart-profile: ${STORAGES.join(",")} × ${SYSTEMS.join(",")}, N=${N}, out ${OUT}`)
for (const kind of STORAGES) for (const system of SYSTEMS) await runOne(kind, system)
process.exit(0)
