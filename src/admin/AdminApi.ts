/**
 * The admin API as an `@effect/platform` `HttpApi`: its endpoints, their Schema bodies and responses, and its errors.
 * `Admin.layer` serves it (with the inspector page and its OpenAPI document); a program with an `HttpApi` of its own
 * can add it with `MyApi.addHttpApi(AdminApi.AdminApi)` and `Admin.handlers`, or derive a typed client from it with
 * `HttpApiClient.make(AdminApi.AdminApi, { baseUrl })`.
 *
 * Every path starts with `/admin`. Times are epoch milliseconds; a limit that is "none" (an infinite grace window,
 * `runAll` without a maximum, the histogram's last bucket) is `null` on the wire.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"

/** An optional field of a request: absent, never `undefined`. */
const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * A number where "no limit" is `Infinity`, sent as `null` (JSON has no infinity).
 *
 * @since 0.1.0
 * @category models
 */
export const Limit = Schema.transform(Schema.NullOr(Schema.Number), Schema.Number, {
  strict: true,
  decode: (n) => n ?? Number.POSITIVE_INFINITY,
  encode: (n) => (Number.isFinite(n) ? n : null)
}).annotations({ identifier: "Limit", description: "a number; null means no limit" })

/**
 * One run of a schedule (`Schedules.Run`).
 *
 * @since 0.1.0
 * @category models
 */
export const Run = Schema.Struct({
  instant: Schema.Number,
  trigger: Schema.Literal("schedule", "manual", "backfill"),
  start: Schema.optional(Schema.Number),
  end: Schema.optional(Schema.Number),
  outcome: Schema.Literal("succeeded", "failed", "sent", "skipped", "missed"),
  lateness: Schema.optional(Schema.Number),
  attempts: Schema.Number,
  detail: Schema.optional(Schema.String)
}).annotations({ identifier: "Run" })

/**
 * A misfire policy (`Schedules.Misfire`).
 *
 * @since 0.1.0
 * @category models
 */
export const Misfire = Schema.Union(
  Schema.TaggedStruct("SkipMissed", {}),
  Schema.TaggedStruct("RunOnce", {}),
  Schema.TaggedStruct("RunAll", { max: Limit })
).annotations({ identifier: "Misfire" })

/**
 * An overlap policy (`Schedules.Overlap`).
 *
 * @since 0.1.0
 * @category models
 */
export const Overlap = Schema.Literal("skip", "bufferOne", "bufferAll", "allowAll")

/**
 * A schedule as `list` and `get` show it (`Schedules.ScheduleInfo`).
 *
 * @since 0.1.0
 * @category models
 */
export const ScheduleInfo = Schema.Struct({
  reference: Schema.String,
  kind: Schema.Literal("interval", "cron", "cluster-cron", "reminder"),
  owner: Schema.String,
  expression: Schema.optional(Schema.String),
  intervalMillis: Schema.optional(Schema.Number),
  timeZone: Schema.optional(Schema.String),
  state: Schema.Literal("active", "paused"),
  pause: Schema.optional(Schema.Struct({ note: Schema.String, by: Schema.String, at: Schema.Number })),
  nextFire: Schema.optional(Schema.Number),
  lastRun: Schema.optional(Run),
  policies: Schema.Struct({
    misfire: Misfire,
    graceMillis: Limit,
    overlap: Overlap,
    retry: Schema.Boolean,
    pauseAfterFailures: Schema.optional(Schema.Number)
  })
}).annotations({ identifier: "ScheduleInfo" })

/**
 * The body of a pause: why (required, not blank) and by whom (default: the request's `authorize` does not say, so
 * `"admin api"`).
 *
 * @since 0.1.0
 * @category models
 */
export const PauseRequest = Schema.Struct({
  note: Schema.Trim.pipe(Schema.nonEmptyString({ message: () => "a pause needs a note saying why" })),
  by: optional(Schema.Trim.pipe(Schema.nonEmptyString()))
}).annotations({ identifier: "PauseRequest" })

/**
 * The body of an update: a new spec and/or the policies that can be sent as JSON (a `retry` Schedule cannot).
 * Durations are milliseconds.
 *
 * @since 0.1.0
 * @category models
 */
export const UpdateRequest = Schema.Struct({
  spec: optional(
    Schema.Union(
      Schema.TaggedStruct("Interval", {
        everyMillis: Schema.Number,
        firstMillis: optional(Schema.Number)
      }),
      Schema.TaggedStruct("Cron", { expression: Schema.String, timeZone: optional(Schema.String) })
    )
  ),
  policies: optional(
    Schema.Struct({
      misfire: optional(Misfire),
      graceMillis: optional(Schema.Number),
      overlap: optional(Overlap),
      pauseAfterFailures: optional(Schema.Number),
      history: optional(Schema.Number)
    })
  )
}).annotations({ identifier: "UpdateRequest" })

