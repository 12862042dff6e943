/**
 * The instants a `DateTime` (a JavaScript `Date`) can represent: ±8.64e15 ms from the epoch, about ±275,760 years.
 * Game time and deadlines must stay inside, or `GameClock.now`, `Deadline.toDateTime` and a deadline's `toString`
 * would die with "Invalid date" long after the input that caused it was accepted.
 */
export const MAX_EPOCH_MILLIS = 8.64e15

/** Why `millis` is not an instant a `DateTime` can hold, or undefined when it is. */
export const instantProblem = (millis: number): string | undefined =>
  Number.isNaN(millis)
    ? "is not a time"
    : !Number.isFinite(millis)
      ? "must be a finite instant"
      : Math.abs(millis) > MAX_EPOCH_MILLIS
        ? `is outside the range a DateTime can represent (±${MAX_EPOCH_MILLIS} ms from 1970, about ±275,760 years)`
        : undefined
