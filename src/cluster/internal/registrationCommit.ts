/**
 * Group commit of single registrations (`Reminders.register` / `registerFor`, from many fibers): each caller's checked
 * registration goes through `groupCommit.ts`, and the worker writes what is queued with registration's batch writer
 * (`Reminders.ts`' `write`: one statement on PostgreSQL, one transaction on SQLite, for up to `MAX_BATCH`
 * registrations). What each caller sees is what registering alone gives: its own result (made by the caller), its own
 * typed error (a failed batch is written again one registration at a time), and the later of two registrations of the
 * same reminder wins, as registering them one after the other would.
 *
 * A caller inside a SQL transaction (a cluster cron's `execute`, a `sql.withTransaction` of the application's) writes
 * in that transaction itself, as before, committed or rolled back with it; on SQLite, whose one connection the
 * transaction holds, the worker could not write before it ends.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { AnyKindWire } from "./grainProtocol.js"
import * as GroupCommit from "./groupCommit.js"
import type { Prepared } from "./reminderSql.js"

/** Registrations a batch takes at most: one PostgreSQL statement's worth (`ReminderSql.PG_CHUNK`). */
export const MAX_BATCH = 1_000

interface Pending {
  readonly kind: AnyKindWire
  readonly entry: Prepared
}

export interface RegistrationCommit<E> {
  /** Writes one checked registration (its row), sharing the write with other callers'. */
  readonly register: (kind: AnyKindWire, entry: Prepared) => Effect.Effect<void, E>
}

export const make = <E>(options: {
  /** Registration's batch writer: the rows of one kind, all or none; each (key, name) once. */
  readonly write: (kind: AnyKindWire, prepared: ReadonlyArray<Prepared>) => Effect.Effect<void, E>
  /** Runs `effect` in one transaction (several groups of one batch: one commit), its storage error as an `E`. */
  readonly transaction: <A, E2>(effect: Effect.Effect<A, E2>) => Effect.Effect<A, E | E2>
  /** A caller's failure when the service closes before its registration is written (see `groupCommit.ts`). */
  readonly closed: (when: "queued" | "inFlight") => E
}): Effect.Effect<RegistrationCommit<E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const commits = yield* GroupCommit.make<Pending, void, E, never>({
      maxBatch: MAX_BATCH,
      closed: options.closed,
      write: (items) => {
        // The same reminder twice: the later wins (the earlier is not written; its caller succeeds, as one whose
        // registration was replaced at once would).
        const idOf = ({ entry, kind }: Pending) => JSON.stringify([kind.name, entry.key, entry.row.name])
        const last = new Map<string, number>()
        for (let i = 0; i < items.length; i++) last.set(idOf(items[i]!), i)
        const groups = new Map<AnyKindWire, Array<Prepared>>()
        items.forEach((item, i) => {
          if (last.get(idOf(item)) !== i) return
          let group = groups.get(item.kind)
          if (group === undefined) groups.set(item.kind, (group = []))
          group.push(item.entry)
        })
        const writes = Array.from(groups, ([kind, prepared]) => options.write(kind, prepared))
        const done = items.map(() => undefined)
        return writes.length === 1
          ? Effect.as(writes[0]!, done)
          : Effect.as(options.transaction(Effect.all(writes, { discard: true })), done)
      }
    })
    return {
      register: (kind, entry) =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) =>
          Option.isSome(transaction) ? options.write(kind, [entry]) : commits.submit({ kind, entry })
        )
    }
  })
