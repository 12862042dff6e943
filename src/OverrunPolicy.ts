/**
 * What a Spot timer does with ticks that went by while its Spot was busy.
 *
 * A tick runs late when work piles up in the Spot's queue, when a handler runs longer than the period, or when the
 * process pauses. The policy is evaluated when a tick **starts** (when it reaches the head of the Spot's queue), not
 * when it fires: that is the moment the Spot knows how far behind it is.
 *
 * | policy | ticks that went by | next tick |
 * | --- | --- | --- |
 * | `SkipLateTicks` (default) | dropped; one tick runs, for the latest due time | on the grid: start + n × period |
 * | `CatchUpBounded(limit)` | the newest `limit` run, one per queue turn, in order; older ones dropped | on the grid |
 * | `DelayNextTick` | none can go by | `period` after the previous handler ended |
 *
 * The first two keep a fixed rate measured from the moment the timer started, so a late tick never moves the next
 * one's scheduled time. With all three, a timer's handler invocations never overlap, even when a handler yields its
 * turn: the next tick is queued only after the previous handler has finished.
 *
 * `CatchUpBounded(limit)` precisely: when a tick starts at time `now`, let `due` be the scheduled ticks not yet
 * delivered or dropped whose time is `<= now` (the last of them is the tick for the current period, the others "went
 * by"). If at most `limit` went by, the oldest due tick is delivered. Otherwise the oldest `wentBy - limit` are
 * dropped (reported as the delivered tick's `skippedTicks`) and the oldest remaining one is delivered. Each remaining
 * due tick re-enters the queue after the handler ends and is evaluated again when it starts, so the backlog behind
 * the current period never exceeds `limit`, and a delivered tick's `delay` is always less than `(limit + 1) × period`
 * (less than one period under `SkipLateTicks`). `CatchUpBounded(1)` (the default limit) keeps at most one missed tick
 * besides the current one; `SkipLateTicks` keeps none.
 *
 * @since 0.1.0
 */
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"

/**
 * The symbol that marks an overrun policy.
 *
 * @example
 * ```ts
 * import { OverrunPolicy } from "tickwork"
 *
 * const marked = (u: object) => OverrunPolicy.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/OverrunPolicy")

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { OverrunPolicy } from "tickwork"
 *
 * type Marker = OverrunPolicy.TypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * Drop the ticks that went by and deliver one for the latest due time; `skippedTicks` counts the dropped ones.
 *
 * @example
 * ```ts
 * import { OverrunPolicy } from "tickwork"
 *
 * const policy = OverrunPolicy.SkipLateTicks
 * console.log(policy._tag) // SkipLateTicks
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface SkipLateTicks extends Pipeable {
  readonly [TypeId]: TypeId
  readonly _tag: "SkipLateTicks"
}

/**
 * Deliver up to `limit` of the ticks that went by (the newest ones) and drop older ones.
 *
 * @example
 * ```ts
 * import { OverrunPolicy } from "tickwork"
 *
 * const policy = OverrunPolicy.CatchUpBounded(3)
 * if (policy._tag === "CatchUpBounded") console.log(policy.limit) // 3
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface CatchUpBounded extends Pipeable {
  readonly [TypeId]: TypeId
  readonly _tag: "CatchUpBounded"
  /** How many ticks that went by may still be delivered; validated (>= 1, integer) when the timer is registered. */
  readonly limit: number
}

/**
 * No fixed rate: the next tick is due `period` after the previous handler ended.
 *
 * @example
 * ```ts
 * import { OverrunPolicy } from "tickwork"
 *
 * console.log(String(OverrunPolicy.DelayNextTick)) // DelayNextTick
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface DelayNextTick extends Pipeable {
  readonly [TypeId]: TypeId
  readonly _tag: "DelayNextTick"
}

/**
 * The three overrun policies.
 *
 * @example
 * ```ts
 * import { OverrunPolicy } from "tickwork"
 *
 * const describe = (policy: OverrunPolicy.OverrunPolicy): string => {
 *   switch (policy._tag) {
 *     case "SkipLateTicks":
 *       return "latest tick only"
 *     case "CatchUpBounded":
 *       return `up to ${policy.limit} missed ticks`
 *     case "DelayNextTick":
 *       return "period after the end"
 *   }
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type OverrunPolicy = SkipLateTicks | CatchUpBounded | DelayNextTick

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  },
  toString(this: OverrunPolicy) {
    return this._tag === "CatchUpBounded" ? `CatchUpBounded(${this.limit})` : this._tag
  },
  toJSON(this: OverrunPolicy) {
    return this._tag === "CatchUpBounded" ? { _tag: this._tag, limit: this.limit } : { _tag: this._tag }
  }
}

const make = <P extends OverrunPolicy>(fields: Omit<P, TypeId | "pipe">): P =>
  Object.assign(Object.create(Proto), fields)

/**
 * The default policy: only the latest state matters (state broadcasts, expiry checks).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { OverrunPolicy, type Spot } from "tickwork"
 *
 * const start = (ctx: Spot.SpotContext<number>) =>
 *   ctx.timers.start({
 *     name: "broadcast",
 *     period: "100 millis",
 *     overrun: OverrunPolicy.SkipLateTicks,
 *     handler: (tick) => Effect.logInfo(`state at ${tick.startTime}, ${tick.skippedTicks} skipped`)
 *   })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const SkipLateTicks: OverrunPolicy = make<SkipLateTicks>({ _tag: "SkipLateTicks" })

/**
 * For when the count of ticks matters (regeneration, simulation steps): up to `limit` (default 1) ticks that went by
 * are still delivered, older ones are dropped. A `limit` that is not an integer >= 1 makes the timer's registration
 * fail with `InvalidOverrunPolicy`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { OverrunPolicy, type Spot } from "tickwork"
 *
 * const start = (ctx: Spot.SpotContext<number>) =>
 *   ctx.timers.start({
 *     name: "regen",
 *     period: "1 second",
 *     overrun: OverrunPolicy.CatchUpBounded(3),
 *     handler: () => ctx.update((hp) => Math.min(hp + 1, 100))
 *   })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const CatchUpBounded = (limit = 1): OverrunPolicy => make<CatchUpBounded>({ _tag: "CatchUpBounded", limit })

/**
 * For when a minimum gap between runs must hold (polling an external API): the next tick is scheduled `period`
 * after the previous handler ended.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { OverrunPolicy, type Spot } from "tickwork"
 *
 * const start = (ctx: Spot.SpotContext<number>) =>
 *   ctx.timers.start({
 *     name: "poll",
 *     period: "5 seconds",
 *     overrun: OverrunPolicy.DelayNextTick,
 *     handler: () => Effect.logInfo("polling")
 *   })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const DelayNextTick: OverrunPolicy = make<DelayNextTick>({ _tag: "DelayNextTick" })

/**
 * True for an overrun policy.
 *
 * @example
 * ```ts
 * import { OverrunPolicy } from "tickwork"
 *
 * console.log(OverrunPolicy.isOverrunPolicy(OverrunPolicy.DelayNextTick)) // true
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isOverrunPolicy = (u: unknown): u is OverrunPolicy => Predicate.hasProperty(u, TypeId)
