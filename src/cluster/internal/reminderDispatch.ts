/**
 * Delivery of durable reminders on a runner, from their rows (the way Orleans' reminder service works): storage holds
 * each pending reminder as one row with its next due time and the shard of its grain; the runner that holds a shard
 * delivers that shard's reminders.
 *
 * - **Scan.** Every poll interval, and at once when asked (a page delivered, a shard taken over), one statement reads
 *   the reminders of the shards this runner holds due within the window, the earliest first, a page at most.
 * - **Arm.** Each one found, and each one this runner writes itself (a registration, an update, a next occurrence),
 *   waits in memory for its due time (`armedReminders.ts`: columns of typed arrays and one string per reminder, in
 *   due order) with one wake-up of the dispatcher at the earliest. Nothing of a reminder is in memory before it comes
 *   within the window, so a million pending cost storage only.
 * - **Deliver.** When due, the occurrences of one grain go to it together in one message that is not persisted (the
 *   grain's `RemindNow`): its entity, on this runner since its shard is, hands each occurrence to the reminders'
 *   `deliver` in turn, which reads the row again, lets the grain handle it and moves the row on. At most
 *   `MAX_SENDING` grains are sent to at once; the rest wait their turn in order.
 *
 * The row is the only truth, and it moves on only once the grain handled the occurrence. So a runner that dies loses
 * only what it had in memory: the shard's next owner scans the rows, still due, and delivers them (at least once). A
 * send that fails (the shard moved meanwhile, the grain's kind not registered here yet) leaves the row as it is; the
 * occurrence is found again by a scan after a pause (`COOLDOWN_MILLIS`). An occurrence armed on two runners during a
 * shard move reaches the one entity of its grain twice, one after the other: the second finds the row moved past it
 * and is dropped.
 *
 * @internal
 */
import * as ShardId from "@effect/cluster/ShardId"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import { isolated } from "../../internal/logContext.js"
import { scheduleEvents } from "../../Metrics.js"
import { ArmedReminders } from "./armedReminders.js"
import { type DueRow, grainId } from "./reminderSql.js"

/** Reminders a scan reads at most: the next page is read when half of it was delivered. */
export const PAGE = 1_024

/**
 * Reminders of the grains of a full page a scan reads besides it, at most: due by the window's end too, they go to
 * their grains with the page's.
 */
export const SIBLINGS = 8 * PAGE

/** Grains sent to at once. */
export const MAX_SENDING = 256

/** Occurrences of one grain in one message at most. */
export const MAX_PER_SEND = 64

/** How long an occurrence whose send failed is left to the next scans before it is armed again. */
export const COOLDOWN_MILLIS = 1_000

export interface Dispatcher {
  /**
   * A reminder this runner wrote on a shard it holds (registered, updated, or moved to its next occurrence): armed
   * now when it is due within the window (a later one is left to the scans).
   */
  readonly arm: (row: DueRow) => void
  /** Reminders this runner wrote that the scans will find: a scan soon (another runner's shard is not scanned here). */
  readonly scanSoon: () => void
}

