/**
 * Durable reminders: named, stored messages a cluster grain is sent at a due time (once or every period)
 * or on a Quartz cron expression. Unlike grain timers, which are volatile and belong to one activation, a reminder
 * survives passivation, process restarts and fail-over, and **reactivates** the grain when it is due.
 *
 * - Definitions live in a table of their own (`<prefix>_tickwork_reminders` by default, beside the runner's other
 *   tables), created through `SqlClient`; the same SQL runs on SQLite and PostgreSQL.
 * - A pending reminder is its row alone, with its grain's shard: the runner holding the shard scans its due reminders
 *   every poll interval, arms them in memory and hands each grain its occurrences at their instant (one message that
 *   is not persisted; `internal/reminderDispatch.ts`). The row moves on once the grain handled them.
 * - Registering writes the reminder's row (one statement per 1,000 on PostgreSQL, one transaction on SQLite).
 *   Single registrations in flight together share that statement or transaction and its commit (group commit),
 *   each caller keeping its own answer and typed error.
 * - Each registration gets a fresh generation; an occurrence whose generation is no longer current (unregistered,
 *   replaced) is dropped when it arrives. Re-registering a name replaces it.
 * - Missed while the whole cluster was down: the pending occurrence fires once on recovery, then the reminder
 *   continues on its grid (period: registration + k × period; cron: the next instant after now). An operator can set
 *   another misfire policy through `Schedules.update` (`ClusterSchedules`), stored with the reminder's pause, and
 *   change its schedule in place there (the same message, a new generation, the next occurrence from now).
 * - An occurrence the grain fails to handle is recorded as failed; `layer({ policies })` retries it with an Effect
 *   `Schedule` and pauses the reminder after N failed occurrences in a row.
 * - Delivery is at least once: a runner that dies while the grain handles the message delivers it again.
 *
 * @since 0.1.0
 */

import * as EntityId from "@effect/cluster/EntityId"
import { Sharding } from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { GrainProps } from "../Grain.js"
import { delayMillis, intervalMillis } from "../internal/duration.js"
import { DEFAULTS, parsePolicies } from "../internal/schedules.js"
import * as QuartzCron from "../QuartzCron.js"
import type { Policies, ScheduleSource } from "../Schedules.js"
import {
  type InvalidCronExpression,
  InvalidSchedulePolicy,
  type InvalidTimerDelay,
  type InvalidTimerInterval
} from "../TimerError.js"
import type { ClusterGrain, SendError } from "./ClusterGrain.js"
import * as DeliveryStorage from "./internal/deliveryStorage.js"
import {
  type AnyKindWire,
  DEFAULT_SEND_TIMEOUT,
  type GrainSendTimeout,
  guardedSend,
  type InvalidGrainMessage,
  type KindWire,
  localKind,
  makeEntity,
  messageEncoder,
  ReminderDeliveries,
  ReminderDelivery,
  sendTimedOut,
  UnknownClusterGrainKind
} from "./internal/grainProtocol.js"
import * as RegistrationCommit from "./internal/registrationCommit.js"
import * as Dispatch from "./internal/reminderDispatch.js"
import { type FailurePolicies, makeDeliver, NO_FAILURE_POLICIES } from "./internal/reminderOccurrence.js"
import { make as makeSource } from "./internal/reminderSchedules.js"
import * as ReminderSql from "./internal/reminderSql.js"
import { runnerStorages, Tables } from "./internal/runner.js"
import * as ScheduleState from "./internal/scheduleState.js"

/**
 * When a reminder fires: after a delay or at a time, then every period if one is given, or on a Quartz cron
 * expression. Build one with `after`, `at` or `cron`; the input is checked when the reminder is registered.
 *
 * @since 0.1.0
 * @category models
 */
export type ReminderSchedule =
  | {
      readonly _tag: "After"
      readonly delay: Duration.DurationInput
      readonly period: Duration.DurationInput | undefined
    }
  | {
      readonly _tag: "At"
      readonly time: DateTime.DateTime | number
      readonly period: Duration.DurationInput | undefined
    }
  | { readonly _tag: "Cron"; readonly expression: string; readonly timeZone: string | undefined }

/**
 * Fires after `delay`, then every `period` if one is given (the grid counts from the first due time).
 *
 * @example
 * ```ts
 * import { Reminders } from "tickwork/cluster"
 *
 * const daily = Reminders.after("1 hour", { period: "1 day" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const after = (
  delay: Duration.DurationInput,
  options?: { readonly period?: Duration.DurationInput }
): ReminderSchedule => ({ _tag: "After", delay, period: options?.period })

/**
 * Fires at `time` (a `DateTime` or epoch millis; a time in the past fires at once), then every `period` if given.
 *
 * @example
 * ```ts
 * import { DateTime } from "effect"
 * import { Reminders } from "tickwork/cluster"
 *
 * const renewal = Reminders.at(DateTime.unsafeMake("2030-01-01T00:00:00Z"))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const at = (
  time: DateTime.DateTime | number,
  options?: { readonly period?: Duration.DurationInput }
): ReminderSchedule => ({ _tag: "At", time, period: options?.period })

/**
 * Fires at each instant of a Quartz cron expression, evaluated in `timeZone` (default UTC: runners may sit in
 * different zones, so the process's local zone is not used).
 *
 * @example
 * ```ts
 * import { Reminders } from "tickwork/cluster"
 *
 * const mondays = Reminders.cron("0 0 9 ? * MON", { timeZone: "Europe/Berlin" })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const cron = (expression: string, options?: { readonly timeZone?: string }): ReminderSchedule => ({
  _tag: "Cron",
  expression,
  timeZone: options?.timeZone
})

/**
 * A registered reminder.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReminderInfo {
  readonly name: string
  /** Epoch millis of the next occurrence. */
  readonly nextDue: number
  readonly periodMillis: number | undefined
  readonly cron: string | undefined
  readonly timeZone: string | undefined
}

