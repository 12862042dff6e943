/**
 * What the testkit records of a system's timers: every arm, fire, delivery, drop (with its reason), stale discard and
 * cancel, with the clock's time, the owner and the key, in a bounded ring; and counts per owner and key. A system has
 * none unless the testkit asks for one (`TestSystem`), so the engine and the cells pay a field read when it is off.
 */
import type { DropReason } from "../Metrics.js"
import type { EngineObserver, TimerEntry, TimerLabel } from "./timerDriver.js"

/** One line of the timeline: what happened to a timer, when, and to whom (`TestSystem.TimelineEvent`). */
export interface TimelineEvent {
  /** The clock's time, epoch millis. */
  readonly at: number
  readonly event: "armed" | "fired" | "delivered" | "dropped" | "stale" | "cancelled"
  readonly kind: string
  readonly key: string | undefined
  readonly owner: string | undefined
  /** The due time an `armed` line armed for. */
  readonly due: number | undefined
  /** The reason of a drop. */
  readonly detail: string | undefined
}

/** Per owner and key: ticks delivered, and dropped by reason (`stale` among them). */
export interface TimerCounts {
  delivered: number
  stale: number
  mailbox_full: number
  owner_stopped: number
  /**
   * Entity periodic timers: invocations dropped because the previous one was still queued or running; Spot timers:
   * ticks their overrun policy dropped.
   */
  missed: number
}

const label = (entry: TimerEntry): TimerLabel => {
  try {
    return entry.label()
  } catch {
    return { kind: "timer", key: undefined, owner: undefined }
  }
}

export class Timeline implements EngineObserver {
  private readonly ring: Array<TimelineEvent> = []
  private readonly counts = new Map<string, TimerCounts>()
  private pushed = 0

  constructor(
    private readonly now: () => number,
    readonly capacity: number
  ) {}

  private push(event: TimelineEvent["event"], entry: TimerEntry, detail?: string, due?: number): TimelineEvent {
    const { kind, key, owner } = label(entry)
    const line: TimelineEvent = { at: this.now(), event, kind, key, owner, due, detail }
    this.ring.push(line)
    this.pushed++
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity)
    return line
  }

  private count(line: TimelineEvent): TimerCounts {
    const id = `${line.owner ?? ""}\u0000${line.key ?? ""}`
    let counts = this.counts.get(id)
    if (counts === undefined) {
      counts = { delivered: 0, stale: 0, mailbox_full: 0, owner_stopped: 0, missed: 0 }
      this.counts.set(id, counts)
    }
    return counts
  }

  armed(entry: TimerEntry, due: number): void {
    this.push("armed", entry, undefined, due)
  }

  fired(entry: TimerEntry): void {
    this.push("fired", entry)
  }

  cancelled(entry: TimerEntry): void {
    this.push("cancelled", entry)
  }

  delivered(entry: TimerEntry): void {
    this.count(this.push("delivered", entry)).delivered++
  }

  /** `n` ticks of `entry` dropped for `reason`: one line (saying how many when more than one), counted `n` times. */
  dropped(entry: TimerEntry, reason: DropReason, n = 1): void {
    const line = this.push(reason === "stale" ? "stale" : "dropped", entry, n === 1 ? reason : `${reason} ×${n}`)
    this.count(line)[reason] += n
  }

  /** The last `n` lines (all of them by default), oldest first. */
  lines(n = this.capacity): ReadonlyArray<TimelineEvent> {
    return this.ring.slice(Math.max(0, this.ring.length - n))
  }

  /**
   * The counts of `owner`'s timer `key` (every key of the owner when `key` is undefined; every owner when `owner` is
   * undefined too).
   */
  countsOf(owner: string | undefined, key: string | undefined): TimerCounts {
    const total: TimerCounts = { delivered: 0, stale: 0, mailbox_full: 0, owner_stopped: 0, missed: 0 }
    for (const [id, counts] of this.counts) {
      const [o, k] = id.split("\u0000")
      if ((owner !== undefined && o !== owner) || (key !== undefined && k !== key)) continue
      total.delivered += counts.delivered
      total.stale += counts.stale
      total.mailbox_full += counts.mailbox_full
      total.owner_stopped += counts.owner_stopped
      total.missed += counts.missed
    }
    return total
  }

  /** Lines recorded so far, in all (the ring keeps the last `capacity`): a mark to read what came after it. */
  get recorded(): number {
    return this.pushed
  }

  /** The lines recorded after `mark` (a `recorded` read earlier) that the ring still holds. */
  since(mark: number): ReadonlyArray<TimelineEvent> {
    return this.lines(Math.min(this.ring.length, this.pushed - mark))
  }

  clear(): void {
    this.ring.length = 0
    this.counts.clear()
  }
}

/** A timeline's lines as text, one per line: `+<ms since start>  <event> <kind> <key> of <owner> (<detail>)`. */
export const formatTimeline = (lines: ReadonlyArray<TimelineEvent>, start: number): string =>
  lines
    .map((line) => {
      const key = line.key === undefined ? "" : ` "${line.key}"`
      const owner = line.owner === undefined ? "" : ` of ${line.owner}`
      const detail =
        line.due !== undefined ? ` (due +${line.due - start}ms)` : line.detail === undefined ? "" : ` (${line.detail})`
      return `${`+${line.at - start}ms`.padStart(10)}  ${line.event.padEnd(9)} ${line.kind}${key}${owner}${detail}`
    })
    .join("\n")
