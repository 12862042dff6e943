/**
 * Checks of values a user hands to a timer API, made when the schedule is made so that a bad value never reaches the
 * engine: each returns the typed error to fail with, or undefined when the value is usable.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { isActorRef } from "../ActorRef.js"
import * as QuartzCron from "../QuartzCron.js"
import { InvalidCronExpression, InvalidTimerReference, InvalidTimerTarget } from "../TimerError.js"

/** A short, safe text for any value, for an error message (never throws: a getter or `toString` may). */
export const describeValue = (value: unknown): string => {
  try {
    if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)
    if (value === null || typeof value !== "object") return typeof value === "function" ? "a function" : String(value)
    if (isActorRef(value)) return String(value)
    const tag = (value as { readonly _tag?: unknown })._tag
    if (typeof tag === "string") return `{ _tag: ${JSON.stringify(tag)} }`
    const name = (value as object).constructor?.name
    return Array.isArray(value) ? "an array" : name !== undefined && name !== "Object" ? `a ${name}` : "an object"
  } catch {
    return "a value that cannot be described"
  }
}

/** A message schedule's target (or sender, when one is given) must be an `ActorRef`. */
export const checkRef = (value: unknown, role: "target" | "sender"): InvalidTimerTarget | undefined =>
  isActorRef(value)
    ? undefined
    : new InvalidTimerTarget({ target: describeValue(value), reason: `the ${role} must be an ActorRef` })

/** A function task must be an `Effect`. */
export const checkTask = (value: unknown): InvalidTimerTarget | undefined =>
  Effect.isEffect(value)
    ? undefined
    : new InvalidTimerTarget({ target: describeValue(value), reason: "the task must be an Effect" })

/** A reference names a schedule: a non-empty string with something other than spaces in it. */
export const checkReference = (value: unknown): InvalidTimerReference | undefined =>
  typeof value !== "string"
    ? new InvalidTimerReference({ reference: describeValue(value), reason: "must be a string" })
    : value.trim().length === 0
      ? new InvalidTimerReference({ reference: value, reason: "must not be empty or blank" })
      : undefined

/**
 * The first instant of `cron` after `now`; an expression with none (its years are all past) is an
 * `InvalidCronExpression`, since a schedule on it could never fire.
 */
export const firstInstant = (
  cron: QuartzCron.QuartzCron,
  expression: string,
  now: number
): Either.Either<number, InvalidCronExpression> =>
  Either.fromOption(
    QuartzCron.next(cron, now),
    () =>
      new InvalidCronExpression({
        expression,
        reason: `it has no instant after ${DateTime.formatIso(DateTime.unsafeMake(now))}, so it could never fire`
      })
  )
