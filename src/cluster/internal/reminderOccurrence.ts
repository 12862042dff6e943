/**
 * One reminder occurrence on the grain's entity (`Reminders`' `deliver`, step 4 and 5 of docs/cluster.md,
 * "Delivering an occurrence"): the row and its state read again, the misfire and pause decisions, the grain's
 * handling under the reminder's retry policy, and one write of the row's advance (or removal) with the run, after
 * which the next occurrence is armed; with the occurrence arithmetic it needs (`nextOccurrence`, `decideMisfire`)
 * and the shape of the failure policies from code, which the service checks.
 *
 * @internal
 */
import type * as ShardId from "@effect/cluster/ShardId"
import { Sharding } from "@effect/cluster/Sharding"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { Permits } from "../../internal/permits.js"
import { DEFAULTS, notRun } from "../../internal/schedules.js"
import { scheduleEvents } from "../../Metrics.js"
import * as QuartzCron from "../../QuartzCron.js"
import type { Misfire, Run } from "../../Schedules.js"
import type { InvalidSchedulePolicy } from "../../TimerError.js"
import type { ReminderId, RemindersService } from "../Reminders.js"
import type * as DeliveryStorage from "./deliveryStorage.js"
import type { ReminderDelivery } from "./grainProtocol.js"
import { type AnyKindWire, issueOf } from "./grainProtocol.js"
import type * as Dispatch from "./reminderDispatch.js"
import * as ReminderSql from "./reminderSql.js"
import * as ScheduleState from "./scheduleState.js"

/**
 * Deliveries of one runner that write an outcome with more than its row and run at once (a failure's count, a pause:
 * one transaction each); each attempt takes its place in line anew. Without a limit, thousands of occurrences arriving
 * together (a restart with a backlog) each waited for one of the pool's connections, every wait longer than the
 * pool's acquire timeout, and none progressed. The other reads and writes go many to a statement
 * (`deliveryStorage.ts`), one statement of each at a time.
 */
const DELIVERY_WRITES = 4

/** The waits between attempts of a storage operation on the delivery path: short for a blip, capped for an outage. */
const STORAGE_RETRY = Schedule.exponential("200 millis").pipe(Schedule.union(Schedule.spaced("10 seconds")))

/** A storage failure that is tried again: counted (`storage_retry`) and logged. */
const storageFailed = (what: string, error: unknown): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.sync(() => scheduleEvents("storage_retry").unsafeUpdate(1, [])),
    Effect.logWarning(`${what}: storage failed; tried again`, error)
  )

/**
 * A storage operation on the delivery path, tried until it succeeds: giving up would lose the occurrence, since the
 * cluster marks a message processed once its handler returns. Each attempt waits for a place in `line`, if given;
 * each failure is logged and counted (`scheduleEvents("storage_retry")`). The operation itself runs uninterruptibly;
 * the waits (in line, between attempts) are interruptible: a runner that shuts down while its storage fails leaves
 * the message unprocessed, for the shard's next owner to deliver.
 */
const untilStored =
  (what: string, line?: Permits) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> => {
    const attempt = Effect.uninterruptible(Effect.tapError(effect, (error) => storageFailed(what, error)))
    return Effect.interruptible(Effect.retry(line === undefined ? attempt : line.with(attempt), STORAGE_RETRY)).pipe(
      Effect.orDie // never reached: the schedule has no end
    )
  }

/** The occurrence after the one due at `due`, delivered at `now`: the next grid point (or cron instant) after now. */
const nextOccurrence = (row: ReminderSql.ReminderRow, due: number, now: number): number | undefined => {
  if (row.periodMillis !== undefined) {
    const period = row.periodMillis
    // Whole milliseconds, as the row stores them (a row written before due times were rounded may hold a fraction).
    return Math.ceil(due + (Math.floor(Math.max(0, now - due) / period) + 1) * period)
  }
  if (row.cron !== undefined) {
    const parsed = QuartzCron.parse(row.cron, { timeZone: row.timeZone ?? "UTC" })
    if (Either.isLeft(parsed)) return undefined
    return Option.getOrUndefined(QuartzCron.next(parsed.right, Math.max(now, due)))
  }
  return undefined
}

