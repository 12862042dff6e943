/**
 * Local arming: persisted messages with a delivery time (reminder occurrences, cluster cron instants) fire at their
 * instant instead of at @effect/cluster's next storage poll.
 *
 * @effect/cluster 0.60.2 delivers a persisted message when a runner's storage read loop finds it due; that loop runs
 * every `entityMessagePollInterval` and whenever a message is sent, so a message sent for later waits for the first
 * read after its `deliverAt`: up to a whole poll interval late. Arming adds one wake-up per due millisecond. After each of
 * the runner's storage reads, a scan asks storage for the distinct delivery times of the pending messages of the
 * shards the runner holds, due within the arming window (at most `SCAN_LIMIT`), and adds them to the armed due times:
 * a sorted typed array of distinct milliseconds (`DueTimes`, 8 bytes each), so a time armed twice is held once and a
 * scan that finds nothing new adds nothing. One timer on a tickwork engine of the runner's own (`TimerDriver`) is
 * armed at the earliest of them; when it fires it drops every time due by then, opens the read loop once
 * (`Sharding.pollStorage`), which reads what is due and delivers it the way it always does, and re-arms at the next.
 *
 * So storage stays the only source of truth: an armed time carries no message, only a time to look. A time that
 * has nothing to find (the reminder was unregistered, the instant was handled by another runner, the shard moved
 * away) costs one read and delivers nothing. A scan that fails arms nothing (the next read scans again); scans never
 * overlap. A shard that moves is armed by its new owner after its first read there (acquiring a shard triggers
 * one); a runner that dies loses only its armed times (the scope's finalizer drops them and closes the engine), and
 * the messages are read by the shards' next owner as before. Every guarantee of delivery (at least once for a reminder, once per instant for a
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

/** The smallest buffer `DueTimes` keeps (and keeps while empty); a larger one is released once it fired. */
const MIN_CAPACITY = 64

const EMPTY = new Float64Array(0)

/**
 * The armed due times: sorted, distinct epoch millis in a typed array (8 bytes each), `times[head, tail)`. Firing
 * moves `head`; a scan's times are merged in (skipping those already held), in place when they fit (moved to the
 * front first when they fit only there), else into a new buffer of the power of two at or above what is then held
 * (so it doubles at least). A buffer three quarters empty after firing is swapped for one of the power of two at or
 * above what is left, and an empty one larger than `MIN_CAPACITY` is released: the buffer holds less than four times
 * what is armed (or `MIN_CAPACITY`), at 8 bytes a time.
 */
export class DueTimes {
  private times: Float64Array = EMPTY
  private head = 0
  private tail = 0

  /** How many due times are held. */
  get size(): number {
    return this.tail - this.head
  }

  /** How many due times the buffer holds before it grows (its length). */
  get capacity(): number {
    return this.times.length
  }

  /** The earliest due time held, or undefined. */
  first(): number | undefined {
    return this.head < this.tail ? this.times[this.head] : undefined
  }

  /** The due times held, earliest first (a copy). */
  toArray(): Array<number> {
    return Array.from(this.times.subarray(this.head, this.tail))
  }

