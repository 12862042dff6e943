/**
 * The durable reminders as a `Schedules.ScheduleSource` (kind `"reminder"`): every operation reads and writes the
 * runners' storage (the reminders table, and the schedule state and runs tables the cluster crons use, under the key
 * `reminder:<reference>`), so what one runner does every runner sees, and it survives restarts.
 *
 * - reference `<kind>/<key>/<name>`, owner `<kind>/<key>` (each segment with `/` and `%` escaped);
 * - `pause` is a stored flag the delivery path reads: a paused reminder's occurrences pass without reaching the grain
 *   (recorded as `"skipped"`), its grid goes on, so `resume` fires again from the next occurrence after now;
 * - `trigger` sends one occurrence due now, marked manual: delivered once, outside the grid, which it does not move;
 * - `remove` unregisters it and deletes its state and history;
 * - `update` stores the policies first, then reschedules the spec in place (`reschedule`: its stored message, a new
 *   generation, the first occurrence of the new spec from now), only while the reminder is still the one it read
 *   (unregistered meanwhile: `ScheduledReferenceNotFound`; registered again: `ScheduleStorageError`); the policies
 *   it stores are `misfire`, `grace`, `pauseAfterFailures` and
 *   `history`. `overlap` (a grain handles one message at a time) and `retry` (code: `Reminders.layer({ policies })`)
 *   are refused, as is `backfill` (`InvalidSchedulePolicy`).
 * - `trigger` and `update` send from a runner that does not host the grain kind too (the message is stored encoded);
 *   only a runner that owns the grain's shard must host it.
 *
 * @internal
 */
import type { Sharding } from "@effect/cluster/Sharding"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Schedule from "effect/Schedule"
import { DEFAULTS, parsePolicies, parseSpec } from "../../internal/schedules.js"
import { scheduleEvents } from "../../Metrics.js"
import type { Filter, ScheduleError, ScheduleInfo, ScheduleSource } from "../../Schedules.js"
import {
  InvalidCronExpression,
  InvalidSchedulePolicy,
  ScheduledReferenceNotFound,
  ScheduleStorageError
} from "../../TimerError.js"
import type { RegisterError, ReminderSchedule } from "../Reminders.js"
import { ReminderDelivery } from "./grainProtocol.js"
import * as ReminderSql from "./reminderSql.js"
import * as ScheduleState from "./scheduleState.js"

export interface Found {
  readonly kind: string
  readonly key: string
  readonly reference: string
  readonly row: ReminderSql.ReminderRow
}

/**
 * A `Schedules` spec as a reminder's schedule, checked as `Schedules.create` checks it: an interval's grid starts
 * `first` (default: one interval) from now; a cron keeps the reminder's time zone unless the spec gives one.
 */
const scheduleOf = (
  spec: unknown,
  row: ReminderSql.ReminderRow,
  now: number
): Either.Either<ReminderSchedule, ScheduleError> => {
  const s = spec as { readonly _tag?: unknown; readonly timeZone?: unknown } | null
  const zoned =
    s !== null && typeof s === "object" && s._tag === "Cron" && s.timeZone === undefined
      ? { ...s, timeZone: row.timeZone ?? "UTC" }
      : spec
  return Either.map(
    parseSpec(zoned, now),
    (parsed): ReminderSchedule =>
      parsed._tag === "interval"
        ? { _tag: "After", delay: parsed.first, period: parsed.every }
        : { _tag: "Cron", expression: parsed.expression, timeZone: parsed.timeZone }
  )
}

/**
 * For tests: each reminders source's `update` with `between` run after it has read the reminder and before it writes
 * (an unregistration or a new registration that races with it).
 */
export const updatesWithRace = new WeakMap<
  ScheduleSource,
  <E>(
    reference: string,
    between: Effect.Effect<unknown, E>,
    changes: Parameters<ScheduleSource["update"]>[1]
  ) => Effect.Effect<ScheduleInfo, ScheduledReferenceNotFound | ScheduleError | ScheduleStorageError | SqlError | E>
>()

