/**
 * Cluster scenario: durable reminders and cluster cron on real runner processes (test/bench/cluster-runner.ts), on
 * SQLite and on PostgreSQL, each figure beside the same run's baseline of plain @effect/cluster: persisted messages
 * with `DeliverAt` (what a reminder occurrence is underneath, without tickwork's table and checks) and `ClusterCron`.
 *
 * Per storage, each phase on fresh storage (a new SQLite file; PostgreSQL's `cluster*` tables dropped):
 * - one runner: registration throughput one at a time and `concurrency` at once, storage and runner heap per pending
 *   reminder, delivery lateness of one-shots due over a window, then what the tables hold after `retained` more
 *   reminders were delivered (item 4's figure: storage against the pending set);
 * - one runner with `crons` every-second schedules of each kind: lateness per instant;
 * - PostgreSQL only: the pending set grown step by step to `sizes` (registration rate, bytes and heap per pending,
 *   and the lateness of a probe of 100 reminders due at each size);
 * - three runners: `recovery` reminders registered, every runner SIGKILLed before they come due, three new runners
 *   started after: time until every one is delivered;
 * - three runners: `killed` reminders due over a window, one runner SIGKILLed in its middle: delivered/s, lateness,
 *   lost and duplicated deliveries.
 *
 * Lateness is first delivery − due, both read from the runner processes' `Date.now()` (one machine, one clock).
 * Reminder i goes to grain (entity) `g<i mod 10,000>`, so large sets share grains as an application's would.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ClusterRunner } from "../../src/cluster/index.js"
import {
  type CronFire,
  Deliveries,
  kill,
  type RunnerProcess,
  type Storage,
  type System,
  started,
  startRunner,
  stop,
  tempDir
} from "./cluster-process.js"
import {
  fmtBytes,
  fmtCount,
  fmtInt,
  fmtNum,
  fmtRate,
  type LatenessSummary,
  latenessCells,
  loadAverage,
  summarize,
  type TargetRow,
  table
} from "./stats.js"

export interface ClusterOptions {
  /** Registrations measured one at a time, and at `concurrency` at once. */
  readonly oneAtATime: number
  readonly batched: number
  readonly concurrency: number
  /**
   * Single registrations (`registerFor`, plain: sends) with this many callers in flight at once, `batched` of them
   * each: what registration's group commit makes of many callers.
   */
  readonly callers: ReadonlyArray<number>
  /** tickwork: `largeBatch` registrations as `registerManyFor` calls of 1,000, this many calls in flight at once. */
  readonly batchesInFlight: ReadonlyArray<number>
  readonly largeBatch: number
  /** One-shots due evenly over `windowMillis`, one lateness row per size. */
  readonly lateness: ReadonlyArray<number>
  readonly windowMillis: number
  /** Reminders delivered to measure what storage keeps of them. */
  readonly retained: number
  /** Every-second schedules of each kind, and how long their instants are watched. */
  readonly crons: number
  readonly cronMillis: number
  /** The pending set's steps on PostgreSQL (the last is the largest). */
  readonly sizes: ReadonlyArray<number>
  /** Overdue reminders of each kind at a full restart. */
  readonly recovery: number
  /** Reminders of each kind due over `killedWindowMillis` on three runners, one killed midway. */
  readonly killed: number
  readonly killedWindowMillis: number
}

const PG_URL = process.env.TICKWORK_BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/tw_bench"
const FAR = 86_400_000
const PHASE_NAMES = ["plain", "armed", "cron", "growth", "recovery", "killed"] as const
type PhaseName = (typeof PHASE_NAMES)[number]
/** `TICKWORK_BENCH_CLUSTER_PHASES=armed,cron` runs some phases only (to re-measure a figure); unset: all. */
const PHASES = process.env.TICKWORK_BENCH_CLUSTER_PHASES?.split(",").map((name) => {
  const known = PHASE_NAMES.find((p) => p === name.trim())
  if (known === undefined) throw new Error(`TICKWORK_BENCH_CLUSTER_PHASES: unknown phase "${name}" (${PHASE_NAMES})`)
  return known
})
/** `TICKWORK_BENCH_CLUSTER_STORAGES=pg` (or `sqlite`) runs on one storage only; unset: both. */
const STORAGES = process.env.TICKWORK_BENCH_CLUSTER_STORAGES?.split(",").map((name) => {
  const known = (["sqlite", "pg"] as const).find((s) => s === name.trim())
  if (known === undefined) throw new Error(`TICKWORK_BENCH_CLUSTER_STORAGES: unknown storage "${name}" (sqlite,pg)`)
  return known
})

/** Plain @effect/cluster's behaviour: delivery at the storage poll, processed messages kept forever. */
const PLAIN_ENV = { ARMING: "off", RETENTION: "off" }
/** The armed runner: a window wide enough to hold what the heap reading arms; retention at its minimum. */
const ARMED_WINDOW = "10 seconds"
const RETENTION_MILLIS = 60_000
const ARMED_ENV = { ARMING_WINDOW: ARMED_WINDOW, RETENTION: "1 minute" }
/** Reminder i goes to grain `g<i mod GRAINS>` (cluster-runner.ts's default). */
const GRAINS = 10_000
const SYSTEMS: ReadonlyArray<System> = ["t", "p"]
const LABEL: Record<System, string> = { t: "tickwork reminders", p: "plain @effect/cluster DeliverAt" }

/** How long three runners just started are left to share the shards before anything is registered. */
const SETTLE_MILLIS = 5_000

const sleep = (millis: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, millis))

// ---------------------------------------------------------------- storage

interface TableSize {
  readonly table: string
  readonly rows: number
  readonly bytes: number
}
interface Sizes {
  readonly tables: ReadonlyArray<TableSize>
  readonly pendingMessages: number
  readonly processedMessages: number
}
const totalBytes = (s: Sizes): number => s.tables.reduce((sum, t) => sum + t.bytes, 0)
const rowsOf = (s: Sizes, suffix: string): number => s.tables.find((t) => t.table.endsWith(suffix))?.rows ?? 0

const withPg = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(SqlClient.SqlClient, f).pipe(
        Effect.provide(ClusterRunner.layerStorage(ClusterRunner.postgres({ url, connectTimeout: "3 seconds" })))
      )
    )
  )

/** Why PostgreSQL cannot be used (undefined when it can); creates the bench's database when the server lacks it. */
const pgUnavailable = async (): Promise<string | undefined> => {
  const reason = (error: unknown) => (error instanceof Error ? error.message : String(error))
  try {
    await withPg(PG_URL, (sql) => sql`SELECT 1`)
    return undefined
  } catch (error) {
    if (!/does not exist/.test(reason(error))) return reason(error)
  }
  try {
    const url = new URL(PG_URL)
    const name = url.pathname.slice(1)
    url.pathname = "/postgres"
    await withPg(url.toString(), (sql) => sql.unsafe(`CREATE DATABASE "${name.replace(/"/g, "")}"`))
    return undefined
  } catch (error) {
    return `creating the bench's database: ${reason(error)}`
  }
}

/** Fresh storage for a phase: a new SQLite file, or PostgreSQL without the cluster's tables. */
const freshStorage = async (kind: "sqlite" | "pg"): Promise<{ storage: Storage; remove: () => void }> => {
  if (kind === "sqlite") {
    const { dir, remove } = tempDir("cluster")
    return { storage: { kind, spec: `sqlite:${dir}/cluster.db` }, remove }
  }
  await withPg(PG_URL, (sql) =>
    Effect.flatMap(
      sql<{ tablename: string }>`SELECT tablename FROM pg_tables
        WHERE schemaname = current_schema() AND tablename LIKE 'cluster%'`,
      (rows) => Effect.forEach(rows, (row) => sql`DROP TABLE IF EXISTS ${sql(row.tablename)} CASCADE`)
    )
  )
  return { storage: { kind, spec: `pg:${PG_URL}` }, remove: () => {} }
}

// ---------------------------------------------------------------- runners

class Ids {
  private next = 0
  take(n: number): { readonly from: number; readonly to: number } {
    const from = this.next
    this.next += n
    return { from, to: this.next }
  }
  /** n ids from a multiple of GRAINS: their grains are g0 ... g(n-1), warm once one such range was delivered. */
  takeAligned(n: number): { readonly from: number; readonly to: number } {
    this.next = Math.ceil(this.next / GRAINS) * GRAINS
    return this.take(n)
  }
}

interface Registered {
  readonly n: number
  readonly millis: number
  /** Registrations that failed and were tried again (see cluster-runner.ts). */
  readonly retries: number
}

