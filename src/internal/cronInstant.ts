/**
 * The first instant of a cron after now, for every API that arms a cron timer. Parsing is time-independent, so an
 * expression whose instants are all past (`0 0 0 1 1 ? 1999`) parses; arming it would make a timer that is "active"
 * and never fires, so the arming API fails instead.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as QuartzCron from "../QuartzCron.js"
import { InvalidCronExpression } from "../TimerError.js"

/** The first instant of `cron` strictly after `now`, or `InvalidCronExpression` when it has none (it never fires). */
export const firstInstantAfter = (
  cron: QuartzCron.QuartzCron,
  now: number
): Either.Either<number, InvalidCronExpression> =>
  Option.match(QuartzCron.next(cron, now), {
    onSome: Either.right,
    onNone: () =>
      Either.left(
        new InvalidCronExpression({
          expression: cron.expression,
          reason: `it has no instant after now (${new Date(now).toISOString()}), so it would never fire`
        })
      )
  })