/**
 * A reminder name must be a non-empty string, and the reminder's reference (`<kind>/<key>/<name>`, each segment with
 * `/` and `%` escaped) at most 246 characters: its state and history rows are keyed by it.
 *
 * @example
 * ```ts
 * import { Reminders } from "tickwork/cluster"
 *
 * console.log(new Reminders.InvalidReminderName({ name: "" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidReminderName extends Data.TaggedError("InvalidReminderName")<{
  readonly name: string
  /** Why, when it is not that the name is empty. */
  readonly reason?: string
}> {
  override get message(): string {
    return this.reason === undefined
      ? `a reminder needs a non-empty name, got ${JSON.stringify(this.name)}`
      : `reminder ${JSON.stringify(this.name)}: ${this.reason}`
  }
}

/** The longest reference a reminder's state and history rows hold (`reminder:<kind>/<key>/<name>`, escaped). */
const MAX_STATE_KEY = 255

/**
 * The cron expression of a reminder has no instant after now: it would never fire.
 *
 * @example
 * ```ts
 * import { Reminders } from "tickwork/cluster"
 *
 * console.log(new Reminders.ReminderNeverFires({ name: "y2k", expression: "0 0 0 1 1 ? 1999" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ReminderNeverFires extends Data.TaggedError("ReminderNeverFires")<{
  readonly name: string
  readonly expression: string
}> {
  override get message(): string {
    return `reminder "${this.name}" would never fire: cron expression "${this.expression}" has no future instant`
  }
}

/**
 * The reminders table could not be read or written.
 *
 * @example
 * ```ts
 * import { Reminders } from "tickwork/cluster"
 *
 * console.log(new Reminders.ReminderStorageError({ operation: "register", cause: "disk full" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ReminderStorageError extends Data.TaggedError("ReminderStorageError")<{
  readonly operation: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `reminder storage failed during ${this.operation}: ${String(this.cause)}`
  }
}

/**
 * Why registering a reminder failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type RegisterError =
  | InvalidReminderName
  | InvalidTimerDelay
  | InvalidTimerInterval
  | InvalidCronExpression
  | ReminderNeverFires
  | ReminderStorageError
  | SendError
  | GrainSendTimeout

/**
 * One reminder of a batch for `registerManyFor`: the grain's key, the reminder's name, its message and schedule.
 *
 * @since 0.1.0
 * @category models
 */
export interface Registration<Msg> {
  readonly key: string
  readonly name: string
  readonly message: Msg
  readonly schedule: ReminderSchedule
}

/**
 * The reminders service of a runner.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemindersService {
  /** Registers (or replaces) reminder `name` of grain (kind, key). */
  readonly register: <Msg, A, E>(
    kind: KindWire<Msg, A, E>,
    key: string,
    name: string,
    message: Msg,
    schedule: ReminderSchedule
  ) => Effect.Effect<ReminderInfo, RegisterError>
  /**
   * Registers (or replaces) many reminders of grain kind `kind`, all or none: every registration is checked (the
   * first bad one fails the batch, and nothing of it is committed), the rows go in one statement or transaction
   * (see `registerManyFor`).
   */
  readonly registerMany: (
    kind: AnyKindWire,
    registrations: Iterable<Registration<unknown>>
  ) => Effect.Effect<ReadonlyArray<ReminderInfo>, RegisterError>
  /** Removes reminder `name`; true when it existed. An occurrence already armed is dropped when it comes due. */
  readonly unregister: (kind: AnyKindWire, key: string, name: string) => Effect.Effect<boolean, ReminderStorageError>
  /** The grain's reminders, by name. */
  readonly list: (kind: AnyKindWire, key: string) => Effect.Effect<ReadonlyArray<ReminderInfo>, ReminderStorageError>
  /** The cluster grain kind `name` if `ClusterGrain.layer` hosts it on this runner. */
  readonly hostedKind: (name: string) => AnyKindWire | undefined
  /**
   * Entity side: checks arriving occurrences of the grain's reminders against the table, hands each one's message to
   * `handle` in turn (a failure of it is a failed occurrence: retried, counted and recorded under the reminder's
   * failure policies; `around` wraps each one, e.g. in a span), then schedules the next occurrence (or removes a
   * one-shot). Its own storage operations are tried until they pass (`untilStored`,
   * internal/reminderOccurrence.ts).
   */
  readonly deliver: <Msg, A, E>(
    kind: KindWire<Msg, A, E>,
    key: string,
    deliveries: ReadonlyArray<ReminderDelivery>,
    handle: (message: Msg) => Effect.Effect<void, unknown>,
    around?: <B>(delivery: ReminderDelivery, effect: Effect.Effect<B>) => Effect.Effect<B>
  ) => Effect.Effect<void>
  /**
   * The reminders as a `Schedules` source (kind `"reminder"`, owner `<kind>/<key>`, reference `<kind>/<key>/<name>`);
   * `ClusterSchedules.layer` adds it to the runner's `Schedules` when this service is provided below it.
   */
  readonly schedules: ScheduleSource
}

