/**
 * Deadlines: the moment something completes, stored as a value and compared against the game clock when asked.
 *
 * The three rules for game-server timing (docs/entities.md):
 * 1. **Store the completion time, not a countdown.** Put a `Deadline` in the model (`cooldownEndsAt`), never a
 *    counter that a periodic tick decrements.
 * 2. **Check on demand.** Ask `isDue(deadline, now)` when someone needs the answer (session start, a player action).
 *    A deadline nobody looks at costs nothing. Inside an entity, `checkDeadline` does the check and arms a one-shot
 *    for a deadline still ahead.
 * 3. **Spread the load.** When many entities share a deadline, back the on-demand check with a randomized periodic
 *    poll (`Entity.pollDeadline`), so the work trickles in over one interval instead of landing at once.
 *
 * A deadline is an absolute instant (epoch milliseconds), compared against the game clock (`GameClock`: the wall
 * clock plus the time-skip offset) by the effectful helpers.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Equal from "effect/Equal"
import { dual } from "effect/Function"
import * as Hash from "effect/Hash"
import { NodeInspectSymbol } from "effect/Inspectable"
import * as order from "effect/Order"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import { delayMillis } from "./internal/duration.js"
import { currentGameTimeMillis } from "./internal/entityGameClock.js"
import { instantProblem } from "./internal/instant.js"
import { describeValue } from "./internal/validate.js"
import { InvalidTimerDelay } from "./TimerError.js"

/**
 * The symbol that marks a `Deadline`.
 *
 * @example
 * ```ts
 * import { Deadline } from "tickwork"
 *
 * const marked = (u: object) => Deadline.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/Deadline")

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { Deadline } from "tickwork"
 *
 * type Marked = { readonly [K in Deadline.TypeId]: Deadline.TypeId }
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * An absolute instant at which something is due. Structurally equal when the instants are equal.
 *
 * @example
 * ```ts
 * import { Deadline } from "tickwork"
 *
 * interface PlayerModel {
 *   readonly nextLevel: number
 *   readonly nextLevelAvailableAt: Deadline.Deadline
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Deadline extends Pipeable, Equal.Equal {
  readonly [TypeId]: TypeId
  /** The instant, in epoch milliseconds. */
  readonly epochMillis: number
}

/**
 * What the constructors accept as an absolute time: a `DateTime` (its instant; the zone is irrelevant), epoch
 * milliseconds, or a `Deadline`.
 *
 * @example
 * ```ts
 * import { DateTime } from "effect"
 * import type { Deadline } from "tickwork"
 *
 * const inputs: ReadonlyArray<Deadline.Input> = [1_900_000_000_000, DateTime.unsafeMake("2030-01-01T00:00:00Z")]
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type Input = Deadline | DateTime.DateTime | number

/**
 * An absolute time was not usable: not a finite instant (NaN, ±Infinity, an invalid `DateTime`), outside the range a
 * `DateTime` can represent (±8.64e15 ms from 1970), or not a time at all (a string, `undefined`, a `Date`).
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const result = Deadline.make(Number.NaN)
 * if (Either.isLeft(result)) console.log(result.left.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidDeadline extends Data.TaggedError("InvalidDeadline")<{
  readonly epochMillis: number
  readonly reason: string
}> {
  override get message(): string {
    return `invalid deadline ${this.epochMillis}: ${this.reason}`
  }
}

const Proto = {
  [TypeId]: TypeId,
  [Equal.symbol](this: Deadline, that: unknown): boolean {
    return isDeadline(that) && that.epochMillis === this.epochMillis
  },
  [Hash.symbol](this: Deadline): number {
    return Hash.cached(this, Hash.number(this.epochMillis))
  },
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  },
  toJSON(this: Deadline) {
    return { _id: "Deadline", epochMillis: this.epochMillis }
  },
  toString(this: Deadline): string {
    return `Deadline(${new Date(this.epochMillis).toISOString()})`
  },
  [NodeInspectSymbol](this: Deadline) {
    return this.toString()
  }
}

const unsafeFromMillis = (epochMillis: number): Deadline => {
  const self = Object.create(Proto)
  self.epochMillis = epochMillis
  return self
}

/** Epoch millis of an input; NaN for an invalid `DateTime` or anything that is not an `Input`. */
const inputMillis = (input: Input): number =>
  typeof input === "number"
    ? input
    : isDeadline(input)
      ? input.epochMillis
      : DateTime.isDateTime(input)
        ? DateTime.toEpochMillis(input)
        : Number.NaN

