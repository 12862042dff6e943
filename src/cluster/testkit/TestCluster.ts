/**
 * The cluster's testkit: a test's `TestSystem` with an in-process cluster runner under it, in one line, and Orleans'
 * TestKit helpers for durable reminders (`fireReminder`, `fireAllReminders`) and time that moves to the next cluster
 * delivery (`advanceToNext`, `runUntilIdle`, which see reminder occurrences and cluster cron instants in storage as
 * well as the system's timers).
 *
 * ```ts
 * it.effect("...", () => Effect.gen(function*() { ... }).pipe(Effect.provide(TestCluster.layer({ kinds: [Invoice] }))))
 * ```
 *
 * Imported as `tickwork/cluster/testkit`: it needs the cluster's peers (as `tickwork/cluster` does), which
 * `tickwork/testkit` never loads.
 *
 * @since 0.1.0
 */
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as Runners from "@effect/cluster/Runners"
import * as ShardId from "@effect/cluster/ShardId"
import { Sharding } from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import type * as ActorSystem from "../../ActorSystem.js"
import type { Grain, InvalidGrainKind } from "../../Grain.js"
import type * as Grains from "../../Grains.js"
import { systemOf } from "../../internal/actorSystem.js"
import * as Schedules from "../../Schedules.js"
import type { InvalidSchedulePolicy, ScheduledReferenceNotFound, ScheduleStorageError } from "../../TimerError.js"
import * as TestSystem from "../../testkit/TestSystem.js"
import type * as Workers from "../../Workers.js"
import * as ClusterGrain from "../ClusterGrain.js"
import * as ClusterRunner from "../ClusterRunner.js"
import * as ClusterSchedules from "../ClusterSchedules.js"
import { localKind } from "../internal/grainProtocol.js"
import * as ReminderSql from "../internal/reminderSql.js"
import { Tables } from "../internal/runner.js"
import * as ScheduleState from "../internal/scheduleState.js"
import * as Reminders from "../Reminders.js"

// ------------------------------------------------------------------------------------------------------ the layer

/**
 * What the cluster testkit keeps of its runner: reached through the `TestCluster` tag; the functions of this module
 * use it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestClusterService {
  readonly sharding: Context.Tag.Service<Sharding>
  readonly reminders: Reminders.RemindersService
  readonly schedules: Schedules.SchedulesService
  /** The reminders table, read to report what a fired reminder delivered. */
  readonly table: ReminderSql.ReminderSql
  /** The cluster schedules' stored state and runs (a one-shot reminder's history outlives its row). */
  readonly state: ScheduleState.ScheduleState
  /** The runner's storage poll interval (`entityMessagePollInterval`), in millis. */
  readonly pollMillis: number
}

/**
 * The tag of the cluster testkit's runner.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCluster } from "tickwork/cluster/testkit"
 *
 * const poll = Effect.map(TestCluster.TestCluster, (test) => test.pollMillis)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class TestCluster extends Context.Tag("tickwork/cluster/testkit/TestCluster")<
  TestCluster,
  TestClusterService
>() {}

/**
 * Options of `layer`: `TestSystem.layer`'s (name, seed, local grains, timeline, ...) and the cluster's; every one has
 * a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<
  Kinds extends ReadonlyArray<ClusterGrain.Any>,
  LocalKinds extends ReadonlyArray<Grain<any, any, any, any>>
> extends TestSystem.Options<LocalKinds> {
  /** Cluster grain kinds the runner hosts (`ClusterGrain.layer`; default none). */
  readonly kinds?: Kinds
  /** The test runner's options (`ClusterRunner.layerTest`); its storage defaults to an in-memory SQLite database. */
  readonly runner?: ClusterRunner.TestOptions
  /** The reminders service's options (`Reminders.layer`). */
  readonly reminders?: Reminders.Options
}

type ClusterKindRequirements<Kinds extends ReadonlyArray<ClusterGrain.Any>> = [Kinds[number]] extends [never]
  ? never
  : Kinds[number] extends ClusterGrain.ClusterGrain<any, any, any, infer R>
    ? R
    : never

