/**
 * Dead letters in the log, as Akka logs them: the first `max` of each interval get a line each (a full mailbox at
 * warning level, a stopped recipient at info), the rest are counted, and one line at the end of the interval says
 * how many were not logged. A flood of a million dead letters costs `max + 1` lines, and no dead letter is silent.
 */
import * as Effect from "effect/Effect"
import type { ActorRef } from "../ActorRef.js"
import type { Delivery } from "./refs.js"
import { type TimerDriver, TimerEntry, type TimerLabel } from "./timerDriver.js"
import { describeValue } from "./validate.js"

export class DeadLetterLog extends TimerEntry {
  /** Lines logged in the current interval, and dead letters counted without a line. */
  private logged = 0
  private suppressed = 0

  constructor(
    private readonly driver: TimerDriver,
    /** Lines per interval; 0 logs nothing. */
    private readonly max: number,
    private readonly intervalMillis: number,
    /** Runs a log line now, off any fiber of the caller's (a dead letter is recorded synchronously). */
    private readonly emit: (line: Effect.Effect<void>) => void
  ) {
    super()
  }

  record(message: unknown, sender: ActorRef<any> | undefined, recipient: string, reason: Delivery): void {
    if (this.max === 0) return
    if (this.logged >= this.max) {
      this.suppressed++
      return
    }
    // The first line of an interval arms its end, which reports what was not logged and opens the next interval.
    if (this.logged++ === 0 && !this.driver.isClosed)
      this.driver.schedule(this, this.driver.now() + this.intervalMillis)
    const full = reason === "mailbox-full"
    const text =
      `dead letter: ${describeValue(message)} to ${recipient} was not delivered (` +
      `${full ? "its mailbox is full" : "it has stopped"})` +
      (this.logged === this.max ? `; further dead letters are counted, not logged, for ${this.intervalMillis} ms` : "")
    const annotations: Record<string, unknown> = { recipient, reason }
    if (sender !== undefined) annotations.sender = sender.path
    this.emit((full ? Effect.logWarning(text) : Effect.logInfo(text)).pipe(Effect.annotateLogs(annotations)))
  }

  /** The interval ended (or the system stops): one line for what was not logged, and a fresh interval. */
  fire(): Effect.Effect<void> | undefined {
    const suppressed = this.suppressed
    this.logged = 0
    this.suppressed = 0
    if (suppressed === 0) return undefined
    return Effect.logWarning(
      `${suppressed} more dead letters were not logged (ActorSystem options logDeadLetters, logDeadLettersInterval)`
    ).pipe(Effect.annotateLogs({ dead_letters_suppressed: suppressed }))
  }

  /** At shutdown: what the interval's end would have said, said now. */
  flush(): Effect.Effect<void> {
    this.driver.cancel(this)
    return this.fire() ?? Effect.void
  }

  override label(): TimerLabel {
    return { kind: "dead_letter_log", key: undefined, owner: undefined }
  }
}
