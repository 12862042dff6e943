/**
 * The check of a passivation strategy. `Passivation.idle` and `messageCount` are data constructors and do not throw:
 * a bad argument gives a strategy that carries why it is unusable, and the layer that registers it (`Grains.layer`,
 * the cluster's grain host) fails with a typed error naming it.
 */
import type { Passivation } from "../Passivation.js"
import { intervalMillis } from "./duration.js"
import { shown } from "./shown.js"

/** Where a constructor leaves the reason its argument was unusable (hidden: not enumerable, not in JSON). */
const ProblemKey: unique symbol = Symbol.for("tickwork/Passivation/problem")

/** `strategy`, marked as unusable for `reason`. */
export const unusable = <P extends Passivation>(strategy: P, reason: string): P =>
  Object.defineProperty(strategy, ProblemKey, { value: reason, enumerable: false })

/** Why `strategy` cannot be used, or undefined when it can. Also catches hand-made or foreign values. */
export const problemOf = (strategy: unknown): string | undefined => {
  if (typeof strategy !== "object" || strategy === null) {
    return `${shown(strategy)} is not a passivation strategy: use Passivation.idle(timeout), messageCount(n) or never`
  }
  const marked = (strategy as { readonly [ProblemKey]?: string })[ProblemKey]
  if (marked !== undefined) return marked
  const candidate = strategy as Passivation
  switch (candidate._tag) {
    case "Idle": {
      const checked = intervalMillis(candidate.timeoutMillis)
      return checked._tag === "Left" ? `the idle timeout ${checked.left.reason}` : undefined
    }
    case "MessageCount":
      return Number.isSafeInteger(candidate.count) && candidate.count > 0
        ? undefined
        : `the message count must be a whole number >= 1, got ${shown(candidate.count)}`
    case "Never":
      return undefined
    default:
      return "it is not a passivation strategy: use Passivation.idle(timeout), messageCount(n) or never"
  }
}
