/**
 * Group commit of single registrations (src/cluster/internal/registrationCommit.ts over groupCommit.ts), on SQLite
 * and PostgreSQL: concurrent `registerFor` calls share statements, each reminder stored as one row with its grain's
 * shard (and no message); a registration the storage refuses fails alone; storage down fails each caller with
 * `ReminderStorageError`; a caller in a SQL transaction writes in it; closing the service answers every caller.
 * Statements are counted from @effect/sql's `sql.execute` spans.
 */
import * as EntityId from "@effect/cluster/EntityId"
import * as Sharding from "@effect/cluster/Sharding"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Either, Exit, Fiber, Layer, Option, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { type RecordedSpan, recordingTracer } from "../recordingTracer.js"
import {
  dropPrefixTables,
  freshPrefix,
  pgStorage,
  pgUnavailable,
  refuseRows,
  startRunner,
  type TestRunner
} from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("registration group commit", "the PostgreSQL variant")

const backends = [
  { name: "sqlite", skip: undefined, storage: ClusterRunner.sqlite(":memory:"), cleanup: () => Effect.void },
  { name: "pg", skip: pgSkip, storage: pgStorage, cleanup: dropPrefixTables }
] as const

const Msg = Schema.TaggedStruct("Wake", { label: Schema.String })
type Msg = typeof Msg.Type
const wake = (label: string): Msg => ({ _tag: "Wake", label })

const makeKind = (name: string) =>
  ClusterGrain.make(Grain.make<Msg>()({ name, onReceive: () => Effect.void }), { message: Msg })

/** Statements that inserted into the reminders table (each writes a batch's rows). */
const registrationWrites = (spans: ReadonlyArray<RecordedSpan>, prefix: string) =>
  spans.filter(
    (span) =>
      span.name === "sql.execute" &&
      String(span.attributes.get("db.query.text")).includes(`INTO "${prefix}_tickwork_reminders"`)
  )

