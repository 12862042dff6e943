/**
 * Decoding of user-supplied delays and intervals. `Duration.decode` clamps negative input to zero and throws on
 * nonsense, so the raw input is checked first: a negative delay is a typed error, never a silent zero.
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import { InvalidTimerDelay, InvalidTimerInterval } from "../TimerError.js"

const isNegative = (input: Duration.DurationInput): boolean => {
  if (typeof input === "number") return input < 0 || Number.isNaN(input)
  if (typeof input === "bigint") return input < 0n
  if (typeof input === "string") return input.trimStart().startsWith("-")
  if (Array.isArray(input)) return input.some((n) => n < 0 || Number.isNaN(n))
  return false
}

/** Millis of `input`, or why it is not a usable duration. */
const decodeMillis = (input: Duration.DurationInput): Either.Either<number, string> => {
  if (isNegative(input)) return Either.left("must not be negative")
  const decoded = Duration.decodeUnknown(input)
  if (decoded._tag === "None") return Either.left(`${JSON.stringify(String(input))} is not a duration`)
  const millis = Duration.toMillis(decoded.value)
  return Number.isFinite(millis) ? Either.right(millis) : Either.left("must be finite")
}

/** The millis the caller meant, sign included, for error messages. */
const rawMillis = (input: Duration.DurationInput): number => {
  if (typeof input === "number") return input
  if (typeof input === "string" && input.trimStart().startsWith("-"))
    return -rawMillis(input.trimStart().slice(1) as Duration.DurationInput)
  const decoded = Duration.decodeUnknown(input)
  return decoded._tag === "Some" ? Duration.toMillis(decoded.value) : Number.NaN
}

/** A delay: finite and >= 0. */
export const delayMillis = (input: Duration.DurationInput): Either.Either<number, InvalidTimerDelay> =>
  Either.mapLeft(decodeMillis(input), (reason) => new InvalidTimerDelay({ delayMillis: rawMillis(input), reason }))

/** An interval: finite and > 0. */
export const intervalMillis = (input: Duration.DurationInput): Either.Either<number, InvalidTimerInterval> =>
  Either.flatMap(
    Either.mapLeft(
      decodeMillis(input),
      (reason) => new InvalidTimerInterval({ intervalMillis: rawMillis(input), reason })
    ),
    (millis) =>
      millis > 0
        ? Either.right(millis)
        : Either.left(new InvalidTimerInterval({ intervalMillis: millis, reason: "must be strictly positive" }))
  )
