/**
 * Where a cluster cron instant's time goes: one runner in this process with $CRONS every-second `ClusterScheduler`
 * schedules (and as many plain `ClusterCron` jobs with $PLAIN=1, as the cluster bench's runner has), every SQL
 * statement the runner sends logged with its start and duration (the drivers are wrapped: better-sqlite3's
 * statements, pg's `Client.query`), every instant's lateness (`Date.now()` in `execute` − the instant).
 *
 * `npx tsx test/bench/cron-trace.ts` with $STORAGE (`sqlite:<file>`, default a temporary file, or `pg:<url>`),
 * $SECONDS watched (default 10, from 2 s after the runner is up), $TIMELINE=1 to print one second's statements in
 * order. Prints the lateness, then statements and SQL time per instant by kind of statement, and the process's CPU
 * time per instant over the watched seconds (the figure least sensitive to a shared machine's load).
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as ClusterCron from "@effect/cluster/ClusterCron"
import * as Entity from "@effect/cluster/Entity"
import { NodeRuntime } from "@effect/platform-node"
import { Cron, DateTime, Effect, Layer, Logger, LogLevel } from "effect"
import { ClusterRunner, ClusterScheduler } from "../../src/cluster/index.js"

// The drivers @effect/sql-sqlite-node and @effect/sql-pg load (untyped here: no @types packages in the project).
const require = createRequire(import.meta.url)
const Sqlite = require("better-sqlite3")
const Pg = require("pg")

interface Stmt {
  readonly at: number
  readonly millis: number
  readonly sql: string
}
const statements: Array<Stmt> = []
const now = () => performance.timeOrigin + performance.now()

// better-sqlite3: each statement's all/run/get, timed.
const prepare = Sqlite.prototype.prepare
Sqlite.prototype.prepare = function (this: unknown, source: string) {
  const statement = prepare.call(this, source) as any
  for (const method of ["all", "run", "get"]) {
    const original = statement[method]
    statement[method] = function (...args: Array<unknown>) {
      const at = now()
      try {
        return original.apply(this, args)
      } finally {
        statements.push({ at, millis: now() - at, sql: source })
      }
    }
  }
  return statement
}
// pg: each query, from the call to its callback (round trip and queueing on the connection).
const query = Pg.Client.prototype.query as any
;(Pg.Client.prototype as any).query = function (this: unknown, ...args: Array<any>) {
  const at = now()
  const text: string = typeof args[0] === "string" ? args[0] : (args[0]?.text ?? String(args[0]))
  const last = args[args.length - 1]
  if (typeof last === "function") {
    args[args.length - 1] = (...cb: Array<unknown>) => {
      statements.push({ at, millis: now() - at, sql: text })
      return last(...cb)
    }
    return query.apply(this, args)
  }
  const result = query.apply(this, args)
  if (result && typeof result.then === "function") {
    return result.finally(() => statements.push({ at, millis: now() - at, sql: text }))
  }
  return result
}

const crons = Number(process.env.CRONS ?? "10")
const plain = process.env.PLAIN === "1" || process.env.PLAIN === "only"
/** $PLAIN=only: the `ClusterCron` jobs alone, without tickwork's schedules. */
const tickworkCount = process.env.PLAIN === "only" ? 0 : crons
const seconds = Number(process.env.SECONDS ?? "10")
const spec = process.env.STORAGE ?? `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cron-trace-")), "c.db")}`
const storage = spec.startsWith("pg:")
  ? ClusterRunner.postgres({ url: spec.slice(3) })
  : ClusterRunner.sqlite(spec.slice("sqlite:".length))

interface FireAt {
  readonly system: "t" | "p"
  readonly name: string
  readonly instant: number
  readonly at: number
}
const fires: Array<FireAt> = []

const tickwork = Array.from({ length: tickworkCount }, (_, i) =>
  ClusterScheduler.layer(
    "* * * * * ?",
    (fire) =>
      Effect.sync(() =>
        fires.push({ system: "t", name: `c${i}`, instant: DateTime.toEpochMillis(fire.instant), at: now() })
      ),
    ClusterScheduler.withTimerReference(`trace-cron-${i}`)
  )
)
const plains = plain
  ? Array.from({ length: crons }, (_, i) =>
      ClusterCron.make({
        name: `trace-plain-${i}`,
        cron: Cron.unsafeParse("* * * * * *"),
        execute: Effect.flatMap(Effect.serviceOption(Entity.CurrentAddress), (address) =>
          Effect.sync(() =>
            fires.push({
              system: "p",
              name: `p${i}`,
              instant: address._tag === "Some" ? Date.parse(address.value.entityId) : Number.NaN,
              at: now()
            })
          )
        )
      })
    )
  : []

