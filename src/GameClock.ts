/**
 * The game clock: the wall clock (Effect's `Clock`) plus a time-skip offset that only moves forward.
 *
 * Game schedules (season ends, daily resets, level unlocks) are tested by skipping time instead of waiting for it.
 * Entity absolute one-shots, `ctx.now`, `Deadline.fromNow` and `Deadline.isDueNow` read the game clock; a skip
 * re-arms every pending absolute one-shot, so one whose deadline the skip passed fires at once.
 *
 * The game clock is deliberately not Effect's `Clock`: the timer engine and the entity periodic timers keep running on
 * real time, so a skip of a day never turns into a day of dropped (or caught-up) periodic invocations. A periodic
 * poll simply sees the new game time on its next run. Relative delays (`"30 seconds"`) are real time as well.
 *
 * Without a `GameClock` in the context everything reads `Clock` and there is nothing to skip.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import { type Input, type InvalidDeadline, make as makeDeadline } from "./Deadline.js"
import { delayMillis } from "./internal/duration.js"
import {
  currentGameTimeMillis,
  GameClockKey,
  GameClockState,
  register as registerState
} from "./internal/entityGameClock.js"
import { instantProblem } from "./internal/instant.js"
import { InvalidTimerDelay } from "./TimerError.js"

/**
 * The symbol that marks a game clock service.
 *
 * @example
 * ```ts
 * import { GameClock } from "tickwork"
 *
 * const marked = (u: object) => GameClock.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/GameClock/Service")

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { GameClock } from "tickwork"
 *
 * type Marked = { readonly [K in GameClock.TypeId]: GameClock.TypeId }
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A time skip would move the game clock backwards. The offset only moves forward: game state that saw a time must
 * never see an earlier one.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const rewind = GameClock.skip("-1 hour").pipe(
 *   Effect.catchTag("TimeSkipBackwards", (e) => Effect.logWarning(e.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class TimeSkipBackwards extends Data.TaggedError("TimeSkipBackwards")<{
  /** Game time when the skip was asked for (epoch millis). */
  readonly fromMillis: number
  /** The game time the skip asked for (epoch millis). */
  readonly toMillis: number
}> {
  override get message(): string {
    return `cannot skip the game clock backwards from ${this.fromMillis} to ${this.toMillis} (by ${
      this.toMillis - this.fromMillis
    } ms)`
  }
}

/**
 * The game clock service.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const clock = yield* GameClock.GameClock
 *   yield* clock.skip("1 day")
 *   const now = yield* clock.now
 * }).pipe(Effect.provide(GameClock.layer))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface GameClockService {
  readonly [TypeId]: TypeId
  /** Game time in epoch millis: the `Clock` plus the offset. */
  readonly currentTimeMillis: Effect.Effect<number>
  /** Game time as a UTC `DateTime`. */
  readonly now: Effect.Effect<DateTime.Utc>
  /** How far the game clock is ahead of the `Clock`. */
  readonly offset: Effect.Effect<Duration.Duration>
  /**
   * Moves game time forward by `duration` (0 is a no-op). Negative: `TimeSkipBackwards`; not a finite duration, or
   * so far that game time would leave the range a `DateTime` can represent (±8.64e15 ms from 1970):
   * `InvalidTimerDelay`. A failed skip changes nothing.
   */
  readonly skip: (duration: Duration.DurationInput) => Effect.Effect<void, TimeSkipBackwards | InvalidTimerDelay>
  /**
   * Moves game time forward to `time`; a time before the current game time is `TimeSkipBackwards`, a time that is not
   * a finite instant a `DateTime` can represent is `InvalidDeadline`.
   */
  readonly skipTo: (time: Input) => Effect.Effect<void, TimeSkipBackwards | InvalidDeadline>
  /** `currentTimeMillis` without the effect wrapper. */
  unsafeCurrentTimeMillis(): number
}