const register = (
  runner: RunnerProcess,
  system: System,
  ids: { readonly from: number; readonly to: number },
  dueFrom: number,
  dueTo: number,
  concurrency: number,
  batch = 0,
  batchesInFlight = 1
): Promise<Registered> =>
  runner.command({ op: "register", system, ...ids, dueFrom, dueTo, concurrency, batch, batchesInFlight })

/**
 * Registrations per `Reminders.registerManyFor` call where the checkout has it (it came with local arming); 0: the
 * "batched" figure is `concurrency` single registrations in flight.
 */
const BATCH = 1_000

const rateOf = (r: Registered): number => (r.n / r.millis) * 1000

const within = <A>(promise: Promise<A>, millis: number, what: string): Promise<A> =>
  Promise.race([
    promise,
    sleep(millis).then(() => Promise.reject(new Error(`${what}: no answer within ${millis / 1000} s`)))
  ])

const startAll = async (
  count: number,
  storage: Storage,
  deliveries: Deliveries,
  crons?: Array<CronFire>,
  env?: Record<string, string>,
  /** The tables exist (a restart): every runner starts at once, as a cluster's processes restarted together do. */
  restart = false
): Promise<Array<RunnerProcess>> => {
  const runners: Array<RunnerProcess> = []
  // The first creates the tables; the others join once it is up.
  runners.push(await startRunner(0, storage, { deliveries, ...(crons ? { crons } : {}) }, env))
  if (!restart) await within(runners[0]!.ready, 90_000, "runner 0 start")
  for (let i = 1; i < count; i++) runners.push(await startRunner(i, storage, { deliveries }, env))
  await within(Promise.all(runners.map((r) => r.ready)), 90_000, "runners start")
  // Runners that join move shards for a few seconds (assignments refresh every second, locks are taken after).
  if (count > 1) await sleep(SETTLE_MILLIS)
  return runners
}

/**
 * Registrations per second of both kinds through `runner`, measured on a sample due far in the future: what the
 * phases of three runners size their lead time by (registering to runners in other processes is slower).
 */
const sampleRate = async (runner: RunnerProcess, ids: Ids, n: number, concurrency: number): Promise<number> => {
  const far = Date.now() + FAR
  let millis = 0
  for (const system of SYSTEMS) millis += (await register(runner, system, ids.take(n), far, far, concurrency)).millis
  return ((2 * n) / millis) * 1000
}

export interface LatenessRow {
  readonly system: System
  readonly n: number
  readonly windowMillis: number
  readonly arming: "on" | "off"
  /** How long after the first due time registration ended (0 unless the machine was slower than estimated). */
  readonly overrunMillis: number
  readonly delivered: number
  readonly duplicates: number
  readonly lateness: LatenessSummary
}

/** Registers n one-shots due over the window (starting once registration is surely done) and waits for them. */
const latenessRun = async (
  runner: RunnerProcess,
  deliveries: Deliveries,
  ids: Ids,
  system: System,
  n: number,
  windowMillis: number,
  concurrency: number,
  ratePerSec: number
): Promise<Omit<LatenessRow, "arming">> => {
  const range = ids.take(n)
  const dueFrom = Date.now() + Math.ceil((n / ratePerSec) * 2000) + 2_000
  const dueTo = dueFrom + windowMillis
  await register(runner, system, range, dueFrom, dueTo, concurrency)
  const overrunMillis = Math.max(0, Date.now() - dueFrom)
  await deliveries.waitAll(system, range.from, range.to, dueTo + 60_000)
  await sleep(1_000) // a duplicate has a moment to show
  return {
    system,
    n,
    windowMillis,
    overrunMillis,
    delivered: deliveries.delivered(system, range.from, range.to),
    duplicates: deliveries.duplicates(system, range.from, range.to),
    lateness: summarize(deliveries.lateness(system, range.from, range.to))
  }
}

// ---------------------------------------------------------------- phases

export interface RegistrationRates {
  readonly oneAtATime: number
  readonly batched: number
  /** Single registrations with `callers` in flight at once. */
  readonly concurrent: ReadonlyArray<{ readonly callers: number; readonly rate: number }>
  /** tickwork: a large input as `registerManyFor` calls of 1,000, `inFlight` at once. */
  readonly batchesInFlight: ReadonlyArray<{ readonly inFlight: number; readonly rate: number }>
}

export interface OneRunnerResult {
  readonly registration: Record<System, RegistrationRates>
  readonly bytesPerPending: Record<System, number>
  readonly heapPerPending: Record<System, number>
  readonly pendingTables: ReadonlyArray<TableSize>
  readonly lateness: ReadonlyArray<LatenessRow>
  readonly retention: Record<
    System,
    {
      readonly delivered: number
      readonly before: Sizes
      readonly after: Sizes
      /** Storage bytes kept per delivered reminder. */
      readonly bytesPerDelivered: number
    }
  >
  /** The far-future reminders pending during the retention run, and their bytes. */
  readonly pending: Record<System, number>
  /** Registrations of each `callers` run, and of each `batchesInFlight` run. */
  readonly callersEach: number
  readonly largeBatch: number
}

const oneRunner = async (
  storage: Storage,
  options: ClusterOptions,
  log: (line: string) => void
): Promise<OneRunnerResult> => {
  const capacity =
    400 +
    2 * (options.oneAtATime + options.batched) +
    2 * options.lateness.reduce((a, b) => a + b, 0) +
    2 * options.callers.length * options.batched +
    options.batchesInFlight.length * options.largeBatch
  const deliveries = new Deliveries(capacity + 2 * options.retained)
  const [runner] = await startAll(1, storage, deliveries, undefined, PLAIN_ENV)
  const r = runner!
  try {
    const ids = new Ids()
    const far = Date.now() + FAR
    const c = options.concurrency
    // Warm-up: both paths compiled before anything is measured.
    for (const system of SYSTEMS) await register(r, system, ids.take(200), far, far + 1000, 10)
    const sizes0 = await r.command<Sizes>({ op: "sizes" })
    const heap0 = (await r.command<{ heapUsed: number }>({ op: "heap" })).heapUsed
    const registration = {} as Record<System, RegistrationRates>
    const bytesPerPending = {} as Record<System, number>
    const heapPerPending = {} as Record<System, number>
    let sizesBefore = sizes0
    let heapBefore = heap0
    for (const system of SYSTEMS) {
      const one = await register(r, system, ids.take(options.oneAtATime), far, far + FAR, 1)
      const batched = await register(r, system, ids.take(options.batched), far, far + FAR, c, BATCH)
      registration[system] = {
        oneAtATime: rateOf(one),
        batched: rateOf(batched),
        concurrent: [],
        batchesInFlight: []
      }
      const sizes = await r.command<Sizes>({ op: "sizes" })
      const heap = (await r.command<{ heapUsed: number }>({ op: "heap" })).heapUsed
      const n = options.oneAtATime + options.batched
      bytesPerPending[system] = (totalBytes(sizes) - totalBytes(sizesBefore)) / n
      heapPerPending[system] = (heap - heapBefore) / n
      log(
        `  ${LABEL[system]}: ${fmtRate(registration[system].oneAtATime)}/s one at a time, ` +
          `${fmtRate(registration[system].batched)}/s ${c} at once, ${fmtBytes(bytesPerPending[system])} stored and ` +
          `${fmtBytes(heapPerPending[system])} of runner heap per pending reminder`
      )
      sizesBefore = sizes
      heapBefore = heap
    }
    const pendingTables = sizesBefore.tables
    const lateness: Array<LatenessRow> = []
    for (const n of options.lateness) {
      for (const system of SYSTEMS) {
        const row = await latenessRun(
          r,
          deliveries,
          ids,
          system,
          n,
          options.windowMillis,
          c,
          registration[system].batched
        )
        lateness.push({ ...row, arming: "off" })
        log(
          `  lateness, ${fmtInt(n)} ${LABEL[system]} due over ${options.windowMillis / 1000} s: ` +
            `p50 ${fmtNum(row.lateness.p50, 0)} / p99 ${fmtNum(row.lateness.p99, 0)} / max ` +
            `${fmtNum(row.lateness.max, 0)} ms, ${row.delivered}/${n} delivered, ${row.duplicates} twice`
        )
      }
    }
    // What storage keeps of delivered reminders, against the pending set.
    const retention = {} as OneRunnerResult["retention"]
    for (const system of SYSTEMS) {
      const before = await r.command<Sizes>({ op: "sizes" })
      const row = await latenessRun(
        r,
        deliveries,
        ids,
        system,
        options.retained,
        2_000,
        c,
        registration[system].batched
      )
      await sleep(2_000)
      const after = await r.command<Sizes>({ op: "sizes" })
      retention[system] = {
        delivered: row.delivered,
        before,
        after,
        bytesPerDelivered: (totalBytes(after) - totalBytes(before)) / row.delivered
      }
      log(
        `  after ${fmtInt(row.delivered)} ${LABEL[system]} delivered: ${fmtBytes(totalBytes(before))} → ` +
          `${fmtBytes(totalBytes(after))} (${fmtBytes(retention[system].bytesPerDelivered)} kept per delivery)`
      )
    }
    for (const system of SYSTEMS) {
      // Many callers at once (group commit), and a large input in batches in flight together: last, so that what
      // is measured above (storage, heap, lateness, retention) sees the same pending set as before they existed.
      const concurrent: Array<{ callers: number; rate: number }> = []
      for (const callers of options.callers) {
        concurrent.push({
          callers,
          rate: rateOf(await register(r, system, ids.take(options.batched), far, far + FAR, callers))
        })
      }
      const inFlight: Array<{ inFlight: number; rate: number }> = []
      if (system === "t") {
        for (const n of options.batchesInFlight) {
          const run = await register(r, system, ids.take(options.largeBatch), far, far + FAR, 1, BATCH, n)
          inFlight.push({ inFlight: n, rate: rateOf(run) })
        }
      }
      registration[system] = { ...registration[system], concurrent, batchesInFlight: inFlight }
      log(
        `  ${LABEL[system]}: ` +
          concurrent.map((c) => `${fmtRate(c.rate)}/s with ${c.callers} callers`).join(", ") +
          inFlight
            .map(
              (b) =>
                `, ${fmtInt(options.largeBatch)} in batches of ${BATCH}, ${b.inFlight} in flight: ${fmtRate(b.rate)}/s`
            )
            .join("")
      )
    }
    const pendingEach = 200 + options.oneAtATime + options.batched
    return {
      registration,
      bytesPerPending,
      heapPerPending,
      pendingTables,
      lateness,
      retention,
      pending: { t: pendingEach, p: pendingEach },
      callersEach: options.batched,
      largeBatch: options.largeBatch
    }
  } finally {
    await stop(r)
  }
}

