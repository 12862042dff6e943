/**
 * The layers behind `ClusterRunner`: storage (SQLite file or PostgreSQL) checked before anything else starts, then
 * @effect/cluster's socket runner on top of SQL message and runner storage, or a runner without transport for tests.
 *
 * @internal
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as Runners from "@effect/cluster/Runners"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as Reactivity from "@effect/experimental/Reactivity"
import type * as SocketServer from "@effect/platform/SocketServer"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Arming from "./arming.js"
import * as ReadLimit from "./readLimit.js"
import * as Retention from "./retention.js"

/** Where a runner keeps its messages, shard locks and tickwork's own tables. */
export type Storage =
  | { readonly _tag: "Sqlite"; readonly filename: string; readonly busyTimeoutMillis: number }
  | {
      readonly _tag: "Postgres"
      readonly url: Redacted.Redacted<string>
      readonly connectTimeoutMillis: number
      readonly maxConnections: number | undefined
    }

export interface TablesService {
  /** Prefix of every table: @effect/cluster's (`<prefix>_messages`, ...) and tickwork's (`<prefix>_tickwork_...`). */
  readonly prefix: string
}

/** The table prefix a runner uses, so tickwork's modules create their tables beside @effect/cluster's. */
export class Tables extends Context.Reference<Tables>()("tickwork/cluster/ClusterRunner/Tables", {
  defaultValue: (): TablesService => ({ prefix: "cluster" })
}) {}

/**
 * Creates tickwork's own tables (`CREATE TABLE IF NOT EXISTS`). Runners starting together race on it in PostgreSQL (a
 * unique violation in pg_type): it is tried again a few times.
 */
export const createTables = <A, E, R>(create: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(create, { times: 5, schedule: Schedule.spaced("200 millis") })

export const describeStorage = (storage: Storage): string => {
  if (storage._tag === "Sqlite") return `SQLite file ${storage.filename}`
  // Never print a password: keep the URL's scheme, host, port and database only.
  const url = Redacted.value(storage.url)
  try {
    const parsed = new URL(url)
    return `PostgreSQL ${parsed.host}${parsed.pathname}`
  } catch {
    return "PostgreSQL (unparsable URL)"
  }
}

/** The reason a storage failed to open, from the error or defect that said so. */
export const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const inner = (error as { readonly cause?: unknown })?.cause
  const pick = (u: unknown): string | undefined =>
    u instanceof Error ? u.message : typeof u === "string" ? u : undefined
  const outer = pick(error)
  const detail = pick(inner)
  if (outer !== undefined && detail !== undefined && detail !== "" && !outer.includes(detail)) {
    return `${outer}: ${detail}`
  }
  return detail !== undefined && detail !== "" ? detail : (outer ?? String(error))
}

/**
 * Opens the SQL client and proves it can write, or fails with `onUnavailable(reason)`. SQLite's constructor throws
 * (a defect in @effect/sql-sqlite-node) for a missing directory, so defects are turned into the typed error too.
 */
export const makeSqlClient = <E>(
  storage: Storage,
  onUnavailable: (reason: string) => E
): Effect.Effect<SqlClient.SqlClient, E, Scope.Scope> => {
  const open: Effect.Effect<SqlClient.SqlClient, unknown, Scope.Scope> =
    storage._tag === "Sqlite"
      ? Effect.tap(Effect.provide(SqliteClient.make({ filename: storage.filename }), Reactivity.layer), (sql) =>
          // Checks that the file is writable (journal files included) and sets how long a statement waits for
          // another process's write lock. better-sqlite3 waits synchronously, so this also bounds event-loop stalls.
          Effect.zipRight(
            sql.unsafe(`PRAGMA busy_timeout = ${storage.busyTimeoutMillis}`).raw,
            sql.unsafe("BEGIN IMMEDIATE").raw.pipe(Effect.zipRight(sql.unsafe("ROLLBACK").raw))
          )
        )
      : Effect.provide(
          PgClient.make({
            url: storage.url,
            connectTimeout: Duration.millis(storage.connectTimeoutMillis),
            ...(storage.maxConnections === undefined ? {} : { maxConnections: storage.maxConnections })
          }),
          Reactivity.layer
        )
  return open.pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.fail(onUnavailable(reasonOf(cause)))
    )
  )
}

