/**
 * The storage of reminder deliveries (src/cluster/internal/deliveryStorage.ts), on SQLite and PostgreSQL: many
 * occurrences read in one statement and written in one, each with the answer it would get alone: the row's write
 * conditional on its generation, the run recorded only with it, each history trimmed to its length, and an outcome
 * storage refuses failing alone.
 */
import { SqlClient } from "@effect/sql"
import { assert, it } from "@effect/vitest"
import { Effect, Exit, Layer, type Scope } from "effect"
import type { Schedules } from "tickwork"
import { ClusterRunner } from "tickwork/cluster"
import * as DeliveryStorage from "../../src/cluster/internal/deliveryStorage.js"
import * as ReminderSql from "../../src/cluster/internal/reminderSql.js"
import { Tables } from "../../src/cluster/internal/runner.js"
import * as ScheduleState from "../../src/cluster/internal/scheduleState.js"
import { describeStorages, dropPrefixTables, freshPrefix, pgUnavailable, refuseRows } from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("delivery storage", "the PostgreSQL variant")

const DUE = 1_700_000_000_000

const row = (name: string, generation: string, nextDue = DUE): ReminderSql.ReminderRow => ({
  name,
  generation,
  message: `{"_tag":"Wake","name":"${name}"}`,
  nextDue,
  periodMillis: 60_000,
  cron: undefined,
  timeZone: undefined
})

const run = (instant: number): Schedules.Run => ({
  instant,
  trigger: "schedule",
  start: instant + 1,
  end: instant + 2,
  outcome: "sent",
  lateness: 1,
  attempts: 1
})

const ref = (key: string, name: string) => ReminderSql.stateKeyFor("k", key, name)
const wanted = (key: string, name: string): ReminderSql.Wanted => ({ kind: "k", key, name, ref: ref(key, name) })

/** An outcome of reminder (k, key, name) of `generation`, with its run (`keep` kept). */
const outcome = (
  key: string,
  name: string,
  generation: string,
  write: ReminderSql.FinalWrite,
  keep = 10
): DeliveryStorage.Outcome => ({
  kind: "k",
  key,
  name,
  generation,
  write,
  run: { reference: ref(key, name), id: `s:${generation}:${DUE}`, run: run(DUE), keep }
})

/** Writes `outcomes` queued together (one batch: nothing yields between them), each one's answer in order. */
const writeTogether = (storage: DeliveryStorage.DeliveryStorage, outcomes: ReadonlyArray<DeliveryStorage.Outcome>) =>
  Effect.async<ReadonlyArray<Exit.Exit<boolean, unknown>>>((resume) => {
    const exits: Array<Exit.Exit<boolean, unknown>> = []
    let left = outcomes.length
    outcomes.forEach((item, i) => {
      storage.unsafeWrite(item, (exit) => {
        exits[i] = exit
        if (--left === 0) resume(Effect.succeed(exits))
      })
    })
  })