/** Missed occurrences looked at, at most, after an outage (a longer run of them is counted as this many). */
const MAX_MISSED_SCAN = 10_000

/**
 * What an occurrence that arrives at `now` does under the reminder's misfire policy: within `graceMillis` of its due
 * time it is delivered and the reminder goes on from the next occurrence after now (today's behaviour). Later, it is
 * a misfire: `runOnce` delivers it once for all that passed; `skipMissed` delivers none and goes on from the next after
 * now; `runAll(max)` delivers each that passed, the latest `max` (the next is the grid's next, already due).
 * `next` undefined: the row's own `nextOccurrence`.
 */
const decideMisfire = (
  row: ReminderSql.ReminderRow,
  due: number,
  now: number,
  policies: { readonly misfire: Misfire; readonly graceMillis: number }
): {
  readonly deliver: boolean
  readonly missed: number
  readonly next: number | undefined
  readonly policy: string
} => {
  const onTime = { deliver: true, missed: 0, next: undefined, policy: "none" }
  if (now - due <= policies.graceMillis || policies.misfire._tag === "RunOnce") return onTime
  const late: Array<number> = [due]
  for (let at = nextOccurrence(row, due, due); at !== undefined && at <= now && late.length < MAX_MISSED_SCAN; ) {
    late.push(at)
    at = nextOccurrence(row, at, at)
  }
  if (policies.misfire._tag === "SkipMissed") {
    return { deliver: false, missed: late.length, next: undefined, policy: "skipMissed" }
  }
  const max = policies.misfire.max
  if (late.length <= max) {
    return { deliver: true, missed: 0, next: nextOccurrence(row, due, due), policy: `runAll(${max})` }
  }
  // The older ones are missed; the row jumps to the first of the latest `max`, which is delivered next.
  const skipped = late.length - max
  return { deliver: false, missed: skipped, next: late[skipped], policy: `runAll(${max})` }
}

/** A reminder's failure policies from code. */
export interface FailurePolicies {
  readonly retry: Schedule.Schedule<unknown, unknown> | undefined
  readonly pauseAfterFailures: number | undefined
}

export const NO_FAILURE_POLICIES: FailurePolicies = { retry: undefined, pauseAfterFailures: undefined }

/** Why an occurrence failed, for its history entry and a pause's note: the grain's own failure where there is one. */
const failureDetail = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const inner = (error as { readonly cause?: unknown } | undefined)?.cause
  const why = Cause.isCause(inner) ? Cause.squash(inner) : undefined
  const text = (value: unknown) => (value instanceof Error ? value.message : String(value))
  return why === undefined ? text(error) : `${text(error)}: ${text(why)}`
}

/** What one runner's deliveries need of its reminders service. */
export interface DeliverOptions {
  readonly sql: SqlClient.SqlClient
  readonly table: ReminderSql.ReminderSql
  readonly state: ScheduleState.ScheduleState
  /** The reads and writes of many occurrences to a statement. */
  readonly storage: DeliveryStorage.DeliveryStorage
  readonly sharding: Sharding["Type"]
  readonly dispatcher: Dispatch.Dispatcher
  /** The shard of grain `key` of `kind`. */
  readonly shardOf: (kind: AnyKindWire, key: string) => ShardId.ShardId
  /** A reminder's failure policies from code, checked. */
  readonly failurePolicies: (reminder: ReminderId) => Either.Either<FailurePolicies, InvalidSchedulePolicy>
}

