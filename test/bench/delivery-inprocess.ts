/**
 * The CPU one reminder delivery costs on one runner, in this process (no runner processes, no network but the
 * storage's): a backlog of N one-shot reminders on G grains comes due at once, and the runner delivers it at its
 * maximum rate. Twice: the first round activates every grain (its entity and its grain), the second finds them active.
 * For profiling the delivery path quickly (`node --cpu-prof`); the cluster bench (test/bench/cluster.ts) measures the
 * targets.
 *
 *   npx tsx test/bench/delivery-inprocess.ts            N=20000 G=2000 STORAGE=sqlite (or pg:<url>)
 *   node --cpu-prof --import tsx test/bench/delivery-inprocess.ts
 */
import { Clock, Effect, Schema } from "effect"
import { Grain } from "tickwork"
import { ClusterGrain, Reminders } from "tickwork/cluster"
import * as InProcessRunner from "./inprocess-runner.js"

const N = Number(process.env.N ?? "20000")
const G = Number(process.env.G ?? "2000")
const ROUNDS = Number(process.env.ROUNDS ?? "2")
const STORAGE = process.env.STORAGE ?? "sqlite"

const Fire = Schema.TaggedStruct("Fire", { id: Schema.Number, round: Schema.Number, due: Schema.Number })
/** Deliveries before their due time (none expected). */
const earlyOnes: Array<string> = []

let delivered = 0
const Subject = ClusterGrain.make(
  Grain.make<typeof Fire.Type>()({
    name: "inprocess-grain",
    onReceive: (ctx) =>
      Effect.sync(() => {
        delivered++
        const early = ctx.message.due - Date.now()
        if (early > 0) earlyOnes.push(`r${ctx.message.round}#${ctx.message.id} ${early} ms early`)
      })
  }),
  { message: Fire }
)

const Live = InProcessRunner.layer(Subject, {
  name: "inprocess",
  tablePrefix: `inproc${process.pid}`,
  storage: InProcessRunner.storageOf(STORAGE)
})

const round = (r: number) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const due = now + 1_000
    const from = delivered
    const registrations = Array.from({ length: N }, (_, i) => ({
      key: `g${i % G}`,
      name: `r${r}-${i}`,
      message: { _tag: "Fire" as const, id: i, round: r, due },
      schedule: Reminders.at(due)
    }))
    for (let i = 0; i < N; i += 1_000) yield* Reminders.registerManyFor(Subject, registrations.slice(i, i + 1_000))
    // From here the process only waits until the due time (its CPU then is the delivery's).
    const cpu0 = process.cpuUsage()
    const windowStart = process.hrtime.bigint() / 1000n
    const left = due - (yield* Clock.currentTimeMillis)
    if (left < 0) console.log(`  registration overran the due time by ${-left} ms`)
    while (delivered - from < N) yield* Effect.sleep(5)
    const cpu = process.cpuUsage(cpu0)
    const windowEnd = process.hrtime.bigint() / 1000n
    const wall = (yield* Clock.currentTimeMillis) - due
    if (earlyOnes.length > 0) {
      console.log(`  ${earlyOnes.length} delivered before their due time: ${earlyOnes.slice(0, 3).join(", ")}`)
    }
    const micros = cpu.user + cpu.system
    console.log(
      `round ${r}: ${N} on ${G} grains in ${wall.toFixed(0)} ms (${((N / wall) * 1000).toFixed(0)}/s), ` +
        `${(micros / N).toFixed(0)} µs of CPU a delivery (this process, all threads); profile window ${windowStart} ${windowEnd}`
    )
  })

Effect.gen(function* () {
  console.log(`delivery in-process: N=${N} G=${G} storage=${STORAGE}`)
  yield* Effect.sleep(2_000) // the runner takes its shards
  for (let r = 1; r <= ROUNDS; r++) yield* round(r)
}).pipe(Effect.provide(Live), Effect.scoped, Effect.runPromise)