export interface ArmedResult {
  readonly window: string
  readonly lateness: ReadonlyArray<LatenessRow>
  /** Runner heap per reminder pending within the window (armed) and beyond it, on grains already active. */
  readonly heapPerArmed: number
  readonly heapPerUnarmed: number
  /** The same for the runner's array buffers, which V8's heap used leaves out (typed arrays' contents). */
  readonly buffersPerArmed: number
  readonly buffersPerUnarmed: number
  readonly heapReminders: number
  /** Item 4: storage right after `delivered` reminders were delivered, and once the retention period passed. */
  readonly retention: {
    readonly delivered: number
    readonly before: Sizes
    readonly afterDelivery: Sizes
    readonly afterRetention: Sizes
    readonly waitedMillis: number
    /** Deliveries after the retained ones (their rows are younger than the period when storage is read). */
    readonly deliveredSince: number
  }
}

/**
 * The runner's heap used and array buffers after forced collections, each the least of five readings 200 ms apart:
 * what its polls, sweeps and connections hold for a moment varies by hundreds of kilobytes from one reading to the
 * next, as much as a figure per reminder of 2,000 moves by 100 B.
 */
const settledMemory = async (
  r: RunnerProcess
): Promise<{ readonly heapUsed: number; readonly arrayBuffers: number }> => {
  let heapUsed = Number.POSITIVE_INFINITY
  let arrayBuffers = Number.POSITIVE_INFINITY
  for (let reading = 0; reading < 5; reading++) {
    if (reading > 0) await sleep(200)
    const memory = await r.command<{ heapUsed: number; arrayBuffers: number }>({ op: "heap" })
    heapUsed = Math.min(heapUsed, memory.heapUsed)
    arrayBuffers = Math.min(arrayBuffers, memory.arrayBuffers)
  }
  return { heapUsed, arrayBuffers }
}

/** What arming holds per reminder: heap and array buffers within the window, less the same beyond it. */
const armedMemory = (a: ArmedResult): number =>
  a.heapPerArmed + a.buffersPerArmed - (a.heapPerUnarmed + a.buffersPerUnarmed)

/**
 * One runner with tickwork's local arming (window ${ARMED_WINDOW}) and a 1-minute retention: lateness of the same
 * one-shots as the plain phase, heap per armed reminder, and what storage keeps once the retention period passed.
 */
const armedRunner = async (
  storage: Storage,
  options: ClusterOptions,
  log: (line: string) => void
): Promise<ArmedResult> => {
  const heapN = Math.min(options.retained, 2_000)
  const capacity = GRAINS * 4 + options.retained + 2 * heapN + 2 * options.lateness.reduce((a, b) => a + b, 0) + 400
  const deliveries = new Deliveries(capacity)
  const [runner] = await startAll(1, storage, deliveries, undefined, ARMED_ENV)
  const r = runner!
  try {
    const ids = new Ids()
    const far = Date.now() + FAR
    const c = options.concurrency
    for (const system of SYSTEMS) await register(r, system, ids.take(200), far, far + 1000, 10)
    // Retention first: its period runs while the rest is measured.
    const before = await r.command<Sizes>({ op: "sizes" })
    const retainedIds = ids.takeAligned(options.retained)
    const dueFrom = Date.now() + 3_000 + options.retained // ~1k registrations a second or better
    await register(r, "t", retainedIds, dueFrom, dueFrom + 2_000, c)
    await deliveries.waitAll("t", retainedIds.from, retainedIds.to, dueFrom + 120_000)
    const deliveredAt = Date.now()
    const delivered = deliveries.delivered("t", retainedIds.from, retainedIds.to)
    const countAt = deliveries.counts.t + deliveries.counts.p
    await sleep(1_000)
    const afterDelivery = await r.command<Sizes>({ op: "sizes" })
    log(
      `  ${fmtInt(delivered)} delivered: ${fmtBytes(totalBytes(before))} → ${fmtBytes(totalBytes(afterDelivery))}; ` +
        `waiting out the ${RETENTION_MILLIS / 1000} s retention meanwhile`
    )
    // Heap per armed reminder, on grains the retained reminders activated (no per-grain state in the figure).
    const memory = () => settledMemory(r)
    const memory0 = await memory()
    await register(r, "t", ids.takeAligned(heapN), far, far + 1000, c)
    const memory1 = await memory()
    const soonIds = ids.takeAligned(heapN)
    const soon = Date.now() + 5_000 + heapN
    await register(r, "t", soonIds, soon, soon + 1_000, c)
    await sleep(Math.max(0, Math.min(2_000, soon - Date.now() - 1_500)))
    const memory2 = await memory()
    await deliveries.waitAll("t", soonIds.from, soonIds.to, soon + 60_000)
    const heapPerUnarmed = (memory1.heapUsed - memory0.heapUsed) / heapN
    const heapPerArmed = (memory2.heapUsed - memory1.heapUsed) / heapN
    const buffersPerUnarmed = (memory1.arrayBuffers - memory0.arrayBuffers) / heapN
    const buffersPerArmed = (memory2.arrayBuffers - memory1.arrayBuffers) / heapN
    log(
      `  runner heap per reminder: ${fmtBytes(heapPerArmed)} armed (due within the window), ` +
        `${fmtBytes(heapPerUnarmed)} beyond it; array buffers ${fmtBytes(buffersPerArmed)} and ` +
        `${fmtBytes(buffersPerUnarmed)}`
    )
    const lateness: Array<LatenessRow> = []
    for (const n of options.lateness) {
      for (const system of SYSTEMS) {
        const row = await latenessRun(r, deliveries, ids, system, n, options.windowMillis, c, 1_000)
        lateness.push({ ...row, arming: "on" })
        log(
          `  lateness, armed, ${fmtInt(n)} ${LABEL[system]} due over ${options.windowMillis / 1000} s: ` +
            `p50 ${fmtNum(row.lateness.p50, 0)} / p99 ${fmtNum(row.lateness.p99, 0)} / max ` +
            `${fmtNum(row.lateness.max, 0)} ms, ${row.delivered}/${n} delivered, ${row.duplicates} twice`
        )
      }
    }
    // The sweep runs every quarter of the period: wait a period and a half after the last delivery.
    await sleep(Math.max(0, deliveredAt + RETENTION_MILLIS * 1.5 - Date.now()))
    const afterRetention = await r.command<Sizes>({ op: "sizes" })
    log(`  after the retention period: ${fmtBytes(totalBytes(afterRetention))}`)
    return {
      window: ARMED_WINDOW,
      lateness,
      heapPerArmed,
      heapPerUnarmed,
      buffersPerArmed,
      buffersPerUnarmed,
      heapReminders: heapN,
      retention: {
        delivered,
        before,
        afterDelivery,
        afterRetention,
        waitedMillis: Date.now() - deliveredAt,
        deliveredSince: deliveries.counts.t + deliveries.counts.p - countAt
      }
    }
  } finally {
    await stop(r)
  }
}

