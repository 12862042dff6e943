import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Sharding } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"

/** Builds `layer` in a throwaway scope and returns how that went. */
const tryBuild = <A, E>(layer: Layer.Layer<A, E>) => Effect.scoped(Effect.exit(Layer.build(layer)))

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected the layer to fail")
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (failure === undefined) throw new Error(`expected a typed failure, got ${String(exit.cause)}`)
  return failure
}

describe("ClusterRunner storage at start", () => {
  it.live("a SQLite file in a missing directory: ClusterStorageUnavailable naming the file, not a defect", () =>
    Effect.gen(function* () {
      const filename = path.join(os.tmpdir(), `tickwork-missing-${process.pid}`, "nested", "cluster.db")
      const exit = yield* tryBuild(ClusterRunner.layer({ storage: ClusterRunner.sqlite(filename), port: 1 }))
      const error = failureOf(exit)
      assert.strictEqual(error._tag, "ClusterStorageUnavailable")
      assert.include(error.message, filename)
      assert.include(error.message, "directory does not exist")
    })
  )

  it.live("a SQLite file that cannot be created: ClusterStorageUnavailable", () =>
    Effect.gen(function* () {
      // /proc refuses new files even to root, unlike a chmod-ed directory.
      const exit = yield* tryBuild(ClusterRunner.layerStorage(ClusterRunner.sqlite("/proc/tickwork-cluster.db")))
      const error = failureOf(exit)
      assert.strictEqual(error._tag, "ClusterStorageUnavailable")
      assert.include(error.message, "unable to open database file")
    })
  )

  it.live("PostgreSQL refusing connections: ClusterStorageUnavailable at once, without the password", () =>
    Effect.gen(function* () {
      const started = performance.now()
      const exit = yield* tryBuild(
        ClusterRunner.layer({
          storage: ClusterRunner.postgres({
            url: "postgres://app:s3cret@127.0.0.1:1/test",
            connectTimeout: "3 seconds"
          }),
          port: 1
        })
      )
      const error = failureOf(exit)
      assert.strictEqual(error._tag, "ClusterStorageUnavailable")
      assert.include(error.message, "PostgreSQL 127.0.0.1:1/test")
      assert.include(error.message, "ECONNREFUSED")
      assert.notInclude(error.message, "s3cret")
      assert.isBelow(performance.now() - started, 3000)
    })
  )

  it.live("a PostgreSQL server that never answers: ClusterStorageUnavailable after the connect timeout, no hang", () =>
    Effect.gen(function* () {
      // A local socket that accepts connections and never says a word.
      const silent = net.createServer(() => {})
      const sockets = new Set<net.Socket>()
      silent.on("connection", (socket) => sockets.add(socket))
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => {
          silent.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.async<void>((resume) => {
            for (const socket of sockets) socket.destroy()
            silent.close(() => resume(Effect.void))
          })
      )
      const port = (silent.address() as net.AddressInfo).port
      const started = performance.now()
      const exit = yield* tryBuild(
        ClusterRunner.layerStorage(
          ClusterRunner.postgres({ url: `postgres://app@127.0.0.1:${port}/test`, connectTimeout: "300 millis" })
        )
      )
      const error = failureOf(exit)
      assert.strictEqual(error._tag, "ClusterStorageUnavailable")
      assert.match(error.message, /timed out|timeout/i)
      const elapsed = performance.now() - started
      assert.isAtLeast(elapsed, 250)
      assert.isBelow(elapsed, 3000)
    }).pipe(Effect.scoped)
  )
})