/**
 * The Reminders service tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Reminders } from "tickwork/cluster"
 *
 * const hostsCounter = Effect.map(Reminders.Reminders, (reminders) => reminders.hostedKind("counter") !== undefined)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class Reminders extends Context.Tag("tickwork/cluster/Reminders")<Reminders, RemindersService>() {}

/**
 * Options of the reminders layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The table's name (default `<prefix>_tickwork_reminders`, with the runner's table prefix: `cluster` unless
   * `ClusterRunner.layer({ tablePrefix })` says otherwise); created if it does not exist.
   */
  readonly table?: string
  /**
   * The failure policies of each reminder, in code (give the same on every runner, as a cluster cron's registration
   * is): `retry`, any Effect `Schedule`, re-hands a failed occurrence to the grain; `pauseAfterFailures` pauses the
   * reminder after that many failed occurrences in a row (an operator's `Schedules.update` of it takes precedence).
   * An occurrence fails when the grain's `onReceive` fails or dies on it, or the grain cannot be activated.
   */
  readonly policies?: (reminder: ReminderId) => ReminderPolicies | undefined
}

/**
 * A reminder, as `Options.policies` is asked about it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReminderId {
  /** The grain kind. */
  readonly kind: string
  /** The grain's key. */
  readonly key: string
  /** The reminder's name. */
  readonly name: string
}

/**
 * The failure policies a reminder takes from code (`Options.policies`): `Schedules.Policies`' `retry` and
 * `pauseAfterFailures`.
 *
 * @since 0.1.0
 * @category models
 */
export type ReminderPolicies = Pick<Policies, "retry" | "pauseAfterFailures">

const storage =
  (operation: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError, R>): Effect.Effect<A, ReminderStorageError, R> =>
    Effect.mapError(effect, (cause) => new ReminderStorageError({ operation, cause }))

/** A reminder of grain (kind, key) on a shard this runner holds, where no `ClusterGrain.layer` hosts the kind. */
const unhostedHere = (kind: string, key: string) =>
  Effect.fail(
    new UnknownClusterGrainKind({
      kind,
      key,
      detail: "this runner owns the grain's shard and no ClusterGrain.layer on it registers the kind"
    })
  )

/** The least of the dispatcher's window (how far ahead of its due time a scan arms a reminder); else two polls. */
const MIN_WINDOW_MILLIS = 2_000

/** How long after the service starts a kind not hosted goes unreported (the grain kinds register after it). */
const UNHOSTED_QUIET_MILLIS = 10_000

/** The storage poll interval of a runner's sharding config, when there is one; else a second (tickwork's default). */
const pollMillisOf = (config: Option.Option<ShardingConfig.ShardingConfig["Type"]>): number => {
  const decoded = Option.flatMap(config, (c) => Duration.decodeUnknown(c.entityMessagePollInterval))
  return Option.isSome(decoded) && Duration.isFinite(decoded.value) ? Duration.toMillis(decoded.value) : 1_000
}

/**
 * The first occurrence of a schedule after `now`, checked; also what the row stores. Storage holds whole milliseconds
 * (BIGINT): a fractional delay, time or period (`after(1.5)`, `"100 micros"`, accepted as local timers accept them) is
 * rounded up to the next whole millisecond, never earlier than asked.
 */
const firstOccurrence = (
  name: string,
  schedule: ReminderSchedule,
  now: number
): Either.Either<
  { readonly due: number; readonly periodMillis: number | undefined },
  InvalidTimerDelay | InvalidTimerInterval | InvalidCronExpression | ReminderNeverFires
> => {
  const withPeriod = (
    due: number,
    period: Duration.DurationInput | undefined
  ): Either.Either<{ readonly due: number; readonly periodMillis: number | undefined }, InvalidTimerInterval> =>
    period === undefined
      ? Either.right({ due: Math.ceil(due), periodMillis: undefined })
      : Either.map(intervalMillis(period), (periodMillis) => ({
          due: Math.ceil(due),
          periodMillis: Math.ceil(periodMillis)
        }))
  switch (schedule._tag) {
    case "After":
      return Either.flatMap(delayMillis(schedule.delay), (delay) => withPeriod(now + delay, schedule.period))
    case "At": {
      const millis = typeof schedule.time === "number" ? schedule.time : DateTime.toEpochMillis(schedule.time)
      return Either.flatMap(delayMillis(Math.max(0, millis - now)), () =>
        withPeriod(Math.max(millis, now), schedule.period)
      )
    }
    case "Cron":
      return Either.flatMap(QuartzCron.parse(schedule.expression, { timeZone: schedule.timeZone ?? "UTC" }), (parsed) =>
        Option.match(QuartzCron.next(parsed, now), {
          onNone: () => Either.left(new ReminderNeverFires({ name, expression: schedule.expression })),
          onSome: (due) => Either.right({ due, periodMillis: undefined })
        })
      )
  }
}

/** A checked registration: the grain's key and the row to write. */
type Prepared = ReminderSql.Prepared

const toInfo = (row: ReminderSql.ReminderRow): ReminderInfo => ({
  name: row.name,
  nextDue: row.nextDue,
  periodMillis: row.periodMillis,
  cron: row.cron,
  timeZone: row.timeZone
})

/** Why a registration is refused before anything is written. */
type InputError =
  | InvalidReminderName
  | InvalidTimerDelay
  | InvalidTimerInterval
  | InvalidCronExpression
  | ReminderNeverFires
  | InvalidGrainMessage

const isPrepared = (checked: Prepared | InputError): checked is Prepared => "row" in checked

/** A row to write, with the shard of its grain and whether this runner holds that shard. */
type Written = ReminderSql.Registered & { readonly local: boolean }

/**
 * Registrations per statement of a `registerManyFor` batch of more on PostgreSQL (one statement's worth,
 * `ReminderSql.PG_CHUNK`): the runner checks the next ones while the server runs a statement. Smaller chunks within a
 * call of 1,000 (a transaction then, and more statements) cost the runner more than the overlap gives on two cores.
 */