const failed = (span: RecordedSpan) => span.exit !== undefined && Exit.isFailure(span.exit)

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(
    backend.skip === undefined
      ? `registration group commit: ${backend.name}`
      : `${backend.name} (skipped: ${backend.skip})`,
    () => {
      const setup = (name: string) =>
        Effect.gen(function* () {
          const prefix = freshPrefix("gc")
          const storage = yield* Layer.build(ClusterRunner.layerStorage(backend.storage))
          yield* Effect.addFinalizer(() => Effect.orDie(backend.cleanup(prefix)).pipe(Effect.provide(storage)))
          const runner = yield* startRunner(storage, 1, { tablePrefix: prefix })
          yield* Effect.addFinalizer(() => Scope.close(runner.scope, Exit.void))
          const kind = makeKind(`${name}-${backend.name}`)
          const grainsScope = yield* Scope.make()
          const grains = yield* withGrains(runner, kind, grainsScope)
          const client = yield* Effect.provide(SqlClient.SqlClient, storage)
          const sql = client.withoutTransforms()
          yield* TestClock.adjust(1)
          return { client, grains, grainsScope, kind, prefix, runner, sql }
        })

      const withGrains = (runner: TestRunner, kind: ReturnType<typeof makeKind>, scope: Scope.Scope) =>
        Layer.buildWithScope(
          ClusterGrain.layer([kind]).pipe(
            Layer.provideMerge(Reminders.layer()),
            Layer.provideMerge(ActorSystem.layer({ name: `runner-${runner.port}` }))
          ),
          scope
        ).pipe(Effect.provide(runner.context))

      const count = (sql: SqlClient.SqlClient, table: string) =>
        Effect.map(sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(table)}`, (rows) =>
          Number(rows[0]!.n)
        )

      it.scoped("concurrent registrations share statements; each is stored as one row with its grain's shard", () => {
        const { spans, tracer } = recordingTracer()
        return Effect.gen(function* () {
          const { grains, kind, prefix, runner, sql } = yield* setup("shared")
          const n = 200
          spans.length = 0
          const infos = yield* Effect.forEach(
            Array.from({ length: n }, (_, i) => i),
            (i) => Reminders.registerFor(kind, `k${i}`, "r", wake(`n${i}`), Reminders.after(1_000 + i)),
            { concurrency: "unbounded" }
          ).pipe(Effect.provide(grains))
          // Each caller's own answer.
          assert.deepStrictEqual(
            infos.map((info) => info.nextDue),
            Array.from({ length: n }, (_, i) => 1_001 + i)
          )
          const writes = registrationWrites(spans, prefix)
          assert.isAtLeast(writes.length, 1)
          assert.isAtMost(writes.length, 10, `${writes.length} statements for ${n} registrations`)
          assert.isFalse(writes.some(failed))
          // Every reminder is one row, due at its nextDue, with the shard of its grain; no occurrence is a message.
          const rows = yield* sql<{
            readonly grain_key: string
            readonly next_due: unknown
            readonly shard_id: string
          }>`SELECT grain_key, next_due, shard_id FROM ${sql(`${prefix}_tickwork_reminders`)}`
          assert.strictEqual(rows.length, n)
          const sharding = yield* Effect.provide(Sharding.Sharding, runner.context)
          for (const row of rows) {
            const i = Number(row.grain_key.slice(1))
            assert.strictEqual(Number(row.next_due), 1_001 + i, row.grain_key)
            assert.strictEqual(row.shard_id, sharding.getShardId(EntityId.make(row.grain_key), "default").toString())
          }
          assert.strictEqual(yield* count(sql, `${prefix}_messages`), 0)
        }).pipe(Effect.withTracer(tracer))
      })

      it.scoped("the same reminder from several callers at once: the later wins, in one statement that holds", () => {
        const { spans, tracer } = recordingTracer()
        return Effect.gen(function* () {
          const { grains, kind, prefix, sql } = yield* setup("twice")
          spans.length = 0
          yield* Effect.forEach(
            Array.from({ length: 10 }, (_, i) => i),
            (i) => Reminders.registerFor(kind, "g", "r", wake(`n${i}`), Reminders.after(1_000 + i)),
            { concurrency: "unbounded" }
          ).pipe(Effect.provide(grains))
          const list = yield* Reminders.listFor(kind, "g").pipe(Effect.provide(grains))
          assert.deepStrictEqual(
            list.map((r) => r.nextDue),
            [1_010]
          )
          assert.strictEqual(yield* count(sql, `${prefix}_tickwork_reminders`), 1)
          // No statement failed (PostgreSQL refuses to upsert one row twice in a statement).
          const writes = registrationWrites(spans, prefix)
          assert.isFalse(writes.some(failed))
          assert.isBelow(writes.length, 10)
        }).pipe(Effect.withTracer(tracer))
      })

      it.scoped("a registration the storage refuses fails alone; the others of its batch are stored", () =>
        Effect.gen(function* () {
          const { grains, kind, prefix, sql } = yield* setup("refused")
          // A trigger refuses this key's row.
          const refused = "refused"
          yield* refuseRows(sql, `${prefix}_tickwork_reminders`, "grain_key", refused)
          const keys = Array.from({ length: 20 }, (_, i) => (i === 7 ? refused : `k${i}`))
          const answers = yield* Effect.forEach(
            keys,
            (key) => Effect.either(Reminders.registerFor(kind, key, "r", wake(key), Reminders.after("1 hour"))),
            { concurrency: "unbounded" }
          ).pipe(Effect.provide(grains))
          assert.deepStrictEqual(
            answers.map((answer) => (Either.isLeft(answer) ? answer.left._tag : "ok")),
            keys.map((key) => (key === refused ? "ReminderStorageError" : "ok"))
          )
          assert.strictEqual(yield* count(sql, `${prefix}_tickwork_reminders`), 19)
        })
      )

      it.scoped("storage down: each caller gets its own ReminderStorageError, and registration works again after", () =>
        Effect.gen(function* () {
          const { grains, kind, prefix, sql } = yield* setup("down")
          // Every write of a registration refused, until the storage comes back.
          const [down, back] =
            backend.name === "pg"
              ? [
                  `ALTER TABLE "${prefix}_tickwork_reminders" RENAME TO "${prefix}_away"`,
                  `ALTER TABLE "${prefix}_away" RENAME TO "${prefix}_tickwork_reminders"`
                ]
              : [
                  `CREATE TRIGGER "${prefix}_down" BEFORE INSERT ON "${prefix}_tickwork_reminders"
                    BEGIN SELECT RAISE(ABORT, 'down'); END`,
                  `DROP TRIGGER "${prefix}_down"`
                ]
          yield* sql.unsafe(down)
          const answers = yield* Effect.forEach(
            Array.from({ length: 10 }, (_, i) => `k${i}`),
            (key) => Effect.either(Reminders.registerFor(kind, key, "r", wake(key), Reminders.after("1 hour"))),
            { concurrency: "unbounded" }
          ).pipe(Effect.provide(grains))
          assert.deepStrictEqual(
            answers.map((answer) =>
              Either.isLeft(answer) && answer.left._tag === "ReminderStorageError" ? answer.left.operation : "?"
            ),
            Array.from({ length: 10 }, () => "register")
          )
          yield* sql.unsafe(back)
          const info = yield* Reminders.registerFor(kind, "back", "r", wake("back"), Reminders.after("1 hour")).pipe(
            Effect.provide(grains)
          )
          assert.strictEqual(info.name, "r")
          assert.strictEqual(yield* count(sql, `${prefix}_tickwork_reminders`), 1)
        })
      )

      it.scoped("a caller inside a SQL transaction registers in it: rolled back with it, committed with it", () =>
        Effect.gen(function* () {
          const { client, grains, kind } = yield* setup("in-transaction")
          const inTransaction = (key: string, fail: boolean) =>
            client.withTransaction(
              Effect.zipRight(
                Reminders.registerFor(kind, key, "r", wake(key), Reminders.after("1 hour")),
                fail ? Effect.fail("rolled back" as const) : Effect.void
              )
            )
          const undone = yield* Effect.either(inTransaction("undone", true)).pipe(Effect.provide(grains))
          assert.deepStrictEqual(undone, Either.left("rolled back" as const))
          yield* inTransaction("kept", false).pipe(Effect.provide(grains))
          const listed = yield* Effect.forEach(["undone", "kept"], (key) => Reminders.listFor(kind, key)).pipe(
            Effect.provide(grains)
          )
          assert.deepStrictEqual(
            listed.map((rows) => rows.length),
            [0, 1]
          )
        })
      )

      it.scoped("closing the service with callers waiting answers every one of them", () =>
        Effect.gen(function* () {
          const { grains, grainsScope, kind } = yield* setup("closing")
          const fibers = yield* Effect.forEach(
            Array.from({ length: 50 }, (_, i) => `k${i}`),
            (key) =>
              Effect.fork(
                Effect.exit(
                  Reminders.registerFor(kind, key, "r", wake(key), Reminders.after("1 hour")).pipe(
                    Effect.provide(grains)
                  )
                )
              )
          )
          yield* Scope.close(grainsScope, Exit.void)
          const exits = yield* Effect.forEach(fibers, Fiber.join)
          // Written, or refused with the typed error: none left waiting, none interrupted or dead.
          for (const exit of exits) {
            const answer = Exit.match(exit, {
              onSuccess: () => "registered",
              onFailure: (cause) =>
                Option.match(Cause.failureOption(cause), { onNone: () => Cause.pretty(cause), onSome: (e) => e._tag })
            })
            assert.include(["registered", "ReminderStorageError"], answer)
          }
          // After the close, a caller of the closed service is refused at once.
          const late = yield* Effect.either(
            Reminders.registerFor(kind, "late", "r", wake("late"), Reminders.after("1 hour")).pipe(
              Effect.provide(grains)
            )
          )
          assert.strictEqual(Either.isLeft(late) ? late.left._tag : "registered", "ReminderStorageError")
        })
      )
    }
  )
}
