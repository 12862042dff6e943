/**
 * `ActorContext` and `context.timers` for a mailbox-backed actor.
 *
 * One small object over the cell serves as both (`context.timers` is the context itself: their members do not overlap),
 * so an actor pays no closure per operation while it is idle (closures made up front would be most of an actor). Each
 * operation is a getter that returns a function closed over the cell, so it is made when it is read: `ctx.timers.cancel`
 * and a destructured `const { cancel } = ctx.timers` both work, for the price of one small closure per read.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import type { Actor, ActorContext } from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import type { ActorSystemService, SpawnError } from "../ActorSystem.js"
import { InvalidTimerDelay, InvalidTimerInterval } from "../TimerError.js"
import type { TimerScheduler } from "../Timers.js"
import { type ActorCell, CellRef } from "./actorCell.js"
import { Mode, removeTimer, startTimer } from "./actorTimers.js"
import { delayMillis, MIN_INTERVAL_MILLIS, periodMillis } from "./duration.js"
import { clearReceiveTimeout, setReceiveTimeout } from "./receiveTimeout.js"
import { describeValue } from "./validate.js"

const fromEither = <A, E>(either: Either.Either<A, E>, f: (a: A) => void): Effect.Effect<void, E> =>
  Either.isLeft(either) ? Effect.fail(either.left) : Effect.sync(() => f(either.right))

const periodic =
  (cell: ActorCell, mode: Mode) =>
  (
    key: string,
    message: unknown,
    interval: Duration.DurationInput,
    initialDelay?: Duration.DurationInput
  ): Effect.Effect<void, InvalidTimerInterval | InvalidTimerDelay> =>
    Effect.suspend(() =>
      fromEither(periodMillis(interval, initialDelay), ({ every, first }) => {
        startTimer(cell, key, message, mode, first, every)
      })
    )

/** `context.timers`: the context's base class. */
class CellTimers implements TimerScheduler<any> {
  constructor(protected readonly cell: ActorCell) {}

  get startSingleTimer() {
    const cell = this.cell
    return (key: string, message: unknown, delay: Duration.DurationInput): Effect.Effect<void, InvalidTimerDelay> =>
      Effect.suspend(() =>
        fromEither(delayMillis(delay), (millis) => {
          startTimer(cell, key, message, Mode.Single, millis, 0)
        })
      )
  }

  get startTimerWithFixedDelay() {
    return periodic(this.cell, Mode.FixedDelay)
  }

  get startTimerAtFixedRate() {
    return periodic(this.cell, Mode.FixedRate)
  }

  get startTimerWithSchedule() {
    const cell = this.cell
    return (
      key: string,
      message: unknown,
      schedule: Schedule.Schedule<unknown>
    ): Effect.Effect<void, InvalidTimerInterval> =>
      Effect.suspend(() => {
        if (!Schedule.isSchedule(schedule)) {
          return Effect.fail(
            new InvalidTimerInterval({
              intervalMillis: Number.NaN,
              reason: `the schedule must be an Effect Schedule, got ${describeValue(schedule)}`
            })
          )
        }
        const timer = startTimer(cell, key, message, Mode.Schedule, 0, 0, schedule)
        if (timer === undefined) return Effect.void
        return timer.step(cell.host.driver.now(), cell.host.driver, false)
      })
  }

  get cancel() {
    const cell = this.cell
    return (key: string): Effect.Effect<boolean> =>
      Effect.sync(() => {
        const timer = cell.timers?.get(key)
        if (timer === undefined) return false
        removeTimer(cell, timer)
        return true
      })
  }

  get cancelAll(): Effect.Effect<void> {
    const cell = this.cell
    return Effect.sync(() => {
      const timers = cell.timers
      if (timers !== undefined) for (const timer of Array.from(timers.values())) removeTimer(cell, timer)
    })
  }

  get isTimerActive() {
    const cell = this.cell
    return (key: string): Effect.Effect<boolean> => Effect.sync(() => cell.timers?.has(key) === true)
  }

  get activeKeys(): Effect.Effect<ReadonlyArray<string>> {
    const cell = this.cell
    return Effect.sync(() => Array.from(cell.timers?.keys() ?? []))
  }
}

export class CellContext extends CellTimers implements ActorContext<any> {
  get timers(): TimerScheduler<any> {
    return this
  }

  get self(): ActorRef<any> {
    return this.cell.ref
  }

  get path(): string {
    return this.cell.path
  }

  get system(): ActorSystemService {
    return this.cell.host.service
  }

  get parent(): ActorRef<never> | undefined {
    return this.cell.parent?.ref
  }

  get sender(): ActorRef<any> | undefined {
    return this.cell.sender
  }

  get children(): ReadonlyArray<ActorRef<never>> {
    return Array.from(this.cell.children?.values() ?? [], (child) => child.ref)
  }

  get spawn() {
    const cell = this.cell
    return <M, S, E, R>(actor: Actor<M, S, E, R>, name?: string): Effect.Effect<ActorRef<M>, SpawnError, R> =>
      cell.host.spawnCell(actor, name, cell)
  }

  get stop() {
    const cell = this.cell
    return (ref: ActorRef<never>): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (!(ref instanceof CellRef)) return Effect.void
        const target = ref.cell as ActorCell
        target.requestStop()
        // Waiting for oneself would deadlock: self stops after the current message.
        return target === cell ? Effect.void : target.awaitDone
      })
  }

  get setReceiveTimeout() {
    const cell = this.cell
    return (timeout: Duration.DurationInput, message: unknown): Effect.Effect<void, InvalidTimerDelay> =>
      Effect.suspend(() => {
        const millis = delayMillis(timeout)
        if (Either.isRight(millis) && millis.right < MIN_INTERVAL_MILLIS) {
          // a timeout of 0 would fire on every turn of an idle actor: like an interval, it has the engine's floor
          return Effect.fail(
            new InvalidTimerDelay({
              delayMillis: millis.right,
              reason: `a receive timeout must be at least ${MIN_INTERVAL_MILLIS} ms (cancel it with cancelReceiveTimeout)`
            })
          )
        }
        return fromEither(millis, (ms) => {
          setReceiveTimeout(cell, ms, message)
        })
      })
  }

  get cancelReceiveTimeout(): Effect.Effect<void> {
    const cell = this.cell
    return Effect.sync(() => clearReceiveTimeout(cell))
  }
}