  /**
   * Adds `incoming` (a scan's times: earliest first and distinct, as the scan query returns them; anything else is
   * sorted, and a time that is not finite is skipped). A time already held, or given twice, is held once. Returns
   * how many were new.
   */
  merge(incoming: ArrayLike<number>): number {
    const sorted = sortedFinite(incoming)
    const times = this.times
    const n = sorted.length
    // How many are new: one pass over both, earliest first.
    let count = 0
    let i = this.head
    for (let j = 0; j < n; j++) {
      const x = sorted[j]!
      if (j > 0 && x === sorted[j - 1]) continue
      while (i < this.tail && times[i]! < x) i++
      if (i < this.tail && times[i] === x) continue
      count++
    }
    if (count === 0) return 0
    const size = this.size
    let target = times
    if (this.head + size + count > times.length) {
      if (size + count <= times.length) {
        times.copyWithin(0, this.head, this.tail)
      } else {
        target = new Float64Array(capacityFor(size + count))
        target.set(times.subarray(this.head, this.tail))
      }
      this.times = target
      this.head = 0
      this.tail = size
    }
    // From the end backwards, in place: a write never lands on a held time not yet moved (k - i is the new times
    // still to write, never negative).
    const base = this.head
    let k = base + size + count - 1
    const end = k
    i = this.tail - 1
    for (let j = n - 1; j >= 0; j--) {
      const x = sorted[j]!
      while (i >= base && target[i]! > x) target[k--] = target[i--]!
      if (i >= base && target[i] === x) continue
      if (k < end && target[k + 1] === x) continue
      target[k--] = x
    }
    this.tail = base + size + count
    return count
  }

  /** Drops every due time at or before `now`; returns how many. */
  dropThrough(now: number): number {
    const times = this.times
    const from = this.head
    while (this.head < this.tail && times[this.head]! <= now) this.head++
    const dropped = this.head - from
    if (dropped > 0) this.shrink()
    return dropped
  }

  /** Drops every due time and the buffer. */
  clear(): void {
    this.times = EMPTY
    this.head = 0
    this.tail = 0
  }

  /** After firing: an empty buffer is released (or reset), one three quarters empty swapped for a smaller one. */
  private shrink(): void {
    const size = this.size
    if (size === 0) {
      this.head = 0
      this.tail = 0
      if (this.times.length > MIN_CAPACITY) this.times = EMPTY
    } else if (this.times.length > MIN_CAPACITY && size * 4 <= this.times.length) {
      const smaller = new Float64Array(capacityFor(size))
      smaller.set(this.times.subarray(this.head, this.tail))
      this.times = smaller
      this.head = 0
      this.tail = size
    }
  }
}

/** The buffer length for `size` times: the power of two at or above `size`, at least `MIN_CAPACITY`. */
const capacityFor = (size: number): number => Math.max(MIN_CAPACITY, 2 ** Math.ceil(Math.log2(size)))

/** `times` when it is already ascending and finite; else its finite times, sorted. */
const sortedFinite = (times: ArrayLike<number>): ArrayLike<number> => {
  for (let j = 0; j < times.length; j++) {
    const x = times[j]!
    if (!Number.isFinite(x) || (j > 0 && x < times[j - 1]!)) {
      return Float64Array.from(Array.prototype.filter.call(times, Number.isFinite) as Array<number>).sort()
    }
  }
  return times
}

/** The arming of one runner. */
export interface Arming {
  /** `storage` with a scan after each read of unprocessed messages. */
  readonly wrap: (storage: MessageStorage.MessageStorage["Type"]) => MessageStorage.MessageStorage["Type"]
  /** Gives the arming the runner's read trigger (`Sharding.pollStorage`), once Sharding exists. */
  readonly attach: (poll: Effect.Effect<void>) => void
  /** The armed due times (tests read their size and buffer). */
  readonly armed: DueTimes
}

/**
 * What a scan asks storage: the distinct delivery times of pending messages of `shards` in (now, now + window],
 * earliest first, at most `SCAN_LIMIT`.
 */
export type ScanQuery = (shards: ReadonlyArray<string>, now: number) => Effect.Effect<ReadonlyArray<number>, unknown>

/** The runner's one timer: armed at the earliest due time; firing drops what is due and opens the read loop once. */
class Wake extends TimerEntry {
  /** The due time it is armed at; +Infinity when it is not armed. */
  armedAt = Number.POSITIVE_INFINITY

  constructor(private readonly arming: ArmingImpl) {
    super()
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const armed = this.arming.armed
    armed.dropThrough(now)
    const next = armed.first()
    this.armedAt = next ?? Number.POSITIVE_INFINITY
    if (next !== undefined) driver.schedule(this, next)
    return this.arming.poll
  }