const kindOf = (sql: string): string => {
  const s = sql.replace(/\s+/g, " ").trim()
  const m =
    /^(WITH .*?\) )?(SELECT|INSERT INTO|UPDATE|DELETE FROM|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|[A-Z]+)\s*("?[\w_]+"?)?/i.exec(
      s
    )
  const head = m ? `${m[2]} ${m[3] ?? ""}`.trim() : s.slice(0, 40)
  return `${head} | ${s.slice(0, 90)}`
}

const pct = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const report = (from: number, to: number) => {
  for (const system of ["t", "p"] as const) {
    const own = fires.filter((f) => f.system === system && f.instant >= from && f.instant < to)
    if (own.length === 0) continue
    const late = own.map((f) => f.at - f.instant).sort((a, b) => a - b)
    console.log(
      `${system === "t" ? "ClusterScheduler" : "ClusterCron"}: ${own.length} instants, lateness p50 ` +
        `${pct(late, 50).toFixed(1)} / p90 ${pct(late, 90).toFixed(1)} / max ${late[late.length - 1]!.toFixed(1)} ms`
    )
    // Per second: the order in which the schedules ran, and each one's lateness.
    for (let s = from; s < Math.min(to, from + 3000); s += 1000) {
      const row = own
        .filter((f) => f.instant === s)
        .sort((a, b) => a.at - b.at)
        .map((f) => `${f.name}:${(f.at - f.instant).toFixed(0)}`)
      console.log(`  ${new Date(s).toISOString().slice(17, 23)} ${row.join(" ")}`)
    }
  }
  const window = statements.filter((s) => s.at >= from && s.at < to)
  const instants = fires.filter((f) => f.instant >= from && f.instant < to).length
  const byKind = new Map<string, { n: number; millis: number }>()
  for (const s of window) {
    const k = kindOf(s.sql)
    const e = byKind.get(k) ?? { n: 0, millis: 0 }
    e.n++
    e.millis += s.millis
    byKind.set(k, e)
  }
  const total = window.reduce((sum, s) => sum + s.millis, 0)
  console.log(
    `\n${window.length} statements in ${(to - from) / 1000} s, ${instants} instants: ` +
      `${(window.length / instants).toFixed(1)} statements and ${(total / instants).toFixed(2)} ms of SQL per instant`
  )
  console.log(" per instant   ms/instant  statement")
  for (const [k, e] of [...byKind].sort((a, b) => b[1].n - a[1].n)) {
    console.log(`${(e.n / instants).toFixed(2).padStart(12)}  ${(e.millis / instants).toFixed(3).padStart(10)}  ${k}`)
  }
  if (process.env.TIMELINE === "1") {
    const second = from + 1000
    console.log(`\ntimeline of ${new Date(second).toISOString()} (ms after the instant, duration, statement)`)
    const events = [
      ...statements
        .filter((s) => s.at >= second - 50 && s.at < second + 400)
        .map((s) => ({
          at: s.at,
          line: `${s.millis.toFixed(2).padStart(7)}  ${s.sql.replace(/\s+/g, " ").slice(0, 110)}`
        })),
      ...fires.filter((f) => f.instant === second).map((f) => ({ at: f.at, line: `   FIRE  ${f.system} ${f.name}` }))
    ].sort((a, b) => a.at - b.at)
    for (const e of events) console.log(`${(e.at - second).toFixed(1).padStart(7)}  ${e.line}`)
  }
}

const Runner = Layer.mergeAll(Layer.empty, ...tickwork, ...plains).pipe(
  Layer.provideMerge(ClusterRunner.layer({ port: 34000 + Math.floor(Math.random() * 1000), storage }))
)

const main = Effect.gen(function* () {
  const up = Date.now()
  const from = Math.ceil(up / 1000) * 1000 + 2000
  const to = from + seconds * 1000
  console.log(`runner up at +${up % 1000} ms into its second; watching ${seconds} s`)
  yield* Effect.sleep(from - Date.now())
  const cpuFrom = process.cpuUsage()
  yield* Effect.sleep(to - Date.now())
  const cpu = process.cpuUsage(cpuFrom)
  yield* Effect.sleep(1500)
  report(from, to)
  const instants = fires.filter((f) => f.instant >= from && f.instant < to).length
  console.log(
    `\nprocess CPU over the ${seconds} s: ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms, ` +
      `${((cpu.user + cpu.system) / 1000 / instants).toFixed(2)} ms per instant (load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")})`
  )
})

NodeRuntime.runMain(
  main.pipe(Effect.provide(Runner), Logger.withMinimumLogLevel(LogLevel.Warning)) as Effect.Effect<void>
)