/**
 * The actor system's live counts (`ActorSystem.Stats`), its name, and whether this server takes mutating requests.
 *
 * @since 0.1.0
 * @category models
 */
export const SystemStatus = Schema.Struct({
  system: Schema.String,
  /** False when the admin layer was given no `authorize` option: pause, resume, trigger and update answer 403. */
  operable: Schema.Boolean,
  stats: Schema.Struct({
    actors: Schema.Number,
    fibers: Schema.Number,
    timers: Schema.Number,
    engineEntries: Schema.Number,
    engineRunning: Schema.Boolean,
    engineRestarts: Schema.Number,
    deadLetters: Schema.Number
  })
}).annotations({ identifier: "SystemStatus" })

/**
 * The tick lateness histogram (`Metrics.tickLateness`, for the whole process): each bucket counts the ticks whose
 * lateness was above the previous bucket's bound and at most `upToMillis` (`null`: no bound).
 *
 * @since 0.1.0
 * @category models
 */
export const Lateness = Schema.Struct({
  count: Schema.Number,
  sumMillis: Schema.Number,
  minMillis: Schema.optional(Schema.Number),
  maxMillis: Schema.optional(Schema.Number),
  buckets: Schema.Array(Schema.Struct({ upToMillis: Limit, count: Schema.Number }))
}).annotations({ identifier: "Lateness" })

/**
 * Every tickwork counter and gauge in Effect's metric registry (`Metrics`), with its tags.
 *
 * @since 0.1.0
 * @category models
 */
export const MetricValue = Schema.Struct({
  name: Schema.String,
  type: Schema.Literal("counter", "gauge"),
  tags: Schema.Record({ key: Schema.String, value: Schema.String }),
  value: Schema.Number
}).annotations({ identifier: "MetricValue" })

/**
 * One `context.timers` timer (or the receive timeout) of an actor.
 *
 * @since 0.1.0
 * @category models
 */
export const Timer = Schema.Struct({
  key: Schema.String,
  /** The timer kind: `actor_timer`, `receive_timeout`, `grain_timer`, `spot_timer`, `entity_timer`. */
  kind: Schema.String,
  /** `single`, `fixed-delay`, `fixed-rate`, `schedule`, `receive-timeout`, or a model's own (`once`, `cron`, ...). */
  mode: Schema.String,
  intervalMillis: Schema.optional(Schema.Number),
  expression: Schema.optional(Schema.String),
  /** When it fires next; absent while a tick of it waits to be handled and nothing else is armed. */
  nextDue: Schema.optional(Schema.Number)
}).annotations({ identifier: "Timer" })

/**
 * An actor's timers (`Schedules.timersOf`): its own, its receive timeout, and those of a runtime built on it (a
 * grain's, a Spot's, an entity's).
 *
 * @since 0.1.0
 * @category models
 */
export const OwnerTimers = Schema.Struct({
  owner: Schema.String,
  timers: Schema.Array(Timer)
}).annotations({ identifier: "OwnerTimers" })

/**
 * No schedule has this reference (404).
 *
 * @since 0.1.0
 * @category errors
 */