type LocalKindRequirements<Kinds extends ReadonlyArray<Grain<any, any, any, any>>> = [Kinds[number]] extends [never]
  ? never
  : Kinds[number] extends Grain<any, any, any, infer R>
    ? R
    : never

/**
 * The services `layer` provides: the test system's, the runner's, `Reminders` and the testkit's own tag.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | TestCluster
  | TestSystem.TestSystem
  | ActorSystem.ActorSystem
  | Workers.Workers
  | Grains.Grains
  | Schedules.Schedules
  | Reminders.Reminders
  | Sharding
  | Runners.Runners
  | MessageStorage.MessageStorage
  | SqlClient.SqlClient

/**
 * Why `layer` failed to build.
 *
 * @since 0.1.0
 * @category errors
 */
export type LayerError =
  | Layer.Layer.Error<ReturnType<typeof TestSystem.layer>>
  | ClusterRunner.ClusterRunnerError
  | Reminders.ReminderStorageError
  | InvalidSchedulePolicy
  | ScheduleStorageError
  | InvalidGrainKind

/** Rounds of `TestClock.adjust(0)` the runner gets to take its shards before the clock is moved for it. */
const READY_ROUNDS = 20

/**
 * One-line wiring for a cluster test: `TestSystem.layer(options)` (an `ActorSystem` on the test's `TestClock`, a
 * seeded `Random`, the timeline), an in-process cluster runner under it (`ClusterRunner.layerTest`, an in-memory
 * SQLite database unless `runner.storage` says otherwise), `ClusterGrain.layer(kinds)`, `Reminders.layer()` and
 * `ClusterSchedules.layer` (the cluster's crons and reminders in `Schedules`). The kinds' handlers get these services
 * (a grain that registers its own reminders needs nothing more); whatever else they need is the layer's requirement.
 *
 * The layer is built once the runner holds its shards. A runner takes them in fibers of its own after its layer is
 * built, and until then every send to a grain waits `sendRetryInterval` on the clock and tries again: under
 * `TestClock` that wait never ends unless the test moves the clock. So the layer lets those fibers run
 * (`TestClock.adjust(0)`, the clock does not move) until every shard is this runner's; only when the storage still
 * holds another runner's locks (a shared SQLite file) does it move the clock, a second at a time, until they expire.
 * The runner must be its storage's only one: beside another live runner it never holds every shard, and the layer
 * dies saying so.
 *
 * @example
 * ```ts
 * import { it } from "@effect/vitest"
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 * import { TestCluster } from "tickwork/cluster/testkit"
 *
 * const Counter = ClusterGrain.make(
 *   Grain.make<"inc">()({ name: "counter", onActivate: () => Effect.succeed(0), onReceive: (_ctx, n) => Effect.succeed(n + 1) }),
 *   { message: Schema.Literal("inc") }
 * )
 *
 * it.effect("counts", () =>
 *   ClusterGrain.tell(Counter, "c-1", "inc").pipe(Effect.provide(TestCluster.layer({ kinds: [Counter] }))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <
  const Kinds extends ReadonlyArray<ClusterGrain.Any> = [],
  const LocalKinds extends ReadonlyArray<Grain<any, any, any, any>> = []
>(
  options: Options<Kinds, LocalKinds> = {}
): Layer.Layer<
  Services,
  LayerError,
  Exclude<ClusterKindRequirements<Kinds> | LocalKindRequirements<LocalKinds>, Services>
> => {
  const system = TestSystem.layer(options)
  const runner = ClusterRunner.layerTest(options.runner)
  const config = {
    ...ShardingConfig.defaults,
    ...ClusterRunner.defaultShardingConfig,
    ...options.runner?.shardingConfig
  }
  const cluster = Layer.mergeAll(ClusterSchedules.layer, ClusterGrain.layer(options.kinds ?? [])).pipe(
    Layer.provideMerge(Reminders.layer(options.reminders))
  )
  const test = Layer.effect(TestCluster, make(config, options.reminders?.table))
  // The error channel is checked here; only the requirements (conditional on the kinds) are asserted.
  const built: Layer.Layer<Services, LayerError, unknown> = test.pipe(
    Layer.provideMerge(cluster),
    Layer.provideMerge(runner),
    Layer.provideMerge(system)
  )
  return built as Layer.Layer<
    Services,
    LayerError,
    Exclude<ClusterKindRequirements<Kinds> | LocalKindRequirements<LocalKinds>, Services>
  >
}

const make = (config: ShardingConfig.ShardingConfig["Type"], tableOption: string | undefined) =>
  Effect.gen(function* () {
    const sharding = yield* Sharding
    const sql = yield* SqlClient.SqlClient
    const { prefix } = yield* Tables
    const table = yield* Effect.orDie(ReminderSql.make(sql, tableOption ?? `${prefix}_tickwork_reminders`))
    const shards = config.assignedShardGroups.flatMap((group) =>
      Array.from({ length: config.shardsPerGroup }, (_, i) => ShardId.make(group, i + 1))
    )
    const holdsAll = () => shards.every((shard) => sharding.hasShardId(shard))
    const lockMillis = Duration.toMillis(Duration.decode(config.shardLockExpiration))
    for (let round = 0; !holdsAll(); round++) {
      if (round < READY_ROUNDS) yield* TestClock.adjust(0)
      else if (round < READY_ROUNDS + Math.ceil(lockMillis / 1_000) + 10) yield* TestClock.adjust("1 second")
      else {
        return yield* Effect.dieMessage(
          "TestCluster: the test runner did not acquire its shards (is another runner holding the storage's locks?)"
        )
      }
    }
    const service: TestClusterService = {
      sharding,
      reminders: yield* Reminders.Reminders,
      schedules: yield* Schedules.Schedules,
      table,
      state: yield* Effect.orDie(ScheduleState.make),
      pollMillis: Duration.toMillis(Duration.decode(config.entityMessagePollInterval))
    }
    return service
  })

// ------------------------------------------------------------------------------------------------------ reminders

/**
 * What a reminder fired on demand delivered: the grain, the reminder, its message and the run its history recorded.
 *
 * @since 0.1.0
 * @category models
 */
