/**
 * A test double that is an ActorRef: it records what it is told, with the `Clock` time it arrived, and asserts on it
 * under `TestClock` (Akka's `TestProbe`, with its names).
 *
 * Every expectation lets every ready fiber run first (it settles the test clock without moving it), so a message that
 * is on its way arrives. Without a time window it never waits for time to pass: move the clock (`TestClock.adjust`,
 * `TestTimers.advance`), then expect. With one (`within`, Akka's `max`), it moves the clock itself, from one pending
 * sleep of the test (a timer's, a handler's) to the next, until the expectation is met or the window has passed.
 *
 * @since 0.1.0
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import type * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as Utils from "effect/Utils"
import type { ActorRef } from "../ActorRef.js"
import { CellRef } from "../internal/actorCell.js"
import { FunctionRef } from "../internal/refs.js"
import { advance, now, settle } from "./TestTimers.js"

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
 * What `fishForMessage`'s fisher says of each message: it was the one (`"complete"`), keep fishing (`"continue"`), or
 * the test fails (`"fail"`).
 *
 * @since 0.1.0
 * @category models
 */
export type FishingOutcome = "complete" | "continue" | "fail"

/**
 * A probe. `within` is a window of test-clock time the expectation may move the clock through (default none: it
 * looks at what has arrived by now).
 *
 * @since 0.1.0
 * @category models
 */
export interface TestProbe<A> {
  readonly ref: ActorRef<A>
  /** The oldest unread message; dies with an assertion error if none has arrived (within the window). */
  readonly expectMessage: Effect.Effect<A>
  /** Like `expectMessage`, with the sender and arrival time. */
  readonly expectReceived: Effect.Effect<Received<A>>
  /**
   * Asserts that the oldest unread message equals `expected`, by content: plain objects and arrays field by field (as
   * Akka compares case classes), values that implement `Equal` (`Data`, `HashSet`, ...) by their own equality.
   */
  readonly expectMessageEquals: (expected: A, within?: Duration.DurationInput) => Effect.Effect<A>
  /**
   * Akka's `receiveMessage(max)`: the oldest unread message, moving the clock up to `within` for one to arrive.
   */
  readonly receiveMessage: (within?: Duration.DurationInput) => Effect.Effect<A>
  /**
   * Akka's `expectMessageType`: the oldest unread message must be of `type` (a refinement such as a tag guard, or a
   * `Schema`, whose decoded value is returned).
   */
  readonly expectMessageType: <B extends A>(
    type: Predicate.Refinement<A, B> | Schema.Schema<B, any, never>,
    within?: Duration.DurationInput
  ) => Effect.Effect<B>
  /** The oldest unread message must satisfy `predicate`; `hint` says what was expected in the failure. */
  readonly expectMessageThat: (
    predicate: Predicate.Predicate<A>,
    hint?: string,
    within?: Duration.DurationInput
  ) => Effect.Effect<A>
  /**
   * Akka's `expectMsgAllOf`: the next `expected.length` messages equal `expected` (by content, as in
   * `expectMessageEquals`), in any order. Returns them in the order they arrived.
   */
  readonly expectMessageAllOf: (
    expected: ReadonlyArray<A>,
    within?: Duration.DurationInput
  ) => Effect.Effect<ReadonlyArray<A>>
  /**
   * Akka's `fishForMessage(max)(fisher)`: reads messages, moving the clock up to `within`, until `fisher` says
   * `"complete"`; returns every message read, the last one included. `"fail"`, or no completing message in the window,
   * fails the test.
   */
  readonly fishForMessage: (
    within: Duration.DurationInput,
    fisher: (message: A) => FishingOutcome
  ) => Effect.Effect<ReadonlyArray<A>>
  /**
   * Akka's `receiveWhile`: takes unread messages while `predicate` holds (the first that does not stays unread),
   * moving the clock up to `within` for more, and at most `messages` of them.
   */
  readonly receiveWhile: (
    predicate: Predicate.Predicate<A>,
    options?: { readonly within?: Duration.DurationInput; readonly messages?: number }
  ) => Effect.Effect<ReadonlyArray<A>>
  /** Moves the test clock by `duration` (default 0) and asserts that nothing arrived. */
  readonly expectNoMessage: (duration?: Duration.DurationInput) => Effect.Effect<void>
  /** Takes every unread message. */
  readonly receiveAll: Effect.Effect<ReadonlyArray<Received<A>>>
  /**
   * Akka's `ignoreMsg`: messages that satisfy `predicate` are dropped as they arrive, until `ignoreNoMessages`. A
   * second call replaces the first.
   */
  readonly ignoreMessages: (predicate: Predicate.Predicate<A>) => Effect.Effect<void>
  readonly ignoreNoMessages: Effect.Effect<void>
  /**
   * Akka's `expectTerminated` (the probe watches `actor`): waits until it has stopped, moving the clock up to `within`
   * (default 3 seconds, as Akka's). Works for actors of a tickwork system (grain, entity and Spot actors too).
   */
  readonly expectTerminated: (actor: ActorRef<any>, within?: Duration.DurationInput) => Effect.Effect<void>
}

