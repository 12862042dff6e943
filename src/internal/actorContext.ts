/**
 * `ActorContext` and `context.timers` for a mailbox-backed actor.
 *
 * One class over the cell serves as both (`context.timers` is the context itself: their members do not overlap), so an
 * actor pays one small object for them, not a closure per method (which cost about 3 KB per actor). Their methods
 * therefore expect to be called on the object: `ctx.timers.cancel("k")`, not a detached `cancel`.
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
import { type ActorCell, CellRef, Mode } from "./actorCell.js"
import { delayMillis, MIN_INTERVAL_MILLIS, periodMillis } from "./duration.js"
import { describeValue } from "./validate.js"

const fromEither = <A, E>(either: Either.Either<A, E>, f: (a: A) => void): Effect.Effect<void, E> =>
  Either.isLeft(either) ? Effect.fail(either.left) : Effect.sync(() => f(either.right))

/** `context.timers`: the context's base class. */
class CellTimers implements TimerScheduler<any> {
  constructor(protected readonly cell: ActorCell) {}

  startSingleTimer(
    key: string,
    message: unknown,
    delay: Duration.DurationInput
  ): Effect.Effect<void, InvalidTimerDelay> {
    return Effect.suspend(() =>
      fromEither(delayMillis(delay), (millis) => {
        this.cell.startTimer(key, message, Mode.Single, millis, 0)
      })
    )
  }

  startTimerWithFixedDelay(
    key: string,
    message: unknown,
    interval: Duration.DurationInput,
    initialDelay?: Duration.DurationInput
  ): Effect.Effect<void, InvalidTimerInterval | InvalidTimerDelay> {
    return this.periodic(Mode.FixedDelay, key, message, interval, initialDelay)
  }

  startTimerAtFixedRate(
    key: string,
    message: unknown,
    interval: Duration.DurationInput,
    initialDelay?: Duration.DurationInput
  ): Effect.Effect<void, InvalidTimerInterval | InvalidTimerDelay> {
    return this.periodic(Mode.FixedRate, key, message, interval, initialDelay)
  }

  startTimerWithSchedule(
    key: string,
    message: unknown,
    schedule: Schedule.Schedule<unknown>
  ): Effect.Effect<void, InvalidTimerInterval> {
    return Effect.suspend(() => {
      if (!Schedule.isSchedule(schedule)) {
        return Effect.fail(
          new InvalidTimerInterval({
            intervalMillis: Number.NaN,
            reason: `the schedule must be an Effect Schedule, got ${describeValue(schedule)}`
          })
        )
      }
      const cell = this.cell
      const timer = cell.startTimer(key, message, Mode.Schedule, 0, 0, schedule)
      if (timer === undefined) return Effect.void
      return timer.step(cell.host.driver.now(), cell.host.driver, false)
    })
  }

  cancel(key: string): Effect.Effect<boolean> {
    return Effect.sync(() => {
      const timer = this.cell.timers?.get(key)
      if (timer === undefined) return false
      this.cell.removeTimer(timer)
      return true
    })
  }

  get cancelAll(): Effect.Effect<void> {
    return Effect.sync(() => {
      const timers = this.cell.timers
      if (timers !== undefined) for (const timer of Array.from(timers.values())) this.cell.removeTimer(timer)
    })
  }

  isTimerActive(key: string): Effect.Effect<boolean> {
    return Effect.sync(() => this.cell.timers?.has(key) === true)
  }

  get activeKeys(): Effect.Effect<ReadonlyArray<string>> {
    return Effect.sync(() => Array.from(this.cell.timers?.keys() ?? []))
  }

  private periodic(
    mode: Mode,
    key: string,
    message: unknown,
    interval: Duration.DurationInput,
    initialDelay: Duration.DurationInput | undefined
  ): Effect.Effect<void, InvalidTimerInterval | InvalidTimerDelay> {
    return Effect.suspend(() =>
      fromEither(periodMillis(interval, initialDelay), ({ every, first }) => {
        this.cell.startTimer(key, message, mode, first, every)
      })
    )
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

  spawn<M, S, E, R>(actor: Actor<M, S, E, R>, name?: string): Effect.Effect<ActorRef<M>, SpawnError, R> {
    return this.cell.host.spawnCell(actor, name, this.cell)
  }

  stop(ref: ActorRef<never>): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (!(ref instanceof CellRef)) return Effect.void
      const target = ref.cell as ActorCell
      target.requestStop()
      // Waiting for oneself would deadlock: self stops after the current message.
      return target === this.cell ? Effect.void : target.awaitDone
    })
  }

  setReceiveTimeout(timeout: Duration.DurationInput, message: unknown): Effect.Effect<void, InvalidTimerDelay> {
    return Effect.suspend(() => {
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
        this.cell.setReceiveTimeout(ms, message)
      })
    })
  }

  get cancelReceiveTimeout(): Effect.Effect<void> {
    return Effect.sync(() => this.cell.clearReceiveTimeout())
  }
}
