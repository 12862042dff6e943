/**
 * The storage of a runner's reminder deliveries, many occurrences to a statement (step 4 and 5 of docs/cluster.md,
 * "Delivering an occurrence"). Each occurrence reads its reminder's row with its stored state before the grain has it,
 * and writes the row's advance (or removal) with its run after. One statement each, per occurrence, made a runner
 * recovering a backlog spend most of its time in round trips: each statement's text sent, parsed and planned, and on
 * PostgreSQL a commit each. Here both go through group commits (`groupCommit.ts`): the reads of the occurrences
 * waiting are one statement, and so are their writes; a lone occurrence is read and written at once, as before.
 *
 * - **A read** is one `SELECT` of the rows wanted (a `VALUES` list joined with the reminders table) with their states
 *   beside them; a reminder that is gone has none.
 * - **A write** is, on PostgreSQL, one statement of data-modifying CTEs over the occurrences as one JSON parameter:
 *   each row's write conditional on its generation (as `ReminderSql.finalStatement`), and the runs of the rows
 *   written, each reference's history trimmed (as `ScheduleState.recordStatements`); its commit does not wait for the
 *   disk (`synchronous_commit` off: a write lost in a crash of the database leaves its occurrence due, delivered again).
 *   On SQLite it is one transaction of the same statements one occurrence after the other.
 * - Each occurrence gets its own answer: a batch that fails is tried again one occurrence at a time, so one that
 *   storage refuses fails alone.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import type { Run } from "../../Schedules.js"
import * as GroupCommit from "./groupCommit.js"
import * as ReminderSql from "./reminderSql.js"
import * as ScheduleState from "./scheduleState.js"

/** Occurrences one statement reads or writes at most. */
export const MAX_BATCH = 256

/** A reminder's row and its stored state, as an occurrence reads them. */
export interface Read {
  readonly row: ReminderSql.ReminderRow
  readonly state: ScheduleState.StateRow | undefined
}

/** What an occurrence writes at its end: its reminder's row, and its run in the history (`reference`'s, `keep` kept). */
export interface Outcome {
  readonly kind: string
  readonly key: string
  readonly name: string
  /** The generation delivered: nothing is written when the row's is another (unregistered or replaced meanwhile). */
  readonly generation: string
  readonly write: ReminderSql.FinalWrite
  readonly run:
    | { readonly reference: string; readonly id: string; readonly run: Run; readonly keep: number }
    | undefined
}

/** A grain whose occurrences are being delivered, and whether its reminders were written on this runner since. */
export interface InFlight {
  changed: boolean
}

export interface DeliveryStorage {
  /**
   * The rows of the reminders `wanted` (each one's `ref`: its state key) and their states, in `wanted`'s order;
   * undefined for one that is gone. One read, with other callers' reads.
   */
  readonly read: (wanted: ReadonlyArray<ReminderSql.Wanted>) => Effect.Effect<ReadonlyArray<Read | undefined>, SqlError>
  /** Writes `outcome`: true when its row was written (its generation still current), and its run with it. */
  readonly write: (outcome: Outcome) => Effect.Effect<boolean, SqlError>
  /** `write` without waiting: `done` is called once with its answer. */
  readonly unsafeWrite: (outcome: Outcome, done: (exit: Exit.Exit<boolean, SqlError>) => void) => void
  /**
   * The delivery of occurrences of grain (kind, key) starts (`leave` when it ends): until then, a write of any of its
   * reminders on this runner (`touched`) marks it `changed`, so that what was read before is read again.
   */
  readonly enter: (kind: string, key: string) => InFlight
  readonly leave: (kind: string, key: string, inFlight: InFlight) => void
  /** A reminder of grain (kind, key) was written on this runner (registered, replaced, removed, paused, ...). */
  readonly touched: (kind: string, key: string) => void
}

const closed = (when: "queued" | "inFlight") =>
  new SqlError({
    message: `the reminders service is closing: ${when === "queued" ? "not run" : "run, its answer lost"}`
  })

