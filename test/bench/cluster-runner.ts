/**
 * A runner process of the cluster bench (test/bench/cluster.ts starts it with `node --expose-gc --import tsx`).
 *
 * It joins the cluster on 127.0.0.1:$PORT over $STORAGE (`sqlite:<file>` or `pg:<url>`) with tickwork's default
 * sharding settings (overridden by the JSON in $SHARDING, if any) and hosts, side by side:
 * - tickwork: the cluster grain kind "bench-grain", whose reminders (`Reminders.registerFor`, one-shots at a given
 *   time) carry their own id and due time; $CRONS every-second `ClusterScheduler` schedules;
 * - the baseline, plain @effect/cluster: the entity "bench-plain" with one persisted RPC whose payload has a
 *   `DeliverAt` (what a reminder occurrence is underneath, without tickwork's table and checks); $CRONS every-second
 *   `ClusterCron` jobs (with $CRON_SYSTEMS=t only tickwork's schedules, with `p` only ClusterCron's).
 *
 * Every delivery prints one line, `D <t|p> <id> <due> <at>` (t: tickwork, p: plain; epoch millis), every cron instant
 * `C <t|p> <name> <instant> <at>`. Commands come on stdin, one JSON object a line, answered in order with one
 * line `R <json>`: `register` (ids, due times, how), `heap` (heap used and array buffers after gc), `sizes` (each table's rows and
 * bytes). Prints `ready` once up; exits when stdin ends (the bench went away) or on SIGTERM.
 */
import * as ClusterCron from "@effect/cluster/ClusterCron"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as DeliverAt from "@effect/cluster/DeliverAt"
import * as Entity from "@effect/cluster/Entity"
import type { ShardingConfig } from "@effect/cluster/ShardingConfig"
import { NodeRuntime } from "@effect/platform-node"
import * as Rpc from "@effect/rpc/Rpc"
import * as SqlClient from "@effect/sql/SqlClient"
import { Cron, DateTime, Effect, Layer, Logger, LogLevel, PrimaryKey, Queue, Schedule, Schema } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"

const port = Number(process.env.PORT)
const storageSpec = process.env.STORAGE ?? "sqlite:bench-cluster.db"
const crons = Number(process.env.CRONS ?? "0")
/**
 * $CRON_SYSTEMS: whose $CRONS schedules the runner hosts, `t` (tickwork's only), `p` (ClusterCron's only) or unset
 * (both, side by side: their instants then share the runner's event loop and, on SQLite, its one connection).
 */
const cronSystems = process.env.CRON_SYSTEMS ?? "both"
/** Reminder i goes to grain (entity) `g<i mod GRAINS>`: many grains, several reminders each at large sizes. */
const grains = Number(process.env.GRAINS ?? "10000")
const sharding = JSON.parse(process.env.SHARDING ?? "{}") as Partial<ShardingConfig["Type"]>

/**
 * $ARMING=off turns local arming off, $ARMING_WINDOW sets its window; $RETENTION is `off` or a duration (processed
 * messages kept that long). Unset: tickwork's defaults. Off and off is plain @effect/cluster's behaviour.
 */
const runnerOptions: Record<string, unknown> = {}
if (process.env.ARMING === "off") runnerOptions.localArming = false
else if (process.env.ARMING_WINDOW !== undefined) runnerOptions.localArming = { window: process.env.ARMING_WINDOW }
if (process.env.RETENTION === "off") runnerOptions.retention = false
else if (process.env.RETENTION !== undefined) runnerOptions.retention = process.env.RETENTION

const storage = storageSpec.startsWith("pg:")
  ? ClusterRunner.postgres({ url: storageSpec.slice(3), connectTimeout: "5 seconds" })
  : ClusterRunner.sqlite(storageSpec.slice("sqlite:".length))

const out = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

// ---------------------------------------------------------------- tickwork: a grain with reminders, cron schedules

const FireMsg = Schema.TaggedStruct("Fire", { id: Schema.Number, due: Schema.Number })

const BenchGrain = ClusterGrain.make(
  Grain.make<typeof FireMsg.Type>()({
    name: "bench-grain",
    onReceive: (ctx) => Effect.sync(() => out(`D t ${ctx.message.id} ${ctx.message.due} ${Date.now()}`))
  }),
  { message: FireMsg }
)