export const layerSqlClient = <E>(
  storage: Storage,
  onUnavailable: (reason: string) => E
): Layer.Layer<SqlClient.SqlClient, E> => Layer.scoped(SqlClient.SqlClient, makeSqlClient(storage, onUnavailable))

/**
 * On SQLite, makes the shard lock refresh run on the runner's connection directly instead of queueing for it.
 *
 * better-sqlite3 gives a runner one connection, and @effect/sql-sqlite-node lends it to one transaction at a time: a
 * statement of another fiber waits until the transaction ends. A cluster cron's instant holds a transaction for the
 * whole of its `execute`, so a refresh started meanwhile waited too; @effect/cluster gives a refresh the lock interval
 * (`shardLockRefreshInterval`, at most a third of `shardLockExpiration`), then takes the lock storage as unhealthy and
 * interrupts every entity of the runner: the instant was rolled back and ran again, or never completed.
 *
 * The connection is synchronous, so the refresh's statements (two UPDATEs, no transaction of their own) run whole
 * when their fiber runs: outside a transaction they commit at once; inside one (the cron's, or any other on that
 * connection) they commit with it. That transaction holds the file's write lock, so no other runner can take the
 * shards meanwhile; if it is rolled back, the refresh is lost with it and the next one (an interval later) writes.
 */
const refreshOnConnection = (
  storage: RunnerStorage.RunnerStorage["Type"],
  sql: SqlClient.SqlClient
): Effect.Effect<RunnerStorage.RunnerStorage["Type"]> =>
  sql.onDialectOrElse({
    sqlite: () =>
      // The connection object is the client's for its whole life; reserving it once only tells us which it is.
      Effect.map(Effect.scoped(sql.reserve), (connection): RunnerStorage.RunnerStorage["Type"] => ({
        ...storage,
        refresh: (address, shardIds) =>
          Effect.provideService(storage.refresh(address, shardIds), SqlClient.TransactionConnection, [connection, 0])
      })).pipe(Effect.orDie),
    orElse: () => Effect.succeed(storage)
  })

/**
 * @effect/cluster's SQL message and runner storage under `prefix`. Their migrations die on failure; after the probe
 * in `layerSqlClient` that means the storage went away while starting, reported as the same typed error. On SQLite
 * the shard lock refresh runs on the connection directly (`refreshOnConnection`). The message storage is given through
 * `wrap` (tickwork's read limit and local arming, `withRunnerServices`).
 */
export const layerClusterStorage = <E>(
  prefix: string,
  onUnavailable: (reason: string) => E,
  wrap: StorageWrap
): Layer.Layer<
  MessageStorage.MessageStorage | RunnerStorage.RunnerStorage,
  E,
  SqlClient.SqlClient | ShardingConfig.ShardingConfig
> =>
  Layer.merge(SqlMessageStorage.layerWith({ prefix }), SqlRunnerStorage.layerWith({ prefix })).pipe(
    Layer.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Layer.failCause(cause as Cause.Cause<never>)
        : Layer.fail(onUnavailable(reasonOf(cause)))
    ),
    Layer.map((context) =>
      Context.add(context, MessageStorage.MessageStorage, wrap(Context.get(context, MessageStorage.MessageStorage)))
    ),
    Layer.flatMap((context) =>
      Layer.effectContext(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.map(refreshOnConnection(Context.get(context, RunnerStorage.RunnerStorage), sql), (runners) =>
            Context.add(context, RunnerStorage.RunnerStorage, runners)
          )
        )
      )
    )
  )

/** What tickwork wraps @effect/cluster's message storage with (the read limit, then local arming). */
type StorageWrap = (storage: MessageStorage.MessageStorage["Type"]) => MessageStorage.MessageStorage["Type"]

