/**
 * Decoding of user-supplied delays and intervals. `Duration.decode` clamps negative input to zero and turns NaN into
 * zero, so the signed value is worked out first: a negative or NaN delay is a typed error, never a silent zero.
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { InvalidTimerDelay, InvalidTimerInterval } from "../TimerError.js"

/** The millis the caller meant, sign included; NaN when the input is not a duration at all. */
const signedMillis = (input: Duration.DurationInput): number => {
  if (typeof input === "number") return input
  if (typeof input === "bigint") return Number(input) / 1e6
  if (Array.isArray(input)) return input.length === 2 ? input[0] * 1000 + input[1] / 1e6 : Number.NaN
  if (typeof input === "string") {
    const text = input.trim()
    if (text.startsWith("-")) {
      const magnitude = signedMillis(text.slice(1) as Duration.DurationInput)
      return magnitude >= 0 ? -magnitude : Number.NaN
    }
  }
  const decoded = Duration.decodeUnknown(input)
  return decoded._tag === "Some" ? Duration.toMillis(decoded.value) : Number.NaN
}

/** Millis of `input`, or why it is not a usable duration. */
const decodeMillis = (input: Duration.DurationInput): Either.Either<number, readonly [number, string]> => {
  const millis = signedMillis(input)
  if (Number.isNaN(millis)) {
    const text = typeof input === "number" ? "NaN" : JSON.stringify(String(input))
    return Either.left([millis, `${text} is not a duration (a finite number of millis or e.g. "5 seconds")`])
  }
  if (millis < 0) return Either.left([millis, "must not be negative"])
  if (!Number.isFinite(millis)) return Either.left([millis, "must be finite"])
  return Either.right(millis)
}

/** A delay: finite and >= 0. */
export const delayMillis = (input: Duration.DurationInput): Either.Either<number, InvalidTimerDelay> =>
  // fast path: a plain, valid number of millis (the common case on hot scheduling paths)
  typeof input === "number" && input >= 0 && input < Number.POSITIVE_INFINITY
    ? Either.right(input)
    : Either.mapLeft(decodeMillis(input), ([delayMillis, reason]) => new InvalidTimerDelay({ delayMillis, reason }))

/**
 * The engine's resolution: no timer fires more than once per millisecond. A fixed interval below it is a typed error
 * (`intervalMillis`); the delays a `Schedule` computes are raised to it (`scheduleDue`).
 */
export const MIN_INTERVAL_MILLIS = 1

/** An interval: finite and at least `MIN_INTERVAL_MILLIS`. */
export const intervalMillis = (input: Duration.DurationInput): Either.Either<number, InvalidTimerInterval> =>
  Either.flatMap(
    Either.mapLeft(
      decodeMillis(input),
      ([intervalMillis, reason]) => new InvalidTimerInterval({ intervalMillis, reason })
    ),
    (millis) =>
      millis >= MIN_INTERVAL_MILLIS
        ? Either.right(millis)
        : Either.left(
            new InvalidTimerInterval({
              intervalMillis: millis,
              reason:
                millis === 0
                  ? "must be strictly positive"
                  : `must be at least ${MIN_INTERVAL_MILLIS} ms, the timer engine's resolution`
            })
          )
  )

/** The next due time of a `Schedule`-driven timer that fired at `previous`: never sooner than the engine's resolution. */
export const scheduleDue = (computed: number, previous: number): number =>
  Math.max(computed, previous + MIN_INTERVAL_MILLIS)

/**
 * A Schema for an option that must be a positive, finite duration (`"5 seconds"`, or millis); its message names the
 * option and shows `example`.
 */
export const positiveDuration = (option: string, example: string): Schema.Schema<Duration.DurationInput> =>
  Schema.declare(
    (u): u is Duration.DurationInput =>
      Option.match(Duration.decodeUnknown(u), {
        onNone: () => false,
        onSome: (d) => Duration.isFinite(d) && Duration.toMillis(d) > 0 && !(typeof u === "number" && u <= 0)
      }),
    {
      identifier: "PositiveDuration",
      message: () => `${option} must be a positive finite duration such as ${example}`
    }
  )

/** A periodic timer's interval and first delay (the interval itself when no initial delay is given), checked. */
export const periodMillis = (
  interval: Duration.DurationInput,
  initialDelay: Duration.DurationInput | undefined
): Either.Either<{ readonly every: number; readonly first: number }, InvalidTimerInterval | InvalidTimerDelay> =>
  Either.flatMap(intervalMillis(interval), (every) =>
    Either.map(initialDelay === undefined ? Either.right(every) : delayMillis(initialDelay), (first) => ({
      every,
      first
    }))
  )
