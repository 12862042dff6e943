import { assert, describe, it } from "@effect/vitest"
import { type Clock, Effect, Fiber, TestClock } from "effect"
import { NEAR_HORIZON_MILLIS, OPEN_AHEAD_MILLIS, TimerDriver, TimerEntry } from "../../src/internal/timerDriver.js"

/** One call of `fire`: which entry, the driver's `now`, and the due time it had been armed at. */
interface Firing {
  readonly name: string
  readonly now: number
  readonly due: number
}

type Rearm = (now: number, due: number) => number | undefined

/** A timer that records every firing and re-arms itself when `rearm` returns a due time. */
class Recorder extends TimerEntry {
  constructor(
    readonly name: string,
    readonly log: Array<Firing>,
    readonly rearm: Rearm = () => undefined,
    readonly onFire: ((now: number, driver: TimerDriver) => Effect.Effect<void> | undefined) | undefined = undefined
  ) {
    super()
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const due = driver.dueOf(this)
    this.log.push({ name: this.name, now, due })
    const next = this.rearm(now, due)
    if (next !== undefined) driver.schedule(this, next)
    return this.onFire?.(now, driver)
  }
}

/** Re-arms on the fixed-rate grid: `due + interval`, whatever `now` is. */
const every =
  (interval: number): Rearm =>
  (_now, due) =>
    due + interval

const makeDriver = Effect.map(Effect.clock, (clock) => new TimerDriver(clock))

/** Forks the driver loop into the test's scope and lets it reach its first sleep. */
const start = (driver: TimerDriver) => Effect.zipRight(Effect.forkScoped(driver.run), TestClock.adjust(0))

const at = (name: string, now: number, due: number = now): Firing => ({ name, now, due })

/**
 * A window beyond the near horizon, so that its timers go far: 17408..18431 (window 17 of 1,024 ms), with the tests'
 * timers due at `DUE`; `opensAt` is when the driver starts opening it, ahead of its start.
 */
const WINDOW_START = 17 * 1024
const DUE = 18_000
const opensAt = WINDOW_START - OPEN_AHEAD_MILLIS

/**
 * Steps the clock one millisecond at a time up to `until` and, after every step, checks that the log holds exactly
 * the expected firings whose `now` has been reached: nothing early, nothing late, nothing missing, in order.
 */
const stepTo = (driver: TimerDriver, until: number, log: ReadonlyArray<Firing>, expected: ReadonlyArray<Firing>) =>
  Effect.gen(function* () {
    while (driver.now() < until) {
      yield* TestClock.adjust("1 millis")
      const t = driver.now()
      assert.deepStrictEqual(
        log,
        expected.filter((f) => f.now <= t),
        `at t=${t}`
      )
    }
  })