export interface FiredReminder<Msg = unknown> {
  /** The cluster grain kind's name. */
  readonly kind: string
  readonly key: string
  readonly name: string
  /** Its reference in `Schedules`: `<kind>/<key>/<name>`. */
  readonly reference: string
  /** The message the grain received (as stored, when the kind's schema cannot decode it). */
  readonly message: Msg
  /** The run its history recorded: `trigger: "manual"`, `outcome: "sent"` once the grain handled it. */
  readonly run: Schedules.Run
}

/** Rounds of `TestClock.adjust(0)` a fired occurrence gets to reach its grain. */
const DELIVERY_ROUNDS = 100

const manualRuns = (runs: ReadonlyArray<Schedules.Run>, at: number) =>
  runs.filter((run) => run.trigger === "manual" && run.instant === at)

const fire = (
  test: TestClusterService,
  kind: string,
  key: string,
  name: string
): Effect.Effect<FiredReminder, ScheduledReferenceNotFound | ScheduleStorageError> =>
  Effect.gen(function* () {
    // what was sent before (a tell that registers the reminder) runs first
    yield* TestClock.adjust(0)
    const reference = ReminderSql.referenceOf(kind, key, name)
    const source = test.reminders.schedules
    const at = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const before = manualRuns(yield* source.history(reference), at).length
    yield* source.trigger(reference)
    for (let round = 0; round < DELIVERY_ROUNDS; round++) {
      yield* TestClock.adjust(0)
      const runs = manualRuns(yield* source.history(reference), at)
      if (runs.length > before) {
        const row = yield* Effect.orDie(test.table.get(kind, key, name))
        return { kind, key, name, reference, message: decodeMessage(test, kind, row), run: runs[runs.length - 1]! }
      }
    }
    return yield* Effect.dieMessage(
      `TestCluster.fireReminder: reminder "${name}" of grain ${kind}/${key} was triggered but did not reach the grain`
    )
  })