/**
 * A runner's layers with what tickwork adds to @effect/cluster's: the read limit and batched replies
 * (`readLimit.ts`), local arming (`arming.ts`) when `armingWindowMillis` is set (the messages storage is wrapped by
 * both, and both are given the read trigger of the runner's `Sharding`), and the retention sweeper (`retention.ts`)
 * when `retentionMillis` is.
 */
const withRunnerServices = <E, R>(
  options: RunnerOptions,
  runner: (wrap: StorageWrap) => Layer.Layer<ClusterServices, E, R>
): Layer.Layer<ClusterServices, E, R | SqlClient.SqlClient> =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const scope = yield* Effect.scope
      const limit = yield* ReadLimit.make(sql, options.prefix, options.readLimit)
      const arming =
        options.armingWindowMillis === undefined
          ? undefined
          : yield* Arming.make(sql, options.prefix, options.armingWindowMillis)
      const wrap: StorageWrap = (storage) => {
        const limited = limit.wrap(storage)
        return arming === undefined ? limited : arming.wrap(limited)
      }
      const retentionMillis = options.retentionMillis
      return runner(wrap).pipe(
        Layer.tap((context) =>
          Effect.gen(function* () {
            const poll = Context.get(context, Sharding.Sharding).pollStorage
            limit.attach(poll)
            arming?.attach(poll)
            if (retentionMillis === undefined) return
            // After the runner: its storage has created the tables the sweeper indexes. A storage that fails
            // here delays retention (retried every minute), never the runner.
            const sweeper = Retention.make(sql, options.prefix, retentionMillis).pipe(
              Effect.tapErrorCause((cause) =>
                Effect.logWarning("retention: could not prepare the sweeper, retrying in a minute", cause)
              ),
              Effect.retry(Schedule.spaced("1 minute"))
            )
            yield* Effect.forkIn(
              Effect.flatMap(sweeper, (ready) => ready.run).pipe(
                Effect.annotateLogs({ module: "ClusterRunner", fiber: "retention" })
              ),
              scope
            )
          })
        )
      )
    })
  )

/**
 * The runner's sharding config. @effect/cluster 0.60.2 numbers its PostgreSQL advisory locks by shard only, not by
 * table prefix, so two clusters in one database under different prefixes would take each other's locks: unless the
 * user chose, a non-default prefix on PostgreSQL uses lock rows in the prefixed table instead.
 */
const layerShardingConfig = (options: RunnerOptions) =>
  Layer.effect(
    ShardingConfig.ShardingConfig,
    Effect.map(SqlClient.SqlClient, (sql) =>
      options.advisoryLocks === "auto" &&
      options.prefix !== "cluster" &&
      sql.onDialectOrElse({ pg: () => true, orElse: () => false })
        ? { ...options.config, shardLockDisableAdvisory: true }
        : options.config
    )
  )

export interface RunnerOptions {
  readonly config: ShardingConfig.ShardingConfig["Type"]
  readonly prefix: string
  readonly advisoryLocks: "auto" | "as configured"
  /** The local arming window; undefined turns local arming off. */
  readonly armingWindowMillis: number | undefined
  /** How long processed messages are kept; undefined keeps them forever. */
  readonly retentionMillis: number | undefined
  /** At most this many persisted requests read and not answered; undefined reads everything due at once. */
  readonly readLimit: number | undefined
}

/**
 * The scope of each runner built here, by its `Sharding`: cluster crons register their entity there, so that a
 * registration whose own scope closed can be made again on the same runner (@effect/cluster keeps an entity type
 * registered on a runner for good).
 */
export const runnerScopes = new WeakMap<object, Scope.Scope>()

/**
 * What tickwork knows of the message storage of each runner built here, by its `Sharding`: @effect/cluster's
 * `SqlMessageStorage` under `prefix` over `sql`, whose reads run every `pollMillis`. Cluster crons write their next
 * instant straight into its messages table when they share that `SqlClient` (`occurrenceSql.ts`); reminders scan the
 * shards of its groups on its poll and arming window (`reminderDispatch.ts`).
 */
