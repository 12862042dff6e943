/**
 * Helpers shared by the cluster tests that run runners in this process under TestClock: move the clock the way the
 * runners' storage polls need, start runners over one storage, read a schedule's history, find out whether the
 * PostgreSQL variants can run.
 */
import * as EntityAddress from "@effect/cluster/EntityAddress"
import * as EntityId from "@effect/cluster/EntityId"
import * as Envelope from "@effect/cluster/Envelope"
import * as Message from "@effect/cluster/Message"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import * as ShardId from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as Snowflake from "@effect/cluster/Snowflake"
import { Headers } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Context, DateTime, Effect, Exit, Fiber, Layer, Option, Scope, TestClock, TestServices } from "effect"
import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"

/** The PostgreSQL the pg variants use: TICKWORK_PG_URL, default the machine's local server (trust auth). */
export const pgStorage = ClusterRunner.postgres({
  url: process.env.TICKWORK_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  connectTimeout: "2 seconds"
})

/**
 * Describes `body` once per storage, under `label`: embedded SQLite (in memory), and PostgreSQL (`pgStorage`) unless
 * `pgSkip` says why it cannot run (the title then says so).
 */
export const describeStorages = (
  label: string,
  pgSkip: string | undefined,
  body: (name: "sqlite" | "pg", storage: ClusterRunner.Storage) => void
): void => {
  for (const [name, skip, storage] of [
    ["sqlite", undefined, ClusterRunner.sqlite(":memory:")],
    ["pg", pgSkip, pgStorage]
  ] as const) {
    describe.skipIf(skip !== undefined)(
      skip === undefined ? `${label}: ${name}` : `${label}: ${name} (skipped: ${skip})`,
      () => body(name, storage)
    )
  }
}

/** How many rows `table` holds in `storage`. */
export const rowCount = (
  storage: Context.Context<SqlClient.SqlClient>,
  table: string
): Effect.Effect<number, unknown> =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(table)}`
  ).pipe(
    Effect.map((rows) => Number(rows[0]!.n)),
    Effect.provide(storage)
  )

/** The tag of `effect`'s failure, or `"registered"` when it succeeds. */
export const failureTag = <A, E extends { readonly _tag: string }, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<string, never, R> =>
  Effect.map(Effect.either(effect), (result) => (result._tag === "Left" ? result.left._tag : "registered"))

/**
 * Why PostgreSQL cannot be used here, or undefined when it can. When it cannot, prints
 * "<what>: skipping <variant>: <reason>", so a skipped variant is never silent.
 */
export const pgUnavailable = async (what: string, variant: string): Promise<string | undefined> => {
  const reason = await Effect.runPromise(
    Layer.build(ClusterRunner.layerStorage(pgStorage)).pipe(
      Effect.scoped,
      Effect.match({ onFailure: (error) => error.message, onSuccess: () => undefined })
    )
  )
  if (reason !== undefined) console.log(`${what}: skipping ${variant}: ${reason}`)
  return reason
}

export const iso = (millis: number): string => DateTime.formatIso(DateTime.unsafeMake(millis))

/**
 * Moves the test clock one second at a time, so every storage poll on the way runs. With `settleMillis`, each step
 * also waits that long in real time: storage on a network socket (PostgreSQL) answers in real time, and a clock that
 * runs ahead of its answers makes runners miss polls, or wait forever on a retry the frozen clock never fires (seen
 * once in a loaded full run). In-memory SQLite answers synchronously and needs none.
 */
export const advance = (seconds: number, settleMillis = 0): Effect.Effect<void> =>
  Effect.gen(function* () {
    for (let i = 0; i < seconds; i++) {
      yield* TestClock.adjust("1 second")
      if (settleMillis > 0) yield* TestServices.provideLive(Effect.sleep(settleMillis))
    }
  })

/** Drops every table of PostgreSQL's current schema whose name starts with `<prefix>_` (a test's own tables). */
export const dropPrefixTables = (prefix: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tables = yield* sql<{ readonly table_name: string }>`
      SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_name LIKE ${`${prefix}\\_%`}`
    for (const { table_name } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(table_name)} CASCADE`
  })

let prefixes = 0
/** A table prefix no other test of any process uses: `<tag><pid>_<time>_<n>`. */
export const freshPrefix = (tag: string): string => `${tag}${process.pid}_${Date.now().toString(36)}_${++prefixes}`

/**
 * Runs `effect` while the clock moves one second (an occurrence's send waits for the storage's poll). The clock
 * moves only after a moment of real time, in which storage on a socket answers what `effect` asks before the send:
 * so `effect` reads the time before it moves, on every backend.
 */
export const meanwhile = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  move: Effect.Effect<void> = advance(1)
): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    yield* TestServices.provideLive(Effect.sleep("200 millis"))
    yield* move
    return yield* Fiber.join(fiber)
  })