export const make = (
  client: SqlClient.SqlClient,
  table: ReminderSql.ReminderSql,
  state: ScheduleState.ScheduleState
): Effect.Effect<DeliveryStorage, never, Scope.Scope> =>
  Effect.gen(function* () {
    const sql = client.withoutTransforms()
    /** One statement of at most `MAX_BATCH` reminders. */
    const readOnce = (wanted: ReadonlyArray<ReminderSql.Wanted>) =>
      Effect.map(state.withStates(table.manyStatement(wanted)), (rows) => {
        const found: Array<Read | undefined> = new Array(wanted.length).fill(undefined)
        for (const { row, state } of rows) found[Number(row.i)] = { row: ReminderSql.rowOf(row), state }
        return found
      })
    // A caller's reminders are one item (a message's occurrences); the items of a batch are read together.
    const reads = yield* GroupCommit.make<
      ReadonlyArray<ReminderSql.Wanted>,
      ReadonlyArray<Read | undefined>,
      SqlError,
      never
    >({
      maxBatch: MAX_BATCH / 4,
      closed,
      write: (items) =>
        Effect.map(Effect.forEach(ReminderSql.chunks(items.flat(), MAX_BATCH), readOnce), (chunks) => {
          const found = chunks.flat()
          let at = 0
          return items.map((item) => found.slice(at, (at += item.length)))
        })
    })

    const inFlight = new Map<string, Set<InFlight>>()

    const recordOf = (outcome: Outcome) =>
      outcome.run === undefined
        ? []
        : state.recordStatements(outcome.run.reference, outcome.run.id, outcome.run.run, outcome.run.keep)
    const finalOf = (outcome: Outcome) =>
      table.finalStatement(outcome.kind, outcome.key, outcome.name, outcome.generation, outcome.write)

    /** PostgreSQL: the outcomes as rows of one JSON parameter, the CTE `input` of the parts of both tables. */
    const pgWrite = (outcomes: ReadonlyArray<Outcome>) => {
      const input = JSON.stringify(
        outcomes.map(({ generation, key, kind, name, run, write }, i) => ({
          i,
          kind,
          grain_key: key,
          name,
          generation,
          op: write._tag,
          next_due: write._tag === "advance" ? write.nextDue : null,
          shard_id: write._tag === "advance" ? write.shardId : null,
          reference: run?.reference ?? null,
          id: run?.id ?? null,
          instant: run?.run.instant ?? null,
          run_trigger: run?.run.trigger ?? null,
          started: run?.run.start ?? null,
          ended: run?.run.end ?? null,
          outcome: run?.run.outcome ?? null,
          lateness: run?.run.lateness ?? null,
          attempts: run?.run.attempts ?? null,
          detail: run?.run.detail ?? null,
          keep: run?.keep ?? 0
        }))
      )
      return Effect.map(
        sql<{ readonly i: number }>`WITH input AS (
            SELECT * FROM json_to_recordset(${input}::json) AS x(i int, kind text, grain_key text, name text,
              generation text, op text, next_due bigint, shard_id text, reference text, id text, instant bigint,
              run_trigger text, started bigint, ended bigint, outcome text, lateness bigint, attempts bigint,
              detail text, keep int)
          ),
          ${sql.csv([...table.finalManyParts("input"), ...state.recordManyParts("input", "done")])},
          deferred AS (SELECT set_config('synchronous_commit', 'off', true) AS v)
          SELECT d.i FROM done d CROSS JOIN deferred`,
        (rows) => {
          const written: Array<boolean> = new Array(outcomes.length).fill(false)
          for (const { i } of rows) written[i] = true
          return written
        }
      )
    }

    /** SQLite: one transaction, each outcome's statements in turn (`ScheduleState.guardedWrite`'s form). */
    const sqliteWrite = (outcomes: ReadonlyArray<Outcome>) =>
      sql.withTransaction(
        Effect.forEach(outcomes, (outcome) => ScheduleState.guardedSequence(sql, finalOf(outcome), recordOf(outcome)))
      )

    const writes = yield* GroupCommit.make<Outcome, boolean, SqlError, never>({
      maxBatch: MAX_BATCH,
      closed,
      write: sql.onDialectOrElse({ pg: () => pgWrite, orElse: () => sqliteWrite })
    })

    return {
      read: (wanted) => (wanted.length === 0 ? Effect.succeed([]) : reads.submit(wanted)),
      write: writes.submit,
      unsafeWrite: (outcome, done) => {
        writes.unsafeSubmit(outcome, done)
      },
      enter: (kind, key) => {
        const grain = ReminderSql.grainId(kind, key)
        const entry: InFlight = { changed: false }
        let entries = inFlight.get(grain)
        if (entries === undefined) inFlight.set(grain, (entries = new Set()))
        entries.add(entry)
        return entry
      },
      leave: (kind, key, entry) => {
        const grain = ReminderSql.grainId(kind, key)
        const entries = inFlight.get(grain)
        if (entries === undefined) return
        entries.delete(entry)
        if (entries.size === 0) inFlight.delete(grain)
      },
      touched: (kind, key) => {
        const entries = inFlight.get(ReminderSql.grainId(kind, key))
        if (entries !== undefined) for (const entry of entries) entry.changed = true
      }
    }
  })
