/**
 * A test double that is an ActorRef: it records what it is told, with the `Clock` time it arrived, and asserts on it
 * under `TestClock`.
 *
 * `expectMessage` lets every ready fiber run first (it settles the test clock without moving it), so a message that
 * is on its way arrives; it never waits for time to pass. To wait for a timer, move the clock (`TestClock.adjust` or
 * `TestTimers.advance`), then expect.
 *
 * @since 0.1.0
 */
import type * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import type { ActorRef } from "../ActorRef.js"
import { FunctionRef } from "../internal/refs.js"
import { advance, settle } from "./TestTimers.js"

/**
 * One recorded message.
 *
 * @since 0.1.0
 * @category models
 */
export interface Received<A> {
  readonly message: A
  readonly sender: ActorRef<any> | undefined
  /** The `Clock` time (epoch millis) at which it arrived. */
  readonly at: number
}

/**
 * A probe.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestProbe<A> {
  readonly ref: ActorRef<A>
  /** The oldest unread message; dies with an assertion error if none has arrived. */
  readonly expectMessage: Effect.Effect<A>
  /** Like `expectMessage`, with the sender and arrival time. */
  readonly expectReceived: Effect.Effect<Received<A>>
  /** Asserts that the oldest unread message equals `expected` (`Equal.equals`, structural for Data values). */
  readonly expectMessageEquals: (expected: A) => Effect.Effect<A>
  /** Moves the test clock by `duration` (default 0) and asserts that nothing arrived. */
  readonly expectNoMessage: (duration?: Duration.DurationInput) => Effect.Effect<void>
  /** Takes every unread message. */
  readonly receiveAll: Effect.Effect<ReadonlyArray<Received<A>>>
}

const fail = (message: string): Effect.Effect<never> => Effect.die(new Error(`TestProbe: ${message}`))

const describe = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * Makes a probe.
 *
 * @example
 * ```ts
 * import { Effect, TestClock } from "effect"
 * import { ActorSystem } from "tickwork"
 * import { TestProbe } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   const probe = yield* TestProbe.make<string>()
 *   yield* system.scheduler.scheduleOnce("1 second", probe.ref, "ping")
 *   yield* probe.expectNoMessage("999 millis")
 *   yield* TestClock.adjust("1 millis")
 *   yield* probe.expectMessageEquals("ping")
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(name = "probe"): Effect.Effect<TestProbe<A>> =>
  Effect.map(Effect.clock, (clock: Clock.Clock) => {
    const inbox: Array<Received<A>> = []
    const ref = new FunctionRef<A>(`/system/testProbe/${name}`, (message, sender) => {
      inbox.push({ message, sender, at: clock.unsafeCurrentTimeMillis() })
      return "delivered"
    })
    const expectReceived: Effect.Effect<Received<A>> = Effect.zipRight(
      settle,
      Effect.suspend(() => {
        const next = inbox.shift()
        return next === undefined
          ? fail("expected a message, none arrived (did the test clock move far enough?)")
          : Effect.succeed(next)
      })
    )
    const expectMessage = Effect.map(expectReceived, (r) => r.message)
    return {
      ref,
      expectMessage,
      expectReceived,
      expectMessageEquals: (expected) =>
        Effect.flatMap(expectMessage, (message) =>
          Equal.equals(message, expected)
            ? Effect.succeed(message)
            : fail(`expected ${describe(expected)}, got ${describe(message)}`)
        ),
      expectNoMessage: (duration = 0) =>
        Effect.zipRight(
          advance(duration),
          Effect.suspend(() =>
            inbox.length === 0
              ? Effect.void
              : fail(`expected no message, got ${describe(inbox[0]!.message)} at ${inbox[0]!.at}`)
          )
        ),
      receiveAll: Effect.zipRight(
        settle,
        Effect.sync(() => inbox.splice(0, inbox.length))
      )
    }
  })