/**
 * True for a `Deadline`.
 *
 * @example
 * ```ts
 * import { Deadline } from "tickwork"
 *
 * console.log(Deadline.isDeadline(Deadline.unsafeMake(0))) // true
 * console.log(Deadline.isDeadline(0)) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isDeadline = (u: unknown): u is Deadline => Predicate.hasProperty(u, TypeId)

/**
 * A deadline at an absolute time (`DateTime` or epoch millis); fails with `InvalidDeadline` for a time that is not a
 * finite instant a `DateTime` can represent, or not a time at all.
 * `Either` is an `Effect`, so `yield*` works in `Effect.gen`.
 *
 * @example
 * ```ts
 * import { DateTime, Effect } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const seasonEnds = yield* Deadline.make(DateTime.unsafeMake("2030-01-01T00:00:00Z"))
 *   const fromMillis = yield* Deadline.make(1_900_000_000_000)
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (input: Input): Either.Either<Deadline, InvalidDeadline> => {
  const millis = inputMillis(input)
  if (typeof input !== "number" && !isDeadline(input) && !DateTime.isDateTime(input)) {
    return Either.left(
      new InvalidDeadline({
        epochMillis: millis,
        reason: `${describeValue(input)} is not a DateTime, a Deadline or epoch millis`
      })
    )
  }
  const problem = instantProblem(millis)
  if (problem !== undefined) return Either.left(new InvalidDeadline({ epochMillis: millis, reason: problem }))
  return Either.right(isDeadline(input) ? input : unsafeFromMillis(millis))
}

/**
 * Like `make` for a time known to be valid; an invalid time is a programmer error and throws `InvalidDeadline`.
 *
 * @example
 * ```ts
 * import { Deadline } from "tickwork"
 *
 * const epoch = Deadline.unsafeMake(0)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const unsafeMake = (input: Input): Deadline => Either.getOrThrow(make(input))

/**
 * The deadline `duration` from now on the game clock (`GameClock` when one is provided, else `Clock`). Store it in the
 * model: it is rule 1, the completion time instead of a countdown. A duration that is not a finite delay >= 0, or that
 * lands past what a `DateTime` can represent, fails with `InvalidTimerDelay`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const startCooldown = Effect.gen(function*() {
 *   const cooldownEndsAt = yield* Deadline.fromNow("5 minutes")
 *   return { cooldownEndsAt }
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromNow = (duration: Duration.DurationInput): Effect.Effect<Deadline, InvalidTimerDelay> =>
  Effect.flatMap(
    Effect.suspend(() => delayMillis(duration)),
    (millis) =>
      Effect.flatMap(currentGameTimeMillis, (now) => {
        const problem = instantProblem(now + millis)
        return problem === undefined
          ? Effect.succeed(unsafeFromMillis(now + millis))
          : Effect.fail(
              new InvalidTimerDelay({
                delayMillis: millis,
                reason: `the deadline it gives (${now + millis}) ${problem}`
              })
            )
      })
  )

/**
 * True when the deadline has passed at `now` (a `DateTime` or epoch millis): `now >= deadline`.
 *
 * @example
 * ```ts
 * import { Deadline } from "tickwork"
 *
 * const ready = Deadline.unsafeMake(1_000)
 * console.log(Deadline.isDue(ready, 999)) // false
 * console.log(ready.pipe(Deadline.isDue(1_000))) // true
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const isDue: {
  (now: DateTime.DateTime | number): (self: Deadline) => boolean
  (self: Deadline, now: DateTime.DateTime | number): boolean
} = dual(2, (self: Deadline, now: DateTime.DateTime | number): boolean => inputMillis(now) >= self.epochMillis)

/**
 * The time left until the deadline at `now`; zero once it is due.
 *
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const left = Deadline.remaining(Deadline.unsafeMake(60_000), 15_000)
 * console.log(Duration.format(left)) // "45s"
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const remaining: {
  (now: DateTime.DateTime | number): (self: Deadline) => Duration.Duration
  (self: Deadline, now: DateTime.DateTime | number): Duration.Duration
} = dual(
  2,
  (self: Deadline, now: DateTime.DateTime | number): Duration.Duration =>
    Duration.millis(Math.max(0, self.epochMillis - inputMillis(now)))
)

/**
 * Checks the deadline against the game clock now (rule 2: check on demand).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const canAct = (cooldownEndsAt: Deadline.Deadline) => Deadline.isDueNow(cooldownEndsAt)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const isDueNow = (self: Deadline): Effect.Effect<boolean> =>
  Effect.map(currentGameTimeMillis, (now) => now >= self.epochMillis)

/**
 * The time left until the deadline on the game clock; zero once it is due.
 *
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const countdown = (endsAt: Deadline.Deadline) =>
 *   Deadline.remainingNow(endsAt).pipe(Effect.map(Duration.format))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const remainingNow = (self: Deadline): Effect.Effect<Duration.Duration> =>
  Effect.map(currentGameTimeMillis, (now) => remaining(self, now))

/**
 * The deadline as a UTC `DateTime`.
 *
 * @example
 * ```ts
 * import { DateTime } from "effect"
 * import { Deadline } from "tickwork"
 *
 * console.log(DateTime.formatIso(Deadline.toDateTime(Deadline.unsafeMake(0)))) // 1970-01-01T00:00:00.000Z
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const toDateTime = (self: Deadline): DateTime.Utc => DateTime.unsafeMake(self.epochMillis)

/**
 * The deadline in epoch milliseconds.
 *
 * @example
 * ```ts
 * import { Deadline } from "tickwork"
 *
 * console.log(Deadline.toEpochMillis(Deadline.unsafeMake(42))) // 42
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const toEpochMillis = (self: Deadline): number => self.epochMillis

/**
 * Earlier deadlines first.
 *
 * @example
 * ```ts
 * import { Array } from "effect"
 * import { Deadline } from "tickwork"
 *
 * const sorted = Array.sort([Deadline.unsafeMake(2), Deadline.unsafeMake(1)], Deadline.Order)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export const Order: order.Order<Deadline> = order.mapInput(order.number, (self: Deadline) => self.epochMillis)