const tickworkCrons = Array.from({ length: cronSystems === "p" ? 0 : crons }, (_, i) =>
  ClusterScheduler.layer(
    "* * * * * ?",
    (fire) => Effect.sync(() => out(`C t cron-${i} ${DateTime.toEpochMillis(fire.instant)} ${Date.now()}`)),
    ClusterScheduler.withTimerReference(`bench-cron-${i}`)
  )
)

// ---------------------------------------------------------------- baseline: plain @effect/cluster

class PlainFire extends Schema.Class<PlainFire>("bench/PlainFire")({ id: Schema.Number, due: Schema.Number }) {
  [PrimaryKey.symbol](): string {
    return `fire-${this.id}`
  }
  [DeliverAt.symbol](): DateTime.DateTime {
    return DateTime.unsafeMake(this.due)
  }
}

const Plain = Entity.make("bench-plain", [
  Rpc.make("Fire", { payload: PlainFire }).annotate(ClusterSchema.Persisted, true)
])

const PlainLive = Plain.toLayer({
  Fire: (request) => Effect.sync(() => out(`D p ${request.payload.id} ${request.payload.due} ${Date.now()}`))
})

const everySecond = Cron.unsafeParse("* * * * * *")

/** ClusterCron hands `execute` no instant; its entity id is the instant (ISO), read from the current address. */
const plainCrons = Array.from({ length: cronSystems === "t" ? 0 : crons }, (_, i) =>
  ClusterCron.make({
    name: `bench-cron-${i}`,
    cron: everySecond,
    execute: Effect.flatMap(Effect.serviceOption(Entity.CurrentAddress), (address) =>
      Effect.sync(() =>
        out(`C p cron-${i} ${address._tag === "Some" ? Date.parse(address.value.entityId) : Number.NaN} ${Date.now()}`)
      )
    )
  })
)

// ---------------------------------------------------------------- commands

interface Register {
  readonly op: "register"
  readonly system: "t" | "p"
  /** Ids [from, to). */
  readonly from: number
  readonly to: number
  /** Due times spread evenly over [dueFrom, dueTo] in id order. */
  readonly dueFrom: number
  readonly dueTo: number
  /** How many registrations are in flight at once (1: one at a time). */
  readonly concurrency: number
  /** tickwork only: registrations per `Reminders.registerManyFor` call; 0: one by one. */
  readonly batch?: number
  /** tickwork only: `registerManyFor` calls in flight at once (default 1: one after the other). */
  readonly batchesInFlight?: number
}

type Command = Register | { readonly op: "heap" } | { readonly op: "sizes" }

const dueOf = (c: Register, id: number): number =>
  c.to - c.from <= 1 ? c.dueFrom : Math.round(c.dueFrom + ((id - c.from) * (c.dueTo - c.dueFrom)) / (c.to - c.from - 1))

const register = (c: Register) =>
  Effect.gen(function* () {
    const plainClient = yield* Plain.client
    const one = (id: number) => {
      const due = dueOf(c, id)
      const key = `g${id % grains}`
      return c.system === "t"
        ? Effect.asVoid(Reminders.registerFor(BenchGrain, key, `r${id}`, { _tag: "Fire", id, due }, Reminders.at(due)))
        : plainClient(key).Fire(new PlainFire({ id, due }), { discard: true })
    }
    // A registration that fails (shards still moving between runners just started, SQLite's write lock busy
    // beyond its timeout on a loaded machine) is tried again, as an application would; the answer counts them.
    let retries = 0
    const retried = (id: number) =>
      one(id).pipe(
        Effect.tapError(() => Effect.sync(() => retries++)),
        Effect.retry({ times: 20, schedule: Schedule.spaced("250 millis") })
      )
    const batchOf = (chunk: ReadonlyArray<number>) =>
      Reminders.registerManyFor(
        BenchGrain,
        chunk.map((id) => {
          const due = dueOf(c, id)
          return {
            key: `g${id % grains}`,
            name: `r${id}`,
            message: { _tag: "Fire", id, due },
            schedule: Reminders.at(due)
          }
        })
      ).pipe(
        Effect.tapError(() => Effect.sync(() => retries++)),
        Effect.retry({ times: 20, schedule: Schedule.spaced("250 millis") })
      )
    const t0 = performance.now()
    const ids = Array.from({ length: c.to - c.from }, (_, i) => c.from + i)
    const batch = c.batch ?? 0
    if (c.system === "t" && batch > 0) {
      const chunks = Array.from({ length: Math.ceil(ids.length / batch) }, (_, i) =>
        ids.slice(i * batch, (i + 1) * batch)
      )
      yield* Effect.forEach(chunks, batchOf, { discard: true, concurrency: c.batchesInFlight ?? 1 })
    } else {
      yield* Effect.forEach(ids, retried, { concurrency: c.concurrency, discard: true })
    }
    return { n: ids.length, millis: performance.now() - t0, retries }
  })

