/**
 * The cluster crons as a `Schedules.ScheduleSource`: every operation reads and writes the runners' storage (the cron
 * table, the state and runs tables), so what one runner does every runner sees, and it survives restarts. Runs
 * outside the grid (trigger, backfill) are persisted messages to the schedule's entity, run by whichever runner owns
 * them under the overlap policy.
 *
 * @internal
 */
import * as Sharding from "@effect/cluster/Sharding"
import * as SqlClient from "@effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { backfillInstants, DEFAULTS, notRun, parsePolicies } from "../../internal/schedules.js"
import { scheduleEvents } from "../../Metrics.js"
import * as QuartzCron from "../../QuartzCron.js"
import type { Filter, ScheduleInfo, ScheduleSource } from "../../Schedules.js"
import { InvalidCronExpression, InvalidSchedulePolicy, ScheduledReferenceNotFound } from "../../TimerError.js"
import { cronOf, ensureTables, FirePayload, makeEntity, RunPayload, tableNames } from "./cron.js"
import { runningIn } from "./cronPolicy.js"
import * as ScheduleState from "./scheduleState.js"

interface CronRow {
  readonly reference: string
  readonly expression: string
  readonly time_zone: string
  readonly next_instant: unknown
  readonly generation: unknown
}

/** The source over the cluster crons of the runner's storage (creates the tables when missing). */
export const make = Effect.gen(function* () {
  const sharding = yield* Sharding.Sharding
  const storage = yield* SqlClient.SqlClient
  const sql = storage.withoutTransforms()
  yield* Effect.mapError(ensureTables, ScheduleState.storageError("table creation", undefined))
  const tables = yield* tableNames
  const state = yield* ScheduleState.make
  const crons = sql(tables.schedules)
  const fired = sql(tables.fired)
  const select = sql`SELECT reference, expression, time_zone, next_instant, generation FROM ${crons}`

  const info = (row: CronRow, st: ScheduleState.StateRow | undefined) =>
    Effect.map(state.lastRun(row.reference), (lastRun): ScheduleInfo => {
      const policies = st?.policies ?? { ...DEFAULTS, graceMillis: 60_000, retry: false }
      const next = row.next_instant === null || row.next_instant === undefined ? undefined : Number(row.next_instant)
      return {
        reference: row.reference,
        kind: "cluster-cron",
        owner: "cluster",
        expression: row.expression,
        intervalMillis: undefined,
        timeZone: row.time_zone,
        state: st?.pause === undefined ? "active" : "paused",
        pause: st?.pause,
        nextFire: st?.pause === undefined ? next : undefined,
        lastRun,
        policies: {
          misfire: policies.misfire,
          graceMillis: policies.graceMillis,
          overlap: policies.overlap,
          retry: policies.retry,
          pauseAfterFailures: policies.pauseAfterFailures
        }
      }
    })

  const find = (reference: string) =>
    Effect.flatMap(sql<CronRow>`${select} WHERE reference = ${reference}`, (rows) =>
      rows[0] === undefined ? Effect.fail(new ScheduledReferenceNotFound({ reference })) : Effect.succeed(rows[0])
    )

  const getInfo = (reference: string) =>
    Effect.flatMap(find(reference), (row) => Effect.flatMap(state.get(reference), (st) => info(row, st)))

  const sendRun = (
    reference: string,
    trigger: "manual" | "backfill",
    instants: ReadonlyArray<number>,
    runId?: string
  ) =>
    Effect.gen(function* () {
      const id = runId ?? String(yield* sharding.getSnowflake)
      const client = (yield* sharding.makeClient(makeEntity(reference)))(`${trigger}-${id}`)
      yield* client.run(new RunPayload({ id, trigger, instants }), { discard: true })
    }).pipe(Effect.mapError(ScheduleState.storageError(trigger, reference)))

  const matches = (filter: Filter | undefined) => (schedule: ScheduleInfo) =>
    (filter?.kind === undefined || schedule.kind === filter.kind) &&
    (filter?.owner === undefined || schedule.owner === filter.owner) &&
    (filter?.state === undefined || schedule.state === filter.state)

  const source: ScheduleSource = {
    name: "cluster-cron",
    list: (filter) =>
      filter?.kind !== undefined && filter.kind !== "cluster-cron"
        ? Effect.succeed([])
        : ScheduleState.stored("list")(
            undefined,
            Effect.gen(function* () {
              const rows = yield* sql<CronRow>`${select} ORDER BY reference`
              const states = new Map((yield* state.all).map((st) => [st.reference, st]))
              const all = yield* Effect.forEach(rows, (row) => info(row, states.get(row.reference)))
              return all.filter(matches(filter))
            })
          ),
    get: (reference) => ScheduleState.stored("get")(reference, getInfo(reference)),
    pause: (reference, note, options) =>
      ScheduleState.stored("pause")(
        reference,
        ScheduleState.changeState("paused", getInfo(reference), (now) =>
          state.pause(reference, String(note), options?.by ?? "operator", now)
        )
      ),
    resume: (reference) =>
      ScheduleState.stored("resume")(
        reference,
        ScheduleState.changeState("active", getInfo(reference), () => state.resume(reference))
      ),
    trigger: (reference) =>
      ScheduleState.stored("trigger")(
        reference,
        Effect.gen(function* () {
          const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          // A run in progress in this process decides here, before any storage is touched: with SQLite the run holds
          // the one connection, and the message would only be read once it is over.
          const local = runningIn(storage, `${tables.schedules}/${reference}`)
          const overlap = local.count > 0 ? local.overlap : "allowAll"
          const id = String(yield* sharding.getSnowflake)
          if (overlap === "bufferOne") local.buffered = id
          yield* find(reference)
          scheduleEvents("triggered").unsafeUpdate(1, [])
          const replaced = overlap === "bufferOne" && local.buffered !== id
          if (overlap === "skip" || replaced) {
            scheduleEvents("overlap").unsafeUpdate(1, [])
            const st = yield* state.get(reference)
            return yield* state.record(
              reference,
              `m:${id}:${now}`,
              notRun(
                now,
                "manual",
                "skipped",
                replaced ? "a later run took its place (overlap: bufferOne)" : "a run was still going (overlap: skip)"
              ),
              st?.policies.history ?? DEFAULTS.history
            )
          }
          if (overlap === "bufferOne") local.buffered = undefined
          yield* sendRun(reference, "manual", [now], id)
        })
      ),
    update: (reference, changes) =>
      ScheduleState.stored("update")(
        reference,
        Effect.gen(function* () {
          const row = yield* find(reference)
          const st = yield* state.get(reference)
          const policyChanges = changes.policies as Record<string, unknown> | undefined
          if (policyChanges !== undefined && policyChanges !== null && policyChanges.retry !== undefined) {
            return yield* new InvalidSchedulePolicy({
              policy: "retry",
              reason: "a cluster cron's retry is code: give it where the schedule is registered (withPolicies)"
            })
          }
          const base = st?.policies ?? { ...DEFAULTS, graceMillis: 60_000, retry: false }
          const parsed = yield* parsePolicies(changes.policies, { ...base, retry: undefined })
          const policies: ScheduleState.StoredPolicies = { ...parsed, retry: base.retry }
          let cron: QuartzCron.QuartzCron | undefined
          let timeZone = row.time_zone
          if (changes.spec !== undefined) {
            const spec = changes.spec as { _tag?: unknown; expression?: unknown; timeZone?: unknown }
            if (spec === null || typeof spec !== "object" || spec._tag !== "Cron") {
              return yield* new InvalidSchedulePolicy({
                policy: "spec",
                reason: "a cluster cron's spec must be Schedules.cron(expression, { timeZone })"
              })
            }
            if (typeof spec.expression !== "string") {
              return yield* new InvalidCronExpression({
                expression: String(spec.expression),
                reason: "must be a string"
              })
            }
            timeZone = typeof spec.timeZone === "string" ? spec.timeZone : timeZone
            cron = yield* Either.mapLeft(QuartzCron.parse(spec.expression, { timeZone }), (error) => error)
          }
          if (st !== undefined) yield* state.setPolicies(reference, policies)
          if (cron !== undefined && (cron.expression !== row.expression || timeZone !== row.time_zone)) {
            const newCron = cron
            const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            // The next instant: the new expression's first at or after now, after the last instant already run.
            const cursor = yield* sql.withTransaction(
              Effect.gen(function* () {
                const locked = yield* sql<{ readonly generation: unknown }>`
                  UPDATE ${crons} SET updated_at = ${now} WHERE reference = ${reference} RETURNING generation`
                const last = yield* sql<{ readonly last: unknown }>`
                  SELECT MAX(instant) AS last FROM ${fired} WHERE reference = ${reference}`
                const lastRun = last[0]?.last === null || last[0]?.last === undefined ? undefined : Number(last[0].last)
                const next = Option.getOrNull(
                  QuartzCron.next(newCron, Math.max(now - 1, lastRun ?? Number.NEGATIVE_INFINITY))
                )
                yield* sql`
                  UPDATE ${crons} SET expression = ${newCron.expression}, time_zone = ${timeZone}, next_instant = ${next}
                  WHERE reference = ${reference}`
                return { next, generation: Number(locked[0]?.generation ?? 0) }
              })
            )
            if (cursor.next !== null) {
              const client = (yield* sharding.makeClient(makeEntity(reference)))(
                DateTime.formatIso(DateTime.unsafeMake(cursor.next))
              )
              yield* Effect.mapError(
                client.fire(new FirePayload({ instant: cursor.next, generation: cursor.generation }), {
                  discard: true
                }),
                ScheduleState.storageError("update", reference)
              )
            }
          }
          return yield* getInfo(reference)
        })
      ),
    remove: (reference) =>
      ScheduleState.stored("remove")(
        reference,
        Effect.gen(function* () {
          yield* find(reference)
          yield* sql.withTransaction(
            Effect.zipRight(
              sql`DELETE FROM ${crons} WHERE reference = ${reference}`,
              Effect.zipRight(sql`DELETE FROM ${fired} WHERE reference = ${reference}`, state.remove(reference))
            )
          )
        })
      ),
    history: (reference) =>
      ScheduleState.stored("history")(reference, Effect.zipRight(find(reference), state.history(reference))),
    backfill: (reference, from, to) =>
      ScheduleState.stored("backfill")(
        reference,
        Effect.gen(function* () {
          const row = yield* find(reference)
          const cron = cronOf(row.expression, row.time_zone)
          const instants = yield* backfillInstants(from, to, (after) =>
            cron === undefined ? undefined : Option.getOrUndefined(QuartzCron.next(cron, after))
          )
          if (instants.length > 0) yield* sendRun(reference, "backfill", instants)
          return instants.length
        })
      )
  }
  return source
})
