/**
 * Per-actor keyed timers: `context.timers`.
 *
 * A timer sends a message to its own actor. The tick travels through the mailbox like any other message, so it is
 * serialized with the actor's other work and handled under its supervision. Timers belong to the actor incarnation:
 * stop and restart cancel them all, and a tick already queued from a cancelled, replaced or dead-incarnation timer is
 * never handled (Akka's rule). Starting a timer under a key that is in use replaces the old timer.
 *
 * Ticks do not reset the receive timeout and carry no log context from the code that armed them.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"
import type { InvalidTimerDelay, InvalidTimerInterval } from "./TimerError.js"

/**
 * The timers of one actor incarnation. Every member is a property that works on its own, so destructuring is safe
 * (`const { cancel } = ctx.timers`): an operation with arguments is a function returning an `Effect`, one without is
 * the `Effect` itself (`cancelAll`, `activeKeys`), as everywhere in tickwork and in Effect's own services.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Actor } from "tickwork"
 *
 * type Msg = { readonly _tag: "Tick" } | { readonly _tag: "SetInterval"; readonly millis: number }
 *
 * const Heartbeat = Actor.make<Msg>()({
 *   // first tick after 5 s, then every 5 s
 *   preStart: (ctx) => Effect.orDie(ctx.timers.startTimerWithFixedDelay("hb", { _tag: "Tick" }, "5 seconds")),
 *   receive: (msg, ctx) =>
 *     msg._tag === "Tick"
 *       ? Effect.logInfo("heartbeat")
 *       : // same key: the old timer is cancelled, no double firing
 *         Effect.orDie(ctx.timers.startTimerWithFixedDelay("hb", { _tag: "Tick" }, msg.millis))
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface TimerScheduler<Msg> {
  /** Sends `message` once after `delay` (0 allowed: as soon as possible). */
  readonly startSingleTimer: (
    key: string,
    message: Msg,
    delay: Duration.DurationInput
  ) => Effect.Effect<void, InvalidTimerDelay>
  /**
   * Sends `message` every `interval`, each tick `interval` after the previous one was sent (no catch-up after a
   * stall). The first tick comes after `initialDelay` (default: `interval`); 0 fires at once.
   */
  readonly startTimerWithFixedDelay: (
    key: string,
    message: Msg,
    interval: Duration.DurationInput,
    initialDelay?: Duration.DurationInput
  ) => Effect.Effect<void, InvalidTimerInterval | InvalidTimerDelay>
  /**
   * Sends `message` on a fixed grid: `initialDelay` (default: `interval`), then every `interval` from there. After a
   * stall the missed ticks are all sent (the backlog is not compressed).
   */
  readonly startTimerAtFixedRate: (
    key: string,
    message: Msg,
    interval: Duration.DurationInput,
    initialDelay?: Duration.DurationInput
  ) => Effect.Effect<void, InvalidTimerInterval | InvalidTimerDelay>
  /**
   * Sends `message` at the delays an Effect `Schedule` yields, stepped from the moment the timer starts: the first
   * tick after the schedule's first delay, and no more once the schedule is done. Exponential backoff, jitter, caps
   * and unions all work. Like every timer, it fires at most once per millisecond: a delay the schedule computes below
   * 1 ms after a firing waits 1 ms. A value that is not a `Schedule` fails with `InvalidTimerInterval`; a schedule
   * that throws while stepped ends the timer (its tick of that firing is still delivered) and is logged and counted
   * as a timer fault.
   */
  readonly startTimerWithSchedule: (
    key: string,
    message: Msg,
    schedule: Schedule.Schedule<unknown>
  ) => Effect.Effect<void, InvalidTimerInterval>
  /** Cancels the timer under `key` and drops its queued ticks; true when a timer was active. */
  readonly cancel: (key: string) => Effect.Effect<boolean>
  /** Cancels every timer of this incarnation. */
  readonly cancelAll: Effect.Effect<void>
  /** True while the timer under `key` can still deliver: a single timer until its tick is handled. */
  readonly isTimerActive: (key: string) => Effect.Effect<boolean>
  /** The keys of the active timers, in the order they were started. */
  readonly activeKeys: Effect.Effect<ReadonlyArray<string>>
}
