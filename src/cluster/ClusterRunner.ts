/**
 * Runner processes: the layers that put a process into a tickwork cluster on `@effect/cluster`.
 *
 * A runner is a process. It serves its share of the cluster's shards on a TCP socket (msgpack over
 * `@effect/platform-node`), keeps persisted messages and shard locks in SQL storage shared by all runners, and
 * provides `Sharding` (what `ClusterGrain`, `Reminders` and `ClusterScheduler` need) plus the `SqlClient` itself.
 *
 * Storage is an embedded SQLite file by default (`tickwork-cluster.db` in the working directory, no set-up), or
 * PostgreSQL through `@effect/sql-pg` when you pass `ClusterRunner.postgres({ url })`. The storage is opened and
 * written to before anything else starts: when it cannot be (a missing or read-only directory, a refused
 * connection) the layer fails with `ClusterStorageUnavailable` within the connect timeout, never a defect or a hang.
 *
 * The sharding defaults here are tuned for timers rather than @effect/cluster's throughput defaults; the ones that
 * bound accuracy are in `defaultShardingConfig` and docs/cluster.md.
 *
 * @since 0.1.0
 */
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as Runners from "@effect/cluster/Runners"
import type * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import type * as SocketServer from "@effect/platform/SocketServer"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as internal from "./internal/runner.js"

/**
 * Where the runners keep persisted messages, shard locks and tickwork's tables: `sqlite(filename)` or
 * `postgres({ url })`. Every runner of one cluster must use the same storage.
 *
 * @since 0.1.0
 * @category models
 */
export type Storage = internal.Storage

/**
 * The services a runner layer provides: `Sharding` and its companions from `@effect/cluster`, the `SqlClient` of
 * the storage (for your own tables, and for `ClusterScheduler`'s transactions), and the table prefix in use.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | Sharding.Sharding
  | Runners.Runners
  | MessageStorage.MessageStorage
  | SqlClient.SqlClient
  | internal.Tables

/**
 * The table prefix of a runner: `<prefix>_messages`, `<prefix>_replies`, `<prefix>_runners`, `<prefix>_locks` are
 * @effect/cluster's, `<prefix>_tickwork_*` are tickwork's. Provided by every runner layer; defaults to `"cluster"`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const prefix = Effect.map(ClusterRunner.Tables, (tables) => tables.prefix)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export const Tables = internal.Tables

/**
 * The storage could not be opened or written at start: the message says which storage and why.
 *
 * @example
 * ```ts
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const error = new ClusterRunner.ClusterStorageUnavailable({
 *   storage: "SQLite file /missing/cluster.db",
 *   reason: "Cannot open database because the directory does not exist"
 * })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ClusterStorageUnavailable extends Data.TaggedError("ClusterStorageUnavailable")<{
  readonly storage: string
  readonly reason: string
}> {
  override get message(): string {
    return `cluster storage unavailable (${this.storage}): ${this.reason}`
  }
}

/**
 * A runner option was invalid; `issues` names each bad option.
 *
 * @example
 * ```ts
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const error = new ClusterRunner.InvalidClusterRunnerOptions({ issues: ["port: 70000 is not an integer in 1-65535"] })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidClusterRunnerOptions extends Data.TaggedError("InvalidClusterRunnerOptions")<{
  readonly issues: ReadonlyArray<string>
}> {
  override get message(): string {
    return `invalid cluster runner options: ${this.issues.join("; ")}`
  }
}

/**
 * Any error a runner layer fails with at start (besides the socket server's own `SocketServerError`, e.g. a port
 * already in use).
 *
 * @since 0.1.0
 * @category errors
 */
export type ClusterRunnerError = ClusterStorageUnavailable | InvalidClusterRunnerOptions