const PIPELINE_CHUNK = ReminderSql.PG_CHUNK

/** Waits for the event loop's next turn: what fibers started meanwhile (a statement's send) has run. */
const nextMacrotask: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Sends one occurrence as a persisted self-message of the grain. */
const sendOccurrence = <Msg, A, E>(
  kind: KindWire<Msg, A, E>,
  key: string,
  delivery: ReminderDelivery
): Effect.Effect<void, SendError | GrainSendTimeout, Sharding> =>
  guardedSend(kind, key, DEFAULT_SEND_TIMEOUT, sendTimedOut(kind, key, DEFAULT_SEND_TIMEOUT), (client) =>
    client.Remind(delivery, { discard: true })
  )

/**
 * The reminders service on a runner: creates the table if needed. Provide it to every runner that hosts cluster
 * grains with reminders (below `ClusterGrain.layer`, so delivered reminders reach their grains), with the same
 * `policies` on each. A `policies` that is not a function fails it with `InvalidSchedulePolicy`.
 *
 * @example
 * ```ts
 * import { SqliteClient } from "@effect/sql-sqlite-node"
 * import { Layer, Schedule } from "effect"
 * import { Reminders } from "tickwork/cluster"
 *
 * const RemindersLive = Reminders.layer().pipe(Layer.provide(SqliteClient.layer({ filename: "app.db" })))
 *
 * // A failed dunning is handed to the grain again up to 3 times, a second apart; 5 failed in a row pause it.
 * const WithPolicies = Reminders.layer({
 *   policies: (reminder) =>
 *     reminder.name === "dunning"
 *       ? { retry: Schedule.spaced("1 second").pipe(Schedule.intersect(Schedule.recurs(3))), pauseAfterFailures: 5 }
 *       : undefined
 * }).pipe(Layer.provide(SqliteClient.layer({ filename: "app.db" })))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<Reminders, ReminderStorageError | InvalidSchedulePolicy, SqlClient.SqlClient | Sharding> =>
  Layer.scoped(
    Reminders,
    Effect.gen(function* () {
      if (options.policies !== undefined && typeof options.policies !== "function") {
        return yield* new InvalidSchedulePolicy({
          policy: "policies",
          reason: "Reminders.layer's policies must be a function of the reminder ({ kind, key, name })"
        })
      }
      const sql = yield* SqlClient.SqlClient
      const sharding = yield* Sharding
      const { prefix } = yield* Tables
      const table = yield* storage("table creation")(
        ReminderSql.make(sql, options.table ?? `${prefix}_tickwork_reminders`)
      )
      yield* storage("table creation")(ScheduleState.ensureStateTables)
      const state = yield* ScheduleState.make
      const withSharding = Effect.provideService(Sharding, sharding)

      /** A reminder's failure policies from `options.policies`, checked. */
      const failurePolicies = (reminder: ReminderId): Either.Either<FailurePolicies, InvalidSchedulePolicy> => {
        if (options.policies === undefined) return Either.right(NO_FAILURE_POLICIES)
        let given: unknown
        try {
          given = options.policies(reminder)
        } catch (defect) {
          return Either.left(new InvalidSchedulePolicy({ policy: "policies", reason: `it threw ${String(defect)}` }))
        }
        if (given === undefined) return Either.right(NO_FAILURE_POLICIES)
        if (given !== null && typeof given === "object") {
          const unknown = Object.keys(given).find((key) => key !== "retry" && key !== "pauseAfterFailures")
          if (unknown !== undefined) {
            return Either.left(
              new InvalidSchedulePolicy({
                policy: unknown,
                reason: "Reminders.layer's policies give a reminder retry and pauseAfterFailures only"
              })
            )
          }
        }
        return Either.map(parsePolicies(given, DEFAULTS), ({ pauseAfterFailures, retry }) => ({
          retry,
          pauseAfterFailures
        }))
      }

      /** Entities of kinds this runner does not host, by name: enough to send a `Remind`, whose payload is the same. */
      const unhosted = new Map<string, AnyKindWire>()
      /**
       * The wire of kind `name` for a message stored encoded: its schema passes the JSON through as it is, so a
       * reminder's message is kept byte for byte, and a runner that does not host the kind can send its occurrences.
       */
      const storedWire = (name: string): AnyKindWire => {
        const hosted = localKind(sharding, name)
        if (hosted !== undefined) return { ...hosted, message: Schema.Unknown }
        let wire = unhosted.get(name)
        if (wire === undefined) {
          wire = {
            name,
            grain: undefined as never,
            message: Schema.Unknown,
            reply: undefined,
            error: Schema.Unknown,
            entity: makeEntity(name, Schema.Unknown, undefined, Schema.Unknown, false)
          }
          unhosted.set(name, wire)
        }
        return wire
      }

      /**
       * The check of registrations of `kind` at `now`, synchronous: a function of one registration and the generation
       * it gets, giving its row or the registration's typed error; nothing is written. The message schema's encoder is
       * made once for all of them.
       */
      const checker = (kind: AnyKindWire, now: number) => {
        const encode = messageEncoder(kind)
        // The reference's length with an empty key and name: escaping at most triples a key's or name's length, so
        // most references are short enough without being built.
        const kindOnly = ReminderSql.stateKeyFor(kind.name, "", "").length
        return (registration: Registration<unknown>, generation: string): Prepared | InputError => {
          const { key, message, name, schedule } = registration
          if (typeof name !== "string" || name.length === 0) return new InvalidReminderName({ name })
          if (!(kindOnly + 3 * (key.length + name.length) <= MAX_STATE_KEY)) {
            const stateKey = ReminderSql.stateKeyFor(kind.name, key, name)
            if (stateKey.length > MAX_STATE_KEY) {
              return new InvalidReminderName({
                name,
                reason:
                  `its reference (grain kind, key and name) is ${stateKey.length - "reminder:".length} characters ` +
                  `with escapes; at most ${MAX_STATE_KEY - "reminder:".length}`
              })
            }
          }
          // `delayMillis` takes a plain number of millis without a decode: the common one-shots cost no more here.
          const first = firstOccurrence(name, schedule, now)
          if (Either.isLeft(first)) return first.left
          const encoded = encode(key, message)
          if (Either.isLeft(encoded)) return encoded.left
          const cron = schedule._tag === "Cron"
          return {
            key,
            row: {
              name,
              generation,
              message: JSON.stringify(encoded.right),
              nextDue: first.right.due,
              periodMillis: first.right.periodMillis,
              cron: cron ? schedule.expression : undefined,
              timeZone: cron ? (schedule.timeZone ?? "UTC") : undefined
            }
          }
        }
      }

      /** `count` fresh generations (the runner's snowflakes). */
      const generations = (count: number): Effect.Effect<Array<string>> =>
        Effect.map(Effect.replicateEffect(sharding.getSnowflake, count), (ids) => ids.map(String))

      /** Checks one registration and makes its row; nothing is written. */
      const prepare = (kind: AnyKindWire, now: number, registration: Registration<unknown>) =>
        Effect.flatMap(sharding.getSnowflake, (generation) => {
          const prepared = checker(kind, now)(registration, String(generation))
          return isPrepared(prepared) ? Effect.succeed(prepared) : Effect.fail(prepared)
        })

      /** The shard of grain `key` of `kind`: the runner holding it delivers the grain's reminders. */
      const shardOf = (kind: AnyKindWire, key: string) => {
        const entityId = EntityId.make(key)
        return sharding.getShardId(entityId, kind.entity.getShardGroup(entityId))
      }

      /** When the dispatcher last warned of a kind it could not hand occurrences to, by kind. */
      const warned = new Map<string, number>()
      const started = yield* Clock.currentTimeMillis
      const unhostedWarning = (kind: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const last = warned.get(kind)
          // Kinds register after the reminders service starts: quiet for a while, then once a minute.
          if (now - started < UNHOSTED_QUIET_MILLIS || (last !== undefined && now - last < 60_000)) {
            return Effect.fail("not hosted")
          }
          warned.set(kind, now)
          return Effect.zipRight(
            Effect.logWarning(
              `reminders of grain kind ${kind} are due on this runner's shards, and no ClusterGrain.layer on it ` +
                "registers the kind: they wait"
            ),
            Effect.fail("not hosted")
          )
        })

      /** The reads and writes of deliveries, many occurrences to a statement. */
      const deliveryStorage = yield* DeliveryStorage.make(sql, table, state)
      const config = yield* Effect.serviceOption(ShardingConfig.ShardingConfig)
      const runner = runnerStorages.get(sharding)
      const pollMillis = runner?.pollMillis ?? pollMillisOf(config)
      /**
       * The runner's dispatcher (`internal/reminderDispatch.ts`): it scans the rows of the shards this runner holds
       * and hands each occurrence, when due, to its grain in a `RemindNow` message.
       */
      const dispatcher = yield* Dispatch.make({
        heldShards: Dispatch.heldShardsOf(
          runner?.shardGroups ??
            Option.match(config, { onNone: () => ["default"], onSome: (c) => c.assignedShardGroups }),
          runner?.shardsPerGroup ?? Option.match(config, { onNone: () => 300, onSome: (c) => c.shardsPerGroup }),
          (shard) => sharding.hasShardId(shard)
        ),
        holds: (kind, key) => sharding.hasShardId(shardOf(storedWire(kind), key)),
        scan: table.due,
        siblings: table.dueOfGrains,
        send: (kind, key, rows) => {
          const hosted = localKind(sharding, kind)
          if (hosted === undefined) return unhostedWarning(kind)
          const deliveries = new ReminderDeliveries({
            deliveries: rows.map(
              (row) => new ReminderDelivery({ name: row.name, generation: row.generation, due: row.due }, true)
            )
          })
          return Effect.flatMap(hosted.entity.client, (client) => client(key).RemindNow(deliveries)).pipe(withSharding)
        },
        pollMillis,
        // The runner's arming window; with local arming off, none: a reminder is delivered by the first scan after
        // its due time, as a persisted message is by the first poll.
        windowMillis:
          runner === undefined ? Math.max(2 * pollMillis, MIN_WINDOW_MILLIS) : (runner.armingWindowMillis ?? 0)
      })
      /** Arms the reminders `written` on this runner's shards with the dispatcher. */
      const armWritten = (
        kind: string,
        written: ReadonlyArray<ReminderSql.Registered & { readonly local: boolean }>
      ) => {
        let remote = false
        for (const { key, local, row } of written) {
          deliveryStorage.touched(kind, key)
          if (local) dispatcher.arm({ kind, key, name: row.name, generation: row.generation, due: row.nextDue })
          else remote = true
        }
        return remote
      }

      /**
       * Writes checked registrations of one kind: each reminder's row, all or none (one statement per
       * `ReminderSql.PG_CHUNK` registrations on PostgreSQL, in one transaction when there are more; one transaction of
       * `UPSERT_CHUNK`-row statements on SQLite). A reminder of the same (key, name) is replaced: its row takes the
       * new generation, so its pending occurrence is dropped when it arrives. `prepared` holds each (key, name) once.
       * The check a send made is kept: a grain on a shard this runner holds needs its kind hosted here.
       */
      const write = (
        kind: AnyKindWire,
        prepared: ReadonlyArray<Prepared>
      ): Effect.Effect<void, ReminderStorageError | UnknownClusterGrainKind> =>
        Effect.suspend((): Effect.Effect<void, ReminderStorageError | UnknownClusterGrainKind> => {
          const hosted = localKind(sharding, kind.name) !== undefined
          const written: Array<ReminderSql.Registered & { readonly local: boolean }> = new Array(prepared.length)
          for (let i = 0; i < prepared.length; i++) {
            const { key, row } = prepared[i]!
            const shard = shardOf(kind, key)
            const local = sharding.hasShardId(shard)
            if (local && !hosted) return unhostedHere(kind.name, key)
            written[i] = { key, row, shardId: shard.toString(), local }
          }
          const statement = table.write(kind.name, written)
          return storage("register")(
            table.statementsFor(written.length) > 1 ? sql.withTransaction(statement) : statement
          ).pipe(Effect.tap(() => Effect.sync(() => armWritten(kind.name, written))))
        })

      /**
       * Single registrations from many fibers share statements and commits (`internal/registrationCommit.ts`: a group
       * commit over `write`).
       */
      const registrations = yield* RegistrationCommit.make({
        write,
        transaction: (effect) =>
          Effect.catchTag(sql.withTransaction(effect), "SqlError", (cause) =>
            Effect.fail(new ReminderStorageError({ operation: "register", cause }))
          ),
        closed: (when) =>
          new ReminderStorageError({
            operation: "register",
            cause:
              when === "queued"
                ? "the reminders service closed before the registration was written"
                : "the reminders service closed while the registration was written: it may or may not be stored"
          })
      })

      /**
       * Gives a registered reminder a new schedule in place, as registering it again would: the same name and stored
       * message, a new generation (an occurrence armed for the old schedule is dropped as stale when it arrives),
       * the first occurrence of `schedule` from now. The row is written only while its generation is still the one of
       * `row` (read by the caller): `"gone"` when the reminder was unregistered meanwhile, `"replaced"` when it was
       * registered again, and nothing is written then.
       */
      const reschedule = (kind: string, key: string, row: ReminderSql.ReminderRow, schedule: ReminderSchedule) =>
        Effect.gen(function* () {
          const wire = storedWire(kind)
          const now = yield* Clock.currentTimeMillis
          const prepared = yield* prepare(wire, now, {
            key,
            name: row.name,
            message: JSON.parse(row.message),
            schedule
          })
          const shard = shardOf(wire, key)
          const entry = { key, row: prepared.row, shardId: shard.toString(), local: sharding.hasShardId(shard) }
          if (entry.local && localKind(sharding, kind) === undefined) return yield* unhostedHere(kind, key)
          const written = yield* storage("update")(table.replace(kind, entry, row.generation))
          if (written) {
            armWritten(kind, [entry])
            return "written" as const
          }
          const current = yield* storage("update")(table.get(kind, key, row.name))
          return current === undefined ? ("gone" as const) : ("replaced" as const)
        })

      const register: RemindersService["register"] = (kind, key, name, message, schedule) =>
        Effect.gen(function* () {
          const prepared = yield* prepare(kind, yield* Clock.currentTimeMillis, { key, name, message, schedule })
          yield* registrations.register(kind, prepared)
          return toInfo(prepared.row)
        })

      /**
       * Registers `registrations` of `kind`, all or none: each is checked (`checker`) and the first bad one fails the
       * batch before any row of it is committed; the same (key, name) twice: the later one wins; the infos in the order
       * given. A grain on a shard this runner holds needs its kind hosted here (`UnknownClusterGrainKind`, after the
       * checks of every registration). On PostgreSQL, more than `PIPELINE_CHUNK` registrations are written in one
       * transaction, a statement per `PIPELINE_CHUNK`, each chunk checked while the statement of the one before runs
       * (the runner's work and the server's overlap); a failure rolls them all back. On SQLite, and on PostgreSQL for
       * fewer, every registration is checked and then written (one statement, or a transaction of several).
       */
      const registerMany: RemindersService["registerMany"] = (kind, registrations) =>
        Effect.suspend(() => {
          const input = Array.from(registrations)
          const n = input.length
          if (n === 0) return Effect.succeed([])
          return Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const check = checker(kind, now)
            const hosted = localKind(sharding, kind.name) !== undefined
            const infos: Array<ReminderInfo> = new Array(n)
            /** The rows to write, each reminder once; a hole where a later statement replaced one. */
            const written: Array<Written | undefined> = []
            /** Each reminder's place in `written`, by (key, name). */
            const places = new Map<string, number>()
            /** Whether this runner holds a shard, by shard, as the batch found it. */
            const held = new Map<string, boolean>()
            /** The first grain on a shard this runner holds, when the kind is not hosted here. */
            let unhostedKey: string | undefined
            /**
             * Checks registrations `from` to `to` (excluded), with `ids` as their generations (none: only checked),
             * and adds their rows to `written`. A reminder already at `start` or after (the statement being made) is
             * replaced in its place; one before it (in a statement already made) leaves a hole, and the later
             * statement replaces its row. The first bad registration's error, if any.
             */
            const checkRange = (
              from: number,
              to: number,
              ids: ReadonlyArray<string> | undefined,
              start: number
            ): InputError | undefined => {
              for (let i = from; i < to; i++) {
                const prepared = check(input[i]!, ids === undefined ? "" : ids[i - from]!)
                if (!isPrepared(prepared)) return prepared
                const { key, row } = prepared
                infos[i] = toInfo(row)
                const shardId = shardOf(kind, key).toString()
                let local = held.get(shardId)
                if (local === undefined) {
                  local = sharding.hasShardId(shardOf(kind, key))
                  held.set(shardId, local)
                }
                if (local && !hosted && unhostedKey === undefined) unhostedKey = key
                const entry: Written = { key, row, shardId, local }
                const id = `${key.length}:${key}${row.name}`
                const place = places.get(id)
                if (place !== undefined && place >= start) {
                  written[place] = entry
                } else {
                  if (place !== undefined) written[place] = undefined
                  places.set(id, written.length)
                  written.push(entry)
                }
              }
              return undefined
            }
            /**
             * The batch's failure once registrations `from` on are not to be written: the first bad one among them,
             * else the unhosted kind, else `otherwise` (the storage's failure).
             */
            const failure = <A, E>(
              from: number,
              otherwise: Effect.Effect<A, E>
            ): Effect.Effect<A, E | InputError | UnknownClusterGrainKind> => {
              const bad = from < n ? checkRange(from, n, undefined, written.length) : undefined
              if (bad !== undefined) return Effect.fail(bad)
              return unhostedKey !== undefined ? unhostedHere(kind.name, unhostedKey) : otherwise
            }
            const done = () => {
              armWritten(
                kind.name,
                written.filter((entry): entry is Written => entry !== undefined)
              )
              return infos
            }

            if (!table.pg || n <= PIPELINE_CHUNK) {
              return Effect.flatMap(generations(n), (ids): Effect.Effect<Array<ReminderInfo>, RegisterError> => {
                const bad = checkRange(0, n, ids, 0)
                if (bad !== undefined) return Effect.fail(bad)
                if (unhostedKey !== undefined) return unhostedHere(kind.name, unhostedKey)
                const rows = written as Array<Written>
                const statement = table.write(kind.name, rows)
                return storage("register")(
                  table.statementsFor(rows.length) > 1 ? sql.withTransaction(statement) : statement
                ).pipe(Effect.map(done))
              })
            }
            return Effect.gen(function* () {
              let to = PIPELINE_CHUNK
              // The first chunk is checked before the transaction begins.
              const bad = checkRange(0, to, yield* generations(to), 0)
              if (bad !== undefined) return yield* Effect.fail(bad)
              if (unhostedKey !== undefined) return yield* failure(to, unhostedHere(kind.name, unhostedKey))
              yield* Effect.catchTag(
                sql.withTransaction(
                  Effect.gen(function* () {
                    let start = 0
                    for (;;) {
                      const statement = yield* Effect.fork(
                        table.write(kind.name, written.slice(start) as Array<Written>)
                      )
                      // The statement goes out before the next chunk is checked.
                      yield* nextMacrotask
                      if (to >= n) return yield* Fiber.join(statement)
                      const from = to
                      to = Math.min(n, to + PIPELINE_CHUNK)
                      start = written.length
                      const ids = yield* generations(to - from)
                      const bad = checkRange(from, to, ids, start)
                      const stored = yield* Fiber.await(statement)
                      if (bad !== undefined) return yield* Effect.fail(bad)
                      if (Exit.isFailure(stored) || unhostedKey !== undefined) return yield* failure(to, stored)
                    }
                  })
                ),
                "SqlError",
                (cause) => Effect.fail(new ReminderStorageError({ operation: "register", cause }))
              )
              return done()
            })
          })
        })

      const deliver = makeDeliver({
        sql,
        table,
        state,
        storage: deliveryStorage,
        sharding,
        dispatcher,
        shardOf,
        failurePolicies
      })

      return {
        register,
        registerMany,
        unregister: (kind, key, name) =>
          storage("unregister")(
            Effect.tap(table.remove(kind.name, key, name), () =>
              Effect.zipRight(
                state.remove(ReminderSql.stateKeyFor(kind.name, key, name)),
                Effect.sync(() => deliveryStorage.touched(kind.name, key))
              )
            )
          ),
        list: (kind, key) => storage("list")(Effect.map(table.list(kind.name, key), (rows) => rows.map(toInfo))),
        hostedKind: (name) => localKind(sharding, name),
        deliver,
        schedules: makeSource({
          table,
          state,
          sharding,
          send: (kind, key, delivery) => withSharding(sendOccurrence(storedWire(kind), key, delivery)),
          reschedule: (kind, key, row, schedule) => withSharding(reschedule(kind, key, row, schedule)),
          touched: deliveryStorage.touched,
          failurePolicies: (reminder) => Either.getOrElse(failurePolicies(reminder), () => NO_FAILURE_POLICIES)
        })
      }
    })
  )