export const make = (deps: {
  readonly table: ReminderSql.ReminderSql
  readonly state: ScheduleState.ScheduleState
  readonly sharding: Context.Tag.Service<Sharding>
  /** Sends an occurrence of a reminder of grain kind `kind` (hosted here or not). */
  readonly send: (kind: string, key: string, delivery: ReminderDelivery) => Effect.Effect<void, unknown>
  /** Gives the reminder `row` of (kind, key) a new schedule in place (`Reminders.layer`'s `reschedule`). */
  readonly reschedule: (
    kind: string,
    key: string,
    row: ReminderSql.ReminderRow,
    schedule: ReminderSchedule
  ) => Effect.Effect<"written" | "gone" | "replaced", RegisterError>
  /**
   * A reminder of grain (kind, key) was written here (paused, resumed, its policies or schedule changed, removed): a
   * delivery of its occurrences under way reads them again (`DeliveryStorage.touched`).
   */
  readonly touched: (kind: string, key: string) => void
  /** The failure policies the code gives the reminder (`Reminders.layer({ policies })`). */
  readonly failurePolicies: (reminder: { readonly kind: string; readonly key: string; readonly name: string }) => {
    readonly retry: Schedule.Schedule<unknown, unknown> | undefined
    readonly pauseAfterFailures: number | undefined
  }
}): ScheduleSource => {
  const { sharding, state, table } = deps
  /** `deps.touched` for the reminder `reference`. */
  const touch = (reference: string) =>
    Effect.sync(() => {
      const parsed = ReminderSql.parseReference(reference)
      if (parsed !== undefined) deps.touched(parsed.kind, parsed.key)
    })

  const info = (found: Found, st: ScheduleState.StateRow | undefined) =>
    Effect.map(state.lastRun(ReminderSql.stateKeyOf(found.reference)), (lastRun): ScheduleInfo => {
      const code = deps.failurePolicies({ kind: found.kind, key: found.key, name: found.row.name })
      return {
        reference: found.reference,
        kind: "reminder",
        owner: ReminderSql.ownerOf(found.kind, found.key),
        expression: found.row.cron,
        intervalMillis: found.row.periodMillis,
        timeZone: found.row.timeZone,
        state: st?.pause === undefined ? "active" : "paused",
        pause: st?.pause,
        nextFire: st?.pause === undefined ? found.row.nextDue : undefined,
        lastRun,
        policies: {
          // Unless an operator set them: an occurrence missed while the cluster was down fires once on recovery.
          misfire: st?.policies.misfire ?? DEFAULTS.misfire,
          graceMillis: st?.policies.graceMillis ?? DEFAULTS.graceMillis,
          // A grain handles its messages one at a time.
          overlap: "bufferAll",
          retry: code.retry !== undefined,
          // An operator's stored limit, else the code's.
          pauseAfterFailures: st?.policies.pauseAfterFailures ?? code.pauseAfterFailures
        }
      }
    })

  const find = (reference: string) =>
    Effect.gen(function* () {
      const parsed = ReminderSql.parseReference(reference)
      const row = parsed === undefined ? undefined : yield* table.get(parsed.kind, parsed.key, parsed.name)
      if (parsed === undefined || row === undefined) return yield* new ScheduledReferenceNotFound({ reference })
      return { kind: parsed.kind, key: parsed.key, reference, row } satisfies Found
    })

  const getInfo = (reference: string) =>
    Effect.flatMap(find(reference), (found) =>
      Effect.flatMap(state.get(ReminderSql.stateKeyOf(reference)), (st) => info(found, st))
    )

  const matches = (filter: Filter | undefined) => (schedule: ScheduleInfo) =>
    (filter?.owner === undefined || schedule.owner === filter.owner) &&
    (filter?.state === undefined || schedule.state === filter.state)

  /**
   * `update` of the reminder `found` (as read): everything is checked before anything is written; then the policies
   * (safe to write again: a retried update writes the same), then the spec, written only while the reminder's
   * generation is still the one read: unregistered meanwhile is `ScheduledReferenceNotFound`, registered again a
   * `ScheduleStorageError` that says so (the policies stay written: they are the operator's, kept across a new
   * registration of the same spec).
   */
  const updateFound = (found: Found, changes: Parameters<ScheduleSource["update"]>[1]) =>
    Effect.gen(function* () {
      const { reference } = found
      const policyChanges = (changes.policies ?? {}) as Record<string, unknown>
      const refusals: Record<string, string> = {
        overlap: "a reminder's occurrences never overlap: a grain handles one message at a time",
        retry: "a reminder's retry is code: give it on every runner with Reminders.layer({ policies })"
      }
      for (const [policy, reason] of Object.entries(refusals)) {
        if (policyChanges !== null && typeof policyChanges === "object" && policyChanges[policy] !== undefined) {
          return yield* new InvalidSchedulePolicy({ policy, reason })
        }
      }
      const key = ReminderSql.stateKeyOf(reference)
      const current = yield* state.get(key)
      const base = current?.policies ?? { ...DEFAULTS, retry: false }
      // Everything is checked before anything is written: a bad spec or policy changes nothing.
      const parsed = yield* parsePolicies(changes.policies, { ...base, retry: undefined })
      const schedule =
        changes.spec === undefined
          ? undefined
          : yield* scheduleOf(changes.spec, found.row, yield* Clock.currentTimeMillis)
      if (changes.policies !== undefined) {
        const policies = { ...parsed, retry: false }
        yield* state.define(key, policies, "reminder")
        yield* state.setPolicies(key, policies)
        yield* touch(reference)
      }
      if (schedule !== undefined) {
        const outcome = yield* deps.reschedule(found.kind, found.key, found.row, schedule).pipe(
          Effect.mapError((error): ScheduleError | ScheduleStorageError => {
            switch (error._tag) {
              case "InvalidTimerDelay":
              case "InvalidTimerInterval":
              case "InvalidCronExpression":
                return error
              case "ReminderNeverFires":
                return new InvalidCronExpression({ expression: error.expression, reason: "no instant after now" })
              default:
                // A storage failure, or the first occurrence could not be sent (the row is back as it was).
                return ScheduleState.storageError("update", reference)(error)
            }
          })
        )
        if (outcome === "gone") {
          // The unregistration removed the reminder's state: the policies just stored must not outlive it.
          if (changes.policies !== undefined) yield* state.remove(key)
          return yield* new ScheduledReferenceNotFound({ reference })
        }
        if (outcome === "replaced") {
          return yield* new ScheduleStorageError({
            operation: "update",
            reference,
            reason: "the reminder was registered again meanwhile: its new schedule is kept; read it and update again"
          })
        }
      }
      return yield* getInfo(reference)
    })

  const source: ScheduleSource = {
    name: "reminder",
    list: (filter) =>
      filter?.kind !== undefined && filter.kind !== "reminder"
        ? Effect.succeed([])
        : ScheduleState.stored("list")(
            undefined,
            Effect.gen(function* () {
              const rows = yield* table.all
              const states = new Map((yield* state.all).map((st) => [st.reference, st]))
              const all = yield* Effect.forEach(rows, ({ key, kind, row }) => {
                const reference = ReminderSql.referenceOf(kind, key, row.name)
                return info({ kind, key, reference, row }, states.get(ReminderSql.stateKeyOf(reference)))
              })
              return all.filter(matches(filter))
            })
          ),
    get: (reference) => ScheduleState.stored("get")(reference, getInfo(reference)),
    pause: (reference, note, options) =>
      ScheduleState.stored("pause")(
        reference,
        ScheduleState.changeState("paused", getInfo(reference), (now) => {
          const key = ReminderSql.stateKeyOf(reference)
          return Effect.zipRight(
            state.define(key, { ...DEFAULTS, retry: false }, "reminder"),
            Effect.zipLeft(state.pause(key, String(note), options?.by ?? "operator", now), touch(reference))
          )
        })
      ),
    resume: (reference) =>
      ScheduleState.stored("resume")(
        reference,
        ScheduleState.changeState("active", getInfo(reference), () =>
          Effect.zipLeft(state.resume(ReminderSql.stateKeyOf(reference)), touch(reference))
        )
      ),
    trigger: (reference) =>
      ScheduleState.stored("trigger")(
        reference,
        Effect.gen(function* () {
          const found = yield* find(reference)
          const now = yield* Clock.currentTimeMillis
          const id = String(yield* sharding.getSnowflake)
          yield* deps
            .send(
              found.kind,
              found.key,
              new ReminderDelivery({ name: found.row.name, generation: found.row.generation, due: now, manual: id })
            )
            .pipe(Effect.mapError(ScheduleState.storageError("trigger", reference)))
          scheduleEvents("triggered").unsafeUpdate(1, [])
        })
      ),
    update: (reference, changes) =>
      ScheduleState.stored("update")(
        reference,
        Effect.flatMap(find(reference), (found) => updateFound(found, changes))
      ),
    remove: (reference) =>
      ScheduleState.stored("remove")(
        reference,
        Effect.gen(function* () {
          const found = yield* find(reference)
          yield* table.remove(found.kind, found.key, found.row.name)
          yield* state.remove(ReminderSql.stateKeyOf(reference))
          yield* touch(reference)
        })
      ),
    history: (reference) =>
      ScheduleState.stored("history")(
        reference,
        Effect.zipRight(find(reference), state.history(ReminderSql.stateKeyOf(reference)))
      ),
    backfill: (reference) =>
      ScheduleState.stored("backfill")(
        reference,
        Effect.zipRight(
          find(reference),
          Effect.fail(
            new InvalidSchedulePolicy({
              policy: "backfill",
              reason: "a reminder has no backfill: trigger it once for each occurrence to make up"
            })
          )
        )
      )
  }
  updatesWithRace.set(source, (reference, between, changes) =>
    Effect.flatMap(find(reference), (found) => Effect.zipRight(between, updateFound(found, changes)))
  )
  return source
}