/**
 * A runner without sockets over `storage`, in a scope of its own (close it to take the runner away). The scope also
 * closes with the caller's, before what the caller opened earlier (its storage): a test that fails while the runner
 * runs then reports its failure. Otherwise the storage's pool would wait at its close for the runner's shard lock
 * connection, on a timeout of the test clock, and the test would hang to vitest's timeout instead.
 */
export const startRunner = (
  storage: Context.Context<SqlClient.SqlClient>,
  port: number,
  options?: Omit<ClusterRunner.TestOptions, "storage" | "port">
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(ClusterRunner.layerTestRunner({ ...options, port }), scope).pipe(
      Effect.provide(storage)
    )
    return { port, scope, context: Context.merge(storage, context) }
  })

export type TestRunner = Effect.Effect.Success<ReturnType<typeof startRunner>>

/**
 * Moves the clock a second at a time, `settleMillis` of real time after each, until `runner` holds the shard of each
 * of `entityIds` (default group), 60 steps at most, and fails saying so after. A persisted send to a shard whose
 * assignment the runner has not learned yet waits for it, and assignments come with the clock: a test that sends
 * before they came, and moves the clock only after the send, waits forever (seen on a loaded machine).
 */
export const untilShardsHeld = (runner: TestRunner, entityIds: ReadonlyArray<string>, settleMillis: number) =>
  Effect.gen(function* () {
    const sharding = Context.get(runner.context, Sharding.Sharding)
    const held = () => entityIds.every((id) => sharding.hasShardId(sharding.getShardId(EntityId.make(id), "default")))
    for (let i = 0; i < 60 && !held(); i++) yield* advance(1, settleMillis)
    if (!held())
      return yield* Effect.dieMessage(`runner ${runner.port} holds not every shard of ${entityIds.join(", ")}`)
  })

/** The instants a schedule fired, as ISO strings, oldest first. */
export const historyOf = (reference: string) =>
  Effect.map(ClusterScheduler.history(reference, { limit: 1000 }), (entries) =>
    entries.map((entry) => DateTime.formatIso(entry.instant))
  )

/**
 * Makes storage refuse every row inserted into `table` whose `column` is `value` (a trigger, on SQLite or
 * PostgreSQL), until the scope closes.
 */
export const refuseRows = (sql: SqlClient.SqlClient, table: string, column: string, value: string) =>
  Effect.acquireRelease(
    sql.onDialectOrElse({
      pg: () =>
        Effect.zipRight(
          sql.unsafe(`CREATE FUNCTION "${table}_refuse"() RETURNS trigger LANGUAGE plpgsql AS
            'BEGIN RAISE EXCEPTION ''refused''; END'`),
          sql.unsafe(`CREATE TRIGGER "${table}_refuse" BEFORE INSERT ON "${table}" FOR EACH ROW
            WHEN (NEW.${column} = '${value}') EXECUTE FUNCTION "${table}_refuse"()`)
        ),
      orElse: () =>
        sql.unsafe(`CREATE TRIGGER "${table}_refuse" BEFORE INSERT ON "${table}"
          WHEN NEW.${column} = '${value}' BEGIN SELECT RAISE(ABORT, 'refused'); END`)
    }),
    () =>
      Effect.ignore(
        sql.onDialectOrElse({
          pg: () =>
            Effect.zipRight(
              sql.unsafe(`DROP TRIGGER IF EXISTS "${table}_refuse" ON "${table}"`),
              sql.unsafe(`DROP FUNCTION IF EXISTS "${table}_refuse"()`)
            ),
          orElse: () => sql.unsafe(`DROP TRIGGER IF EXISTS "${table}_refuse"`)
        })
      )
  )

/**
 * Saves the request a messages row (one tickwork wrote straight into `<prefix>_messages`) stands for through
 * @effect/cluster's own `MessageStorage.saveRequest`, with the same id, shard, entity, tag, headers and `payload`: a
 * test deletes the row first, then compares the row @effect/cluster writes with it.
 */
export const saveAsCluster = (
  storage: MessageStorage.MessageStorage["Type"],
  row: Record<string, unknown>,
  entity: { readonly type: string; readonly protocol: { readonly requests: ReadonlyMap<string, unknown> } },
  tag: string,
  payload: unknown
) =>
  storage.saveRequest(
    new Message.OutgoingRequest({
      envelope: Envelope.makeRequest<any>({
        requestId: Snowflake.Snowflake(row.id as string),
        address: EntityAddress.make({
          shardId: ShardId.ShardId.fromString(row.shard_id as string),
          entityType: entity.type as never,
          entityId: row.entity_id as never
        }),
        tag,
        payload,
        headers: Headers.fromInput(JSON.parse(row.headers as string))
      }),
      lastReceivedReply: Option.none(),
      rpc: entity.protocol.requests.get(tag) as never,
      context: Context.empty() as never,
      respond: () => Effect.void
    })
  )