const heap = Effect.sync(() => {
  globalThis.gc?.()
  globalThis.gc?.()
  const { arrayBuffers, heapUsed } = process.memoryUsage()
  return { heapUsed, arrayBuffers }
})

interface TableSize {
  readonly table: string
  readonly rows: number
  readonly bytes: number
}

/** Rows and bytes (table, its indexes and, on PostgreSQL, TOAST) of every table of the runner's storage. */
const sizes = Effect.gen(function* () {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const tables = yield* sql.onDialectOrElse({
    pg: () =>
      sql<{ table: string; bytes: string }>`SELECT c.relname AS table, pg_total_relation_size(c.oid) AS bytes
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'r' AND n.nspname = current_schema() AND c.relname LIKE 'cluster%'`,
    orElse: () =>
      sql<{ table: string; bytes: number }>`SELECT m.tbl_name AS "table", SUM(s.pgsize) AS bytes
        FROM dbstat s JOIN sqlite_master m ON m.name = s.name
        WHERE m.tbl_name LIKE 'cluster%' GROUP BY m.tbl_name`
  })
  const result: Array<TableSize> = []
  for (const t of tables) {
    const [count] = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(t.table)}`
    result.push({ table: t.table, rows: Number(count?.n ?? 0), bytes: Number(t.bytes) })
  }
  const [counts] = yield* sql<{ pending: number | string; processed: number | string }>`SELECT
    SUM(CASE WHEN processed = ${sql.onDialectOrElse({ pg: () => false, orElse: () => 0 })} THEN 1 ELSE 0 END) AS pending,
    SUM(CASE WHEN processed = ${sql.onDialectOrElse({ pg: () => true, orElse: () => 1 })} THEN 1 ELSE 0 END) AS processed
    FROM cluster_messages`
  return {
    tables: result,
    pendingMessages: Number(counts?.pending ?? 0),
    processedMessages: Number(counts?.processed ?? 0)
  }
})

const run = (
  command: Command
): Effect.Effect<unknown, unknown, Effect.Effect.Context<ReturnType<typeof register>> | SqlClient.SqlClient> => {
  switch (command.op) {
    case "register":
      return register(command)
    case "heap":
      return heap
    case "sizes":
      // Right after a burst of deliveries, PostgreSQL's pool can stay busy longer than its acquire timeout (5 s):
      // the reading is tried again rather than failing the phase (docs/performance.md says so).
      return Effect.retry(sizes, { times: 5, schedule: Schedule.spaced("2 seconds") })
  }
}

// ---------------------------------------------------------------- the runner

const Runner = Layer.mergeAll(ClusterGrain.layer([BenchGrain]), PlainLive, ...tickworkCrons, ...plainCrons).pipe(
  Layer.provideMerge(Reminders.layer()),
  Layer.provideMerge(ClusterRunner.layer({ port, storage, shardingConfig: sharding, ...runnerOptions })),
  Layer.provideMerge(ActorSystem.layer({ name: `bench-runner-${port}` }))
)

const main = Effect.gen(function* () {
  const commands = yield* Queue.unbounded<Command>()
  let buffered = ""
  process.stdin.setEncoding("utf8")
  process.stdin.on("data", (chunk: string) => {
    buffered += chunk
    let newline = buffered.indexOf("\n")
    while (newline >= 0) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      if (line !== "") Queue.unsafeOffer(commands, JSON.parse(line) as Command)
      newline = buffered.indexOf("\n")
    }
  })
  process.stdin.on("end", () => process.exit(4))
  out("ready")
  for (;;) {
    const command = yield* Queue.take(commands)
    const result = yield* Effect.either(run(command))
    out(`R ${JSON.stringify(result._tag === "Right" ? result.right : { error: String(result.left) })}`)
  }
})

process.once("SIGTERM", () => setTimeout(() => process.exit(3), 5000).unref())
NodeRuntime.runMain(main.pipe(Effect.provide(Runner), Logger.withMinimumLogLevel(LogLevel.Warning)))
