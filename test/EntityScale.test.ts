/**
 * Spread the load: entities started together with a randomized 60 s poll produce a flat load.
 *
 * Under TestClock every driver wake-up costs a few real milliseconds (TestClock yields to the event loop per sleep),
 * and 100k timers due at ~60k distinct milliseconds per minute would need 60k wake-ups per simulated minute. So the
 * driver here sleeps through a clock whose sleeps end on whole seconds (TestClock time; only the sleep is rounded up,
 * like a 1 s timer wheel): it wakes once per second and fires everything due in that second. Ticks are counted by
 * their due time, which is exactly when an exact driver would fire them; the test also checks that none fired more
 * than one second late.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Layer, Random, TestClock } from "effect"
import { ActorSystem } from "tickwork"
import * as Entity from "../src/Entity.js"
import { PeriodicEntry, randomizedFirstDelay, type TickTarget, type TimerOwner } from "../src/internal/entityTimers.js"
import { TimerDriver } from "../src/internal/timerDriver.js"

const SECOND = 1000
const INTERVAL = 60 * SECOND

/** TestClock time, with every sleep rounded up to end on a whole second. */
const wholeSecondClock = Effect.map(Effect.clock, (testClock): Clock.Clock => {
  const sleepToSecond = (duration: Duration.DurationInput) =>
    Effect.suspend(() => {
      const now = testClock.unsafeCurrentTimeMillis()
      const end = Math.ceil((now + Duration.toMillis(Duration.decode(duration))) / SECOND) * SECOND
      return testClock.sleep(Duration.millis(end - now))
    })
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => testClock.unsafeCurrentTimeMillis(),
    unsafeCurrentTimeNanos: () => testClock.unsafeCurrentTimeNanos(),
    currentTimeMillis: testClock.currentTimeMillis,
    currentTimeNanos: testClock.currentTimeNanos,
    sleep: sleepToSecond
  }
})

/** Mean and max of per-second counts over [from, to) seconds. */
const load = (perSecond: ArrayLike<number>, from: number, to: number) => {
  let total = 0
  let max = 0
  for (let s = from; s < to; s++) {
    const n = perSecond[s] ?? 0
    total += n
    max = Math.max(max, n)
  }
  return { total, mean: total / (to - from), max }
}

describe("entity timers at scale", () => {
  it.effect("100k randomized 60 s polls on the real engine: no second above 2x the mean", () =>
    Effect.gen(function* () {
      const N = 100_000
      const clock = yield* wholeSecondClock
      const driver = new TimerDriver(clock)
      const perSecond = new Float64Array(400)
      let fired = 0
      let maxLateness = 0
      // A counting owner: every tick is "handled" the moment it is offered.
      const target: TickTarget = {
        offerTick(tick, due, now) {
          perSecond[Math.floor(due / SECOND)]! += 1
          fired++
          maxLateness = Math.max(maxLateness, now - due)
          if (tick.accept()) (tick as PeriodicEntry).busy = false
          return undefined
        }
      }
      const owner: TimerOwner = {
        target,
        driver,
        release: () => {},
        runCommand: () => Effect.void,
        path: "/user/scale",
        logDetached: () => {},
        noteMissed: () => {}
      }
      yield* Effect.forkScoped(driver.run)
      // 100k entities start at t = 0 (a wave of logins); each arms its poll with a first delay drawn from Random
      for (let i = 0; i < N; i++) {
        const u = yield* Random.next
        new PeriodicEntry(owner, "poll", INTERVAL, undefined, Effect.void).start(randomizedFirstDelay(INTERVAL, u))
      }
      assert.strictEqual(driver.size, N)
      const seconds = 30 + 4 * 60 // four full intervals after the earliest possible first poll
      for (let s = 0; s < seconds; s++) yield* TestClock.adjust(SECOND)
      const { max, mean, total } = load(perSecond, 30, seconds)
      console.log(
        `100k entities, randomized 60 s poll, seconds 30..${seconds}: ${total} polls, mean ${mean.toFixed(1)}/s, ` +
          `max ${max}/s (${(max / mean).toFixed(2)}x the mean); before 30 s: ${load(perSecond, 0, 30).total}`
      )
      assert.strictEqual(load(perSecond, 0, 30).total, 0, "nothing before interval/2")
      assert.strictEqual(total, 4 * N, "every entity polled once per interval")
      assert.strictEqual(fired, load(perSecond, 0, 400).total, "every firing counted")
      assert.isAtMost(max, 2 * mean)
      assert.isBelow(maxLateness, SECOND)
      assert.strictEqual(driver.size, N, "every poll re-armed")
      // Without the randomization all 100k would land in one second: the spike the spread avoids.
    }).pipe(Effect.scoped, Effect.withRandom(Random.make("scale")))
  )

  it.effect("2000 real entities with a declarative randomized 60 s poll: a flat load", () =>
    Effect.gen(function* () {
      const N = 2000
      const perSecond = new Float64Array(400)
      const Player = Entity.make<number, never>()({
        name: "Player",
        initialize: () => Effect.succeed(0),
        commands: {},
        timers: [
          {
            name: "poll",
            interval: "60 seconds",
            run: (polls, ctx) =>
              Effect.map(ctx.currentTimeMillis, (now) => {
                perSecond[Math.floor((now - 1) / SECOND)]! += 1 // fired at the end of the second it was due in
                return polls + 1
              })
          }
        ]
      })
      const clock = yield* wholeSecondClock
      const system = Layer.scopedContext(Effect.withClock(Layer.build(ActorSystem.layer({ name: "scale" })), clock))
      yield* Effect.gen(function* () {
        const players = yield* Entity.makeRegistry(Player)
        for (let i = 0; i < N; i++) yield* players.startSession(`player-${i}`)
        yield* TestClock.adjust(0)
        assert.strictEqual((yield* players.stats).timers, N)
        const seconds = 30 + 2 * 60
        for (let s = 0; s < seconds; s++) yield* TestClock.adjust(SECOND)
        const { max, mean, total } = load(perSecond, 30, seconds)
        console.log(
          `${N} entities, seconds 30..${seconds}: ${total} polls, mean ${mean.toFixed(1)}/s, max ${max}/s ` +
            `(${(max / mean).toFixed(2)}x the mean)`
        )
        assert.strictEqual(total, 2 * N)
        assert.isAtMost(max, 2 * mean)
      }).pipe(Effect.scoped, Effect.provide(system))
    }).pipe(Effect.withRandom(Random.make("scale-entities")))
  )
})
