/**
 * Checks of values a user hands to a timer API, made when the schedule is made so that a bad value never reaches the
 * engine: each returns the typed error to fail with, or undefined when the value is usable.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { isActor } from "../Actor.js"
import { isActorRef } from "../ActorRef.js"
import * as QuartzCron from "../QuartzCron.js"
import type { SupervisorStrategy } from "../Supervision.js"
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

/** Why `strategy` cannot supervise, or undefined when it can (see `Supervision.decider`). */
export const strategyProblem = (strategy: unknown): string | undefined => {
  if (strategy === null || typeof strategy !== "object") return "must be a SupervisorStrategy (see Supervision)"
  const { decide, maxRestarts, withinMillis } = strategy as Partial<SupervisorStrategy>
  if (typeof decide !== "function") return "its decide must be a function"
  if (!(maxRestarts === Number.POSITIVE_INFINITY || (Number.isInteger(maxRestarts) && maxRestarts! >= 0))) {
    return `maxRestarts must be a whole number >= 0 (or Infinity), got ${maxRestarts}`
  }
  if (!(typeof withinMillis === "number" && withinMillis >= 1)) {
    return `within must be a duration of at least 1 ms, got ${withinMillis} ms`
  }
  return undefined
}

/** Definitions checked already: a kind's actor (a grain's, an entity's) is checked once, not at every spawn. */
const checked = new WeakSet<object>()

/** Why `actor` cannot be spawned, or undefined when it can. */
export const actorProblem = (actor: unknown): string | undefined => {
  if (actor !== null && typeof actor === "object" && checked.has(actor)) return undefined
  if (!isActor(actor)) return `${describeValue(actor)} is not an actor: make one with Actor.make`
  for (const hook of ["preStart", "receive", "postStop", "preRestart", "postRestart"] as const) {
    if (typeof actor[hook] !== "function") return `${hook} must be a function, got ${describeValue(actor[hook])}`
  }
  const capacity = actor.mailboxCapacity
  if (
    capacity !== undefined &&
    capacity !== Number.POSITIVE_INFINITY &&
    !(Number.isInteger(capacity) && capacity > 0)
  ) {
    return `mailboxCapacity must be a positive whole number (or Infinity for unbounded), got ${describeValue(capacity)}`
  }
  if (actor.supervisorStrategy !== undefined) {
    const problem = strategyProblem(actor.supervisorStrategy)
    if (problem !== undefined) return `supervisorStrategy: ${problem}`
  }
  checked.add(actor)
  return undefined
}
