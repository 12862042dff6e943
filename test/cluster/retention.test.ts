/**
 * Bounded storage (src/cluster/internal/retention.ts): the rows of processed messages go after the retention period;
 * pending ones stay. On SQLite, and on PostgreSQL when one answers (skipped with the reason printed otherwise).
 */
import { Persisted } from "@effect/cluster/ClusterSchema"
import * as DeliverAt from "@effect/cluster/DeliverAt"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect, Exit, Layer, PrimaryKey, Schema, Scope, TestClock } from "effect"
import { ClusterRunner } from "tickwork/cluster"
import { advance, freshPrefix, pgStorage, pgUnavailable, startRunner, untilShardsHeld } from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("retention", "the PostgreSQL variant")

const backends = [
  { name: "sqlite", skip: undefined, storage: ClusterRunner.sqlite(":memory:"), settleMillis: 0 },
  { name: "pg", skip: pgSkip, storage: pgStorage, settleMillis: 10 }
] as const

const delivered: Array<string> = []
/** A persisted message due at `at` (what a cluster cron's instant is underneath). */
class Wake extends Schema.Class<Wake>("test/retention/Wake")({ label: Schema.String, at: Schema.Number }) {
  [PrimaryKey.symbol](): string {
    return this.label
  }
  [DeliverAt.symbol](): DateTime.DateTime {
    return DateTime.unsafeMake(this.at)
  }
}
const Retained = Entity.make("retained", [Rpc.make("Wake", { payload: Wake }).annotate(Persisted, true)])
const RetainedLive = Retained.toLayer(
  Effect.succeed({ Wake: ({ payload }) => Effect.sync(() => delivered.push(payload.label)) })
)

/** Rows of the runner's messages table (processed and pending) and of its replies table. */
const rows = (prefix: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const count = (table: string, where: string) =>
      Effect.map(
        sql<{ readonly n: unknown }>`SELECT COUNT(*) AS n FROM ${sql(table)} WHERE ${sql.literal(where)}`,
        (result) => Number(result[0]!.n)
      )
    const processed = yield* count(
      `${prefix}_messages`,
      sql.onDialectOrElse({ sqlite: () => "processed = 1", orElse: () => "processed" })
    )
    const pending = yield* count(
      `${prefix}_messages`,
      sql.onDialectOrElse({ sqlite: () => "processed = 0", orElse: () => "NOT processed" })
    )
    const replies = yield* count(`${prefix}_replies`, "1 = 1")
    return { processed, pending, replies }
  })

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(
    backend.skip === undefined ? `retention: ${backend.name}` : `retention: ${backend.name} (skipped: ${backend.skip})`,
    () => {
      for (const retention of ["1 minute", false] as const) {
        it.scoped(
          retention === false
            ? "retention: false keeps processed messages"
            : "processed messages go after the retention period; pending ones stay",
          () =>
            Effect.gen(function* () {
              delivered.length = 0
              const prefix = freshPrefix("ret")
              const storage = yield* Layer.build(ClusterRunner.layerStorage(backend.storage))
              yield* Effect.addFinalizer(() =>
                Effect.gen(function* () {
                  const sql = yield* SqlClient.SqlClient
                  for (const table of ["messages", "replies", "runners", "locks"]) {
                    yield* Effect.ignore(sql`DROP TABLE IF EXISTS ${sql(`${prefix}_${table}`)}`)
                  }
                }).pipe(Effect.provide(storage))
              )
              const runner = yield* startRunner(storage, 1, { tablePrefix: prefix, retention })
              const entities = yield* Layer.buildWithScope(RetainedLive, runner.scope).pipe(
                Effect.provide(runner.context)
              )
              const inRunner = <A, E>(effect: Effect.Effect<A, E, any>) =>
                effect.pipe(Effect.provide(entities), Effect.provide(runner.context))
              const send = (label: string, delayMillis: number) =>
                Effect.gen(function* () {
                  const client = yield* Retained.client
                  const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
                  yield* client(label).Wake(new Wake({ label, at: now + delayMillis }), { discard: true })
                })
              yield* TestClock.adjust(1)
              yield* advance(3, backend.settleMillis)
              const labels = [0, 1, 2, 3, 4].map((i) => `soon-${i}`).concat([0, 1, 2].map((i) => `late-${i}`))
              yield* untilShardsHeld(runner, labels, backend.settleMillis)
              for (let i = 0; i < 5; i++) yield* inRunner(send(`soon-${i}`, 1_000))
              for (let i = 0; i < 3; i++) yield* inRunner(send(`late-${i}`, 120_000))
              yield* advance(3, backend.settleMillis)
              assert.strictEqual(delivered.length, 5)
              // Delivered and answered, still within the retention period: kept.
              assert.deepStrictEqual(yield* inRunner(rows(prefix)), { processed: 5, pending: 3, replies: 5 })
              yield* advance(80, backend.settleMillis)
              assert.deepStrictEqual(
                yield* inRunner(rows(prefix)),
                retention === false
                  ? { processed: 5, pending: 3, replies: 5 }
                  : { processed: 0, pending: 3, replies: 0 }
              )
              // The pending ones were never touched: they are delivered when due.
              yield* advance(45, backend.settleMillis)
              assert.strictEqual(delivered.length, 8)
              yield* Scope.close(runner.scope, Exit.void)
            }),
          60_000
        )
      }
    }
  )
}
