/**
 * The receive timeout (Akka's `ReceiveTimeout`): one engine entry per actor that sets one, which re-checks the actor's
 * last activity when it fires instead of being re-armed on every message.
 */
import type * as Effect from "effect/Effect"
import type { ActorCell } from "./actorCell.js"
import { Status } from "./cellProtocol.js"
import { MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"

export class ReceiveTimeout extends MailboxTick {
  get kind() {
    return "receive_timeout" as const
  }

  constructor(
    readonly cell: ActorCell,
    readonly timeout: number,
    readonly message: unknown
  ) {
    super()
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const idleSince = this.cell.lastActivity
    if (now - idleSince < this.timeout) {
      driver.schedule(this, idleSince + this.timeout)
      return undefined
    }
    const due = driver.dueOf(this)
    driver.schedule(this, now + this.timeout)
    return this.cell.offerTick(this, due, now)
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: undefined, owner: this.cell.path }
  }

  accept(): boolean {
    return this.active && this.cell.receiveTimeout === this
  }

  undeliverable(): void {}
}

/** Sets (or replaces) the actor's receive timeout; its idleness counts from now. */
export const setReceiveTimeout = (cell: ActorCell, timeout: number, message: unknown): void => {
  if (cell.status >= Status.Stopping) return
  clearReceiveTimeout(cell)
  const driver = cell.host.driver
  const entry = new ReceiveTimeout(cell, timeout, message)
  cell.receiveTimeout = entry
  cell.lastActivity = driver.now()
  driver.schedule(entry, cell.lastActivity + timeout)
}

/** Cancels the receive timeout, if one is set; a queued timeout message becomes stale. */
export const clearReceiveTimeout = (cell: ActorCell): void => {
  const entry = cell.receiveTimeout
  if (entry === undefined) return
  entry.active = false
  cell.host.driver.cancel(entry)
  cell.receiveTimeout = undefined
}