const decodeMessage = (test: TestClusterService, kind: string, row: ReminderSql.ReminderRow | undefined): any => {
  if (row === undefined) return undefined
  const stored: unknown = JSON.parse(row.message)
  const wire = localKind(test.sharding, kind)
  if (wire === undefined) return stored
  return Either.getOrElse(Schema.decodeUnknownEither(wire.message)(stored), () => stored)
}

/**
 * Delivers one occurrence of reminder `name` of grain (kind, key) now, whenever it is due (Orleans' TestKit
 * `FireReminder`), after what was sent before has run (a tell that registers it): the grain is activated if it is not,
 * `onReceive` sees the reminder's message, and the reminder's
 * own schedule does not move (its next occurrence stays due when it was; a one-shot stays registered). Succeeds, once
 * the grain has handled it, with what was delivered. Built on the reminders' `Schedules.trigger` (a manual run in the
 * reminder's history); a paused reminder is delivered too, as a trigger is. A reminder the grain does not have fails
 * with `ScheduledReferenceNotFound`.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain, Reminders } from "tickwork/cluster"
 * import { TestCluster } from "tickwork/cluster/testkit"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const test = Effect.gen(function*() {
 *   yield* Reminders.registerFor(Invoice, "inv-7", "dunning", "send reminder", Reminders.after("14 days"))
 *   const fired = yield* TestCluster.fireReminder(Invoice, "inv-7", "dunning") // fired.message === "send reminder"
 * }).pipe(Effect.provide(TestCluster.layer({ kinds: [Invoice] })))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const fireReminder = <Msg, A, E, R>(
  kind: ClusterGrain.ClusterGrain<Msg, A, E, R>,
  key: string,
  name: string
): Effect.Effect<FiredReminder<Msg>, ScheduledReferenceNotFound | ScheduleStorageError, TestCluster> =>
  Effect.flatMap(
    TestCluster,
    (test) =>
      fire(test, kind.name, key, name) as Effect.Effect<
        FiredReminder<Msg>,
        ScheduledReferenceNotFound | ScheduleStorageError
      >
  )

/**
 * Delivers one occurrence of every reminder now (Orleans' TestKit `FireAllReminders`): of every grain, of the grains
 * of `kind`, or of grain (kind, key); in order of kind, key and name, each once the previous one was handled. Their
 * schedules do not move. Succeeds with what was delivered (nothing when there is no reminder).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain } from "tickwork/cluster"
 * import { TestCluster } from "tickwork/cluster/testkit"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const ofInvoice7 = TestCluster.fireAllReminders(Invoice, "inv-7")
 * const everything = TestCluster.fireAllReminders()
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const fireAllReminders: {
  <Msg, A, E, R>(
    kind: ClusterGrain.ClusterGrain<Msg, A, E, R>,
    key?: string
  ): Effect.Effect<ReadonlyArray<FiredReminder<Msg>>, ScheduledReferenceNotFound | ScheduleStorageError, TestCluster>
  (): Effect.Effect<ReadonlyArray<FiredReminder>, ScheduledReferenceNotFound | ScheduleStorageError, TestCluster>
} = (kind?: ClusterGrain.Any, key?: string): Effect.Effect<any, any, TestCluster> =>
  Effect.flatMap(Effect.zipRight(TestClock.adjust(0), TestCluster), (test) =>
    Effect.flatMap(Effect.orDie(test.table.all), (rows) =>
      Effect.forEach(
        rows.filter(
          (entry) => (kind === undefined || entry.kind === kind.name) && (key === undefined || entry.key === key)
        ),
        (entry) => fire(test, entry.kind, entry.key, entry.row.name)
      )
    )
  )

// ------------------------------------------------------------------------------------------------------ time

/**
 * A cluster delivery that a move of the clock saw: a reminder occurrence or a cluster cron instant, as the run its
 * history recorded.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClusterRun {
  readonly reference: string
  readonly kind: "reminder" | "cluster-cron"
  /** A reminder's grain (`<kind>/<key>`), or `"cluster"` for a cron. */
  readonly owner: string
  readonly run: Schedules.Run
}