/**
 * Embedded SQLite storage in one file, shared by every runner on the machine; the default is
 * `tickwork-cluster.db` in the working directory. `":memory:"` gives a private in-memory database (tests).
 * `busyTimeout` (default 5 seconds) is how long a statement waits for another process's write lock; better-sqlite3
 * waits synchronously, so it also bounds how long a busy file can stall a runner's event loop.
 *
 * @example
 * ```ts
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const storage = ClusterRunner.sqlite("/var/lib/myapp/cluster.db")
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const sqlite = (
  filename = "tickwork-cluster.db",
  options?: { readonly busyTimeout?: Duration.DurationInput }
): Storage => ({
  _tag: "Sqlite",
  filename,
  busyTimeoutMillis: options?.busyTimeout === undefined ? 5000 : Duration.toMillis(options.busyTimeout)
})

/**
 * PostgreSQL storage through `@effect/sql-pg`. `connectTimeout` (default 5 seconds) bounds how long a runner waits
 * for the first connection before failing with `ClusterStorageUnavailable`.
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const storage = ClusterRunner.postgres({ url: Redacted.make("postgres://app@db.internal:5432/app") })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const postgres = (options: {
  readonly url: string | Redacted.Redacted<string>
  readonly connectTimeout?: Duration.DurationInput
  readonly maxConnections?: number
}): Storage => ({
  _tag: "Postgres",
  url: Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url),
  connectTimeoutMillis: options.connectTimeout === undefined ? 5000 : Duration.toMillis(options.connectTimeout),
  maxConnections: options.maxConnections
})

/**
 * The sharding settings tickwork uses unless you override them (all other fields are @effect/cluster's defaults).
 * The ones that bound timer accuracy:
 *
 * | setting | value | what it bounds |
 * | --- | --- | --- |
 * | `entityMessagePollInterval` | 1 second | lateness of a persisted message that comes due (cron instants, reminders): each runner reads due messages from storage this often |
 * | `shardLockExpiration` | 10 seconds | how long the shards of a runner that died without shutting down stay unserved |
 * | `shardLockRefreshInterval` | 3 seconds | how often a runner renews its locks (at most a third of the expiration) |
 * | `refreshAssignmentsInterval` | 1 second | how soon runners see one join or leave |
 * | `runnerHealthCheckInterval` | 5 seconds | how often runners ping each other to spot a dead one early |
 * | `entityTerminationTimeout` | 10 seconds | how long shutdown waits for running handlers |
 *
 * And `preemptiveShutdown: false`: with @effect/cluster's default (true), closing the scope of any one entity
 * registration (a `ClusterScheduler.scheduleWithCron` scope, a `ClusterGrain.layer`) shuts the whole runner's
 * `Sharding` down, silently stopping every other schedule and grain on it. Here the runner stops when its own layer
 * does.
 *
 * @example
 * ```ts
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * console.log(ClusterRunner.defaultShardingConfig.entityMessagePollInterval) // "1 second"
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultShardingConfig: Readonly<Partial<ShardingConfig.ShardingConfig["Type"]>> = {
  entityMessagePollInterval: "1 second",
  shardLockExpiration: "10 seconds",
  shardLockRefreshInterval: "3 seconds",
  refreshAssignmentsInterval: "1 second",
  runnerHealthCheckInterval: "5 seconds",
  entityTerminationTimeout: "10 seconds",
  preemptiveShutdown: false
}

/**
 * Options of `layer`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Default: `sqlite()`, the file `tickwork-cluster.db` in the working directory. */
  readonly storage?: Storage
  /** The host other runners reach this one at (default `"127.0.0.1"`). */
  readonly host?: string
  /** The TCP port this runner listens on and other runners reach it at (default 34431). One per runner. */
  readonly port?: number
  /**
   * Prefix of every table (default `"cluster"`); runners of one cluster must agree on it. Several clusters can share
   * one database under different prefixes; with PostgreSQL a prefix other than the default also turns off advisory
   * shard locks (`shardLockDisableAdvisory`), whose numbers @effect/cluster does not derive from the prefix.
   */
  readonly tablePrefix?: string
  /** Overrides of `defaultShardingConfig` and @effect/cluster's other settings (`shardsPerGroup`, ...). */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Type"]>
  /**
   * Local arming (on by default): reminder occurrences and cron instants due within `window` (default twice
   * `entityMessagePollInterval`, 2 seconds; at least the poll interval) are armed on a tickwork timer engine of this
   * runner, which reads storage at their instant, so they are delivered then rather than at the next storage poll.
   * Storage stays the source of truth (docs/cluster.md, "Local arming"). `false` turns it off: delivery then waits
   * for the next poll, as with plain @effect/cluster.
   */
  readonly localArming?: false | { readonly window?: Duration.DurationInput }
  /**
   * How long the rows of a processed message (a delivered reminder occurrence, a handled cron instant, an answered
   * tell or ask) stay in `<prefix>_messages` and `<prefix>_replies` after its final reply (default 1 hour, at least
   * 1 minute); every runner sweeps them away in batches. Pending messages are never touched. `false` keeps them
   * forever, as plain @effect/cluster does.
   */
  readonly retention?: false | Duration.DurationInput
  /**
   * At most this many persisted requests (reminder occurrences, cron instants, persisted grain messages) read from
   * storage and not yet answered on this runner at once (default 1,024). A read takes what is left under the limit,
   * the oldest first, and the next follows as answers come, so a runner restarted over a backlog (100,000 overdue
   * reminders) delivers it in pages instead of making an entity for every message at once. A request unanswered
   * after 30 seconds stops counting, so long handlers slow the pages after them but never stop them. `false` reads
   * everything due at once, as plain @effect/cluster does (docs/cluster.md, "Backlog").
   */
  readonly readLimit?: false | number
}