/**
 * Whose schedules one cron run's runner hosts: `both` (tickwork's and ClusterCron's side by side, the only run before
 * 2026-12-01 23:00 UTC: each instant of one waits behind the other's of the same second), or one system alone.
 */
export type CronHosts = "both" | System

/**
 * The cron runs of a storage, in order: arming off and on with both systems in one runner (the old figures), then,
 * armed, each system alone in its runner (the target's figure: 10 schedules, no other work in the runner).
 * `TICKWORK_BENCH_CLUSTER_CRON=together` runs the first two only, `=alone` the last two only.
 */
const CRON_RUNS: ReadonlyArray<{ readonly armed: boolean; readonly hosts: CronHosts }> = (() => {
  const together = [
    { armed: false, hosts: "both" as const },
    { armed: true, hosts: "both" as const }
  ]
  const alone = [
    { armed: true, hosts: "t" as const },
    { armed: true, hosts: "p" as const }
  ]
  const which = process.env.TICKWORK_BENCH_CLUSTER_CRON
  if (which === "together") return together
  if (which === "alone") return alone
  if (which !== undefined && which !== "") throw new Error(`TICKWORK_BENCH_CLUSTER_CRON: "${which}" (together, alone)`)
  return [...together, ...alone]
})()

export interface CronResult {
  readonly arming: "off" | "on"
  readonly hosts: CronHosts
  readonly schedules: number
  /** Milliseconds into its second at which the runner printed "ready" (its poll loop's phase). */
  readonly startPhaseMillis: number
  /** The systems the runner hosted (`hosts`). */
  readonly bySystem: Partial<
    Record<
      System,
      {
        readonly instants: number
        readonly missing: number
        readonly duplicates: number
        readonly lateness: LatenessSummary
      }
    >
  >
}

const cronPhase = async (
  storage: Storage,
  options: ClusterOptions,
  armed: boolean,
  hosts: CronHosts,
  log: (line: string) => void
): Promise<CronResult> => {
  const crons: Array<CronFire> = []
  const env = {
    CRONS: String(options.crons),
    ...(hosts === "both" ? {} : { CRON_SYSTEMS: hosts }),
    ...(armed ? {} : PLAIN_ENV)
  }
  const [runner] = await startAll(1, storage, new Deliveries(0), crons, env)
  const r = runner!
  try {
    // Watch whole seconds from 2 s after the runner is up.
    const from = Math.ceil(r.readyAt() / 1000) * 1000 + 2_000
    const to = from + options.cronMillis
    await sleep(to - Date.now() + 3_000)
    const bySystem = {} as CronResult["bySystem"]
    for (const system of SYSTEMS.filter((system) => hosts === "both" || hosts === system)) {
      const fires = crons.filter((f) => f.system === system && f.instant >= from && f.instant < to)
      const seen = new Set(fires.map((f) => `${f.name}@${f.instant}`))
      const expected = (options.crons * (to - from)) / 1000
      bySystem[system] = {
        instants: fires.length,
        missing: expected - seen.size,
        duplicates: fires.length - seen.size,
        lateness: summarize(Float64Array.from(fires.map((f) => f.at - f.instant)).sort())
      }
      const got = bySystem[system]!
      log(
        `  cron (arming ${armed ? "on" : "off"}, ${hosts === "both" ? "both systems in the runner" : "alone"}), ` +
          `${options.crons} every-second ${system === "t" ? "ClusterScheduler" : "ClusterCron"} schedules: ` +
          `p50 ${fmtNum(got.lateness.p50, 0)} / p99 ${fmtNum(got.lateness.p99, 0)} / max ` +
          `${fmtNum(got.lateness.max, 0)} ms over ${fires.length} instants (${got.missing} missing, ${got.duplicates} twice)`
      )
    }
    const arming = armed ? "on" : "off"
    return { arming, hosts, schedules: options.crons, startPhaseMillis: r.readyAt() % 1000, bySystem }
  } finally {
    await stop(r)
  }
}

export interface GrowthRow {
  readonly pending: number
  /** Registrations per second of this step (concurrency as in the one-runner phase). */
  readonly registrationRate: number
  readonly bytesPerPending: number
  readonly heapBytes: number
  readonly probe: Record<System, LatenessSummary>
}

export interface GrowthResult {
  readonly rows: ReadonlyArray<GrowthRow>
  /** Why the growth stopped before the last size, if it did. */
  readonly stopped: string | undefined
}

const growthPhase = async (
  storage: Storage,
  options: ClusterOptions,
  log: (line: string) => void
): Promise<GrowthResult> => {
  const largest = options.sizes[options.sizes.length - 1] ?? 0
  const deliveries = new Deliveries(largest + 200 * (options.sizes.length + 1) + 400)
  const [runner] = await startAll(1, storage, deliveries)
  const r = runner!
  const rows: Array<GrowthRow> = []
  let stopped: string | undefined
  try {
    const ids = new Ids()
    const far = Date.now() + FAR
    for (const system of SYSTEMS) await register(r, system, ids.take(100), far, far + 1000, 10)
    const base = await r.command<Sizes>({ op: "sizes" })
    let pending = 0
    for (const size of options.sizes) {
      const step = size - pending
      // In chunks, so that a stalled runner shows up as a slow chunk in the log, not as a silent hour.
      const chunk = 10_000
      let millis = 0
      for (let done = 0; done < step; done += chunk) {
        const n = Math.min(chunk, step - done)
        const reg = await register(r, "t", ids.take(n), far, far + FAR, options.concurrency, BATCH)
        millis += reg.millis
      }
      pending = size
      const sizes = await r.command<Sizes>({ op: "sizes" })
      const heap = (await r.command<{ heapUsed: number }>({ op: "heap" })).heapUsed
      const probe = {} as Record<System, LatenessSummary>
      for (const system of SYSTEMS) {
        const row = await latenessRun(r, deliveries, ids, system, 100, 1_000, 10, 200)
        probe[system] = row.lateness
      }
      const row: GrowthRow = {
        pending: size,
        registrationRate: (step / millis) * 1000,
        bytesPerPending: (totalBytes(sizes) - totalBytes(base)) / size,
        heapBytes: heap,
        probe
      }
      rows.push(row)
      log(
        `  ${fmtInt(size)} pending: registered at ${fmtRate(row.registrationRate)}/s, ${fmtBytes(row.bytesPerPending)} ` +
          `each, runner heap ${fmtBytes(heap)}, probe p99 ${fmtNum(probe.t.p99, 0)} ms (plain ` +
          `${fmtNum(probe.p.p99, 0)} ms) — load ${loadAverage()}`
      )
    }
  } catch (error) {
    stopped = error instanceof Error ? error.message.split("\n")[0] : String(error)
    log(`  growth stopped: ${stopped}`)
  } finally {
    await stop(r)
  }
  return { rows, stopped }
}

export interface RecoveryResult {
  readonly n: number
  /** Delivered before the kill (registration overran the due time); not counted below. */
  readonly deliveredBeforeKill: Record<System, number>
  /** A system whose run failed has none. */
  readonly bySystem: Partial<
    Record<
      System,
      {
        readonly delivered: number
        readonly duplicates: number
        /** From spawning the new runners / from the last of them being ready, to the last delivery. */
        readonly sinceSpawnMillis: number
        readonly sinceReadyMillis: number
      }
    >
  >
  /** Spawn to the last runner ready (of the tickwork run, when each system ran alone). */
  readonly startMillis: number
  /** Whether each system's backlog was restarted alone (`bySystem` from two runs). */
  readonly alone: boolean
}

/** The registrations a phase times to plan its due times (5% of its reminders, at least 100). */
const sampleSize = (n: number) => Math.max(100, Math.round(n / 20))