describe("ClusterRunner options", () => {
  it.effect("invalid options: InvalidClusterRunnerOptions naming each one", () =>
    Effect.gen(function* () {
      const exit = yield* tryBuild(
        ClusterRunner.layer({
          host: " ",
          port: 70000,
          tablePrefix: "bad;prefix",
          storage: ClusterRunner.sqlite(""),
          shardingConfig: { shardsPerGroup: 0 }
        })
      )
      const error = failureOf(exit)
      assert.strictEqual(error._tag, "InvalidClusterRunnerOptions")
      assert.strictEqual(error._tag === "InvalidClusterRunnerOptions" ? error.issues.length : 0, 5)
      for (const word of ["host", "port: 70000", "tablePrefix", "SQLite file name is empty", "shardsPerGroup"]) {
        assert.include(error.message, word)
      }
      const fractional = failureOf(yield* tryBuild(ClusterRunner.layer({ port: 1.5 })))
      assert.include(fractional.message, "port: 1.5")
      const timeout = failureOf(
        yield* tryBuild(
          ClusterRunner.layer({ storage: ClusterRunner.postgres({ url: "postgres://x", connectTimeout: 0 }) })
        )
      )
      assert.include(timeout.message, "connectTimeout")
      // Local arming's window below the poll interval (it would leave instants unarmed), a retention too short for
      // a waiting client to read its reply, and a read limit that is not a positive integer.
      for (const [options, words] of [
        [{ localArming: { window: "500 millis" } }, ["localArming.window: 500 millis", "1000 ms"]],
        [
          { localArming: { window: "2 seconds" }, shardingConfig: { entityMessagePollInterval: "5 seconds" } },
          ["5000 ms"]
        ],
        [{ localArming: { window: Number.NaN } }, ["localArming.window: NaN"]],
        [{ retention: "59 seconds" }, ["retention: 59 seconds", "at least 1 minute"]],
        [{ retention: Number.POSITIVE_INFINITY }, ["retention: Infinity"]],
        // A read limit must let a read take something.
        [{ readLimit: 0 }, ["readLimit: 0 is not a positive integer"]],
        [{ readLimit: -5 }, ["readLimit: -5"]],
        [{ readLimit: 2.5 }, ["readLimit: 2.5"]],
        [{ readLimit: Number.NaN }, ["readLimit: NaN"]],
        [{ readLimit: true as unknown as number }, ["readLimit: true"]]
      ] as const) {
        const bad = failureOf(yield* tryBuild(ClusterRunner.layerTest(options)))
        assert.strictEqual(bad._tag, "InvalidClusterRunnerOptions")
        for (const word of words) assert.include(bad.message, word)
      }
    })
  )

  it.effect("the storage constructors' defaults", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(ClusterRunner.sqlite(), {
        _tag: "Sqlite",
        filename: "tickwork-cluster.db",
        busyTimeoutMillis: 5000
      })
      const pg = ClusterRunner.postgres({ url: "postgres://localhost/test" })
      assert.strictEqual(pg._tag === "Postgres" ? pg.connectTimeoutMillis : 0, 5000)
      assert.strictEqual(ClusterRunner.defaultShardingConfig.entityMessagePollInterval, "1 second")
    })
  )

  it.scoped("a table prefix names @effect/cluster's tables and tickwork's", () =>
    Effect.gen(function* () {
      yield* ClusterScheduler.scheduleWithCron("0 * * * * ?", Effect.void, ClusterScheduler.withTimerReference("p"))
      yield* Layer.build(Reminders.layer())
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ readonly name: string }>`
        SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'custom%' ORDER BY name`
      const names = rows.map((row) => row.name)
      const expected = [
        "custom_messages",
        "custom_replies",
        "custom_tickwork_cron",
        "custom_tickwork_cron_fired",
        "custom_tickwork_reminders"
      ]
      for (const table of expected) {
        assert.include(names, table)
      }
      assert.strictEqual((yield* ClusterRunner.Tables).prefix, "custom")
    }).pipe(Effect.provide(ClusterRunner.layerTest({ tablePrefix: "custom" })))
  )

  it.scoped("layerTest on a SQLite file keeps its storage on disk", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tickwork-runner-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const filename = path.join(dir, "cluster.db")
      yield* Effect.gen(function* () {
        const sharding = yield* Sharding.Sharding
        assert.isFalse(yield* sharding.isShutdown)
      }).pipe(Effect.scoped, Effect.provide(ClusterRunner.layerTest({ storage: ClusterRunner.sqlite(filename) })))
      assert.isTrue(fs.existsSync(filename))
    })
  )
})