describeStorages("delivery storage", pgSkip, (name, storage) => {
  /** The reminders table, the schedule state and the delivery storage over them, under a prefix of their own. */
  const setup = Effect.gen(function* () {
    const prefix = freshPrefix("ds")
    const sql = yield* SqlClient.SqlClient
    yield* Effect.addFinalizer(() => Effect.orDie(dropPrefixTables(prefix)).pipe(Effect.when(() => name === "pg")))
    return yield* Effect.gen(function* () {
      yield* ScheduleState.ensureStateTables
      const state = yield* ScheduleState.make
      const table = yield* ReminderSql.make(sql, `${prefix}_tickwork_reminders`)
      const delivery = yield* DeliveryStorage.make(sql, table, state)
      return { prefix, sql, state, table, delivery }
    }).pipe(Effect.provideService(Tables, { prefix }))
  })

  const withStorage = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) =>
    effect.pipe(Effect.scoped, Effect.provide(Layer.orDie(ClusterRunner.layerStorage(storage))))

  it.effect("reads many reminders in one statement: each one's row and state, in order; none for one gone", () =>
    withStorage(
      Effect.gen(function* () {
        const { delivery, state, table } = yield* setup
        yield* table.upsert("k", "a", row("r1", "g1"))
        yield* table.upsert("k", "a", row("r2", "g2", DUE + 5))
        yield* table.upsert("k", "b", row("r1", "g3"))
        yield* state.define(ref("a", "r2"), { ...ScheduleState.decodePolicies("{}"), retry: false }, "reminder")
        yield* state.pause(ref("a", "r2"), "maintenance", "operator", DUE)
        const reads = yield* delivery.read([
          wanted("a", "r1"),
          wanted("a", "gone"),
          wanted("b", "r1"),
          wanted("a", "r2")
        ])
        assert.deepStrictEqual(
          reads.map((read) => read?.row),
          [row("r1", "g1"), undefined, row("r1", "g3"), row("r2", "g2", DUE + 5)]
        )
        assert.deepStrictEqual(
          reads.map((read) => read?.state?.pause?.note),
          [undefined, undefined, undefined, "maintenance"]
        )
        assert.deepStrictEqual(yield* delivery.read([]), [])
      })
    )
  )

  it.effect(
    "writes many outcomes in one batch: advance, remove and hold where the generation is current, with their runs; nothing of a stale one",
    () =>
      withStorage(
        Effect.gen(function* () {
          const { delivery, state, table } = yield* setup
          yield* table.upsert("k", "a", row("moves", "g1"))
          yield* table.upsert("k", "a", row("ends", "g2"))
          yield* table.upsert("k", "a", row("held", "g3"))
          yield* table.upsert("k", "a", row("replaced", "g5"))
          const exits = yield* writeTogether(delivery, [
            outcome("a", "moves", "g1", { _tag: "advance", nextDue: DUE + 60_000, shardId: "default:1" }),
            outcome("a", "ends", "g2", { _tag: "remove" }),
            outcome("a", "held", "g3", { _tag: "current" }),
            // Registered again meanwhile (generation g5): nothing is written, no run.
            outcome("a", "replaced", "g4", { _tag: "remove" }),
            outcome("a", "never", "g6", { _tag: "remove" })
          ])
          assert.deepStrictEqual(
            exits.map((exit) => (Exit.isSuccess(exit) ? exit.value : "failed")),
            [true, true, true, false, false]
          )
          assert.strictEqual((yield* table.get("k", "a", "moves"))?.nextDue, DUE + 60_000)
          assert.isUndefined(yield* table.get("k", "a", "ends"))
          assert.deepStrictEqual(yield* table.get("k", "a", "held"), row("held", "g3"))
          assert.deepStrictEqual(yield* table.get("k", "a", "replaced"), row("replaced", "g5"))
          const runs = (n: string) => Effect.map(state.history(ref("a", n)), (all) => all.length)
          assert.deepStrictEqual(
            yield* Effect.all([runs("moves"), runs("ends"), runs("held"), runs("replaced"), runs("never")]),
            [1, 1, 1, 0, 0]
          )
          // The same advance again (a commit whose answer was lost, written again): not written twice.
          const again = outcome("a", "moves", "g1", {
            _tag: "advance",
            nextDue: DUE + 60_000,
            shardId: "default:1"
          })
          assert.deepStrictEqual(
            (yield* writeTogether(delivery, [again])).map((exit) => Exit.isSuccess(exit) && exit.value),
            [false]
          )
          assert.strictEqual(yield* runs("moves"), 1)
        })
      )
  )

  it.effect("each history is trimmed to its length, the newest kept; a length of 0 keeps none", () =>
    withStorage(
      Effect.gen(function* () {
        const { delivery, state, table } = yield* setup
        yield* table.upsert("k", "a", row("three", "g1"))
        yield* table.upsert("k", "a", row("none", "g2"))
        for (const n of ["three", "none"]) {
          for (let i = 1; i <= 4; i++) yield* state.record(ref("a", n), `old${i}`, run(DUE - i * 60_000), 100)
        }
        yield* writeTogether(delivery, [
          outcome("a", "three", "g1", { _tag: "advance", nextDue: DUE + 60_000, shardId: "default:1" }, 3),
          outcome("a", "none", "g2", { _tag: "advance", nextDue: DUE + 60_000, shardId: "default:1" }, 0)
        ])
        assert.deepStrictEqual(
          (yield* state.history(ref("a", "three"))).map((r) => r.instant),
          [DUE - 2 * 60_000, DUE - 60_000, DUE]
        )
        assert.deepStrictEqual(yield* state.history(ref("a", "none")), [])
      })
    )
  )

  it.effect("an outcome storage refuses fails alone; the others of its batch are written", () =>
    withStorage(
      Effect.gen(function* () {
        const { delivery, prefix, sql, table } = yield* setup
        for (const [n, generation] of [
          ["ok1", "g1"],
          ["bad", "g2"],
          ["ok2", "g3"]
        ] as const) {
          yield* table.upsert("k", "a", row(n, generation))
        }
        // The run of "bad" is refused: its batch fails whole, and each outcome is written again alone.
        yield* refuseRows(sql, `${prefix}_tickwork_schedule_runs`, "reference", ref("a", "bad"))
        const exits = yield* writeTogether(delivery, [
          outcome("a", "ok1", "g1", { _tag: "remove" }),
          outcome("a", "bad", "g2", { _tag: "remove" }),
          outcome("a", "ok2", "g3", { _tag: "remove" })
        ])
        assert.deepStrictEqual(
          exits.map((exit) => (Exit.isSuccess(exit) ? exit.value : "failed")),
          [true, "failed", true]
        )
        assert.isUndefined(yield* table.get("k", "a", "ok1"))
        assert.deepStrictEqual(yield* table.get("k", "a", "bad"), row("bad", "g2"))
        assert.isUndefined(yield* table.get("k", "a", "ok2"))
      })
    )
  )
})