/**
 * Registers `n` reminders of each system through `runner`, due over `windowMillis` from a time far enough ahead that
 * registration ends before the first is due (else some are delivered before what the phase does to its runners): 1.5
 * times the time a sample of registrations takes, and 3 s more.
 */
const registerBoth = async (
  runner: RunnerProcess,
  n: number,
  windowMillis: number,
  concurrency: number,
  systems: ReadonlyArray<System> = SYSTEMS
) => {
  const ids = { t: { from: 0, to: n }, p: { from: n, to: 2 * n } }
  const all = new Ids()
  all.take(2 * n)
  await sampleRate(runner, all, 50, concurrency) // warm-up
  const rate = await sampleRate(runner, all, sampleSize(n), concurrency)
  const dueFrom = Date.now() + Math.ceil(((systems.length * n) / rate) * 1500) + 3_000
  let retries = 0
  for (const system of systems) {
    retries += (await register(runner, system, ids[system], dueFrom, dueFrom + windowMillis, concurrency)).retries
  }
  return { ids, dueFrom, retries }
}

/**
 * The recovery runs: each system alone in its runners (the target's figure: the restart delivers one system's backlog,
 * no other work beside it), or both systems' backlogs in one restart, each one's delivery sharing the runners with the
 * other's (the figures before 2026-12-04). `TICKWORK_BENCH_CLUSTER_RECOVERY=alone` (the default) or `=together`; `=t`
 * or `=p` runs one system's alone only.
 */
const RECOVERY_RUNS: ReadonlyArray<ReadonlyArray<System>> = (() => {
  const which = process.env.TICKWORK_BENCH_CLUSTER_RECOVERY ?? "alone"
  if (which === "together") return [SYSTEMS]
  if (which === "alone") return SYSTEMS.map((system) => [system])
  if (which === "t" || which === "p") return [[which]]
  throw new Error(`TICKWORK_BENCH_CLUSTER_RECOVERY: "${which}" (alone, together, t, p)`)
})()

/** The runs of `RECOVERY_RUNS` as one result: each system's figures from the run that restarted its backlog. */
const mergeRecoveries = (runs: ReadonlyArray<RecoveryResult>): RecoveryResult | undefined => {
  if (runs.length === 0) return undefined
  const runOf = (system: System) => runs.find((r) => system in r.bySystem) ?? runs[0]!
  const t = runOf("t")
  const p = runOf("p")
  return {
    ...t,
    deliveredBeforeKill: { t: t.deliveredBeforeKill.t, p: p.deliveredBeforeKill.p },
    bySystem: { ...p.bySystem, ...t.bySystem }
  }
}

const recoveryPhase = async (
  storage: Storage,
  options: ClusterOptions,
  log: (line: string) => void,
  systems: ReadonlyArray<System>
): Promise<RecoveryResult> => {
  const n = options.recovery
  const deliveries = new Deliveries(2 * n + 2 * sampleSize(n) + 100)
  let runners = await startAll(3, storage, deliveries)
  try {
    const { ids, dueFrom, retries } = await registerBoth(runners[0]!, n, 1_000, options.concurrency, systems)
    await Promise.all(runners.map(kill))
    const deliveredBeforeKill = {
      t: deliveries.delivered("t", ids.t.from, ids.t.to),
      p: deliveries.delivered("p", ids.p.from, ids.p.to)
    }
    log(
      `  ${fmtInt(n)} of ${systems.map((system) => LABEL[system]).join(" and ")} registered (${retries} ` +
        `registrations tried again), every runner SIGKILLed ${fmtInt(dueFrom - Date.now())} ms before due`
    )
    await sleep(Math.max(0, dueFrom + 2_000 - Date.now()))
    const spawnAt = Date.now()
    runners = await startAll(3, storage, deliveries, undefined, undefined, true)
    const readyAt = Math.max(...runners.map((r) => r.readyAt()))
    const deadline = Date.now() + Math.max(120_000, n * 2)
    const bySystem = {} as RecoveryResult["bySystem"]
    for (const system of systems) {
      const { from, to } = ids[system]
      await deliveries.waitAll(system, from, to, deadline)
      const last = deliveries.lastAt(system, from, to)
      bySystem[system] = {
        delivered: deliveries.delivered(system, from, to),
        duplicates: deliveries.duplicates(system, from, to),
        sinceSpawnMillis: last - spawnAt,
        sinceReadyMillis: last - readyAt
      }
    }
    await sleep(1_000)
    for (const system of systems) {
      const { from, to } = ids[system]
      const b = { ...bySystem[system]!, duplicates: deliveries.duplicates(system, from, to) }
      bySystem[system] = b
      // Deliveries in each second from the spawn (by runner), to see where the time goes.
      const perSecond: Array<Array<number>> = []
      for (let id = from; id < to; id++) {
        if (deliveries.times[system][id] === 0) continue
        const second = Math.max(0, Math.floor((deliveries.first[system][id]! - spawnAt) / 1000))
        const row = (perSecond[second] ??= [0, 0, 0])
        row[deliveries.byRunner[system][id]!] = (row[deliveries.byRunner[system][id]!] ?? 0) + 1
      }
      log(
        `  ${LABEL[system]}: ${fmtInt(b.delivered)}/${fmtInt(n)} delivered ` +
          `${fmtNum(b.sinceSpawnMillis / 1000)} s after the restart began ` +
          `(${fmtNum(b.sinceReadyMillis / 1000)} s after the runners were up; runners up at ` +
          `${runners.map((r) => fmtNum((r.readyAt() - spawnAt) / 1000)).join(", ")} s); per second from the spawn, ` +
          `by runner: ${Array.from(perSecond, (row) => (row ?? []).join("/")).join(" ")}`
      )
    }
    return { n, deliveredBeforeKill, bySystem, startMillis: readyAt - spawnAt, alone: systems.length === 1 }
  } finally {
    await Promise.all(runners.map((r) => stop(r)))
  }
}

export interface KilledResult {
  readonly n: number
  readonly windowMillis: number
  /** Milliseconds into the window at which runner 2 was SIGKILLed. */
  readonly killedAtMillis: number
  readonly bySystem: Record<
    System,
    {
      readonly delivered: number
      readonly duplicates: number
      /** Delivered per second from the first due time to the last delivery. */
      readonly throughput: number
      readonly lateness: LatenessSummary
      readonly latenessAfterKill: LatenessSummary
    }
  >
}

const killedPhase = async (
  storage: Storage,
  options: ClusterOptions,
  log: (line: string) => void
): Promise<KilledResult> => {
  const n = options.killed
  const w = options.killedWindowMillis
  const deliveries = new Deliveries(2 * n + 2 * sampleSize(n) + 100)
  const runners = await startAll(3, storage, deliveries)
  try {
    const { ids, dueFrom, retries } = await registerBoth(runners[0]!, n, w, options.concurrency)
    if (retries > 0) log(`  ${retries} registrations tried again`)
    await sleep(Math.max(0, dueFrom + w / 2 - Date.now()))
    const killedAt = Date.now()
    await kill(runners[2]!)
    log(`  runner 2 SIGKILLed ${fmtNum((killedAt - dueFrom) / 1000)} s into the ${w / 1000} s window`)
    const bySystem = {} as KilledResult["bySystem"]
    for (const system of SYSTEMS) {
      const { from, to } = ids[system]
      await deliveries.waitAll(system, from, to, dueFrom + w + 90_000)
    }
    await sleep(1_000)
    for (const system of SYSTEMS) {
      const { from, to } = ids[system]
      const delivered = deliveries.delivered(system, from, to)
      bySystem[system] = {
        delivered,
        duplicates: deliveries.duplicates(system, from, to),
        throughput: (delivered / (deliveries.lastAt(system, from, to) - dueFrom)) * 1000,
        lateness: summarize(deliveries.lateness(system, from, to)),
        latenessAfterKill: summarize(
          deliveries.lateness(system, from, to, (id) => deliveries.due[system][id]! >= killedAt)
        )
      }
      log(
        `  ${LABEL[system]}: ${fmtInt(delivered)}/${fmtInt(n)} delivered, ${bySystem[system].duplicates} twice, ` +
          `p99 ${fmtNum(bySystem[system].lateness.p99, 0)} ms, max ${fmtNum(bySystem[system].lateness.max, 0)} ms`
      )
    }
    return { n, windowMillis: w, killedAtMillis: killedAt - dueFrom, bySystem }
  } finally {
    await Promise.all(runners.map((r) => stop(r)))
  }
}

// ---------------------------------------------------------------- the scenario

