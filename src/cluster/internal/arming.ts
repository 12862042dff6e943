/**
 * Local arming: persisted messages with a delivery time (reminder occurrences, cluster cron instants) fire at their
 * instant instead of at @effect/cluster's next storage poll.
 *
 * @effect/cluster 0.60.2 delivers a persisted message when a runner's storage read loop finds it due; that loop runs
 * every `entityMessagePollInterval` and whenever a message is sent, so a message sent for later waits for the first
 * read after its `deliverAt`: up to a whole poll interval late. Arming adds one wake-up per due time. After each of
 * the runner's storage reads, a scan asks storage for the distinct delivery times of the pending messages of the
 * shards the runner holds, due within the arming window, and arms one timer per millisecond on a tickwork engine
 * (`TimerDriver`) of the runner's own. When a timer fires it opens the read loop (`Sharding.pollStorage`), which
 * reads what is due and delivers it the way it always does.
 *
 * So storage stays the only source of truth: an armed timer carries no message, only a time to look. A timer that
 * has nothing to find (the reminder was unregistered, the instant was handled by another runner, the shard moved
 * away) costs one read and delivers nothing. A shard that moves is armed by its new owner after its first read there
 * (acquiring a shard triggers one); a runner that dies loses only its timers, and the messages are read by the
 * shards' next owner as before. Every guarantee of delivery (at least once for a reminder, once per instant for a
 * cron, through their own checks) is the one of the read loop, which arming never bypasses.
 *
 * A message sent by another runner is armed after the read its notification triggers (with sockets) or after the
 * next poll (runners without transport); one due sooner than that is delivered by that read.
 *
 * The same idea as effect PR #6452 (a storage query for the next `deliverAt` after each read), done from outside
 * @effect/cluster by wrapping `MessageStorage.unprocessedMessages`.
 *
 * @internal
 */
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as ShardId from "@effect/cluster/ShardId"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import { isolated } from "../../internal/logContext.js"
import { TimerDriver, TimerEntry, type TimerLabel } from "../../internal/timerDriver.js"
import { booleanLiteral } from "./retention.js"

/** How many distinct due times one scan arms at most (the window holds at most one per millisecond anyway). */
const SCAN_LIMIT = 10_000

/** The arming of one runner. */
export interface Arming {
  /** `storage` with a scan after each read of unprocessed messages. */
  readonly wrap: (storage: MessageStorage.MessageStorage["Type"]) => MessageStorage.MessageStorage["Type"]
  /** Gives the arming the runner's read trigger (`Sharding.pollStorage`), once Sharding exists. */
  readonly attach: (poll: Effect.Effect<void>) => void
}

/** One due time: opens the runner's storage read loop when it fires. */
class ArmedInstant extends TimerEntry {
  constructor(
    private readonly arming: ArmingImpl,
    readonly due: number
  ) {
    super()
  }

  fire(): Effect.Effect<void> | undefined {
    this.arming.byDue.delete(this.due)
    return this.arming.poll
  }

  override label(): TimerLabel {
    return { kind: "cluster_arming", key: String(this.due), owner: undefined }
  }
}

class ArmingImpl implements Arming {
  readonly byDue = new Map<number, ArmedInstant>()
  poll: Effect.Effect<void> | undefined = undefined
  /** The shards of the last read, waiting for a scan; undefined when no scan is asked for. */
  private pendingShards: ReadonlyArray<string> | undefined = undefined
  private wakeScanner: (() => void) | undefined = undefined

  constructor(
    readonly driver: TimerDriver,
    private readonly sql: SqlClient.SqlClient,
    private readonly messagesTable: string,
    private readonly windowMillis: number
  ) {}

  readonly attach = (poll: Effect.Effect<void>): void => {
    this.poll = poll
  }

  readonly wrap = (storage: MessageStorage.MessageStorage["Type"]): MessageStorage.MessageStorage["Type"] => ({
    ...storage,
    unprocessedMessages: (shardIds) =>
      Effect.tap(storage.unprocessedMessages(shardIds), () => {
        this.requestScan(shardIds)
      })
  })

  /** Asks for a scan of `shardIds` after the current one (scans never overlap; a burst of reads makes one scan). */
  private requestScan(shardIds: Iterable<ShardId.ShardId>): void {
    this.pendingShards = Array.from(shardIds, (id) => id.toString())
    const wake = this.wakeScanner
    if (wake !== undefined) {
      this.wakeScanner = undefined
      wake()
    }
  }

  private readonly nextRequest: Effect.Effect<ReadonlyArray<string>> = Effect.async<ReadonlyArray<string>>((resume) => {
    const take = () => {
      const shards = this.pendingShards ?? []
      this.pendingShards = undefined
      resume(Effect.succeed(shards))
    }
    if (this.pendingShards !== undefined) take()
    else this.wakeScanner = take
    return Effect.sync(() => {
      this.wakeScanner = undefined
    })
  })

  /** The distinct delivery times of pending messages of `shards` in (now, now + window], earliest first. */
  private dueTimes(shards: ReadonlyArray<string>, now: number): Effect.Effect<ReadonlyArray<number>, unknown> {
    const sql = this.sql
    return Effect.map(
      sql<{ readonly deliver_at: number | string | bigint }>`
        SELECT DISTINCT deliver_at FROM ${sql(this.messagesTable)}
        WHERE ${sql.in("shard_id", shards)}
        AND processed = ${booleanLiteral(sql, false)}
        AND deliver_at > ${now} AND deliver_at <= ${now + this.windowMillis}
        ORDER BY deliver_at LIMIT ${SCAN_LIMIT}`,
      (rows) => rows.map((row) => Number(row.deliver_at))
    )
  }

  private readonly scan = (shards: ReadonlyArray<string>): Effect.Effect<void> =>
    shards.length === 0
      ? Effect.void
      : Effect.flatMap(Clock.currentTimeMillis, (now) =>
          this.dueTimes(shards, now).pipe(
            Effect.tap((times) =>
              Effect.sync(() => {
                for (const due of times) this.arm(due)
              })
            ),
            // Arming is an optimisation: the read loop's own polls still deliver what a failed scan would have armed.
            Effect.catchAllCause((cause) => Effect.logDebug("local arming: scan failed; the next read retries", cause))
          )
        )

  private arm(due: number): void {
    if (this.byDue.has(due) || this.poll === undefined) return
    const entry = new ArmedInstant(this, due)
    this.byDue.set(due, entry)
    this.driver.schedule(entry, due)
  }

  /** The scanner fiber: one scan per request, never two at once. */
  readonly scanner: Effect.Effect<never> = Effect.forever(Effect.flatMap(this.nextRequest, this.scan))
}

/**
 * The arming of a runner over `sql`, for @effect/cluster's messages table `<prefix>_messages`: its engine and scanner
 * run in the scope.
 */
export const make = (
  sql: SqlClient.SqlClient,
  prefix: string,
  windowMillis: number
): Effect.Effect<Arming, never, Scope.Scope> =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const driver = new TimerDriver(clock)
    const arming = new ArmingImpl(driver, sql.withoutTransforms(), `${prefix}_messages`, windowMillis)
    const annotate = Effect.annotateLogs({ module: "ClusterRunner", fiber: "local arming" })
    yield* Effect.forkScoped(annotate(isolated(driver.run)))
    yield* Effect.forkScoped(annotate(isolated(arming.scanner)))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        arming.byDue.clear()
        return Fiber.interruptAll(driver.close())
      })
    )
    return arming
  })
