/**
 * The tick a Spot timer's handler receives.
 *
 * A tick says which scheduled tick it stands for, when that was due, when its handler actually started and how many
 * ticks were dropped on the way, so a handler can see (and report) that its Spot is falling behind. The fields are
 * computed when the handler starts, after the overrun policy has decided which tick this is.
 *
 * | field | meaning |
 * | --- | --- |
 * | `name` | the timer's name |
 * | `scheduledIndex` | which scheduled tick this is, from 1; the timer's n-th period |
 * | `deliveryIndex` | the order of delivery, from 1; `scheduledIndex - deliveryIndex` ticks were dropped so far |
 * | `scheduledTime` | when it was due (epoch millis of the Effect `Clock`) |
 * | `startTime` | when its handler started |
 * | `delay` | `startTime - scheduledTime` |
 * | `skippedTicks` | ticks dropped immediately before this one |
 * | `period` | the period the timer was registered with |
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"

/**
 * The symbol that marks a Spot timer tick.
 *
 * @example
 * ```ts
 * import { Tick } from "tickwork"
 *
 * const marked = (u: object) => Tick.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/Tick")

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { Tick } from "tickwork"
 *
 * type Marker = Tick.TypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * What a Spot timer's handler is told about the tick it handles.
 *
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import type { Tick } from "tickwork"
 *
 * const report = (tick: Tick.Tick) =>
 *   Effect.logInfo(
 *     `${tick.name} #${tick.scheduledIndex}: ${Duration.toMillis(tick.delay)} ms late, ${tick.skippedTicks} skipped`
 *   )
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Tick extends Pipeable {
  readonly [TypeId]: TypeId
  /** The name the timer was registered with. */
  readonly name: string
  /** Which scheduled tick this is, counting from 1. On a fixed-rate timer it was due at start + index × period. */
  readonly scheduledIndex: number
  /** The order in which it was delivered, counting from 1. `scheduledIndex - deliveryIndex` ticks were dropped. */
  readonly deliveryIndex: number
  /** When the tick was due, in epoch millis of the Effect `Clock`. */
  readonly scheduledTime: number
  /** When its handler started, in epoch millis of the Effect `Clock`. */
  readonly startTime: number
  /** `startTime - scheduledTime`: how late the tick started. A growing delay means the Spot's queue backs up. */
  readonly delay: Duration.Duration
  /** How many ticks were dropped immediately before this one. */
  readonly skippedTicks: number
  /** The period the timer was registered with. */
  readonly period: Duration.Duration
}

/**
 * The fields `make` takes; `delay` is computed.
 *
 * @example
 * ```ts
 * import { Tick } from "tickwork"
 *
 * const fields: Tick.Fields = {
 *   name: "poll",
 *   scheduledIndex: 1,
 *   deliveryIndex: 1,
 *   scheduledTime: 1_000,
 *   startTime: 1_004,
 *   skippedTicks: 0,
 *   period: "1 second"
 * }
 * const tick = Tick.make(fields)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Fields {
  readonly name: string
  readonly scheduledIndex: number
  readonly deliveryIndex: number
  readonly scheduledTime: number
  readonly startTime: number
  readonly skippedTicks: number
  readonly period: Duration.DurationInput
}

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  },
  toJSON(this: Tick) {
    return {
      _id: "Tick",
      name: this.name,
      scheduledIndex: this.scheduledIndex,
      deliveryIndex: this.deliveryIndex,
      scheduledTime: this.scheduledTime,
      startTime: this.startTime,
      delayMillis: Duration.toMillis(this.delay),
      skippedTicks: this.skippedTicks,
      periodMillis: Duration.toMillis(this.period)
    }
  },
  toString(this: Tick) {
    return (
      `Tick(${this.name} #${this.scheduledIndex}, delivery ${this.deliveryIndex}, scheduled ${this.scheduledTime}, ` +
      `started ${this.startTime}, delay ${Duration.toMillis(this.delay)} ms, skipped ${this.skippedTicks}, ` +
      `period ${Duration.toMillis(this.period)} ms)`
    )
  }
}

/**
 * Builds a tick, e.g. to unit-test a timer handler without a Spot. `delay` is `startTime - scheduledTime`.
 *
 * @example
 * ```ts
 * import { Tick } from "tickwork"
 *
 * const tick = Tick.make({
 *   name: "regen",
 *   scheduledIndex: 5,
 *   deliveryIndex: 3,
 *   scheduledTime: 500,
 *   startTime: 620,
 *   skippedTicks: 2,
 *   period: "100 millis"
 * })
 * console.log(String(tick)) // Tick(regen #5, delivery 3, scheduled 500, started 620, delay 120 ms, ...)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (fields: Fields): Tick => {
  const tick = Object.create(Proto)
  tick.name = fields.name
  tick.scheduledIndex = fields.scheduledIndex
  tick.deliveryIndex = fields.deliveryIndex
  tick.scheduledTime = fields.scheduledTime
  tick.startTime = fields.startTime
  tick.delay = Duration.millis(fields.startTime - fields.scheduledTime)
  tick.skippedTicks = fields.skippedTicks
  tick.period = Duration.decode(fields.period)
  return tick
}

/**
 * True for a tick.
 *
 * @example
 * ```ts
 * import { Tick } from "tickwork"
 *
 * console.log(Tick.isTick({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isTick = (u: unknown): u is Tick => Predicate.hasProperty(u, TypeId)