/**
 * What a move of the clock did: `TestSystem.Advanced` (the system's timers that fired, the timeline on the way) and
 * the cluster deliveries that were due.
 *
 * @since 0.1.0
 * @category models
 */
export interface Advanced extends TestSystem.Advanced {
  /** The reminder occurrences and cluster cron instants that came due and ran, oldest first. */
  readonly delivered: ReadonlyArray<ClusterRun>
}

const isCluster = (info: Schedules.ScheduleInfo): info is Schedules.ScheduleInfo & { kind: ClusterRun["kind"] } =>
  info.kind === "reminder" || info.kind === "cluster-cron"

/** The cluster schedules that are armed, with their next instant. */
const pendingCluster = (test: TestClusterService) =>
  Effect.map(Effect.orDie(test.schedules.list()), (all) =>
    all.filter((info) => isCluster(info) && info.nextFire !== undefined)
  )

/**
 * The run of `info` recorded for instant `instant` by the schedule itself. Read from the runs table, not through
 * `Schedules.history`: a one-shot reminder's row is gone once it is delivered, its history is not.
 */
const scheduledRun = (test: TestClusterService, info: Schedules.ScheduleInfo, instant: number) =>
  Effect.map(
    Effect.orElseSucceed(
      test.state.history(info.kind === "reminder" ? ReminderSql.stateKeyOf(info.reference) : info.reference),
      (): ReadonlyArray<Schedules.Run> => []
    ),
    (runs) => runs.find((run) => run.trigger === "schedule" && run.instant === instant)
  )

const nowOf = Effect.clockWith((clock) => clock.currentTimeMillis)

/** Moves the clock to the next event (system timer or cluster delivery); undefined when none is pending. */
const step = (system: TestSystem.TestSystemService, test: TestClusterService): Effect.Effect<Advanced | undefined> =>
  Effect.gen(function* () {
    yield* TestClock.adjust(0)
    const impl = systemOf(system.system)!
    const timeline = impl.timeline!
    const mark = timeline.recorded
    const engineDue = impl.driver.queue.earliestDue()
    const pending = yield* pendingCluster(test)
    const clusterDue = pending.reduce((min, info) => Math.min(min, info.nextFire!), Number.POSITIVE_INFINITY)
    const target = Math.min(engineDue ?? Number.POSITIVE_INFINITY, clusterDue)
    if (target === Number.POSITIVE_INFINITY) return undefined
    const now = yield* nowOf
    yield* TestClock.adjust(Math.max(0, target - now))
    // What was due: every cluster schedule whose next instant the move reached. A delivery is read back from its
    // history; one not there yet gets a few more rounds, then the clock moves on by up to a storage poll interval
    // (the bound of a persisted message's lateness), a second at a time.
    const due = pending.filter((info) => info.nextFire! <= target)
    const delivered: Array<ClusterRun> = []
    let waiting = due
    for (let round = 0; waiting.length > 0; round++) {
      const still: Array<Schedules.ScheduleInfo> = []
      for (const info of waiting) {
        const run = yield* scheduledRun(test, info, info.nextFire!)
        if (run === undefined) still.push(info)
        else
          delivered.push({ reference: info.reference, kind: info.kind as ClusterRun["kind"], owner: info.owner, run })
      }
      waiting = still
      if (waiting.length === 0) break
      if (round < DELIVERY_ROUNDS) yield* TestClock.adjust(0)
      else if (round < DELIVERY_ROUNDS + Math.ceil(test.pollMillis / 1_000) + 1) yield* TestClock.adjust("1 second")
      else break
    }
    delivered.sort((a, b) => a.run.instant - b.run.instant || a.reference.localeCompare(b.reference))
    const events = timeline.since(mark)
    return { now: yield* nowOf, fired: events.filter((line) => line.event === "fired"), events, delivered }
  })

