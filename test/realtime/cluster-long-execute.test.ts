/**
 * Real clock, one real runner (`ClusterRunner.layer`, sockets on loopback, a SQLite file, tickwork's default sharding
 * settings): a cluster cron whose `execute` takes 15 s, longer than the shard lock expiration (10 s), runs once and
 * completes. Its transaction holds the runner's one SQLite connection all along; the lock refresh must not wait for it.
 * Runs ~20 s once the runner is up; removes its file.
 */
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect } from "effect"
import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"
import { captureLogs } from "../utils.js"
import { freePort, tempDir } from "./cluster/harness.js"

describe("cluster cron with a long execute (real clock, SQLite file)", () => {
  it.scopedLive(
    "an execute of 15 s runs once and completes; the instants due meanwhile run after it, each once",
    () =>
      Effect.gen(function* () {
        const { dir, remove } = tempDir("cluster-long")
        yield* Effect.addFinalizer(() => Effect.sync(remove))
        const port = yield* Effect.promise(() => freePort())
        const { logs, layer } = captureLogs()
        const events: Array<string> = []
        let first: number | undefined
        const Runner = ClusterRunner.layer({ port, storage: ClusterRunner.sqlite(path.join(dir, "cluster.db")) })
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE long_effects (instant INTEGER NOT NULL)`
          yield* ClusterScheduler.scheduleWithCron(
            "* * * * * ?",
            (fire) => {
              const instant = DateTime.toEpochMillis(fire.instant)
              return Effect.gen(function* () {
                events.push(`start ${instant}`)
                yield* sql`INSERT INTO long_effects (instant) VALUES (${instant})`
                if (first === undefined || first === instant) {
                  first = instant
                  yield* Effect.sleep("15 seconds")
                }
                events.push(`end ${instant}`)
              }).pipe(Effect.onInterrupt(() => Effect.sync(() => events.push(`interrupted ${instant}`))))
            },
            ClusterScheduler.withTimerReference("long")
          )
          // The first run (15 s), then the instants that came due meanwhile, late but within the misfire threshold.
          yield* Effect.sleep("20 seconds")
          const rows = yield* sql<{ readonly instant: number }>`SELECT instant FROM long_effects ORDER BY instant`
          const instants = rows.map((row) => Number(row.instant))
          assert.isDefined(first)
          assert.deepStrictEqual(events.slice(0, 2), [`start ${first}`, `end ${first}`], events.join(", "))
          assert.isFalse(
            events.some((event) => event.startsWith("interrupted")),
            events.join(", ")
          )
          // Each instant's SQL committed once, the long one included, and none missing from it on.
          assert.strictEqual(instants[0], first)
          assert.strictEqual(new Set(instants).size, instants.length, `duplicates: ${instants.join(", ")}`)
          assert.isAtLeast(instants.length, 10)
          for (let i = 1; i < instants.length; i++) assert.strictEqual(instants[i]! - instants[i - 1]!, 1000)
          const history = yield* ClusterScheduler.history("long", { limit: 1000 })
          assert.isTrue(history.every((entry) => entry.outcome === "ok"))
          assert.isUndefined(logs.find((log) => log.message.includes("Shard lock storage is unhealthy")))
        }).pipe(Effect.scoped, Effect.provide(Runner), Effect.provide(layer))
      }),
    60_000
  )
})
