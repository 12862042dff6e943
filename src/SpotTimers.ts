/**
 * Spot timers: periodic work that enters a Spot's queue.
 *
 * A timer is registered on the Spot context with a name, a period, a handler and an overrun policy. Each tick enters
 * the Spot's execution queue like any other work, so the handler uses the Spot's state directly and never runs at
 * the same time as other work of the Spot. The first tick is due one period after registration.
 *
 * - The name is unique within the Spot while the timer is active: registering it again fails with
 *   `DuplicateTimerName` (cancel the old timer first). A period that is not a finite duration of at least 1 ms (the
 *   timer engine's resolution) fails with `TimerError.InvalidTimerInterval`; an `overrun` that is not an
 *   `OverrunPolicy` (a string such as `"SkipLateTicks"`, `{}`) or a `CatchUpBounded` limit that is not an integer >= 1
 *   with `InvalidOverrunPolicy`; options that are not an object, an unknown option, an empty or blank name or a
 *   handler that is not a function with `TimerError.InvalidTimerOptions`. Nothing is registered then.
 * - The handler receives a `Tick` whose fields (scheduled and delivery index, scheduled and start time, delay, skipped
 *   ticks, period) are computed when it starts, after the `OverrunPolicy` has decided which tick it is.
 * - A timer's handler invocations never overlap: the next tick enters the queue only when the previous handler has
 *   finished, even if the handler gave its turn back with `Spot.Yield` meanwhile.
 * - A failing handler is logged (error level, with the timer's name) and the timer keeps its schedule.
 * - Cancelling a timer drops its queued tick; a handler already running finishes. Stopping the Spot cancels every
 *   timer and drops their queued ticks.
 * - Ticks run with no diagnostic context from the code that registered the timer (like every tickwork timer).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { Pipeable } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import type { OverrunPolicy } from "./OverrunPolicy.js"
import type { SpotContext } from "./Spot.js"
import type { Tick } from "./Tick.js"
import type { InvalidTimerInterval, InvalidTimerOptions } from "./TimerError.js"

/**
 * The symbol that marks a Spot timer handle.
 *
 * @example
 * ```ts
 * import { SpotTimers } from "tickwork"
 *
 * const marked = (u: object) => SpotTimers.TypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/SpotTimers/TimerHandle")

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import type { SpotTimers } from "tickwork"
 *
 * type Marker = SpotTimers.TypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * What `start` takes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { OverrunPolicy, type SpotTimers } from "tickwork"
 *
 * const regen: SpotTimers.TimerOptions<{ readonly hp: number }> = {
 *   name: "regen",
 *   period: "1 second",
 *   overrun: OverrunPolicy.CatchUpBounded(3),
 *   handler: (_tick, ctx) => ctx.update((s) => ({ hp: Math.min(s.hp + 1, 100) }))
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface TimerOptions<S, R = never> {
  /** Not empty; unique within the Spot while the timer is active. */
  readonly name: string
  /** At least 1 ms. */
  readonly period: Duration.DurationInput
  /** What happens to ticks that went by while the Spot was busy; `OverrunPolicy.SkipLateTicks` by default. */
  readonly overrun?: OverrunPolicy | undefined
  /** Runs on the Spot's queue for each tick. */
  readonly handler: (tick: Tick, context: SpotContext<S>) => Effect.Effect<unknown, unknown, R>
}

/**
 * A registered timer.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Spot } from "tickwork"
 *
 * const blinkOnce = (ctx: Spot.SpotContext<number>) =>
 *   Effect.gen(function*() {
 *     const handle = yield* Effect.orDie(
 *       ctx.timers.start({ name: "blink", period: "500 millis", handler: () => Effect.void })
 *     )
 *     // later, from anywhere
 *     const wasActive = yield* handle.cancel
 *   })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface TimerHandle extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  /**
   * Cancels the timer and drops its queued tick; true when it was active. A handler already running finishes. May
   * be called from anywhere, also off the Spot's turn.
   */
  readonly cancel: Effect.Effect<boolean>
  /** True until the timer is cancelled or its Spot stops. */
  readonly isActive: Effect.Effect<boolean>
}

/**
 * The timers of one Spot: `context.timers`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { OverrunPolicy, Spot } from "tickwork"
 *
 * const Game = Spot.spawn({
 *   initialState: { turn: 0 },
 *   onStart: (ctx) =>
 *     Effect.orDie(
 *       ctx.timers.start({
 *         name: "turn",
 *         period: "500 millis",
 *         overrun: OverrunPolicy.SkipLateTicks,
 *         handler: (tick) => ctx.update((s) => ({ turn: s.turn + 1 + tick.skippedTicks }))
 *       })
 *     )
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface SpotTimers<S> {
  /**
   * Registers a timer; its first tick is due one period from now. The handler runs with the context of the code
   * that registered it. Only the Spot's own work may register timers (anything else dies).
   */
  readonly start: <R>(options: TimerOptions<S, R>) => Effect.Effect<TimerHandle, SpotTimerError, R>
  /** Cancels the timer named `name`; true when one was active. */
  readonly cancel: (name: string) => Effect.Effect<boolean>
  /** True while a timer named `name` is active. */
  readonly isActive: (name: string) => Effect.Effect<boolean>
  /** The names of the active timers, in registration order. */
  readonly names: Effect.Effect<ReadonlyArray<string>>
}

/**
 * True for a timer handle.
 *
 * @example
 * ```ts
 * import { SpotTimers } from "tickwork"
 *
 * console.log(SpotTimers.isTimerHandle({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isTimerHandle = (u: unknown): u is TimerHandle => Predicate.hasProperty(u, TypeId)

/**
 * A timer of that name is already active in the Spot.
 *
 * @example
 * ```ts
 * import { SpotTimers } from "tickwork"
 *
 * console.log(new SpotTimers.DuplicateTimerName({ spot: "/user/game", name: "turn" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateTimerName extends Data.TaggedError("DuplicateTimerName")<{
  readonly spot: string
  readonly name: string
}> {
  override get message(): string {
    return `Spot ${this.spot} already has an active timer named "${this.name}"`
  }
}

/**
 * The overrun policy is not usable: not an `OverrunPolicy` at all (a string such as `"SkipLateTicks"`, a plain
 * object), or a `CatchUpBounded` limit that is not an integer >= 1 (0, 1.5, NaN).
 *
 * @example
 * ```ts
 * import { SpotTimers } from "tickwork"
 *
 * const error = new SpotTimers.InvalidOverrunPolicy({ policy: "CatchUpBounded(0)", reason: "limit must be >= 1" })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidOverrunPolicy extends Data.TaggedError("InvalidOverrunPolicy")<{
  readonly policy: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid overrun policy ${this.policy}: ${this.reason}`
  }
}

/**
 * Why a timer registration failed.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Spot, SpotTimers } from "tickwork"
 *
 * const startOrLog = (ctx: Spot.SpotContext<number>, options: SpotTimers.TimerOptions<number>) =>
 *   ctx.timers.start(options).pipe(
 *     Effect.catchAll((error: SpotTimers.SpotTimerError) => Effect.logWarning(`timer not started: ${error.message}`))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export type SpotTimerError = DuplicateTimerName | InvalidTimerInterval | InvalidOverrunPolicy | InvalidTimerOptions