export interface RunnerMessageStorage {
  readonly sql: SqlClient.SqlClient
  readonly prefix: string
  readonly pollMillis: number
  /** The shard groups the runner is assigned, and the shards in each: what reminders' dispatcher scans. */
  readonly shardGroups: ReadonlyArray<string>
  readonly shardsPerGroup: number
  /** Local arming's window; undefined when it is off (reminders are then delivered by the poll's scan, as messages). */
  readonly armingWindowMillis: number | undefined
}

export const runnerStorages = new WeakMap<object, RunnerMessageStorage>()

/** Records the runner's scope and storage; built after `Sharding`, so closed before it. */
const layerRunnerScope = (options: RunnerOptions) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const sharding = yield* Sharding.Sharding
      const scope = yield* Effect.scope
      runnerScopes.set(sharding, scope)
      const sql = yield* SqlClient.SqlClient
      const poll = Duration.decodeUnknown(options.config.entityMessagePollInterval)
      runnerStorages.set(sharding, {
        sql,
        prefix: options.prefix,
        pollMillis: Option.isSome(poll) && Duration.isFinite(poll.value) ? Duration.toMillis(poll.value) : 1_000,
        shardGroups: options.config.assignedShardGroups,
        shardsPerGroup: options.config.shardsPerGroup,
        armingWindowMillis: options.armingWindowMillis
      })
    })
  )

export type ClusterServices = Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage | Tables

/** A runner process: the socket transport (msgpack), ping health checks and SQL storage. */
export const layerSocketRunner = <E>(
  options: RunnerOptions & { readonly onUnavailable: (reason: string) => E }
): Layer.Layer<ClusterServices, E | SocketServer.SocketServerError, SqlClient.SqlClient> => {
  const config = layerShardingConfig(options)
  const transport = Layer.provide(SocketRunner.layer, [
    NodeClusterSocket.layerSocketServer,
    NodeClusterSocket.layerClientProtocol
  ])
  const health = RunnerHealth.layerPing.pipe(
    Layer.provide(Runners.layerRpc),
    Layer.provide(NodeClusterSocket.layerClientProtocol)
  )
  return withRunnerServices(
    options,
    (wrap) =>
      layerRunnerScope(options).pipe(
        Layer.provideMerge(transport),
        Layer.provide(health),
        Layer.provideMerge(layerClusterStorage(options.prefix, options.onUnavailable, wrap)),
        Layer.provide(config),
        Layer.provide(RpcSerialization.layerMsgPack),
        Layer.provideMerge(Layer.succeed(Tables, { prefix: options.prefix }))
      ) as Layer.Layer<ClusterServices, E | SocketServer.SocketServerError, SqlClient.SqlClient>
  )
}

/**
 * A runner without transport, for tests in one process: persisted messages still go through SQL storage, so several
 * of these over one SQL client behave as runners of one cluster for persisted traffic; health checks always pass.
 */
export const layerLocalRunner = <E>(
  options: RunnerOptions & { readonly onUnavailable: (reason: string) => E }
): Layer.Layer<ClusterServices, E, SqlClient.SqlClient> =>
  withRunnerServices(
    options,
    (wrap) =>
      layerRunnerScope(options).pipe(
        Layer.provideMerge(Sharding.layer),
        Layer.provideMerge(Runners.layerNoop),
        Layer.provideMerge(layerClusterStorage(options.prefix, options.onUnavailable, wrap)),
        Layer.provide(RunnerHealth.layerNoop),
        Layer.provide(layerShardingConfig(options)),
        Layer.provideMerge(Layer.succeed(Tables, { prefix: options.prefix }))
      ) as Layer.Layer<ClusterServices, E, SqlClient.SqlClient>
  )

export const runnerAddress = (host: string, port: number): Option.Option<RunnerAddress.RunnerAddress> =>
  Option.some(RunnerAddress.make(host, port))