export interface StorageResult {
  readonly storage: "SQLite" | "PostgreSQL"
  readonly skipped?: string
  readonly load: string
  readonly oneRunner?: OneRunnerResult
  readonly cron: ReadonlyArray<CronResult>
  readonly armed?: ArmedResult
  readonly growth?: GrowthResult
  readonly recovery?: RecoveryResult
  readonly killed?: KilledResult
  /** Phases that failed, with why. */
  readonly errors: ReadonlyArray<string>
}

export interface ClusterResult {
  readonly scenario: "cluster"
  readonly options: ClusterOptions
  readonly storages: ReadonlyArray<StorageResult>
  readonly targets: ReadonlyArray<TargetRow>
}

const runStorage = async (
  kind: "sqlite" | "pg",
  options: ClusterOptions,
  log: (line: string) => void
): Promise<StorageResult> => {
  const name = kind === "sqlite" ? "SQLite" : "PostgreSQL"
  const load = loadAverage()
  if (kind === "pg") {
    const reason = await pgUnavailable()
    if (reason !== undefined) {
      log(`cluster: skipping PostgreSQL (${PG_URL.replace(/\/\/[^@]*@/, "//")}): ${reason}`)
      return { storage: name, skipped: reason, load, errors: [], cron: [] }
    }
  }
  const errors: Array<string> = []
  const phase = async <A>(label: string, f: (storage: Storage) => Promise<A>): Promise<A | undefined> => {
    log(`cluster ${name}: ${label} (load average ${loadAverage()})`)
    const { storage, remove } = await freshStorage(kind)
    const first = started.length
    try {
      return await f(storage)
    } catch (error) {
      const message = `${label}: ${error instanceof Error ? error.message.split("\n").slice(0, 3).join(" ") : error}`
      errors.push(message)
      log(`  FAILED ${message}`)
      return undefined
    } finally {
      remove()
      // What the runners warned about: the first lines of each, so a stalled phase says why.
      for (const runner of started.slice(first)) {
        const lines = runner
          .errors()
          .split("\n")
          .filter((line) => line.trim() !== "")
        if (lines.length > 0)
          log(`  runner ${runner.index} stderr (${lines.length} lines): ${lines.slice(0, 3).join(" | ").slice(0, 600)}`)
      }
    }
  }
  const wanted = (name: PhaseName) => PHASES === undefined || PHASES.includes(name)
  const oneRunnerResult = wanted("plain") ? await phase("one runner", (s) => oneRunner(s, options, log)) : undefined
  const armed = wanted("armed") ? await phase("one runner, armed", (s) => armedRunner(s, options, log)) : undefined
  const cron: Array<CronResult> = []
  for (const { armed: on, hosts } of !wanted("cron") ? [] : CRON_RUNS) {
    const label = `cron, arming ${on ? "on" : "off"}, ${hosts === "both" ? "both systems" : `${hosts} alone`}`
    const c = await phase(label, (s) => cronPhase(s, options, on, hosts, log))
    if (c !== undefined) cron.push(c)
  }
  const growth =
    kind === "pg" && wanted("growth")
      ? await phase("pending set growth", (s) => growthPhase(s, options, log))
      : undefined
  const recoveries: Array<RecoveryResult> = []
  for (const systems of !wanted("recovery") ? [] : RECOVERY_RUNS) {
    const label = `recovery after a full restart, ${systems.map((system) => LABEL[system]).join(" and ")}`
    const r = await phase(label, (s) => recoveryPhase(s, options, log, systems))
    if (r !== undefined) recoveries.push(r)
  }
  const recovery = mergeRecoveries(recoveries)
  const killed = wanted("killed")
    ? await phase("three runners, one killed", (s) => killedPhase(s, options, log))
    : undefined
  return {
    storage: name,
    load,
    errors,
    ...(oneRunnerResult ? { oneRunner: oneRunnerResult } : {}),
    cron,
    ...(armed ? { armed } : {}),
    ...(growth ? { growth } : {}),
    ...(recovery ? { recovery } : {}),
    ...(killed ? { killed } : {})
  }
}

export const runCluster = async (options: ClusterOptions, log: (line: string) => void): Promise<ClusterResult> => {
  const storages: Array<StorageResult> = []
  for (const kind of ["sqlite", "pg"] as const) {
    if (STORAGES === undefined || STORAGES.includes(kind)) storages.push(await runStorage(kind, options, log))
  }
  return { scenario: "cluster", options, storages, targets: clusterTargets(options, storages) }
}

// ---------------------------------------------------------------- targets (issue 20)

const latenessTargetRows = (s: StorageResult): Array<TargetRow> => {
  const plainRows = s.oneRunner?.lateness ?? []
  const armedRows = s.armed?.lateness ?? []
  const largest = Math.max(0, ...plainRows.map((r) => r.n))
  const pick = (rows: ReadonlyArray<LatenessRow>, system: System) =>
    rows.find((r) => r.system === system && r.n === largest)
  const armed = pick(armedRows, "t")
  const unarmed = pick(plainRows, "t")
  const plain = pick(plainRows, "p")
  const cells = (r: LatenessRow | undefined) => (r === undefined ? "-" : `${fmtNum(r.lateness.p99, 0)} ms`)
  return [
    {
      target: `cluster ${s.storage}: reminder p99 lateness ≤ 50 ms with local arming (${fmtCount(largest)} over ${
        (plainRows[0]?.windowMillis ?? 0) / 1000
      } s)`,
      measured: armed === undefined ? "-" : cells(armed),
      baseline: `plain ${cells(plain)}; tickwork without arming ${cells(unarmed)}`,
      pass: armed === undefined ? undefined : armed.lateness.p99 <= 50 && armed.delivered === armed.n,
      ...(armed === undefined
        ? { note: "no local arming in this checkout: only the no-arming figure is measured" }
        : armed.overrunMillis > 0
          ? { note: `registration overran the first due time by ${fmtInt(armed.overrunMillis)} ms` }
          : {})
    }
  ]
}

const bestConcurrent = (r: RegistrationRates): number => Math.max(r.oneAtATime, ...r.concurrent.map((c) => c.rate))
const bestBatched = (r: RegistrationRates): number => Math.max(r.batched, ...r.batchesInFlight.map((b) => b.rate))