const fail = (message: string): Effect.Effect<never> => Effect.die(new Error(`TestProbe: ${message}`))

/** Equality of two messages by content: `Equal.equals` with plain objects and arrays compared structurally. */
const sameMessage = (a: unknown, b: unknown): boolean => Utils.structuralRegion(() => Equal.equals(a, b))

const describe = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const millisOf = (within: Duration.DurationInput | undefined): number =>
  within === undefined ? 0 : Duration.toMillis(Duration.decode(within))

/** Moves the clock to the next pending sleep of the test, never past `deadline`; false when it is there already. */
const stepToward = (deadline: number): Effect.Effect<boolean> =>
  Effect.flatMap(Effect.zip(now, TestClock.sleeps()), ([current, sleeps]) => {
    if (current >= deadline) return Effect.succeed(false)
    let next = deadline
    for (const at of sleeps) if (at > current && at < next) next = at
    return Effect.as(TestClock.adjust(next - current), true)
  })

/**
 * Lets ready fibers run, then, while `ready()` is false, moves the clock from sleep to sleep, never past
 * `windowMillis` from now. True once `ready()` holds; false when the window has passed without it.
 */
const waitFor = (windowMillis: number, ready: () => boolean): Effect.Effect<boolean> =>
  Effect.flatMap(now, (start) => {
    const loop: Effect.Effect<boolean> = Effect.flatMap(settle, () =>
      ready()
        ? Effect.succeed(true)
        : Effect.flatMap(stepToward(start + windowMillis), (moved) => (moved ? loop : Effect.succeed(false)))
    )
    return loop
  })

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
 *   // or let the probe move the clock: up to 5 seconds for the next one
 *   yield* system.scheduler.scheduleOnce("2 seconds", probe.ref, "pong")
 *   yield* probe.expectMessageEquals("pong", "5 seconds")
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(name = "probe"): Effect.Effect<TestProbe<A>> =>
  Effect.map(Effect.clock, (clock: Clock.Clock) => {
    const inbox: Array<Received<A>> = []
    let ignored: Predicate.Predicate<A> | undefined
    const ref = new FunctionRef<A>(`/system/testProbe/${name}`, (message, sender) => {
      if (ignored === undefined || !ignored(message))
        inbox.push({ message, sender, at: clock.unsafeCurrentTimeMillis() })
      return "delivered"
    })
    const unread = () =>
      inbox.length === 0
        ? "nothing is unread"
        : `unread: ${inbox.map((r) => `${describe(r.message)}@${r.at}`).join(", ")}`

    /** The oldest unread message once one has arrived within the window, taken off the inbox. */
    const next = (within: Duration.DurationInput | undefined, what: string): Effect.Effect<Received<A>> =>
      Effect.flatMap(
        waitFor(millisOf(within), () => inbox.length > 0),
        (arrived) =>
          arrived
            ? Effect.succeed(inbox.shift()!)
            : fail(
                within === undefined
                  ? `expected ${what}, none arrived (did the test clock move far enough?)`
                  : `expected ${what} within ${Duration.format(Duration.decode(within))}, none arrived`
              )
      )

    const expectReceived = next(undefined, "a message")
    const expectMessage = Effect.map(expectReceived, (r) => r.message)

    const expectMessageThat = (
      predicate: Predicate.Predicate<A>,
      hint = "a message that matches",
      within?: Duration.DurationInput
    ) =>
      Effect.flatMap(next(within, hint), ({ message, at }) =>
        predicate(message) ? Effect.succeed(message) : fail(`expected ${hint}, got ${describe(message)} at ${at}`)
      )

    const collect = (
      windowMillis: number,
      step: (message: A, taken: Array<A>) => "take" | "stop" | "done" | "fail",
      limit: number
    ): Effect.Effect<{
      readonly taken: ReadonlyArray<A>
      readonly end: "stop" | "done" | "fail" | "window" | "limit"
    }> =>
      Effect.flatMap(now, (start) => {
        const taken: Array<A> = []
        const loop: Effect.Effect<{
          readonly taken: ReadonlyArray<A>
          readonly end: "stop" | "done" | "fail" | "window" | "limit"
        }> = Effect.flatMap(now, (current) =>
          Effect.flatMap(
            waitFor(Math.max(0, start + windowMillis - current), () => inbox.length > 0),
            (arrived) => {
              if (!arrived) return Effect.succeed({ taken, end: "window" as const })
              const outcome = step(inbox[0]!.message, taken)
              if (outcome === "stop") return Effect.succeed({ taken, end: "stop" as const })
              taken.push(inbox.shift()!.message)
              if (outcome !== "take") return Effect.succeed({ taken, end: outcome })
              return taken.length >= limit ? Effect.succeed({ taken, end: "limit" as const }) : loop
            }
          )
        )
        return loop
      })

    const probe: TestProbe<A> = {
      ref,
      expectMessage,
      expectReceived,
      expectMessageEquals: (expected, within) =>
        expectMessageThat((message) => sameMessage(message, expected), describe(expected), within),
      receiveMessage: (within) => Effect.map(next(within, "a message"), (r) => r.message),
      expectMessageType: <B extends A>(
        type: Predicate.Refinement<A, B> | Schema.Schema<B, any, never>,
        within?: Duration.DurationInput
      ) => {
        if (Schema.isSchema(type)) {
          const schema = type as Schema.Schema<B, any, never>
          const decode = Schema.decodeUnknownEither(schema)
          return Effect.flatMap(next(within, `a message of ${String(schema.ast)}`), ({ message, at }) => {
            const decoded = decode(message)
            return decoded._tag === "Right"
              ? Effect.succeed(decoded.right)
              : fail(`expected a message of ${String(schema.ast)}, got ${describe(message)} at ${at}`)
          })
        }
        const refinement = type as Predicate.Refinement<A, B>
        return expectMessageThat(
          refinement,
          `a message of the type ${refinement.name || "asked for"}`,
          within
        ) as Effect.Effect<B>
      },
      expectMessageThat,
      expectMessageAllOf: (expected, within) =>
        expected.length === 0
          ? Effect.succeed([])
          : Effect.flatMap(
              collect(
                millisOf(within),
                (_message, taken) => (taken.length + 1 >= expected.length ? "done" : "take"),
                expected.length
              ),
              ({ taken }) => {
                const missing = [...expected]
                const unexpected: Array<A> = []
                for (const message of taken) {
                  const i = missing.findIndex((e) => sameMessage(e, message))
                  if (i >= 0) missing.splice(i, 1)
                  else unexpected.push(message)
                }
                return missing.length === 0 && unexpected.length === 0
                  ? Effect.succeed(taken)
                  : fail(
                      `expected all of ${describe(expected)} in any order, got ${describe(taken)}` +
                        (missing.length > 0 ? `; missing ${describe(missing)}` : "") +
                        (unexpected.length > 0 ? `; unexpected ${describe(unexpected)}` : "")
                    )
              }
            ),
      fishForMessage: (within, fisher) =>
        Effect.flatMap(
          collect(
            millisOf(within),
            (message) => {
              const outcome = fisher(message)
              return outcome === "complete" ? "done" : outcome === "fail" ? "fail" : "take"
            },
            Number.POSITIVE_INFINITY
          ),
          ({ taken, end }) =>
            end === "done"
              ? Effect.succeed(taken)
              : end === "fail"
                ? fail(
                    `fishForMessage: the fisher failed on ${describe(taken[taken.length - 1])} after ${describe(taken.slice(0, -1))}`
                  )
                : fail(
                    `fishForMessage: no completing message within ${Duration.format(Duration.decode(within))}; read ${describe(taken)}`
                  )
        ),
      receiveWhile: (predicate, options = {}) =>
        Effect.map(
          collect(
            millisOf(options.within),
            (message) => (predicate(message) ? "take" : "stop"),
            options.messages ?? Number.POSITIVE_INFINITY
          ),
          ({ taken }) => taken
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
      ),
      ignoreMessages: (predicate) =>
        Effect.sync(() => {
          ignored = predicate
        }),
      ignoreNoMessages: Effect.sync(() => {
        ignored = undefined
      }),
      expectTerminated: (actor, within = "3 seconds") => {
        if (!(actor instanceof CellRef)) {
          return fail(`expectTerminated: ${actor.path} is not an actor of a tickwork system; it cannot be watched`)
        }
        const cell = actor.cell
        return Effect.flatMap(
          waitFor(millisOf(within), () => cell.isTerminated),
          (stopped) =>
            stopped
              ? Effect.void
              : fail(
                  `expected ${actor.path} to stop within ${Duration.format(Duration.decode(within))}; it is still alive (${unread()})`
                )
        )
      }
    }
    return probe
  })