/**
 * The `GameClock` tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const skipADay = Effect.flatMap(GameClock.GameClock, (clock) => clock.skip("1 day"))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class GameClock extends Context.Tag(GameClockKey)<GameClock, GameClockService>() {}

/**
 * True for a game clock service.
 *
 * @example
 * ```ts
 * import { GameClock } from "tickwork"
 *
 * console.log(GameClock.isGameClock({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isGameClock = (u: unknown): u is GameClockService => Predicate.hasProperty(u, TypeId)

/**
 * Builds a game clock over the current `Clock`, with offset zero.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const clock = yield* GameClock.make
 *   yield* clock.skip("2 hours")
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<GameClockService> = Effect.map(Effect.clock, (clock) => {
  const state = new GameClockState(clock)
  const skipBy = (millis: number): Effect.Effect<void, TimeSkipBackwards | InvalidTimerDelay> =>
    Effect.suspend((): Effect.Effect<void, TimeSkipBackwards | InvalidTimerDelay> => {
      const fromMillis = state.now()
      if (millis < 0) return Effect.fail(new TimeSkipBackwards({ fromMillis, toMillis: fromMillis + millis }))
      // game time must stay an instant a DateTime can hold, or `now` dies later with "Invalid date"
      const problem = instantProblem(fromMillis + millis)
      if (problem !== undefined) {
        return Effect.fail(
          new InvalidTimerDelay({
            delayMillis: millis,
            reason: `game time would be ${fromMillis + millis}, which ${problem}`
          })
        )
      }
      state.advance(millis)
      return Effect.void
    })
  const service: GameClockService = {
    [TypeId]: TypeId,
    currentTimeMillis: Effect.sync(() => state.now()),
    now: Effect.sync(() => DateTime.unsafeMake(state.now())),
    offset: Effect.sync(() => Duration.millis(state.offsetMillis)),
    skip: (duration) =>
      Effect.suspend((): Effect.Effect<void, TimeSkipBackwards | InvalidTimerDelay> => {
        const millis = delayMillis(duration)
        if (Either.isRight(millis)) return skipBy(millis.right)
        // a negative duration decodes as an error that still carries the signed millis
        return millis.left.delayMillis < 0 ? skipBy(millis.left.delayMillis) : Effect.fail(millis.left)
      }),
    skipTo: (time) =>
      Effect.suspend(() =>
        Either.match(makeDeadline(time), {
          onLeft: (error): Effect.Effect<void, TimeSkipBackwards | InvalidDeadline> => Effect.fail(error),
          onRight: (deadline) => {
            const fromMillis = state.now()
            return deadline.epochMillis < fromMillis
              ? Effect.fail(new TimeSkipBackwards({ fromMillis, toMillis: deadline.epochMillis }))
              : // a deadline is always an instant a DateTime can hold (`Deadline.make` checks it)
                Effect.sync(() => state.advance(deadline.epochMillis - fromMillis))
          }
        })
      ),
    unsafeCurrentTimeMillis: () => state.now()
  }
  return registerState(service, state)
})

/**
 * A game clock with offset zero over the current `Clock`; provide it next to the `ActorSystem` layer.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem, GameClock } from "tickwork"
 *
 * const Live = Layer.merge(ActorSystem.layer({ name: "game" }), GameClock.layer)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<GameClock> = Layer.effect(GameClock, make)

/**
 * Game time in epoch millis: the provided `GameClock`, or `Clock` when there is none.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const logTime = Effect.flatMap(GameClock.currentTimeMillis, (now) => Effect.logInfo(`game time ${now}`))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const currentTimeMillis: Effect.Effect<number> = currentGameTimeMillis

/**
 * Game time as a UTC `DateTime`: the provided `GameClock`, or `Clock` when there is none.
 *
 * @example
 * ```ts
 * import { DateTime, Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const today = Effect.map(GameClock.now, DateTime.formatIsoDateUtc)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const now: Effect.Effect<DateTime.Utc> = Effect.map(currentGameTimeMillis, (millis) =>
  DateTime.unsafeMake(millis)
)

/**
 * Skips game time forward by `duration` on the provided `GameClock`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const program = GameClock.skip("1 day").pipe(Effect.provide(GameClock.layer))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const skip = (
  duration: Duration.DurationInput
): Effect.Effect<void, TimeSkipBackwards | InvalidTimerDelay, GameClock> =>
  Effect.flatMap(GameClock, (clock) => clock.skip(duration))

/**
 * Skips game time forward to `time` (a `DateTime`, epoch millis or `Deadline`) on the provided `GameClock`.
 *
 * @example
 * ```ts
 * import { DateTime, Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const toSeasonEnd = GameClock.skipTo(DateTime.unsafeMake("2030-01-01T00:00:00Z"))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const skipTo = (time: Input): Effect.Effect<void, TimeSkipBackwards | InvalidDeadline, GameClock> =>
  Effect.flatMap(GameClock, (clock) => clock.skipTo(time))

/**
 * How far the provided `GameClock` is ahead of `Clock`.
 *
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import { GameClock } from "tickwork"
 *
 * const skipped = Effect.map(GameClock.offset, Duration.format)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const offset: Effect.Effect<Duration.Duration, never, GameClock> = Effect.flatMap(
  GameClock,
  (clock) => clock.offset
)