export class ScheduleNotFound extends Schema.TaggedError<ScheduleNotFound>()(
  "ScheduleNotFound",
  { reference: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/**
 * No live actor has this path (404).
 *
 * @since 0.1.0
 * @category errors
 */
export class OwnerNotFound extends Schema.TaggedError<OwnerNotFound>()(
  "OwnerNotFound",
  { owner: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/**
 * The request was well formed but refused by the schedules (an update with a bad cron expression, say): 400, with
 * the typed error's tag and message.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "InvalidRequest",
  { error: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/**
 * The storage behind a cluster schedule could not be read or written (503); local schedules never answer it.
 *
 * @since 0.1.0
 * @category errors
 */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()(
  "StorageUnavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/**
 * A mutating request was refused (403): the server has no `authorize` option, `authorize` said no, or the request
 * came from another origin's page.
 *
 * @since 0.1.0
 * @category errors
 */
export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

/**
 * The check in front of every mutating endpoint; `Admin.handlers` implements it from the `authorize` option.
 *
 * @since 0.1.0
 * @category models
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("tickwork/admin/Authorization", {
  failure: Forbidden
}) {}

const reference = HttpApiSchema.param("reference", Schema.String)

/**
 * The schedules: read them, and (through `Authorization`) pause, resume, trigger and update them.
 *
 * @since 0.1.0
 * @category models
 */
export class SchedulesGroup extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("list", "/admin/schedules")
      .setUrlParams(
        Schema.Struct({
          kind: optional(ScheduleInfo.fields.kind),
          owner: optional(Schema.String),
          state: optional(ScheduleInfo.fields.state)
        })
      )
      .addSuccess(Schema.Array(ScheduleInfo))
      .addError(StorageUnavailable)
      .annotate(OpenApi.Summary, "List the schedules (filter by kind, owner, state)")
  )
  .add(
    HttpApiEndpoint.get("get")`/admin/schedules/${reference}`
      .addSuccess(ScheduleInfo)
      .addError(ScheduleNotFound)
      .addError(StorageUnavailable)
      .annotate(OpenApi.Summary, "One schedule")
  )
  .add(
    HttpApiEndpoint.get("history")`/admin/schedules/${reference}/history`
      .addSuccess(Schema.Array(Run))
      .addError(ScheduleNotFound)
      .addError(StorageUnavailable)
      .annotate(OpenApi.Summary, "A schedule's runs, oldest first")
  )
  .add(
    HttpApiEndpoint.post("pause")`/admin/schedules/${reference}/pause`
      .setPayload(PauseRequest)
      .addSuccess(ScheduleInfo)
      .addError(ScheduleNotFound)
      .addError(StorageUnavailable)
      .middleware(Authorization)
      .annotate(OpenApi.Summary, "Pause a schedule, with a note saying why")
  )
  .add(
    HttpApiEndpoint.post("resume")`/admin/schedules/${reference}/resume`
      .addSuccess(ScheduleInfo)
      .addError(ScheduleNotFound)
      .addError(StorageUnavailable)
      .middleware(Authorization)
      .annotate(OpenApi.Summary, "Resume a paused schedule from its next instant")
  )
  .add(
    HttpApiEndpoint.post("trigger")`/admin/schedules/${reference}/trigger`
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ScheduleNotFound)
      .addError(StorageUnavailable)
      .middleware(Authorization)
      .annotate(OpenApi.Summary, "Run a schedule's action once now")
  )
  .add(
    HttpApiEndpoint.patch("update")`/admin/schedules/${reference}`
      .setPayload(UpdateRequest)
      .addSuccess(ScheduleInfo)
      .addError(ScheduleNotFound)
      .addError(StorageUnavailable)
      .addError(InvalidRequest)
      .middleware(Authorization)
      .annotate(OpenApi.Summary, "Change a schedule's spec or policies in place")
  ) {}

/**
 * The system: stats, metrics, the lateness histogram, and the actors' timers.
 *
 * @since 0.1.0
 * @category models
 */
export class SystemGroup extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("stats", "/admin/stats")
      .addSuccess(SystemStatus)
      .annotate(OpenApi.Summary, "The actor system's live counts")
  )
  .add(
    HttpApiEndpoint.get("lateness", "/admin/lateness")
      .addSuccess(Lateness)
      .annotate(OpenApi.Summary, "The tick lateness histogram")
  )
  .add(
    HttpApiEndpoint.get("metrics", "/admin/metrics")
      .addSuccess(Schema.Array(MetricValue))
      .annotate(OpenApi.Summary, "tickwork's counters and gauges")
  )
  .add(
    HttpApiEndpoint.get("timers", "/admin/timers")
      .setUrlParams(
        Schema.Struct({
          owner: optional(Schema.String),
          limit: optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 10_000)))
        })
      )
      .addSuccess(Schema.Array(OwnerTimers))
      .addError(OwnerNotFound)
      .annotate(OpenApi.Summary, "The timers of one actor (owner), or of the actors that have any (up to limit)")
  ) {}

/**
 * The inspector page and its style sheet and script (left out of the OpenAPI document: they are for people).
 *
 * @since 0.1.0
 * @category models
 */
export class InspectorGroup extends HttpApiGroup.make("inspector")
  .add(
    HttpApiEndpoint.get("page", "/admin").addSuccess(HttpApiSchema.Text({ contentType: "text/html; charset=utf-8" }))
  )
  .add(
    HttpApiEndpoint.get("style", "/admin/inspector.css").addSuccess(
      HttpApiSchema.Text({ contentType: "text/css; charset=utf-8" })
    )
  )
  .add(
    HttpApiEndpoint.get("script", "/admin/inspector.js").addSuccess(
      HttpApiSchema.Text({ contentType: "text/javascript; charset=utf-8" })
    )
  )
  .annotate(OpenApi.Exclude, true) {}

/**
 * The whole admin API.
 *
 * @example
 * ```ts
 * import { FetchHttpClient, HttpApiClient } from "@effect/platform"
 * import { Effect } from "effect"
 * import { AdminApi } from "tickwork/admin"
 *
 * const paused = Effect.gen(function*() {
 *   const client = yield* HttpApiClient.make(AdminApi.AdminApi, { baseUrl: "http://127.0.0.1:9465" })
 *   return yield* client.schedules.list({ urlParams: { state: "paused" } })
 * }).pipe(Effect.provide(FetchHttpClient.layer))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class AdminApi extends HttpApi.make("tickwork-admin")
  .add(SchedulesGroup)
  .add(SystemGroup)
  .add(InspectorGroup)
  .annotate(OpenApi.Title, "tickwork admin")
  .annotate(OpenApi.Description, "Named schedules, timers and engine metrics of a tickwork actor system") {}