const TABLE_PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/

/** The default of `Options.retention`. */
const DEFAULT_RETENTION_MILLIS = 60 * 60 * 1000

/** The retention period in millis (undefined: kept forever), or an issue when the option is bad. */
const retentionPeriod = (retention: Options["retention"], issues: Array<string>): number | undefined => {
  if (retention === false) return undefined
  if (retention === undefined) return DEFAULT_RETENTION_MILLIS
  const decoded = Duration.decodeUnknown(retention)
  if (Option.isNone(decoded) || !Duration.isFinite(decoded.value) || Duration.toMillis(decoded.value) < 60_000) {
    issues.push(`retention: ${String(retention)} is not a finite duration of at least 1 minute`)
    return undefined
  }
  return Duration.toMillis(decoded.value)
}

/** The default of `Options.readLimit`. */
const DEFAULT_READ_LIMIT = 1024

/** The read limit (undefined: none), or an issue when the option is bad. */
const readLimitOf = (readLimit: Options["readLimit"], issues: Array<string>): number | undefined => {
  if (readLimit === false) return undefined
  if (readLimit === undefined) return DEFAULT_READ_LIMIT
  if (!Number.isSafeInteger(readLimit) || readLimit < 1) {
    issues.push(`readLimit: ${String(readLimit)} is not a positive integer (or false)`)
    return undefined
  }
  return readLimit
}

/** The local arming window in millis (undefined: off), or an issue when the option is bad. */
const armingWindow = (
  localArming: Options["localArming"],
  pollInterval: Duration.DurationInput,
  issues: Array<string>
): number | undefined => {
  if (localArming === false) return undefined
  const poll = Duration.decodeUnknown(pollInterval)
  const pollMillis = Option.isSome(poll) && Duration.isFinite(poll.value) ? Duration.toMillis(poll.value) : 1_000
  if (localArming === undefined || localArming.window === undefined) return Math.max(2 * pollMillis, 1)
  const window = Duration.decodeUnknown(localArming.window)
  if (Option.isNone(window) || !Duration.isFinite(window.value) || Duration.toMillis(window.value) < pollMillis) {
    issues.push(
      `localArming.window: ${String(localArming.window)} is not a finite duration of at least ` +
        `entityMessagePollInterval (${pollMillis} ms)`
    )
    return undefined
  }
  return Duration.toMillis(window.value)
}

const validate = (options: Options | undefined) =>
  Effect.suspend(() => {
    const issues: Array<string> = []
    const host = options?.host ?? "127.0.0.1"
    const port = options?.port ?? 34431
    const prefix = options?.tablePrefix ?? "cluster"
    const storage = options?.storage ?? sqlite()
    if (typeof host !== "string" || host.trim() === "") issues.push(`host: ${JSON.stringify(host)} is empty`)
    if (!Number.isInteger(port) || port < 1 || port > 65535) issues.push(`port: ${port} is not an integer in 1-65535`)
    if (!TABLE_PREFIX.test(prefix)) {
      issues.push(`tablePrefix: ${JSON.stringify(prefix)} must be a letter or _ then up to 39 letters, digits or _`)
    }
    if (storage._tag === "Sqlite") {
      if (storage.filename === "") issues.push("storage: the SQLite file name is empty")
      if (!(storage.busyTimeoutMillis >= 0)) issues.push(`storage: busyTimeout ${storage.busyTimeoutMillis} ms`)
    } else if (!(storage.connectTimeoutMillis > 0)) {
      issues.push(`storage: connectTimeout ${storage.connectTimeoutMillis} ms is not positive`)
    }
    const shardsPerGroup = options?.shardingConfig?.shardsPerGroup
    if (shardsPerGroup !== undefined && !(Number.isInteger(shardsPerGroup) && shardsPerGroup > 0)) {
      issues.push(`shardingConfig.shardsPerGroup: ${shardsPerGroup} is not a positive integer`)
    }
    const pollInterval =
      options?.shardingConfig?.entityMessagePollInterval ?? defaultShardingConfig.entityMessagePollInterval!
    const armingWindowMillis = armingWindow(options?.localArming, pollInterval, issues)
    const retentionMillis = retentionPeriod(options?.retention, issues)
    const readLimit = readLimitOf(options?.readLimit, issues)
    if (issues.length > 0) return Effect.fail(new InvalidClusterRunnerOptions({ issues }))
    const config: ShardingConfig.ShardingConfig["Type"] = {
      ...ShardingConfig.defaults,
      ...defaultShardingConfig,
      runnerAddress: internal.runnerAddress(host, port),
      ...options?.shardingConfig
    }
    const advisoryLocks = options?.shardingConfig?.shardLockDisableAdvisory === undefined ? "auto" : "as configured"
    return Effect.succeed({
      storage,
      prefix,
      config,
      advisoryLocks,
      armingWindowMillis,
      retentionMillis,
      readLimit
    } as const)
  })