/**
 * Akka's `within(min, max) { ... }`: runs `effect` and asserts that the test clock moved at least `min` and at most
 * `max` while it ran (a probe's expectations with a window move it; so do `TestTimers.advance` and
 * `TestSystem.advanceToNext`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 * import { TestProbe } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   const probe = yield* TestProbe.make<string>()
 *   yield* system.scheduler.scheduleOnce("2 seconds", probe.ref, "late")
 *   // arrives after 2 s, and no later than 3 s
 *   yield* TestProbe.within("2 seconds", "3 seconds", probe.receiveMessage("5 seconds"))
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const within = <X, E, R>(
  min: Duration.DurationInput,
  max: Duration.DurationInput,
  effect: Effect.Effect<X, E, R>
): Effect.Effect<X, E, R> =>
  Effect.flatMap(now, (start) =>
    Effect.flatMap(effect, (value) =>
      Effect.flatMap(now, (end) => {
        const took = end - start
        const lo = millisOf(min)
        const hi = millisOf(max)
        return took >= lo && took <= hi
          ? Effect.succeed(value)
          : fail(`within: expected the block to take between ${lo} and ${hi} ms of test-clock time; it took ${took} ms`)
      })
    )
  )

/**
 * Akka's `awaitAssert`: runs `assertion` until it succeeds, moving the test clock to the next pending sleep between
 * tries, for at most `within` (default 3 seconds); then fails with the assertion's last failure.
 *
 * @example
 * ```ts
 * import { assert } from "@effect/vitest"
 * import { Effect } from "effect"
 * import { ActorSystem } from "tickwork"
 * import { TestProbe } from "tickwork/testkit"
 *
 * const test = Effect.gen(function*() {
 *   const system = yield* ActorSystem.ActorSystem
 *   let done = false
 *   yield* system.scheduler.scheduleOnceFunction("1 second", Effect.sync(() => (done = true)))
 *   yield* TestProbe.awaitAssert(Effect.sync(() => assert.isTrue(done)), "2 seconds")
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const awaitAssert = <X, E, R>(
  assertion: Effect.Effect<X, E, R>,
  within: Duration.DurationInput = "3 seconds"
): Effect.Effect<X, E, R> =>
  Effect.flatMap(now, (start) => {
    const deadline = start + millisOf(within)
    const attempt: Effect.Effect<X, E, R> = Effect.catchAllCause(Effect.zipRight(settle, assertion), (cause) =>
      Effect.flatMap(stepToward(deadline), (moved) => (moved ? attempt : Effect.failCause(cause)))
    )
    return attempt
  })