/** The cluster grain hosting the grain behind `props`. */
const hostedKind = (
  service: RemindersService,
  props: GrainProps<never>
): Effect.Effect<AnyKindWire, UnknownClusterGrainKind> => {
  const kind = service.hostedKind(props.identity.kind)
  return kind === undefined
    ? Effect.fail(
        new UnknownClusterGrainKind({
          kind: props.identity.kind,
          key: props.identity.key,
          detail: "reminders are for cluster grains hosted by ClusterGrain.layer on this runner"
        })
      )
    : Effect.succeed(kind)
}

/**
 * From inside a cluster grain (`ctx` or `props`): registers reminder `name`, replacing one of the same name. The
 * message goes through the kind's message schema.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain } from "tickwork"
 * import { Reminders } from "tickwork/cluster"
 *
 * type Msg = { readonly _tag: "Subscribe" } | { readonly _tag: "Renew" }
 *
 * const Subscription = Grain.make<Msg>()({
 *   name: "subscription",
 *   onReceive: (ctx) =>
 *     ctx.message._tag === "Subscribe"
 *       ? Effect.asVoid(Reminders.register(ctx, "renew", { _tag: "Renew" }, Reminders.after("30 days")))
 *       : Effect.logInfo("renewing")
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const register = <Msg>(
  props: GrainProps<Msg>,
  name: string,
  message: NoInfer<Msg>,
  schedule: ReminderSchedule
): Effect.Effect<ReminderInfo, RegisterError, Reminders> =>
  Effect.flatMap(Reminders, (service) =>
    Effect.flatMap(hostedKind(service, props), (kind) =>
      service.register(kind, props.identity.key, name, message, schedule)
    )
  )

/**
 * From inside a cluster grain: removes reminder `name`; succeeds with true when it existed. An occurrence that is
 * already armed is dropped when it comes due.
 *
 * @example
 * ```ts
 * import { Grain } from "tickwork"
 * import { Reminders } from "tickwork/cluster"
 *
 * const Cancel = Grain.make<"cancel">()({
 *   name: "cancellable",
 *   onReceive: (ctx) => Reminders.unregister(ctx, "renew")
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const unregister = (
  props: GrainProps<never>,
  name: string
): Effect.Effect<boolean, ReminderStorageError | UnknownClusterGrainKind, Reminders> =>
  Effect.flatMap(Reminders, (service) =>
    Effect.flatMap(hostedKind(service, props), (kind) => service.unregister(kind, props.identity.key, name))
  )

/**
 * From inside a cluster grain: its reminders, by name.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Grain } from "tickwork"
 * import { Reminders } from "tickwork/cluster"
 *
 * const Lister = Grain.make<"list">()({
 *   name: "lister",
 *   onReceive: (ctx) => Effect.flatMap(Reminders.list(ctx), (reminders) => ctx.reply(reminders.length))
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const list = (
  props: GrainProps<never>
): Effect.Effect<ReadonlyArray<ReminderInfo>, ReminderStorageError | UnknownClusterGrainKind, Reminders> =>
  Effect.flatMap(Reminders, (service) =>
    Effect.flatMap(hostedKind(service, props), (kind) => service.list(kind, props.identity.key))
  )

/**
 * From anywhere on a runner with the service: registers reminder `name` of grain (kind, key).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain, Reminders } from "tickwork/cluster"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const program = Reminders.registerFor(Invoice, "inv-7", "dunning", "send reminder", Reminders.after("14 days"))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const registerFor = <Msg, A, E>(
  kind: ClusterGrain<Msg, A, E, unknown>,
  key: string,
  name: string,
  message: NoInfer<Msg>,
  schedule: ReminderSchedule
): Effect.Effect<ReminderInfo, RegisterError, Reminders> =>
  Effect.flatMap(Reminders, (service) => service.register(kind, key, name, message, schedule))

/**
 * From anywhere on a runner with the service: removes reminder `name` of grain (kind, key).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain, Reminders } from "tickwork/cluster"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const program = Reminders.unregisterFor(Invoice, "inv-7", "dunning")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const unregisterFor = <Msg, A, E>(
  kind: ClusterGrain<Msg, A, E, unknown>,
  key: string,
  name: string
): Effect.Effect<boolean, ReminderStorageError, Reminders> =>
  Effect.flatMap(Reminders, (service) => service.unregister(kind, key, name))

/**
 * From anywhere on a runner with the service: the reminders of grain (kind, key).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain, Reminders } from "tickwork/cluster"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const program = Reminders.listFor(Invoice, "inv-7")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const listFor = <Msg, A, E>(
  kind: ClusterGrain<Msg, A, E, unknown>,
  key: string
): Effect.Effect<ReadonlyArray<ReminderInfo>, ReminderStorageError, Reminders> =>
  Effect.flatMap(Reminders, (service) => service.list(kind, key))

/**
 * From anywhere on a runner with the service: registers (or replaces) many reminders of grains of one kind, all or
 * none. Each registration is checked (the same typed errors as `registerFor`); the first bad one fails the whole
 * batch and nothing of it is written. The rows are written in one statement on PostgreSQL (one per 1,000
 * registrations, in one transaction) and one transaction on SQLite: the batch is written whole or not at all. On
 * PostgreSQL a batch of more than 1,000 is checked a chunk of 1,000 at a time while the statement of the chunk before
 * runs (a bad registration, or a failed statement, rolls the transaction back: nothing is kept, and the error is the
 * first bad registration's if there is one). The same (key, name) twice in a batch: the later one wins. Succeeds with
 * the registered reminders, in the order given.
 *
 * For throughput, make calls of 1,000 with several in flight, or one large call: the runner then checks while the
 * database writes (figures in docs/performance.md).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain, Reminders } from "tickwork/cluster"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const program = Reminders.registerManyFor(
 *   Invoice,
 *   ["inv-7", "inv-8", "inv-9"].map((key) => ({
 *     key,
 *     name: "dunning",
 *     message: "send reminder",
 *     schedule: Reminders.after("14 days")
 *   }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const registerManyFor = <Msg, A, E>(
  kind: ClusterGrain<Msg, A, E, unknown>,
  registrations: Iterable<Registration<NoInfer<Msg>>>
): Effect.Effect<ReadonlyArray<ReminderInfo>, RegisterError, Reminders> =>
  Effect.flatMap(Reminders, (service) => service.registerMany(kind, registrations))
