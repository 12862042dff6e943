/**
 * What one armed reminder costs the runner, measured in-process on the reminder dispatcher alone
 * (src/cluster/internal/reminderDispatch.ts): the cluster bench's figure (test/bench/cluster.ts, "runner heap per
 * armed reminder") without the rest of a runner around it, so without its noise.
 *
 *   node --expose-gc --import tsx test/bench/armed-heap.ts [count ...]   (default: 2000 10000 100000)
 *
 * For each count, a round arms that many reminders on each of as many fresh dispatchers as make 100,000 in all (real
 * clock, a window of an hour, a scan that finds nothing), through `arm`, as a runner's own registrations are: grain
 * kind "bench-grain", key `g<id mod 10,000>` and name `r<id>` (the bench's), a snowflake as generation, due in ten
 * minutes, two to a millisecond. The strings are made fresh for each reminder, as a registration's are, and the rows
 * are dropped once armed. Many dispatchers of a small count each give that count's cost (its columns' room) without the
 * noise a few hundred kilobytes of other churn put on one. A first round, not printed, warms the code up (a runner's
 * has delivered reminders before the bench reads its heap); each count takes $ROUNDS rounds (default 5). It prints the
 * heap used after a full collection, before and after, per reminder, and the ArrayBuffer memory beside it (V8's heap
 * used leaves out typed arrays' contents, which the runner pays all the same). The last line holds the same strings
 * alone, in three arrays, for scale.
 */
import * as MachineId from "@effect/cluster/MachineId"
import * as Snowflake from "@effect/cluster/Snowflake"
import { Effect, Exit, Scope } from "effect"
import * as Dispatch from "../../src/cluster/internal/reminderDispatch.js"
import type { DueRow } from "../../src/cluster/internal/reminderSql.js"
import { fmtInt, fullGc, loadAverage, table } from "./stats.js"

const GRAINS = 10_000

interface Memory {
  readonly heap: number
  readonly buffers: number
}

const memory = (): Memory => {
  fullGc()
  const { arrayBuffers, heapUsed } = process.memoryUsage()
  return { heap: heapUsed, buffers: arrayBuffers }
}

/** The bench's reminder `id`, armed with a fresh copy of each string. */
const rowOf = (id: number, due: number, machine: number): DueRow => ({
  kind: ["bench", "grain"].join("-"),
  key: `g${id % GRAINS}`,
  name: `r${id}`,
  generation: String(
    Snowflake.make({ timestamp: due - 600_000, machineId: MachineId.make(machine), sequence: id % 4096 })
  ),
  due
})

const perReminder = (before: Memory, after: Memory, n: number) => ({
  heap: (after.heap - before.heap) / n,
  buffers: (after.buffers - before.buffers) / n
})

/** A fresh round: `n` reminders armed on each of `dispatchers` dispatchers, what each reminder added. */
const armed = (n: number, dispatchers: number) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const made = yield* Effect.replicateEffect(
      Dispatch.make({
        heldShards: () => [],
        holds: () => true,
        scan: () => Effect.succeed([]),
        send: () => Effect.void,
        pollMillis: 1_000,
        windowMillis: 3_600_000
      }),
      dispatchers
    ).pipe(Scope.extend(scope))
    yield* Effect.yieldNow()
    const before = memory()
    const start = Date.now() + 600_000
    for (const [d, dispatcher] of made.entries()) {
      for (let id = d * n; id < (d + 1) * n; id++) dispatcher.arm(rowOf(id, start + (id >> 1), id >> 12))
    }
    yield* Effect.yieldNow()
    const after = memory()
    yield* Scope.close(scope, Exit.void)
    return perReminder(before, after, n * dispatchers)
  })

/** The same strings held alone (three arrays of `n`), for scale. */
const stringsAlone = (n: number) => {
  const before = memory()
  const keys: Array<string> = new Array(n)
  const names: Array<string> = new Array(n)
  const generations: Array<string> = new Array(n)
  const start = Date.now() + 600_000
  for (let id = 0; id < n; id++) {
    const row = rowOf(id, start + (id >> 1), id >> 12)
    keys[id] = row.key
    names[id] = row.name
    generations[id] = row.generation
  }
  const after = memory()
  const cost = perReminder(before, after, n)
  if (keys.length + names.length + generations.length !== 3 * n) throw new Error("unreachable")
  return cost
}

const counts = process.argv.slice(2).map(Number)
const sizes = counts.length > 0 ? counts : [2_000, 10_000, 100_000]
const rounds = Number(process.env.ROUNDS ?? "5")
/** Reminders a round arms in all, on as many dispatchers of `count` each as that takes. */
const PER_ROUND = 100_000

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[sorted.length >> 1]!
}

/** Median and range of `xs`, in bytes. */
const spread = (xs: ReadonlyArray<number>): string =>
  `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(0)} to ${Math.max(...xs).toFixed(0)})`

const rows: Array<ReadonlyArray<string>> = []
await Effect.runPromise(armed(2_000, 1))
for (const count of sizes) {
  const dispatchers = Math.max(1, Math.floor(PER_ROUND / count))
  const costs: Array<Memory> = []
  for (let round = 0; round < rounds; round++) costs.push(await Effect.runPromise(armed(count, dispatchers)))
  rows.push([
    `${fmtInt(count)} on each of ${fmtInt(dispatchers)} dispatcher${dispatchers > 1 ? "s" : ""}`,
    spread(costs.map((c) => c.heap)),
    spread(costs.map((c) => c.buffers)),
    spread(costs.map((c) => c.heap + c.buffers))
  ])
}
const n = Math.max(...sizes)
const strings = stringsAlone(n)
rows.push([
  `the strings alone of ${fmtInt(n)} (key, name, generation)`,
  strings.heap.toFixed(1),
  strings.buffers.toFixed(1),
  (strings.heap + strings.buffers).toFixed(1)
])
console.log(`load average ${loadAverage()}; ${rounds} rounds: median (least to most), bytes per reminder`)
console.log(table(["armed", "heap used", "array buffers", "both"], rows))