/**
 * Moves the clock to the earliest pending event of the test, a timer of the system (as `TestSystem.advanceToNext`)
 * or a cluster delivery read from storage (a reminder's next occurrence, a cluster cron's next instant; paused ones
 * are not pending), and lets what came due run. Returns the system's timers that fired and the cluster deliveries
 * that ran, each read back from its schedule's history (`delivered`). With nothing pending the clock stays.
 *
 * A move costs real time in proportion to the virtual time it covers: the runner's own fibers (storage polls, shard
 * lock refreshes) wake every second on the `TestClock`, each a round of the event loop. Minutes are cheap; for a
 * reminder days away, `fireReminder` delivers its occurrence without moving the clock.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Grain } from "tickwork"
 * import { ClusterGrain, Reminders } from "tickwork/cluster"
 * import { TestCluster } from "tickwork/cluster/testkit"
 *
 * const Invoice = ClusterGrain.make(
 *   Grain.make<string>()({ name: "invoice", onReceive: (ctx) => Effect.logInfo(ctx.message) }),
 *   { message: Schema.String }
 * )
 * const test = Effect.gen(function*() {
 *   yield* Reminders.registerFor(Invoice, "inv-7", "dunning", "send reminder", Reminders.after("30 seconds"))
 *   const step = yield* TestCluster.advanceToNext // step.delivered[0].reference === "invoice/inv-7/dunning"
 * }).pipe(Effect.provide(TestCluster.layer({ kinds: [Invoice] })))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const advanceToNext: Effect.Effect<Advanced, never, TestCluster | TestSystem.TestSystem> = Effect.gen(
  function* () {
    const system = yield* TestSystem.TestSystem
    const test = yield* TestCluster
    const moved = yield* step(system, test)
    return moved ?? { now: yield* nowOf, fired: [], events: [], delivered: [] }
  }
)

/**
 * Moves the clock from event to event (`advanceToNext`) until nothing is pending: no timer in the system, no
 * reminder occurrence or cluster cron instant in storage; at most `maxSteps` steps (default 100). A periodic reminder
 * or a cron never lets a cluster go idle, so it dies then, naming what is still pending. Returns every timer event and
 * every cluster delivery on the way.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCluster } from "tickwork/cluster/testkit"
 *
 * const all = Effect.map(TestCluster.runUntilIdle({ maxSteps: 10 }), (moved) => moved.delivered.length)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const runUntilIdle = (
  options: { readonly maxSteps?: number } = {}
): Effect.Effect<Advanced, never, TestCluster | TestSystem.TestSystem> =>
  Effect.gen(function* () {
    const system = yield* TestSystem.TestSystem
    const test = yield* TestCluster
    const maxSteps = options.maxSteps ?? 100
    const fired: Array<TestSystem.TimelineEvent> = []
    const events: Array<TestSystem.TimelineEvent> = []
    const delivered: Array<ClusterRun> = []
    for (let steps = 0; ; steps++) {
      if (steps >= maxSteps) {
        const impl = systemOf(system.system)!
        const pending = (yield* pendingCluster(test)).map((info) => `${info.kind} "${info.reference}"`)
        if (impl.driver.size > 0) pending.push(`${impl.driver.size} timer(s) of the system`)
        return yield* Effect.dieMessage(
          `TestCluster.runUntilIdle: still pending after ${maxSteps} steps (a periodic reminder or a cron never goes ` +
            `idle; move the clock by a duration instead): ${pending.join(", ")}`
        )
      }
      const moved = yield* step(system, test)
      if (moved === undefined) break
      fired.push(...moved.fired)
      events.push(...moved.events)
      delivered.push(...moved.delivered)
    }
    return { now: yield* nowOf, fired, events, delivered }
  })
