/**
 * The timeout of an `ask`, checked: a delay as everywhere (`delayMillis`), and more than zero, since an ask that may
 * not wait can never be answered. A bad timeout is a typed error before the question is sent.
 */
import type * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import { InvalidTimerDelay } from "../TimerError.js"
import { delayMillis } from "./duration.js"

/**
 * The millis of `timeout`, or `fallback` (already checked) when it is undefined; a timeout of zero or less is an
 * `InvalidTimerDelay` saying `why` (what may not wait can never complete).
 */
export const positiveTimeoutMillis = (
  timeout: Duration.DurationInput | undefined,
  fallback: number,
  why: string
): Either.Either<number, InvalidTimerDelay> =>
  timeout === undefined
    ? Either.right(fallback)
    : Either.flatMap(delayMillis(timeout), (millis) =>
        millis > 0 ? Either.right(millis) : Either.left(new InvalidTimerDelay({ delayMillis: millis, reason: why }))
      )

/** The millis of `timeout`, or `fallback` (already checked, e.g. the system's `askTimeout`) when it is undefined. */
export const askTimeoutMillis = (
  timeout: Duration.DurationInput | undefined,
  fallback: number
): Either.Either<number, InvalidTimerDelay> =>
  positiveTimeoutMillis(
    timeout,
    fallback,
    "an ask timeout must be more than 0: an ask that may not wait can never be answered"
  )
