/**
 * Bounded storage (src/cluster/internal/retention.ts): the rows of processed messages go after the retention period;
 * pending ones stay. On SQLite, and on PostgreSQL when one answers (skipped with the reason printed otherwise).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { advance, freshPrefix, pgStorage, pgUnavailable, startRunner } from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("retention", "the PostgreSQL variant")

const backends = [
  { name: "sqlite", skip: undefined, storage: ClusterRunner.sqlite(":memory:"), settleMillis: 0 },
  { name: "pg", skip: pgSkip, storage: pgStorage, settleMillis: 10 }
] as const

const delivered: Array<string> = []
const Msg = Schema.TaggedStruct("Wake", { label: Schema.String })
const Kind = ClusterGrain.make(
  Grain.make<typeof Msg.Type>()({
    name: "retained",
    onReceive: (ctx) => Effect.sync(() => delivered.push(ctx.message.label))
  }),
  { message: Msg }
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
                  for (const table of ["messages", "replies", "runners", "locks", "tickwork_reminders"]) {
                    yield* Effect.ignore(sql`DROP TABLE IF EXISTS ${sql(`${prefix}_${table}`)}`)
                  }
                }).pipe(Effect.provide(storage))
              )
              const runner = yield* startRunner(storage, 1, { tablePrefix: prefix, retention })
              const grains = yield* Layer.buildWithScope(
                ClusterGrain.layer([Kind]).pipe(
                  Layer.provideMerge(Reminders.layer()),
                  Layer.provideMerge(ActorSystem.layer({ name: "retention" }))
                ),
                runner.scope
              ).pipe(Effect.provide(runner.context))
              const inRunner = <A, E>(effect: Effect.Effect<A, E, any>) =>
                effect.pipe(Effect.provide(grains), Effect.provide(runner.context))
              yield* TestClock.adjust(1)
              yield* advance(3, backend.settleMillis)
              for (let i = 0; i < 5; i++) {
                yield* inRunner(
                  Reminders.registerFor(
                    Kind,
                    `soon-${i}`,
                    "r",
                    { _tag: "Wake", label: `soon-${i}` },
                    Reminders.after("1 second")
                  )
                )
              }
              for (let i = 0; i < 3; i++) {
                yield* inRunner(
                  Reminders.registerFor(
                    Kind,
                    `late-${i}`,
                    "r",
                    { _tag: "Wake", label: `late-${i}` },
                    Reminders.after("2 minutes")
                  )
                )
              }
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