export interface Options {
  /** The shards this runner holds now, as `ShardId.toString()`. */
  readonly heldShards: () => ReadonlyArray<string>
  /** Whether the grain (kind, key) is on a shard this runner holds. */
  readonly holds: (kind: string, key: string) => boolean
  /** The reminders of `shards` due from `from` to `until`, the earliest first, at most `limit` (`ReminderSql.due`). */
  readonly scan: (
    shards: ReadonlyArray<string>,
    from: number,
    until: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<DueRow>, SqlError>
  /**
   * The reminders of the grains `grains` due by `until`, the earliest first, at most `limit`
   * (`ReminderSql.dueOfGrains`). Read after a full page (a backlog), so that the occurrences of one grain go to it in
   * one message rather than one a page.
   */
  readonly siblings?: (
    grains: ReadonlyArray<{ readonly kind: string; readonly key: string }>,
    until: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<DueRow>, SqlError>
  /** Hands the occurrences to the grain (kind, key) and waits until it handled them; fails when it could not. */
  readonly send: (kind: string, key: string, rows: ReadonlyArray<DueRow>) => Effect.Effect<void, unknown>
  /** The storage poll interval: a scan at least this often. */
  readonly pollMillis: number
  /** How far ahead of its due time a scan arms a reminder. */
  readonly windowMillis: number
}

/** The shards of the groups `groups` (`shardsPerGroup` each) this runner holds, by `holds`. */
export const heldShardsOf =
  (groups: ReadonlyArray<string>, shardsPerGroup: number, holds: (shard: ShardId.ShardId) => boolean) => () => {
    const held: Array<string> = []
    for (const group of groups) {
      for (let id = 1; id <= shardsPerGroup; id++) {
        const shard = ShardId.make(group, id)
        if (holds(shard)) held.push(shard.toString())
      }
    }
    return held
  }

/** The dispatcher of one runner's reminders, running in the scope until it closes. */
export const make = (options: Options): Effect.Effect<Dispatcher, never, Scope.Scope> =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const fibers = yield* FiberSet.make()
    const runFork = yield* FiberSet.runtime(fibers)()
    /** The reminders armed, found by generation: waiting for their due time, or being handed over. */
    const armed = new ArmedReminders()
    /** Reminders (by generation) whose send failed, and until when the scans leave them alone. */
    const cooldown = new Map<string, number>()
    /** Grains whose occurrences wait for one of the `MAX_SENDING` places, in order. */
    const waiting: Array<ReadonlyArray<DueRow>> = []
    let sending = 0
    /** How many entries the last scan found; a full page asks for the next when half of it is delivered. */
    let lastPage = 0
    /**
     * A full page's last due time: the next page, asked for before the next poll, starts there, so that it does not
     * read again the rows of the page still being handed over (the poll's scan starts from the beginning).
     */
    let pageFrom = Number.NEGATIVE_INFINITY
    let nextPage = false
    let scanRequested = true
    let nextScanAt = 0
    let wakeAt = Number.POSITIVE_INFINITY
    const wake = Effect.unsafeMakeLatch(false)

    /**
     * Arms `row`. Its generation is a snowflake unique to one registration of one reminder, and an occurrence of one
     * generation never moves back (the next occurrence is later; a new schedule is a new generation): so a later due
     * time replaces the one armed, and an earlier one is stale.
     */
    const armRow = (row: DueRow): void => {
      const slot = armed.find(row.generation)
      if (slot < 0) {
        armed.add(row)
      } else {
        // An occurrence of this generation before or at the one armed is stale (e.g. read by a scan before the
        // row moved on).
        if (row.due <= armed.due(slot)) return
        if (armed.handingOver(slot)) {
          armed.armNext(slot, row.due)
          return
        }
        armed.wait(slot, row.due)
      }
      if (row.due < wakeAt) wake.unsafeOpen()
    }

    const arm = (row: DueRow): void => {
      if (row.due > clock.unsafeCurrentTimeMillis() + options.windowMillis) return
      cooldown.delete(row.generation)
      armRow(row)
    }

    const scanSoon = () => {
      scanRequested = true
      wake.unsafeOpen()
    }

    /** The send of one grain's occurrences ended: their places are free, and what was armed meanwhile is armed. */
    const ended = (rows: ReadonlyArray<DueRow>, failed: boolean) => {
      sending--
      const now = clock.unsafeCurrentTimeMillis()
      for (const row of rows) {
        const slot = armed.find(row.generation)
        if (slot < 0 || !armed.handingOver(slot)) continue
        const next = armed.next(slot)
        if (next > armed.due(slot)) {
          armed.wait(slot, next)
          if (next < wakeAt) wake.unsafeOpen()
        } else {
          armed.remove(slot)
          if (failed) cooldown.set(row.generation, now + COOLDOWN_MILLIS)
        }
      }
      if (lastPage >= PAGE && armed.size <= PAGE / 2 && !nextPage) {
        nextPage = true
        scanSoon()
      }
      startSends()
    }

    const startSends = () => {
      while (sending < MAX_SENDING && waiting.length > 0) {
        const rows = waiting.shift()!
        const { key, kind } = rows[0]!
        sending++
        runFork(
          options.send(kind, key, rows).pipe(
            Effect.matchCauseEffect({
              onFailure: (cause) =>
                Effect.zipRight(
                  Effect.sync(() => ended(rows, true)),
                  Cause.isInterruptedOnly(cause)
                    ? Effect.void
                    : Effect.logDebug(
                        `reminders of grain ${kind}/${key} not handed over; found again by a scan in ${COOLDOWN_MILLIS} ms`,
                        cause
                      )
                ),
              onSuccess: () => Effect.sync(() => ended(rows, false))
            })
          )
        )
      }
    }

    /** Hands every occurrence due by `now` to its grain, a grain's together. */
    const fire = (now: number) => {
      const byGrain = new Map<string, Array<DueRow>>()
      for (let slot = armed.takeDue(now); slot >= 0; slot = armed.takeDue(now)) {
        const row = armed.row(slot)
        if (!options.holds(row.kind, row.key)) {
          // The shard moved away: its new owner scans it.
          armed.remove(slot)
          continue
        }
        armed.handOver(slot)
        const grain = grainId(row.kind, row.key)
        let rows = byGrain.get(grain)
        if (rows === undefined || rows.length >= MAX_PER_SEND) {
          if (rows !== undefined) waiting.push(rows)
          byGrain.set(grain, (rows = []))
        }
        rows.push(row)
      }
      for (const rows of byGrain.values()) waiting.push(rows)
      startSends()
    }

    const scan = (now: number) =>
      Effect.gen(function* () {
        const shards = options.heldShards()
        const from = nextPage ? pageFrom : Number.NEGATIVE_INFINITY
        nextPage = false
        const until = now + options.windowMillis
        const rows = yield* options.scan(shards, from, until, PAGE)
        lastPage = rows.length
        pageFrom = rows.length >= PAGE ? rows[rows.length - 1]!.due : Number.NEGATIVE_INFINITY
        const armFound = (found: ReadonlyArray<DueRow>) => {
          for (const row of found) {
            const cool = cooldown.get(row.generation)
            if (cool !== undefined) {
              if (cool > now) continue
              cooldown.delete(row.generation)
            }
            armRow(row)
          }
        }
        armFound(rows)
        if (rows.length >= PAGE && options.siblings !== undefined) {
          // A backlog: the page's grains' other occurrences due by then, so that each grain gets its own together.
          // They do not move the page on (`pageFrom`): a later page finds them armed already, and skips them.
          const grains = new Map<string, { readonly kind: string; readonly key: string }>()
          for (const { key, kind } of rows) grains.set(grainId(kind, key), { kind, key })
          armFound(yield* options.siblings(Array.from(grains.values()), until, SIBLINGS))
        }
        for (const [id, until] of cooldown) if (until <= now) cooldown.delete(id)
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(
            Effect.sync(() => scheduleEvents("storage_retry").unsafeUpdate(1, [])),
            Effect.logWarning("reminders: could not read the due reminders; tried again at the next poll", cause)
          )
        )
      )

    const loop = Effect.gen(function* () {
      for (;;) {
        const now = yield* Clock.currentTimeMillis
        if (scanRequested || now >= nextScanAt) {
          scanRequested = false
          nextScanAt = now + options.pollMillis
          yield* scan(now)
        }
        // From the latch's closing to the wait, nothing yields: an `arm` or `scanSoon` meanwhile opens it again.
        wake.unsafeClose()
        const at = clock.unsafeCurrentTimeMillis()
        fire(at)
        wakeAt = Math.min(armed.earliest() ?? Number.POSITIVE_INFINITY, nextScanAt)
        if (wakeAt > at && !scanRequested) yield* Effect.timeoutOption(wake.await, wakeAt - at)
      }
    })

    yield* Effect.forkScoped(isolated(loop).pipe(Effect.annotateLogs({ module: "Reminders", fiber: "dispatcher" })))
    return { arm, scanSoon }
  })
