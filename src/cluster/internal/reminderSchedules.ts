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
 * - `update` takes the misfire policies (`misfire`, `grace`, `history`), stored; a spec, `overlap`, `retry` or
 *   `pauseAfterFailures` is refused, as is `backfill` (`InvalidSchedulePolicy`): a reminder's message and schedule
 *   are changed by registering it again.
 *
 * @internal
 */
import type { Sharding } from "@effect/cluster/Sharding"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { DEFAULTS, parsePolicies } from "../../internal/schedules.js"
import { scheduleEvents } from "../../Metrics.js"
import type { Filter, ScheduleInfo, ScheduleSource } from "../../Schedules.js"
import { InvalidSchedulePolicy, ScheduledReferenceNotFound } from "../../TimerError.js"
import { type AnyKindWire, localKind, ReminderDelivery } from "./grainProtocol.js"
import * as ReminderSql from "./reminderSql.js"
import * as ScheduleState from "./scheduleState.js"

interface Found {
  readonly kind: string
  readonly key: string
  readonly reference: string
  readonly row: ReminderSql.ReminderRow
}

const refused = (operation: "update" | "backfill") =>
  Effect.fail(
    new InvalidSchedulePolicy({
      policy: operation,
      reason: "a reminder is changed by registering it again (Reminders.register), and has no backfill"
    })
  )

export const make = (deps: {
  readonly table: ReminderSql.ReminderSql
  readonly state: ScheduleState.ScheduleState
  readonly sharding: Context.Tag.Service<Sharding>
  readonly send: (kind: AnyKindWire, key: string, delivery: ReminderDelivery) => Effect.Effect<void, unknown>
}): ScheduleSource => {
  const { sharding, state, table } = deps

  const info = (found: Found, st: ScheduleState.StateRow | undefined) =>
    Effect.map(
      state.lastRun(ReminderSql.stateKeyOf(found.reference)),
      (lastRun): ScheduleInfo => ({
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
          retry: false,
          pauseAfterFailures: undefined
        }
      })
    )

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

  return {
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
            state.pause(key, String(note), options?.by ?? "operator", now)
          )
        })
      ),
    resume: (reference) =>
      ScheduleState.stored("resume")(
        reference,
        ScheduleState.changeState("active", getInfo(reference), () => state.resume(ReminderSql.stateKeyOf(reference)))
      ),
    trigger: (reference) =>
      ScheduleState.stored("trigger")(
        reference,
        Effect.gen(function* () {
          const found = yield* find(reference)
          const kind = localKind(sharding, found.kind)
          if (kind === undefined) {
            return yield* ScheduleState.storageError(
              "trigger",
              reference
            )(`grain kind "${found.kind}" is not hosted by ClusterGrain.layer on this runner`)
          }
          const now = yield* Clock.currentTimeMillis
          const id = String(yield* sharding.getSnowflake)
          yield* deps
            .send(
              kind,
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
        Effect.gen(function* () {
          yield* find(reference)
          if (changes.spec !== undefined) return yield* refused("update")
          const policyChanges = (changes.policies ?? {}) as Record<string, unknown>
          for (const policy of ["overlap", "retry", "pauseAfterFailures"]) {
            if (policyChanges !== null && typeof policyChanges === "object" && policyChanges[policy] !== undefined) {
              return yield* new InvalidSchedulePolicy({
                policy,
                reason: "a reminder takes misfire, grace and history (a grain handles one message at a time)"
              })
            }
          }
          const key = ReminderSql.stateKeyOf(reference)
          const current = yield* state.get(key)
          const base = current?.policies ?? { ...DEFAULTS, retry: false }
          const parsed = yield* parsePolicies(changes.policies, { ...base, retry: undefined })
          const policies = { ...parsed, retry: false }
          yield* state.define(key, policies, "reminder")
          yield* state.setPolicies(key, policies)
          return yield* getInfo(reference)
        })
      ),
    remove: (reference) =>
      ScheduleState.stored("remove")(
        reference,
        Effect.gen(function* () {
          const found = yield* find(reference)
          yield* table.remove(found.kind, found.key, found.row.name)
          yield* state.remove(ReminderSql.stateKeyOf(reference))
        })
      ),
    history: (reference) =>
      ScheduleState.stored("history")(
        reference,
        Effect.zipRight(find(reference), state.history(ReminderSql.stateKeyOf(reference)))
      ),
    backfill: (reference) =>
      ScheduleState.stored("backfill")(reference, Effect.zipRight(find(reference), refused("backfill")))
  }
}