/** What handling one occurrence leaves to write: its outcome, what else goes with it, and the next occurrence. */
interface Handled {
  readonly outcome: DeliveryStorage.Outcome
  /** The other writes (failures in a row, a pause), after the row's, in one transaction with it. */
  readonly writes: ReadonlyArray<Effect.Effect<unknown, SqlError>>
  /** Whether the writes paused the reminder (set when they ran). */
  readonly paused: () => boolean
  readonly next: number | undefined
  readonly shard: ShardId.ShardId
}

/** The `deliver` of one runner's reminders service. */
export const makeDeliver = (options: DeliverOptions): RemindersService["deliver"] => {
  const { dispatcher, failurePolicies, sharding, shardOf, sql, state, storage, table } = options
  const withSharding = Effect.provideService(Sharding, sharding)
  const writeLine = new Permits(DELIVERY_WRITES)

  /**
   * One occurrence, its row and state read: checked against them, handed to the grain (unless paused or missed),
   * and what it leaves to write; undefined when it is dropped (step 4).
   */
  const handleOne = <Msg>(
    kind: AnyKindWire,
    key: string,
    delivery: ReminderDelivery,
    read: DeliveryStorage.Read | undefined,
    handle: (message: Msg) => Effect.Effect<void, unknown>
  ): Effect.Effect<Handled | undefined> =>
    Effect.gen(function* () {
      const row = read?.row
      const manual = delivery.manual !== undefined
      // Unregistered, replaced, or an occurrence already handled (the row moved past it): drop it. A later
      // occurrence than the row's is accepted: the row's advance may have failed after it was persisted. An
      // operator's trigger is outside the grid: only its generation is checked.
      if (row === undefined || row.generation !== delivery.generation || (!manual && delivery.due < row.nextDue)) {
        return undefined
      }
      const stateKey = ReminderSql.stateKeyFor(kind.name, key, delivery.name)
      const stored = read?.state
      const keep = stored?.policies.history ?? DEFAULTS.history
      const runId = manual ? `m:${delivery.manual}` : `s:${delivery.generation}:${delivery.due}`
      const trigger = manual ? "manual" : "schedule"
      const arrived = yield* Clock.currentTimeMillis
      const misfire = manual
        ? undefined
        : decideMisfire(row, delivery.due, arrived, stored?.policies ?? { ...DEFAULTS, retry: false })
      // What storage records of this occurrence, written at the end with the row's own write: its run in the
      // history, and the other writes (failures in a row, a pause).
      let run: Run | undefined
      const writes: Array<Effect.Effect<unknown, SqlError>> = []
      let pausedNow = false
      const passed = (outcome: "skipped" | "missed", detail: string) => {
        run = notRun(delivery.due, trigger, outcome, detail)
      }
      if (stored?.pause !== undefined && !manual) {
        // Paused: the occurrence passes without reaching the grain; the grid goes on, so resume needs only the flag.
        passed("skipped", `paused: ${stored.pause.note}`)
      } else if (misfire !== undefined && misfire.missed > 0 && !misfire.deliver) {
        scheduleEvents("missed").unsafeUpdate(misfire.missed, [])
        passed("missed", `${misfire.missed} occurrence(s) missed (misfire: ${misfire.policy})`)
      } else {
        const start = arrived
        const decoded = Schema.decodeUnknownEither(kind.message)(JSON.parse(row.message))
        const code = failurePolicies({ kind: kind.name, key, name: row.name })
        if (Either.isLeft(code)) {
          yield* Effect.logError(
            `reminder "${row.name}" of grain ${kind.name}/${key}: Reminders.layer's policies gave a bad answer; ` +
              "it is delivered without them",
            code.left
          )
        }
        const policies = Either.getOrElse(code, () => NO_FAILURE_POLICIES)
        let attempts = 0
        let failure: string | undefined
        if (Either.isLeft(decoded)) {
          yield* Effect.logError(
            `reminder "${row.name}" of grain ${kind.name}/${key} holds a message the kind's schema cannot decode`,
            issueOf(decoded.left)
          )
          attempts = 1
          failure = "the kind's message schema cannot decode the message"
        } else {
          // Each attempt hands the message to the grain again (a failed handler deactivated it: a new activation).
          const once = Effect.suspend(() => {
            if (attempts++ > 0) scheduleEvents("retry").unsafeUpdate(1, [])
            return handle(decoded.right as Msg)
          })
          const exit = yield* Effect.exit(policies.retry === undefined ? once : Effect.retry(once, policies.retry))
          if (Exit.isFailure(exit)) {
            failure = failureDetail(exit.cause)
            yield* Effect.logWarning(
              `reminder "${row.name}" of grain ${kind.name}/${key} failed (${attempts} attempt(s))`,
              exit.cause
            )
          }
        }
        const end = yield* Clock.currentTimeMillis
        run = {
          instant: delivery.due,
          trigger,
          start,
          end,
          outcome: failure === undefined ? "sent" : "failed",
          lateness: Math.max(0, start - delivery.due),
          attempts,
          ...(failure === undefined ? {} : { detail: failure })
        }
        // Failures in a row, and the pause at the limit (an operator's stored limit before the code's).
        if (failure === undefined) {
          if ((stored?.failuresInRow ?? 0) > 0) writes.push(state.succeeded(stateKey))
        } else {
          const failed = failure
          writes.push(
            Effect.gen(function* () {
              if (stored === undefined) yield* state.define(stateKey, { ...DEFAULTS, retry: false }, "reminder")
              const failures = yield* state.failed(stateKey)
              const limit = stored?.policies.pauseAfterFailures ?? policies.pauseAfterFailures
              // Counted only when this paused it (an operator may have paused it while the grain handled it).
              pausedNow =
                limit !== undefined &&
                failures >= limit &&
                stored?.pause === undefined &&
                (yield* state.pause(
                  stateKey,
                  `paused after ${failures} failed occurrences in a row; the last: ${failed}`,
                  "tickwork",
                  end
                ))
            })
          )
        }
      }
      // A manual trigger does not move the row: its generation is checked.
      const next = manual
        ? undefined
        : (misfire?.next ?? nextOccurrence(row, delivery.due, yield* Clock.currentTimeMillis))
      const shard = shardOf(kind, key)
      return {
        outcome: {
          kind: kind.name,
          key,
          name: row.name,
          generation: row.generation,
          write: manual
            ? { _tag: "current" }
            : next === undefined
              ? { _tag: "remove" }
              : { _tag: "advance", nextDue: next, shardId: shard.toString() },
          run: run === undefined ? undefined : { reference: stateKey, id: runId, run, keep }
        },
        writes,
        paused: () => pausedNow,
        next,
        shard
      }
    })

  /**
   * An outcome with other writes (step 5): the row's write and the run first, conditional on the generation
   * delivered (when the reminder was unregistered or replaced while the grain handled it, nothing else is written:
   * no state, history or pause is re-created for it), then the others, in one transaction.
   */
  const writeWithOthers = (handled: Handled) =>
    Effect.suspend(() => {
      const { outcome, writes } = handled
      const run = outcome.run
      const recorded = run === undefined ? [] : state.recordStatements(run.reference, run.id, run.run, run.keep)
      const final = table.finalStatement(outcome.kind, outcome.key, outcome.name, outcome.generation, outcome.write)
      return sql.withTransaction(
        Effect.tap(ScheduleState.guardedWrite(sql, final, recorded, "deferred"), (still) =>
          still ? Effect.all(writes, { discard: true }) : Effect.void
        )
      )
    })

  /** The outcome written: the next occurrence armed at once when it is due soon (the grain's shard is this runner's). */
  const written = (handled: Handled, wrote: boolean) => {
    const { next, outcome, shard } = handled
    if (wrote && next !== undefined && sharding.hasShardId(shard)) {
      dispatcher.arm({
        kind: outcome.kind,
        key: outcome.key,
        name: outcome.name,
        generation: outcome.generation,
        due: next
      })
    }
    if (handled.paused()) scheduleEvents("paused_on_failure").unsafeUpdate(1, [])
  }

  return (kind, key, deliveries, handle, around) => {
    const what = `reminders of grain ${kind.name}/${key}`
    const wantedOf = (list: ReadonlyArray<ReminderDelivery>) =>
      list.map(({ name }) => ({ kind: kind.name, key, name, ref: ReminderSql.stateKeyFor(kind.name, key, name) }))
    const deliverAll = (inFlight: DeliveryStorage.InFlight) =>
      Effect.gen(function* () {
        // Every occurrence's row and state, in one read (step 4); read again from the next one on when this runner
        // wrote a reminder of the grain meanwhile (e.g. the grain itself, handling an earlier one).
        let reads = yield* untilStored(what)(storage.read(wantedOf(deliveries)))
        let readFrom = 0
        /** Outcomes whose write is under way, and how many have not answered. */
        const pending: Array<{ readonly handled: Handled; exit?: Exit.Exit<boolean, SqlError> }> = []
        let unanswered = 0
        let allAnswered: (() => void) | undefined
        for (let i = 0; i < deliveries.length; i++) {
          const delivery = deliveries[i]!
          if (inFlight.changed) {
            inFlight.changed = false
            reads = yield* untilStored(what)(storage.read(wantedOf(deliveries.slice(i))))
            readFrom = i
          }
          const one = handleOne(kind, key, delivery, reads[i - readFrom], handle).pipe(
            // Only a defect (a bug) gets here: the grain's own failure is the occurrence's outcome. The row stays as
            // it is, so the occurrence is found again by a scan; the others go on.
            Effect.catchAllDefect((defect) =>
              Effect.as(
                Effect.logError(
                  `reminder "${delivery.name}" of grain ${kind.name}/${key} could not be delivered`,
                  defect
                ),
                undefined
              )
            )
          )
          const handled = yield* around === undefined ? one : around(delivery, one)
          if (handled === undefined) continue
          if (handled.writes.length > 0) {
            written(handled, yield* untilStored(what, writeLine)(writeWithOthers(handled)))
            continue
          }
          // The row's write and the run go with other occurrences' (`deliveryStorage.ts`), while the grain handles
          // the next; its commit does not wait for the disk: a write lost in a crash of the database leaves the row
          // due, and the occurrence is delivered again (at least once).
          const entry: (typeof pending)[number] = { handled }
          pending.push(entry)
          unanswered++
          storage.unsafeWrite(handled.outcome, (exit) => {
            entry.exit = exit
            if (--unanswered === 0) allAnswered?.()
          })
        }
        if (unanswered > 0) {
          yield* Effect.async<void>((resume) => {
            allAnswered = () => resume(Effect.void)
            if (unanswered === 0) allAnswered()
          })
        }
        for (const { exit, handled } of pending) {
          if (exit !== undefined && Exit.isSuccess(exit)) {
            written(handled, exit.value)
            continue
          }
          // A write that failed (alone, after its batch failed) is tried until it passes.
          if (exit !== undefined) yield* storageFailed(what, exit.cause)
          written(handled, yield* untilStored(what)(storage.write(handled.outcome)))
        }
      })
    return Effect.suspend(() => {
      const inFlight = storage.enter(kind.name, key)
      return Effect.ensuring(
        deliverAll(inFlight),
        Effect.sync(() => storage.leave(kind.name, key, inFlight))
      )
    }).pipe(
      withSharding,
      // Only a defect (a bug) gets here: storage failures are tried again until they pass, and the grain's own
      // failure is the occurrence's outcome.
      Effect.catchAllDefect((defect) =>
        Effect.logError(`reminders of grain ${kind.name}/${key} could not be delivered`, defect)
      )
    )
  }
}
