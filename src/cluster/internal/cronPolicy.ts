/**
 * The policies of a cluster cron, apart from storage: what a late instant does (misfire), and whether a run may start
 * while another of the same schedule is going (overlap).
 *
 * Overlap needs to know what runs. In one process that is a count per schedule here (SQLite's single connection is
 * held by a run's transaction, so nothing can be read from storage while it runs); across processes a marker in the
 * state table (`running_since`), set before a run's transaction and cleared after, tells the others, and is taken as
 * stale after `RUNNING_STALE_MILLIS` (a runner that died in a run). An instant of the grid under `bufferAll` or
 * `allowAll` takes no turn (cron.ts, `needsTurn`): the lock of its schedule's row, which every run takes, is enough.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { scheduleEvents } from "../../Metrics.js"
import * as QuartzCron from "../../QuartzCron.js"
import type { Misfire, Overlap } from "../../Schedules.js"

/** Cron instants a misfire looks at, at most. */
export const MAX_MISSED_SCAN = 10_000

/** A `running_since` marker older than this is a runner that died in a run, not a run. */
export const RUNNING_STALE_MILLIS = 15 * 60 * 1000

export interface MisfireDecision {
  /** Run the instant now. */
  readonly run: boolean
  /** True for a late instant run under the misfire policy. */
  readonly misfired: boolean
  /** Instants not run (recorded as one `missed` entry). */
  readonly missed: number
  /** Whether `missed` reached the scan limit (then it means "at least"). */
  readonly capped: boolean
  /** The cursor's next instant. */
  readonly next: number | null
}

/**
 * What to do with `instant`, handled at `now`: on time (at most `graceMillis` late) it runs and the grid goes on;
 * later, `runOnce` runs it and resumes the grid after now, `skipMissed` runs none of the instants up to now, and
 * `runAll(max)` runs each of the latest `max` of them in turn (the older ones are missed).
 */
export const decideMisfire = (
  cron: QuartzCron.QuartzCron,
  instant: number,
  now: number,
  misfire: Misfire,
  graceMillis: number
): MisfireDecision => {
  const gridNext = () => Option.getOrNull(QuartzCron.next(cron, instant))
  if (now - instant <= graceMillis) return { run: true, misfired: false, missed: 0, capped: false, next: gridNext() }
  const late: Array<number> = []
  for (const at of QuartzCron.iterate(cron, instant - 1)) {
    if (at > now || late.length >= MAX_MISSED_SCAN) break
    late.push(at)
  }
  const count = late.length
  const capped = count >= MAX_MISSED_SCAN
  const afterNow = () => Option.getOrNull(QuartzCron.next(cron, now))
  switch (misfire._tag) {
    case "RunOnce":
      return { run: true, misfired: true, missed: count - 1, capped, next: afterNow() }
    case "SkipMissed":
      return { run: false, misfired: true, missed: count, capped, next: afterNow() }
    case "RunAll": {
      if (count <= misfire.max) return { run: true, misfired: true, missed: 0, capped: false, next: gridNext() }
      // The older ones are missed; the cursor jumps to the first of the latest `max`, which runs next.
      const skipped = count - misfire.max
      return { run: false, misfired: true, missed: skipped, capped, next: late[skipped] ?? afterNow() }
    }
  }
}

interface Running {
  count: number
  overlap: Overlap
  /** The id of the run `bufferOne` keeps. */
  buffered: string | undefined
}

/** Runs going in this process, per storage client and schedule table. */
const runningByStorage = new WeakMap<object, Map<string, Running>>()

export const runningIn = (storage: object, key: string): Running => {
  let byKey = runningByStorage.get(storage)
  if (byKey === undefined) runningByStorage.set(storage, (byKey = new Map()))
  let running = byKey.get(key)
  if (running === undefined) byKey.set(key, (running = { count: 0, overlap: "bufferAll", buffered: undefined }))
  return running
}

/** What storage says of a schedule's runs, in one read. */
export interface StoredTurn {
  /** The overlap policy (used when nothing runs here). */
  readonly overlap: Overlap
  /** Whether another process marked a run of the schedule as going (not stale). */
  readonly runningElsewhere: boolean
  /** The run the bufferOne slot keeps. */
  readonly buffered: string | undefined
}

export interface TurnHost {
  readonly local: Running
  readonly stored: Effect.Effect<StoredTurn>
  /** Records the bufferOne slot in storage (for the other processes). */
  readonly buffer: (id: string | null) => Effect.Effect<void>
}

/**
 * Waits for the run `id` to be allowed to start under the overlap policy: `"run"` (then it counts as running here
 * until `release`), or `"skip"` with why (`skip`, or a `bufferOne` slot taken by a later run).
 */
export const awaitTurn = (
  host: TurnHost,
  id: string
): Effect.Effect<{ readonly _tag: "run" } | { readonly _tag: "skip"; readonly detail: string }> =>
  Effect.gen(function* () {
    // Nothing runs here: one read gives the policy and whether a run goes elsewhere (the common path's only read).
    const first = host.local.count > 0 ? undefined : yield* host.stored
    const overlap = first?.overlap ?? host.local.overlap
    /** Counts the run as going here, unless another one started meanwhile (checked and counted in one step). */
    const claim = Effect.sync(() => {
      if (host.local.count > 0 && overlap !== "allowAll") return false
      host.local.count++
      host.local.overlap = overlap
      return true
    })
    if (overlap === "allowAll") {
      yield* claim
      return { _tag: "run" } as const
    }
    const busy = first === undefined || host.local.count > 0 || first.runningElsewhere
    if (!busy && (yield* claim)) return { _tag: "run" } as const
    scheduleEvents("overlap").unsafeUpdate(1, [])
    if (overlap === "skip") return { _tag: "skip", detail: "a run was still going (overlap: skip)" } as const
    if (overlap === "bufferOne") {
      host.local.buffered = id
      yield* host.buffer(id)
    }
    while (true) {
      // One read a turn: whether a run goes elsewhere, and which run the bufferOne slot keeps.
      const stored = host.local.count > 0 ? undefined : yield* host.stored
      if (stored === undefined || host.local.count > 0 || stored.runningElsewhere) {
        yield* Effect.sleep("1 second")
        continue
      }
      if (overlap === "bufferOne") {
        const kept = host.local.buffered ?? stored.buffered
        if (kept !== undefined && kept !== id) {
          return { _tag: "skip", detail: "a later run took its place (overlap: bufferOne)" } as const
        }
      }
      if (yield* claim) break
    }
    if (overlap === "bufferOne" && host.local.buffered === id) {
      host.local.buffered = undefined
      yield* host.buffer(null)
    }
    return { _tag: "run" } as const
  })