export const clusterTargets = (options: ClusterOptions, storages: ReadonlyArray<StorageResult>): Array<TargetRow> =>
  storages.flatMap((s): Array<TargetRow> => {
    if (s.skipped !== undefined) {
      return [
        { target: `cluster ${s.storage}`, measured: "-", baseline: "-", pass: undefined, note: `skipped: ${s.skipped}` }
      ]
    }
    const one = s.oneRunner
    const pg = s.storage === "PostgreSQL"
    const rows: Array<TargetRow> = []
    if (one !== undefined) {
      rows.push(
        {
          target: `cluster ${s.storage}: registration one at a time ≥ 15k/s`,
          measured:
            `${fmtRate(one.registration.t.oneAtATime)}/s in sequence` +
            one.registration.t.concurrent.map((c) => `, ${fmtRate(c.rate)}/s with ${c.callers} callers`).join(""),
          baseline:
            `plain ${fmtRate(one.registration.p.oneAtATime)}/s` +
            one.registration.p.concurrent.map((c) => `, ${fmtRate(c.rate)}/s`).join(""),
          pass: pg ? bestConcurrent(one.registration.t) >= 15_000 : undefined,
          note:
            "single registerFor calls; pass: with the most callers in flight (in sequence each waits for its commit)" +
            (pg ? "" : "; the target is PostgreSQL's")
        },
        {
          target: `cluster ${s.storage}: registration batched ≥ 100k/s`,
          measured:
            `${fmtRate(one.registration.t.batched)}/s` +
            one.registration.t.batchesInFlight.map((b) => `, ${fmtRate(b.rate)}/s ${b.inFlight} in flight`).join(""),
          baseline: `plain ${fmtRate(one.registration.p.batched)}/s`,
          pass: pg ? bestBatched(one.registration.t) >= 100_000 : undefined,
          note:
            `registerManyFor, ${BATCH} a call (then ${fmtInt(options.largeBatch)} as calls in flight together); ` +
            `plain: ${options.concurrency} sends in flight` +
            (pg ? "" : "; the target is PostgreSQL's")
        },
        {
          target: `cluster ${s.storage}: storage per pending reminder ≤ 1 KB`,
          measured: fmtBytes(one.bytesPerPending.t),
          baseline: `plain ${fmtBytes(one.bytesPerPending.p)}`,
          pass: one.bytesPerPending.t <= 1024
        },
        {
          target: `cluster ${s.storage}: runner heap per armed reminder ≤ 200 B`,
          // The same registration beyond the window holds what registering leaves; arming holds the difference.
          measured: s.armed === undefined ? "-" : fmtBytes(armedMemory(s.armed)),
          baseline: `unarmed ${s.armed === undefined ? fmtBytes(one.heapPerPending.t) : fmtBytes(s.armed.heapPerUnarmed)}`,
          pass: s.armed === undefined ? undefined : armedMemory(s.armed) <= 200,
          note:
            s.armed === undefined
              ? `no local arming in this checkout; heap per pending reminder (new grains): ${fmtBytes(one.heapPerPending.t)}`
              : `${fmtBytes(s.armed.heapPerArmed)} per reminder due within the ${s.armed.window} window, ` +
                `${fmtBytes(s.armed.heapPerUnarmed)} beyond it (${fmtInt(s.armed.heapReminders)} each, active grains); ` +
                `array buffers ${fmtBytes(s.armed.buffersPerArmed)} and ${fmtBytes(s.armed.buffersPerUnarmed)}`
        },
        ...latenessTargetRows(s)
      )
      const kept = one.retention.t
      const keptPlain = one.retention.p
      const swept = s.armed?.retention
      rows.push({
        target: `cluster ${s.storage}: storage after many deliveries within a constant of the pending set`,
        measured:
          swept === undefined
            ? `${fmtBytes(kept.bytesPerDelivered)} kept per delivery`
            : `${fmtInt(swept.afterRetention.processedMessages)} processed rows after ${fmtInt(swept.delivered)} + ` +
              `${fmtInt(swept.deliveredSince)} delivered`,
        baseline: `plain ${fmtBytes(keptPlain.bytesPerDelivered)} kept per delivery, forever`,
        pass:
          swept === undefined
            ? kept.bytesPerDelivered * 1_000_000 <= one.bytesPerPending.t * one.pending.t
            : swept.afterRetention.processedMessages <= swept.deliveredSince,
        note:
          swept === undefined
            ? `no retention in this checkout: 1M deliveries would keep ${fmtBytes(kept.bytesPerDelivered * 1_000_000)}` +
              ` beside a pending set of ${fmtBytes(one.bytesPerPending.t * one.pending.t)}`
            : `retention 1 minute: rows older than the period all gone (${fmtBytes(totalBytes(swept.afterDelivery))} ` +
              `→ ${fmtBytes(totalBytes(swept.afterRetention))}); only the rows of deliveries within the period remain`
      })
    }
    // The target is about tickwork's schedules: judged on the armed run where they are alone in their runner, when
    // there is one; the runs with both systems in one runner are in the note (each system's instants wait there
    // behind the other's).
    const cronOff = s.cron.find((c) => c.arming === "off" && c.hosts === "both")
    const together = s.cron.find((c) => c.arming === "on" && c.hosts === "both")
    const alone = s.cron.find((c) => c.arming === "on" && c.hosts === "t")
    const plainAlone = s.cron.find((c) => c.arming === "on" && c.hosts === "p")
    const cronRow = alone ?? together ?? cronOff
    const t = cronRow?.bySystem.t
    if (cronRow !== undefined && t !== undefined) {
      const armed = cronRow.arming === "on"
      const max = (r: { readonly lateness: LatenessSummary } | undefined) =>
        r === undefined ? "-" : `max ${fmtNum(r.lateness.max, 0)} ms`
      const baselineRun = plainAlone ?? together ?? cronOff
      rows.push({
        target: `cluster ${s.storage}: every cron instant within 50 ms`,
        measured: armed
          ? `max ${fmtNum(t.lateness.max, 0)} ms (p50 ${fmtNum(t.lateness.p50, 0)})` +
            (cronRow.hosts === "t" ? ", alone in the runner" : ", beside ClusterCron's in one runner")
          : "-",
        baseline:
          `ClusterCron ${max(baselineRun?.bySystem.p)}` +
          (baselineRun === plainAlone ? " alone" : "") +
          (cronOff === undefined ? "" : `; without arming tickwork ${max(cronOff.bySystem.t)}`),
        pass: armed ? t.lateness.max <= 50 && t.missing === 0 : undefined,
        note:
          `${t.instants} instants of ${cronRow.schedules} schedules; runner up at +${cronRow.startPhaseMillis} ms into ` +
          `its second` +
          (together !== undefined && together !== cronRow
            ? `; both systems in one runner: tickwork ${max(together.bySystem.t)}, ClusterCron ${max(together.bySystem.p)}`
            : "") +
          (armed ? "" : "; no local arming in this checkout")
      })
    }
    if (s.growth !== undefined) {
      const last = s.growth.rows[s.growth.rows.length - 1]
      const largest = last?.pending ?? 0
      rows.push({
        target: `cluster ${s.storage}: ≥ 1M pending reminders on one runner`,
        measured: fmtInt(largest),
        baseline: "-",
        pass:
          largest >= 1_000_000 ? true : largest >= (options.sizes[options.sizes.length - 1] ?? 0) ? undefined : false,
        note:
          s.growth.stopped !== undefined
            ? `stopped: ${s.growth.stopped}`
            : largest < 1_000_000
              ? `sized down (--size=${options.sizes[options.sizes.length - 1]}); probe p99 at that size ${fmtNum(last?.probe.t.p99 ?? Number.NaN, 0)} ms`
              : `probe p99 at 1M ${fmtNum(last?.probe.t.p99 ?? Number.NaN, 0)} ms`
      })
    }
    const recovered = s.recovery?.bySystem.t
    if (s.recovery !== undefined && recovered !== undefined) {
      const t = recovered
      const p = s.recovery.bySystem.p
      rows.push({
        target: `cluster ${s.storage}: 100k overdue delivered ≤ 10 s after a full restart`,
        measured: `${fmtNum(t.sinceSpawnMillis / 1000)} s (${fmtInt(t.delivered)})`,
        baseline: p === undefined ? "-" : `plain ${fmtNum(p.sinceSpawnMillis / 1000)} s`,
        pass: s.recovery.n >= 100_000 ? t.sinceSpawnMillis <= 10_000 && t.delivered === s.recovery.n : undefined,
        note:
          (s.recovery.n < 100_000 ? `sized down to ${fmtInt(s.recovery.n)} (--recovery=100000); ` : "") +
          `from spawning 3 runners; ${fmtNum(s.recovery.startMillis / 1000)} s of it their start`
      })
    }
    if (s.killed !== undefined) {
      const t = s.killed.bySystem.t
      rows.push({
        target: `cluster ${s.storage}: 3 runners, one SIGKILLed: every reminder once (informative)`,
        measured: `${fmtInt(t.delivered)}/${fmtInt(s.killed.n)}, ${t.duplicates} twice, max ${fmtNum(t.lateness.max / 1000)} s late`,
        baseline: `plain ${fmtInt(s.killed.bySystem.p.delivered)}, max ${fmtNum(s.killed.bySystem.p.lateness.max / 1000)} s`,
        pass: undefined
      })
    }
    for (const error of s.errors)
      rows.push({ target: `cluster ${s.storage}`, measured: "-", baseline: "-", pass: false, note: error })
    return rows
  })

// ---------------------------------------------------------------- formatting