describe("TimerDriver", () => {
  it.scoped("fires each entry at its exact due time, never early, stepping 1 ms at a time", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const dues: ReadonlyArray<readonly [string, number]> = [
        ["a", 5],
        ["b", 1],
        ["c", 120],
        ["d", 37],
        ["e", 2],
        ["f", 99]
      ]
      for (const [name, due] of dues) driver.schedule(new Recorder(name, log), due)
      assert.strictEqual(driver.size, 6)
      yield* stepTo(driver, 150, log, [at("b", 1), at("e", 2), at("a", 5), at("d", 37), at("f", 99), at("c", 120)])
      assert.strictEqual(driver.size, 0)
      assert.strictEqual(driver.stats.fired, 6)
    })
  )

  it.scoped("entries scheduled before the loop starts fire on time", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      driver.schedule(new Recorder("x", log), 3)
      driver.schedule(new Recorder("y", log), 0)
      yield* start(driver)
      assert.deepStrictEqual(log, [at("y", 0)])
      yield* stepTo(driver, 10, log, [at("y", 0), at("x", 3)])
    })
  )

  it.scoped("equal deadlines fire in scheduling order, within one turn", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const names = ["e4", "e2", "e0", "e1", "e3", "e9", "e5", "e8", "e7", "e6"]
      for (const name of names) driver.schedule(new Recorder(name, log), 7)
      // Interleave a later and an earlier deadline to make sure the tie-break is not just insertion into a list.
      driver.schedule(new Recorder("late", log), 8)
      driver.schedule(new Recorder("early", log), 6)
      yield* stepTo(driver, 10, log, [at("early", 6), ...names.map((n) => at(n, 7)), at("late", 8)])
    })
  )

  it.scoped("an entry earlier than the current sleep wakes the driver", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("far", log), 1000)
      yield* TestClock.adjust(0)
      // The driver now sleeps toward 1000.
      driver.schedule(new Recorder("near", log), 10)
      yield* stepTo(driver, 20, log, [at("near", 10)])
      yield* TestClock.adjust("979 millis")
      assert.strictEqual(driver.now(), 999)
      assert.deepStrictEqual(log, [at("near", 10)])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(log, [at("near", 10), at("far", 1000)])
    })
  )

  it.scoped("an earlier entry wakes the driver mid-sleep, not just at the start", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("far", log), 200)
      yield* stepTo(driver, 50, log, [])
      driver.schedule(new Recorder("near", log), 53)
      yield* stepTo(driver, 60, log, [at("near", 53)])
      // A later entry than the current sleep needs no wake-up and still fires on time.
      driver.schedule(new Recorder("later", log), 203)
      driver.schedule(new Recorder("between", log), 150)
      yield* stepTo(driver, 210, log, [at("near", 53), at("between", 150), at("far", 200), at("later", 203)])
    })
  )

  it.scoped("an idle driver (empty heap) wakes when an entry is scheduled", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      yield* stepTo(driver, 30, log, [])
      driver.schedule(new Recorder("a", log), 45)
      yield* stepTo(driver, 50, log, [at("a", 45)])
      // Idle again after firing, then woken again.
      driver.schedule(new Recorder("b", log), 52)
      yield* stepTo(driver, 60, log, [at("a", 45), at("b", 52)])
    })
  )

  it.scoped("cancel before due prevents firing; cancel of a fired or unknown entry is false", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const a = new Recorder("a", log)
      const b = new Recorder("b", log)
      const c = new Recorder("c", log)
      driver.schedule(a, 10) // the deadline the driver is sleeping toward
      driver.schedule(b, 20)
      driver.schedule(c, 15)
      yield* stepTo(driver, 5, log, [])
      assert.isTrue(driver.cancel(a))
      assert.isFalse(driver.cancel(a), "second cancel")
      assert.isTrue(driver.cancel(c))
      assert.strictEqual(driver.size, 1)
      yield* stepTo(driver, 30, log, [at("b", 20)])
      assert.isFalse(driver.cancel(b), "cancel after firing")
      assert.isFalse(driver.cancel(new Recorder("never", log)), "cancel of an entry never scheduled")
      assert.strictEqual(driver.stats.fired, 1)
    })
  )

  it.scoped("a cancelled entry can be scheduled again", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const a = new Recorder("a", log)
      driver.schedule(a, 10)
      yield* stepTo(driver, 4, log, [])
      assert.isTrue(driver.cancel(a))
      driver.schedule(a, 12)
      yield* stepTo(driver, 20, log, [at("a", 12)])
    })
  )

  it.scoped("re-scheduling a pending entry moves it (earlier and later)", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const a = new Recorder("a", log)
      const b = new Recorder("b", log)
      driver.schedule(a, 30)
      driver.schedule(b, 40)
      yield* stepTo(driver, 5, log, [])
      driver.schedule(a, 8) // earlier: must wake the driver
      driver.schedule(b, 50) // later
      assert.strictEqual(driver.size, 2)
      yield* stepTo(driver, 60, log, [at("a", 8), at("b", 50)])
    })
  )

  it.scoped("an entry with a past due time fires on the next turn, with the driver's now", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("far", log), 100)
      yield* stepTo(driver, 50, log, [])
      driver.schedule(new Recorder("past", log), 20)
      driver.schedule(new Recorder("now", log), 50)
      driver.schedule(new Recorder("older", log), 10)
      assert.deepStrictEqual(log, [], "firing happens on the driver fiber, not inside schedule")
      yield* TestClock.adjust(0)
      assert.strictEqual(driver.now(), 50)
      assert.deepStrictEqual(log, [at("older", 50, 10), at("past", 50, 20), at("now", 50)])
      yield* stepTo(driver, 100, log, [at("older", 50, 10), at("past", 50, 20), at("now", 50), at("far", 100)])
    })
  )

  it.scoped("a periodic re-arm at due + interval lands on the grid", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("p7", log, every(7)), 3)
      driver.schedule(new Recorder("p10", log, every(10)), 10)
      const expected: Array<Firing> = []
      for (let t = 1; t <= 200; t++) {
        // The grids meet at 10, 80 and 150. Ties go by scheduling order, and p10 was armed for them (at t - 10)
        // before p7 was (at t - 7), so p10 comes first there.
        if (t % 10 === 0) expected.push(at("p10", t))
        if (t >= 3 && (t - 3) % 7 === 0) expected.push(at("p7", t))
      }
      yield* stepTo(driver, 200, log, expected)
      assert.strictEqual(driver.size, 2)
    })
  )

  it.scoped("ties between periodic entries go by when each was armed", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("x", log, every(5)), 5)
      driver.schedule(new Recorder("y", log, every(5)), 5)
      driver.schedule(new Recorder("z", log, every(10)), 10)
      const expected: Array<Firing> = []
      // At t = 10k, z was armed (at t - 10) before x and y were (at t - 5), so z goes first; x and y keep their order
      // because x always fires, and so re-arms, before y.
      for (let t = 5; t <= 60; t += 5) {
        if (t % 10 === 0) expected.push(at("z", t))
        expected.push(at("x", t), at("y", t))
      }
      yield* stepTo(driver, 60, log, expected)
    })
  )

  it.scoped("a re-arm at or before now fires again in the same turn (backlog), in (due, seq) order", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("far", log), 100)
      yield* stepTo(driver, 50, log, [])
      // Armed at 0 with a 10 ms period while the clock is at 50: 0, 10, ..., 50 are all overdue.
      driver.schedule(new Recorder("p", log, every(10)), 0)
      driver.schedule(new Recorder("once", log), 25)
      yield* TestClock.adjust(0)
      const backlog = [
        at("p", 50, 0),
        at("p", 50, 10),
        at("p", 50, 20),
        at("once", 50, 25),
        at("p", 50, 30),
        at("p", 50, 40),
        at("p", 50, 50)
      ]
      assert.deepStrictEqual(log, backlog)
      assert.strictEqual(driver.now(), 50)
      yield* stepTo(driver, 80, log, [...backlog, at("p", 60), at("p", 70), at("p", 80)])
    })
  )

  it.scoped("a re-arm at exactly now fires again in the same turn until it moves past now", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      let repeats = 0
      // Re-arms at `now` three times, then 5 ms later.
      driver.schedule(new Recorder("r", log, (now) => (++repeats <= 3 ? now : now + 5)), 4)
      yield* stepTo(driver, 10, log, [at("r", 4), at("r", 4), at("r", 4), at("r", 4), at("r", 9)])
    })
  )

  it.scoped("an entry scheduled from inside fire for a later instant fires then", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const child = new Recorder("child", log)
      driver.schedule(new Recorder("far", log), 40)
      driver.schedule(
        new Recorder("parent", log, undefined, (now, d) => {
          d.schedule(child, now + 3)
          return undefined
        }),
        10
      )
      yield* stepTo(driver, 40, log, [at("parent", 10), at("child", 13), at("far", 40)])
    })
  )

  it.scoped("close() drops every pending entry and ignores later schedules", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      const entries = [10, 20, 20, 30].map((due, i) => {
        const e = new Recorder(`e${i}`, log, every(50))
        driver.schedule(e, due)
        return e
      })
      yield* stepTo(driver, 15, log, [at("e0", 10)])
      assert.isFalse(driver.isClosed)
      driver.close()
      assert.isTrue(driver.isClosed)
      assert.strictEqual(driver.size, 0)
      for (const e of entries) assert.isFalse(e.isPending, `${e.name} is not pending`)
      const late = new Recorder("late", log)
      driver.schedule(late, 16)
      assert.strictEqual(driver.size, 0)
      assert.isFalse(driver.cancel(entries[1]!))
      yield* stepTo(driver, 100, log, [at("e0", 10)])
      assert.strictEqual(driver.stats.fired, 1)
    })
  )

  it.scoped("close() from inside fire stops the rest of the turn's re-arms", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      driver.schedule(new Recorder("p", log, every(5)), 5)
      driver.schedule(
        new Recorder("closer", log, undefined, (_now, d) => {
          d.close()
          return undefined
        }),
        12
      )
      yield* stepTo(driver, 40, log, [at("p", 5), at("p", 10), at("closer", 12)])
      assert.strictEqual(driver.size, 0)
    })
  )

  it.scoped("an effect returned by fire runs before the next due entries", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      const events: Array<string> = []
      yield* start(driver)
      const effectful = new Recorder("a", log, undefined, (now) =>
        Effect.gen(function* () {
          events.push(`a:effect:start@${now}`)
          yield* Effect.yieldNow()
          yield* Effect.yieldNow()
          events.push(`a:effect:end@${now}`)
        })
      )
      const plain = (name: string) =>
        new Recorder(name, log, undefined, (now) => {
          events.push(`${name}@${now}`)
          return undefined
        })
      driver.schedule(plain("before"), 10)
      driver.schedule(effectful, 10)
      driver.schedule(plain("b"), 10)
      driver.schedule(plain("c"), 10)
      driver.schedule(plain("d"), 11)
      yield* stepTo(driver, 15, log, [at("before", 10), at("a", 10), at("b", 10), at("c", 10), at("d", 11)])
      assert.deepStrictEqual(events, ["before@10", "a:effect:start@10", "a:effect:end@10", "b@10", "c@10", "d@11"])
      assert.strictEqual(driver.stats.fired, 5)
    })
  )

  it.scoped("several effectful entries in one turn each finish before the next fires", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      const events: Array<string> = []
      yield* start(driver)
      const effectful = (name: string) =>
        new Recorder(name, log, undefined, () =>
          Effect.zipRight(
            Effect.sync(() => events.push(`${name}:start`)),
            Effect.zipRight(
              Effect.yieldNow(),
              Effect.sync(() => events.push(`${name}:end`))
            )
          )
        )
      for (const name of ["a", "b", "c"]) driver.schedule(effectful(name), 3)
      yield* stepTo(driver, 5, log, [at("a", 3), at("b", 3), at("c", 3)])
      assert.deepStrictEqual(events, ["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"])
    })
  )

  it.scoped("onTurn reports the number of armed timers once per turn, all due entries firing in one turn", () =>
    Effect.gen(function* () {
      const clock = yield* Effect.clock
      const sizes: Array<[number, number]> = []
      const driver: TimerDriver = new TimerDriver(clock, (size) => sizes.push([driver.now(), size]))
      const log: Array<Firing> = []
      driver.schedule(new Recorder("a", log), 2)
      driver.schedule(new Recorder("b", log), 4)
      driver.schedule(new Recorder("b2", log), 4)
      driver.schedule(new Recorder("b3", log), 4)
      driver.schedule(new Recorder("p", log, every(3)), 3)
      yield* start(driver)
      yield* stepTo(driver, 6, log, [at("a", 2), at("p", 3), at("b", 4), at("b2", 4), at("b3", 4), at("p", 6)])
      assert.deepStrictEqual(sizes, [
        [0, 5],
        [2, 4],
        [3, 4],
        [4, 1],
        [6, 1]
      ])
    })
  )

  it.scoped("a turn goes on firing what comes due while it runs, for up to 5 ms, then ends", () =>
    Effect.gen(function* () {
      const testClock = yield* Effect.clock
      // Every firing takes 1 ms of this clock: a turn that starts at 10 has reached 11 after its first entry.
      let work = 0
      const clock: Clock.Clock = Object.create(testClock)
      clock.unsafeCurrentTimeMillis = () => testClock.unsafeCurrentTimeMillis() + work
      const turns: Array<number> = []
      const driver: TimerDriver = new TimerDriver(clock, () => turns.push(driver.stats.fired))
      const log: Array<Firing> = []
      for (let due = 10; due < 18; due++) {
        driver.schedule(
          new Recorder(`t${due}`, log, undefined, () => {
            work++
            return undefined
          }),
          due
        )
      }
      yield* start(driver)
      yield* TestClock.adjust(10)
      // The first turn starts at 10 and ends at 15, the end of its slice, having fired what was due until 14 as each
      // came due; the next turn fires the rest (due by 15 and, as it runs, 16 and 17).
      assert.deepStrictEqual(
        log.map((f) => [f.name, f.now]),
        [10, 11, 12, 13, 14, 15, 16, 17].map((due) => [`t${due}`, due])
      )
      assert.deepStrictEqual(turns, [0, 5, 8])
    })
  )

  it.scoped("a window of far timers is opened in steps ahead of its start; its timers still fire on time", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      // 20,000 timers in the window 17408..18431: more than one opening step
      const n = 20_000
      for (let i = 0; i < n; i++) driver.schedule(new Recorder(`t${i}`, log), DUE + (i % 3))
      yield* start(driver)
      yield* TestClock.adjust(opensAt - 1)
      assert.strictEqual(driver.queue.nextWindowStart(), WINDOW_START) // not yet
      yield* TestClock.adjust(1)
      assert.isUndefined(driver.queue.nextWindowStart()) // opened, in steps, at opensAt
      assert.strictEqual(driver.queue.peekDue(), DUE)
      yield* TestClock.adjust(DUE - 1 - opensAt)
      assert.strictEqual(log.length, 0)
      yield* TestClock.adjust(3)
      assert.strictEqual(log.length, n)
      const order = log.map((f) => Number(f.name.slice(1)))
      const expected = [0, 1, 2].flatMap((r) =>
        Array.from({ length: n / 3 + (r < n % 3 ? 1 : 0) }, (_, k) => 3 * k + r)
      )
      assert.deepStrictEqual(order, expected)
      assert.isTrue(log.every((f) => f.now === f.due && f.due === DUE + (Number(f.name.slice(1)) % 3)))
    })
  )

  it.scoped("a window scheduled while the primary sleeps toward a later one is opened ahead by an early fiber", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      driver.schedule(new Recorder("hour", log), 3_600_000)
      yield* start(driver)
      yield* TestClock.adjust(10)
      const n = 20_000
      for (let i = 0; i < n; i++) driver.schedule(new Recorder(`t${i}`, log), DUE)
      yield* TestClock.adjust(opensAt - 11)
      assert.strictEqual(driver.queue.nextWindowStart(), WINDOW_START)
      yield* TestClock.adjust(1)
      assert.strictEqual(driver.queue.nextWindowStart(), Math.floor(3_600_000 / 1024) * 1024)
      yield* TestClock.adjust(DUE - opensAt)
      assert.strictEqual(log.length, n)
      assert.isTrue(log.every((f, i) => f.name === `t${i}` && f.now === DUE))
    })
  )

  it.scoped("a window within the near horizon holding no far timer opens as timers are inserted: nothing moves", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const log: Array<Firing> = []
      yield* start(driver)
      // window 7 (7168..8191) starts within NEAR_HORIZON_MILLIS of now (0): its timers go straight to their millisecond
      assert.isAtMost(7168, NEAR_HORIZON_MILLIS)
      const n = 20_000
      for (let i = 0; i < n; i++) driver.schedule(new Recorder(`t${i}`, log), 8000 + (i % 2))
      assert.isUndefined(driver.queue.nextWindowStart(), "no far window to open")
      assert.strictEqual(driver.queue.peekDue(), 8000)
      yield* TestClock.adjust(7999)
      assert.strictEqual(log.length, 0)
      yield* TestClock.adjust(2)
      assert.strictEqual(log.length, n)
      const order = log.map((f) => Number(f.name.slice(1)))
      assert.deepStrictEqual(
        order,
        [...order].sort((x, y) => (x % 2) - (y % 2) || x - y),
        "by due, then scheduling order"
      )
    })
  )

  it.effect("the driver fiber keeps running (never completes) while idle", () =>
    Effect.gen(function* () {
      const driver = yield* makeDriver
      const fiber = yield* Effect.fork(driver.run)
      yield* TestClock.adjust("1 hour")
      assert.isNull(fiber.unsafePoll())
      yield* Fiber.interrupt(fiber)
    })
  )
})
