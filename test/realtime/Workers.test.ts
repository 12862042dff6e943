/**
 * Worker behaviour that is about real time: these tests run on the live clock, bounded to a few seconds, with bounds
 * that are generous for a loaded machine but that the wrong implementation fails by a wide margin. `npm test` runs
 * test/realtime on its own, after the rest of the suite, so other test files do not compete for the two cores. Set
 * SPOT_TIMINGS=1 to print the measured figures.
 */

import { availableParallelism } from "node:os"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { ActorSystem } from "tickwork"
import * as OverrunPolicy from "../../src/OverrunPolicy.js"
import * as Spot from "../../src/Spot.js"
import * as Workers from "../../src/Workers.js"
import { busyFor, spin } from "../fixtures/spotCpuTasks.js"

const report = (line: string) => {
  if (process.env.SPOT_TIMINGS) console.info(`[timings] ${line}`)
}

const realSleep = (millis: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, millis)))

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = performance.now()
    yield* effect
    return performance.now() - start
  })

/** Blocks the calling (main) thread. */
const blockMainThread = (millis: number) => {
  const end = performance.now() + millis
  while (performance.now() < end) {
    // spin
  }
}

describe("Workers in real time", () => {
  it.live("a CPU-bound task on a worker thread does not delay a Spot timer on the main thread", () =>
    Effect.gen(function* () {
      // DelayNextTick: each tick is due 20 ms after the previous one ended, so `delay` is the timer's real lateness
      const delays: Array<number> = []
      const spot = yield* Spot.spawn(
        {
          initialState: 0,
          onStart: (ctx) =>
            Effect.orDie(
              ctx.timers.start({
                name: "beat",
                period: "20 millis",
                overrun: OverrunPolicy.DelayNextTick,
                handler: (tick) => Effect.sync(() => delays.push(Duration.toMillis(tick.delay)))
              })
            )
        },
        "beat"
      )
      // the pool provided around the system is the one it uses (a system once shadowed it with a pool of its own)
      assert.strictEqual((yield* Workers.Workers).options.maxThreads, 1)
      yield* realSleep(100)
      delays.length = 0
      const workerMillis = yield* timed(spot.run(() => Workers.cpu(busyFor, 1000).pipe(Spot.Yield)))
      const duringWorker = delays.splice(0, delays.length)
      // the control: the same kind of loop on the Spot's own turn blocks the main thread, and the timer with it
      yield* spot.run(() => Effect.sync(() => blockMainThread(400)))
      yield* realSleep(60)
      const duringBlock = delays.splice(0, delays.length)
      const sorted = [...duringWorker].sort((a, b) => a - b)
      const worst = sorted[sorted.length - 1] ?? Number.POSITIVE_INFINITY
      const p90 = sorted[Math.floor(sorted.length * 0.9)] ?? Number.POSITIVE_INFINITY
      report(
        `timer during a 1000 ms worker task (${Math.round(workerMillis)} ms): ${duringWorker.length} ticks, ` +
          `p90 delay ${p90} ms, max ${worst} ms; during a 400 ms main-thread block: max delay ` +
          `${Math.max(...duringBlock)} ms`
      )
      assert.isAtLeast(workerMillis, 950, "the task really ran ~1 s")
      // on the main thread the computation would allow 1 or 2 ticks, one of them ~1000 ms late
      assert.isAtLeast(duringWorker.length, 15, "the timer kept ticking (~45 expected on an idle machine)")
      assert.isBelow(p90, 100, "ticks kept their schedule")
      assert.isBelow(worst, 500, "no tick waited for the computation")
      assert.isAtLeast(Math.max(...duringBlock), 300, "the control: a blocked main thread does delay the timer")
    }).pipe(
      Effect.provide(ActorSystem.layer({ name: "realtime" })),
      Effect.provide(Workers.layer({ minThreads: 1, maxThreads: 1 }))
    )
  )

  it.live.skipIf(availableParallelism() < 2)(
    "two CPU tasks run in parallel on two threads: two ~400 ms loops take clearly less than twice one",
    () =>
      Effect.gen(function* () {
        const workers = yield* Workers.Workers
        // both threads up and their JIT warm
        yield* Effect.all([workers.run(spin, 2_000_000), workers.run(spin, 2_000_000)], { concurrency: 2 })
        const probe = 20_000_000
        const perIteration = (yield* timed(workers.run(spin, probe))) / probe
        const iterations = Math.round(400 / perIteration)
        // Each round times one loop, then two at once. The ratio compares the fastest of each, so that bursts of load
        // from other processes on the machine do not decide; rounds stop once the ratio is clear or after four.
        let fastestOne = Number.POSITIVE_INFINITY
        let fastestTwo = Number.POSITIVE_INFINITY
        for (let round = 0; round < 4; round++) {
          fastestOne = Math.min(fastestOne, yield* timed(workers.run(spin, iterations)))
          fastestTwo = Math.min(
            fastestTwo,
            yield* timed(Effect.all([workers.run(spin, iterations), workers.run(spin, iterations)], { concurrency: 2 }))
          )
          if (round >= 1 && fastestTwo / fastestOne < 1.3) break
        }
        const best = { one: fastestOne, two: fastestTwo, ratio: fastestTwo / fastestOne }
        report(
          `one loop ${Math.round(best.one)} ms, two in parallel ${Math.round(best.two)} ms ` +
            `(ratio ${best.ratio.toFixed(2)})`
        )
        assert.isAbove(best.one, 150, "the calibrated loop is long enough to measure")
        assert.isBelow(best.ratio, 1.5, "in sequence the ratio would be 2")
      }).pipe(Effect.provide(Workers.layer({ minThreads: 2, maxThreads: 2 })))
  )
})