const formatStorage = (s: StorageResult): string => {
  if (s.skipped !== undefined) return `Cluster on ${s.storage}: skipped (${s.skipped})`
  const out: Array<string> = [`Cluster on ${s.storage} (load average at start ${s.load})`]
  const one = s.oneRunner
  if (one !== undefined) {
    out.push(
      "",
      table(
        [
          "one runner",
          "one at a time /s",
          ...one.registration.t.concurrent.map((c) => `${c.callers} callers /s`),
          "batched /s",
          ...one.registration.t.batchesInFlight.map((b) => `${b.inFlight} batches in flight /s`),
          "stored/pending",
          "heap/pending"
        ],
        SYSTEMS.map((system) => [
          LABEL[system],
          fmtRate(one.registration[system].oneAtATime),
          ...one.registration[system].concurrent.map((c) => fmtRate(c.rate)),
          fmtRate(one.registration[system].batched),
          ...one.registration.t.batchesInFlight
            .map(
              (b) =>
                one.registration[system].batchesInFlight.find((mine) => mine.inFlight === b.inFlight)?.rate ??
                Number.NaN
            )
            .map((rate) => (Number.isNaN(rate) ? "-" : fmtRate(rate))),
          fmtBytes(one.bytesPerPending[system]),
          fmtBytes(one.heapPerPending[system])
        ])
      ),
      `callers: single registrations (plain: sends) in flight at once, ${fmtInt(one.callersEach)} each; batches in ` +
        `flight: ${fmtInt(one.largeBatch)} registrations as registerManyFor calls of ${BATCH}, that many at once`,
      "",
      table(
        [
          "lateness (one-shots)",
          "count",
          "due over",
          "arming",
          "delivered",
          "twice",
          "p50 ms",
          "p99 ms",
          "max ms",
          "reg. overran ms"
        ],
        one.lateness.map((r) => [
          LABEL[r.system],
          fmtInt(r.n),
          `${r.windowMillis / 1000} s`,
          r.system === "p" ? "-" : r.arming,
          fmtInt(r.delivered),
          fmtInt(r.duplicates),
          ...latenessCells(r.lateness),
          fmtInt(r.overrunMillis)
        ])
      ),
      "reg. overran: registration ended that long after the first due time (the lead time, sized from the rate " +
        "measured just before, was too short: those reminders were late from their registration)",
      "",
      table(
        [
          "storage after deliveries",
          "delivered",
          "messages rows",
          "replies rows",
          "reminder rows",
          "bytes",
          "kept/delivery"
        ],
        SYSTEMS.map((system) => {
          const r = one.retention[system]
          const arrow = (suffix: string) => `${fmtInt(rowsOf(r.before, suffix))} → ${fmtInt(rowsOf(r.after, suffix))}`
          return [
            LABEL[system],
            fmtInt(r.delivered),
            arrow("_messages"),
            arrow("_replies"),
            arrow("_tickwork_reminders"),
            `${fmtBytes(totalBytes(r.before))} → ${fmtBytes(totalBytes(r.after))}`,
            fmtBytes(r.bytesPerDelivered)
          ]
        })
      ),
      `pending set during that run: ${fmtInt(one.pending.t)} far-future tickwork reminders and ` +
        `${fmtInt(one.pending.p)} plain messages; tables then: ` +
        one.pendingTables.map((t) => `${t.table} ${fmtInt(t.rows)} rows ${fmtBytes(t.bytes)}`).join(", ")
    )
  }
  if (s.cron.length > 0) {
    out.push(
      "",
      table(
        [
          `cron: ${s.cron[0]!.schedules} every-second schedules each`,
          "arming",
          "runner hosts",
          "runner up at",
          "instants",
          "missing",
          "twice",
          "p50 ms",
          "p99 ms",
          "max ms"
        ],
        s.cron.flatMap((c) =>
          SYSTEMS.flatMap((system) => {
            const r = c.bySystem[system]
            if (r === undefined) return []
            return [
              [
                system === "t" ? "tickwork ClusterScheduler" : "plain ClusterCron",
                c.arming,
                c.hosts === "both" ? "both systems" : "this one alone",
                `+${c.startPhaseMillis} ms`,
                fmtInt(r.instants),
                fmtInt(r.missing),
                fmtInt(r.duplicates),
                ...latenessCells(r.lateness)
              ]
            ]
          })
        )
      ),
      "runner up at: ms into its second when the runner was up (without arming, the storage poll's phase decides the " +
        "lateness); with arming on, ClusterCron's instants are armed too (they are persisted messages on that runner); " +
        "runner hosts: both systems' schedules in one runner (each one's instants of a second wait behind the other's), " +
        "or one system's alone (TICKWORK_BENCH_CLUSTER_CRON=together or =alone runs only those)"
    )
  }
  if (s.armed !== undefined) {
    const a = s.armed
    const rt = a.retention
    out.push(
      "",
      `One runner with local arming (window ${a.window}) and a 1-minute retention:`,
      table(
        ["lateness, armed", "count", "due over", "delivered", "twice", "p50 ms", "p99 ms", "max ms", "reg. overran ms"],
        a.lateness.map((r) => [
          LABEL[r.system],
          fmtInt(r.n),
          `${r.windowMillis / 1000} s`,
          fmtInt(r.delivered),
          fmtInt(r.duplicates),
          ...latenessCells(r.lateness),
          fmtInt(r.overrunMillis)
        ])
      ),
      `runner heap per reminder on active grains: ${fmtBytes(a.heapPerArmed)} armed (due within the window), ` +
        `${fmtBytes(a.heapPerUnarmed)} beyond it (${fmtInt(a.heapReminders)} of each); array buffers ` +
        `${fmtBytes(a.buffersPerArmed)} and ${fmtBytes(a.buffersPerUnarmed)}`,
      table(
        ["storage (retention 1 minute)", "messages rows", "processed", "replies rows", "bytes"],
        (
          [
            ["before", rt.before],
            [`after ${fmtInt(rt.delivered)} delivered`, rt.afterDelivery],
            [`${fmtNum(rt.waitedMillis / 1000, 0)} s later`, rt.afterRetention]
          ] as const
        ).map(([label, sz]) => [
          label,
          fmtInt(rowsOf(sz, "_messages")),
          fmtInt(sz.processedMessages),
          fmtInt(rowsOf(sz, "_replies")),
          fmtBytes(totalBytes(sz))
        ])
      ),
      `${fmtInt(rt.deliveredSince)} more were delivered in between (heap and lateness runs): their rows are younger than the period`
    )
  }
  if (s.growth !== undefined) {
    out.push(
      "",
      table(
        [
          "pending (one runner)",
          "registered /s",
          "stored/pending",
          "runner heap",
          "probe p50",
          "p99",
          "max",
          "plain p99"
        ],
        s.growth.rows.map((r) => [
          fmtInt(r.pending),
          fmtRate(r.registrationRate),
          fmtBytes(r.bytesPerPending),
          fmtBytes(r.heapBytes),
          ...latenessCells(r.probe.t),
          fmtNum(r.probe.p.p99)
        ])
      ),
      "probe: 100 tickwork reminders and 100 plain messages due over 1 s at that size (ms late)." +
        (s.growth.stopped === undefined ? "" : ` Stopped: ${s.growth.stopped}`)
    )
  }
  if (s.recovery !== undefined) {
    const r = s.recovery
    out.push(
      "",
      table(
        [
          `recovery: ${fmtInt(r.n)} overdue each, 3 runners restarted`,
          "delivered",
          "twice",
          "from spawn s",
          "from up s"
        ],
        SYSTEMS.flatMap((system) => {
          const b = r.bySystem[system]
          if (b === undefined) return []
          return [
            [
              LABEL[system],
              fmtInt(b.delivered),
              fmtInt(b.duplicates),
              fmtNum(b.sinceSpawnMillis / 1000),
              fmtNum(b.sinceReadyMillis / 1000)
            ]
          ]
        })
      ),
      `the 3 runners took ${fmtNum(r.startMillis / 1000)} s from spawn to up; delivered before the kill (not ` +
        `counted): ${r.deliveredBeforeKill.t} / ${r.deliveredBeforeKill.p}; ` +
        (r.alone ? "each set restarted alone" : "both sets were overdue together")
    )
  }
  if (s.killed !== undefined) {
    const k = s.killed
    out.push(
      "",
      table(
        [
          `3 runners, ${fmtInt(k.n)} each due over ${k.windowMillis / 1000} s, one killed`,
          "delivered",
          "twice",
          "per s",
          "p50 ms",
          "p99 ms",
          "max ms",
          "due after kill: p99",
          "max"
        ],
        SYSTEMS.map((system) => {
          const b = k.bySystem[system]
          return [
            LABEL[system],
            fmtInt(b.delivered),
            fmtInt(b.duplicates),
            fmtRate(b.throughput),
            ...latenessCells(b.lateness),
            fmtNum(b.latenessAfterKill.p99, 0),
            fmtNum(b.latenessAfterKill.max, 0)
          ]
        })
      ),
      `runner 2 SIGKILLed ${fmtNum(k.killedAtMillis / 1000)} s into the window; per s: delivered / (last delivery − first due)`
    )
  }
  if (s.errors.length > 0) out.push("", ...s.errors.map((e) => `FAILED ${e}`))
  return out.join("\n")
}

export const formatCluster = (result: ClusterResult): string =>
  [
    "Cluster: tickwork reminders and cron against plain @effect/cluster (DeliverAt messages, ClusterCron), runner " +
      "processes with tickwork's default sharding settings (1 s storage poll, 10 s shard locks)",
    ...result.storages.map(formatStorage)
  ].join("\n\n")