  override label(): TimerLabel {
    return { kind: "cluster_arming", key: String(this.armedAt), owner: undefined }
  }
}

class ArmingImpl implements Arming {
  readonly armed = new DueTimes()
  private readonly timer = new Wake(this)
  poll: Effect.Effect<void> | undefined = undefined
  /** The shards of the last read, waiting for a scan; undefined when no scan is asked for. */
  private pendingShards: ReadonlyArray<string> | undefined = undefined
  private wakeScanner: (() => void) | undefined = undefined

  constructor(
    readonly driver: TimerDriver,
    private readonly dueTimes: ScanQuery
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

  private readonly scan = (shards: ReadonlyArray<string>): Effect.Effect<void> =>
    shards.length === 0
      ? Effect.void
      : Effect.flatMap(Clock.currentTimeMillis, (now) =>
          this.dueTimes(shards, now).pipe(
            Effect.tap((times) =>
              Effect.sync(() => {
                this.arm(times)
              })
            ),
            // Arming is an optimisation: the read loop's own polls still deliver what a failed scan would have armed.
            Effect.catchAllCause((cause) => Effect.logDebug("local arming: scan failed; the next read retries", cause))
          )
        )

  /** Holds `times` (those not held yet) and moves the one timer to the earliest due time when that changed. */
  private arm(times: ReadonlyArray<number>): void {
    if (this.poll === undefined || this.driver.isClosed) return
    if (this.armed.merge(times) === 0) return
    const first = this.armed.first()!
    if (first < this.timer.armedAt) {
      this.timer.armedAt = first
      this.driver.schedule(this.timer, first)
    }
  }

  /** Drops every due time (the finalizer). */
  clear(): void {
    this.armed.clear()
    this.timer.armedAt = Number.POSITIVE_INFINITY
  }

  /** The scanner fiber: one scan per request, never two at once. */
  readonly scanner: Effect.Effect<never> = Effect.forever(Effect.flatMap(this.nextRequest, this.scan))
}

/** The scan query on `<prefix>_messages`: see `ScanQuery`. */
const scanQuery =
  (sql: SqlClient.SqlClient, messagesTable: string, windowMillis: number): ScanQuery =>
  (shards, now) =>
    Effect.map(
      sql<{ readonly deliver_at: number | string | bigint }>`
        SELECT DISTINCT deliver_at FROM ${sql(messagesTable)}
        WHERE ${sql.in("shard_id", shards)}
        AND processed = ${booleanLiteral(sql, false)}
        AND deliver_at > ${now} AND deliver_at <= ${now + windowMillis}
        ORDER BY deliver_at LIMIT ${SCAN_LIMIT}`,
      (rows) => rows.map((row) => Number(row.deliver_at))
    )

/** An arming over any scan query (tests give one of their own): its engine and scanner run in the scope. */
export const makeWith = (dueTimes: ScanQuery): Effect.Effect<Arming, never, Scope.Scope> =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const driver = new TimerDriver(clock)
    const arming = new ArmingImpl(driver, dueTimes)
    const annotate = Effect.annotateLogs({ module: "ClusterRunner", fiber: "local arming" })
    yield* Effect.forkScoped(annotate(isolated(driver.run)))
    yield* Effect.forkScoped(annotate(isolated(arming.scanner)))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        arming.clear()
        return Fiber.interruptAll(driver.close())
      })
    )
    return arming
  })

/**
 * The arming of a runner over `sql`, for @effect/cluster's messages table `<prefix>_messages`: its engine and scanner
 * run in the scope.
 */
export const make = (
  sql: SqlClient.SqlClient,
  prefix: string,
  windowMillis: number
): Effect.Effect<Arming, never, Scope.Scope> =>
  makeWith(scanQuery(sql.withoutTransforms(), `${prefix}_messages`, windowMillis))