const unavailable = (storage: Storage) => (reason: string) =>
  new ClusterStorageUnavailable({ storage: internal.describeStorage(storage), reason })

/**
 * The `SqlClient` of a storage, opened and proven writable; fails with `ClusterStorageUnavailable` otherwise.
 * `layer` and `layerTest` include it; use it alone to share one storage between several `layerTestRunner`s.
 *
 * @example
 * ```ts
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const SqlLive = ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:"))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStorage = (
  storage: Storage = sqlite()
): Layer.Layer<SqlClient.SqlClient, ClusterStorageUnavailable> => internal.layerSqlClient(storage, unavailable(storage))

/**
 * A runner process: listens on `host:port`, shares `storage` with the other runners, and provides `Sharding`, the
 * `SqlClient` and the table prefix. Start one per process (each with its own port); register your grains and
 * schedules on top of it.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"
 *
 * const Report = ClusterScheduler.layer("0 0 6 * * ?", Effect.log("daily report"), ClusterScheduler.withTimerReference("report"))
 *
 * const Runner = ClusterRunner.layer({ port: 34431, storage: ClusterRunner.sqlite("cluster.db") })
 *
 * // NodeRuntime.runMain(Layer.launch(Report.pipe(Layer.provide(Runner))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Services, ClusterRunnerError | SocketServer.SocketServerError> =>
  Layer.unwrapEffect(
    Effect.map(validate(options), ({ storage, ...runner }) =>
      internal
        .layerSocketRunner({ ...runner, onUnavailable: unavailable(storage) })
        .pipe(Layer.provideMerge(layerStorage(storage)))
    )
  )

/**
 * Options of `layerTest` and `layerTestRunner`.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestOptions {
  /** Default `sqlite(":memory:")` (for `layerTest`; `layerTestRunner` takes the storage from its `SqlClient`). */
  readonly storage?: Storage
  /** Identifies the runner among several over one storage (default 1); no socket is opened. */
  readonly port?: number
  /** Default `"cluster"`. */
  readonly tablePrefix?: string
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Type"]>
  /** As `Options.localArming`: on by default, `false` turns it off. */
  readonly localArming?: false | { readonly window?: Duration.DurationInput }
  /** As `Options.retention`: 1 hour by default, `false` keeps processed messages forever. */
  readonly retention?: false | Duration.DurationInput
  /** As `Options.readLimit`: 1,024 by default, `false` reads everything due at once. */
  readonly readLimit?: false | number
}

/**
 * A runner without sockets, over the `SqlClient` in context. Several of them over one storage act as the runners of
 * one cluster for persisted messages (cron instants, reminders), in one process, driven by `TestClock`: close one's
 * scope to take that runner away. Health checks always pass and non-persisted messages to another runner fail, so
 * use `layer` for anything about the network.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { ClusterRunner } from "tickwork/cluster"
 *
 * const Storage = ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:"))
 * const RunnerA = ClusterRunner.layerTestRunner({ port: 1 }).pipe(Layer.provide(Storage))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerTestRunner = (
  options?: Omit<TestOptions, "storage">
): Layer.Layer<Exclude<Services, SqlClient.SqlClient>, ClusterRunnerError, SqlClient.SqlClient> =>
  Layer.unwrapEffect(
    Effect.map(validate({ ...options, port: options?.port ?? 1, host: "test-runner" }), ({ storage, ...runner }) =>
      internal.layerLocalRunner({ ...runner, onUnavailable: unavailable(storage) })
    )
  )

/**
 * A single runner in this process over an in-memory SQLite database (or `storage`), for tests with `TestClock`:
 * persisted messages come due as the clock is adjusted (at most `entityMessagePollInterval`, 1 second, late).
 *
 * @example
 * ```ts
 * import { Effect, TestClock } from "effect"
 * import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"
 *
 * const test = Effect.gen(function* () {
 *   yield* ClusterScheduler.scheduleWithCron("0 * * * * ?", Effect.log("tick"), ClusterScheduler.withTimerReference("t"))
 *   yield* TestClock.adjust("2 minutes")
 * }).pipe(Effect.scoped, Effect.provide(ClusterRunner.layerTest()))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerTest = (options?: TestOptions): Layer.Layer<Services, ClusterRunnerError> => {
  const storage = options?.storage ?? sqlite(":memory:")
  const { storage: _, ...runner } = options ?? {}
  return layerTestRunner(runner).pipe(Layer.provideMerge(layerStorage(storage)))
}
