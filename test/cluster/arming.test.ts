/**
 * Local arming (src/cluster/internal/arming.ts): reminder occurrences and cron instants are delivered at their
 * instant, not at the runner's next storage poll. The storage poll is set to 10 seconds here, so a delivery on time
 * can only come from the arming.
 */
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import * as ShardId from "@effect/cluster/ShardId"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, DateTime, Effect, Exit, Layer, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"
import * as Arming from "../../src/cluster/internal/arming.js"
import { historyOf, iso, startRunner } from "./conformance-helpers.js"

const POLL = { entityMessagePollInterval: "10 seconds" } as const

/** Lets the runner's fibers (read loop, entity, grain) finish what a clock step started. */
const settle = Effect.repeatN(Effect.yieldNow(), 200)

/** Moves the clock to `millis`, in steps of at most one second, settling after each. */
const advanceTo = (millis: number) =>
  Effect.gen(function* () {
    for (;;) {
      const now = yield* Clock.currentTimeMillis
      if (now >= millis) return
      yield* TestClock.adjust(Math.min(1_000, millis - now))
      yield* settle
    }
  })

const makeSubject = () => {
  const delivered: Array<[string, number]> = []
  const Msg = Schema.TaggedStruct("Wake", { label: Schema.String })
  const kind = ClusterGrain.make(
    Grain.make<typeof Msg.Type>()({
      name: "armed",
      onReceive: (ctx) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => delivered.push([ctx.message.label, now])))
    }),
    { message: Msg }
  )
  return { delivered, kind }
}

const grainsOn = (kind: ClusterGrain.ClusterGrain<any, any, any, any>) =>
  ClusterGrain.layer([kind]).pipe(
    Layer.provideMerge(Reminders.layer()),
    Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
  )

const wake = (label: string) => ({ _tag: "Wake", label }) as const

describe("local arming", () => {
  for (const localArming of [undefined, false] as const) {
    const on = localArming === undefined
    it.effect(`a reminder occurrence ${on ? "arrives at its instant" : "waits for the next poll without arming"}`, () =>
      Effect.gen(function* () {
        const { delivered, kind } = makeSubject()
        yield* Effect.gen(function* () {
          yield* TestClock.adjust(1)
          yield* settle
          const info = yield* Reminders.registerFor(kind, "g", "soon", wake("soon"), Reminders.after("2500 millis"))
          yield* advanceTo(info.nextDue - 1)
          assert.deepStrictEqual(delivered, [])
          yield* advanceTo(info.nextDue)
          if (on) {
            assert.deepStrictEqual(delivered, [["soon", info.nextDue]])
          } else {
            assert.deepStrictEqual(delivered, [])
            yield* advanceTo(info.nextDue + 10_000)
            assert.strictEqual(delivered.length, 1)
            assert.isAbove(delivered[0]![1], info.nextDue + 1_000)
          }
        }).pipe(
          Effect.provide(
            grainsOn(kind).pipe(
              Layer.provideMerge(ClusterRunner.layerTest({ shardingConfig: POLL, ...(on ? {} : { localArming }) }))
            )
          )
        )
      })
    )
  }

  it.effect("a cancelled reminder is not delivered by its stale arm", () =>
    Effect.gen(function* () {
      const { delivered, kind } = makeSubject()
      yield* Effect.gen(function* () {
        yield* TestClock.adjust(1)
        const info = yield* Reminders.registerFor(kind, "g", "gone", wake("gone"), Reminders.after("3 seconds"))
        yield* advanceTo(1_000)
        assert.isTrue(yield* Reminders.unregisterFor(kind, "g", "gone"))
        yield* advanceTo(info.nextDue + 15_000)
        assert.deepStrictEqual(delivered, [])
        // The arming still works for the next one.
        const next = yield* Reminders.registerFor(kind, "g", "kept", wake("kept"), Reminders.after("2 seconds"))
        yield* advanceTo(next.nextDue)
        assert.deepStrictEqual(delivered, [["kept", next.nextDue]])
      }).pipe(
        Effect.provide(grainsOn(kind).pipe(Layer.provideMerge(ClusterRunner.layerTest({ shardingConfig: POLL }))))
      )
    })
  )

  it.effect("ten schedules due at the same instants: each instant at its instant, once (one wake for them all)", () =>
    Effect.gen(function* () {
      for (const start of [1, 437, 999]) {
        const fired: Array<string> = []
        yield* Effect.gen(function* () {
          yield* TestClock.adjust(start)
          const base = yield* Clock.currentTimeMillis
          for (let s = 0; s < 10; s++) {
            yield* ClusterScheduler.scheduleWithCron(
              "* * * * * ?",
              (fire) =>
                Effect.flatMap(Clock.currentTimeMillis, (now) =>
                  Effect.sync(() => fired.push(`${s}@${DateTime.toEpochMillis(fire.instant)}:${now}`))
                ),
              ClusterScheduler.withTimerReference(`together-${s}`)
            )
          }
          const first = Math.ceil((base + 1) / 1_000) * 1_000
          for (let i = 0; i < 4; i++) {
            const instant = first + i * 1_000
            yield* advanceTo(instant)
            // Every schedule's instant ran at its instant (the clock has not moved past it), each once.
            assert.deepStrictEqual(
              fired.slice(i * 10).sort(),
              Array.from({ length: 10 }, (_, s) => `${s}@${instant}:${instant}`).sort(),
              `start ${start}, instant ${i}`
            )
          }
        }).pipe(
          Effect.scoped,
          Effect.provide(ClusterRunner.layerTest({ shardingConfig: POLL })),
          Effect.provide(TestClock.defaultTestClock)
        )
      }
    })
  )

  it.effect("every cron instant starts at its instant, whatever the runner's start time, once", () =>
    Effect.gen(function* () {
      for (const start of [1, 437, 999]) {
        const lateness: Array<[string, number]> = []
        yield* Effect.gen(function* () {
          yield* TestClock.adjust(start)
          const base = yield* Clock.currentTimeMillis
          yield* ClusterScheduler.scheduleWithCron(
            "* * * * * ?",
            (fire) =>
              Effect.sync(() =>
                lateness.push([DateTime.formatIso(fire.instant), DateTime.toEpochMillis(fire.instant)])
              ),
            ClusterScheduler.withTimerReference("every-second")
          )
          const first = Math.ceil((base + 1) / 1_000) * 1_000
          for (let i = 0; i < 5; i++) {
            const instant = first + i * 1_000
            yield* advanceTo(instant)
            // At its instant (the clock has not moved past it), exactly once.
            assert.deepStrictEqual(lateness.slice(i), [[iso(instant), instant]], `start ${start}, instant ${i}`)
          }
          const history = yield* historyOf("every-second")
          assert.deepStrictEqual(
            history,
            lateness.map(([at]) => at)
          )
        }).pipe(
          Effect.scoped,
          Effect.provide(ClusterRunner.layerTest({ shardingConfig: POLL })),
          Effect.provide(TestClock.defaultTestClock)
        )
      }
    })
  )

  it.scoped("a restarted runner re-arms what its predecessor armed", () =>
    Effect.gen(function* () {
      const { delivered, kind } = makeSubject()
      const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
      const start = (port: number) =>
        Effect.gen(function* () {
          const runner = yield* startRunner(storage, port, { shardingConfig: POLL })
          const grains = yield* Layer.buildWithScope(grainsOn(kind), runner.scope).pipe(Effect.provide(runner.context))
          return { ...runner, context: Context.merge(runner.context, grains) }
        })
      yield* TestClock.adjust(1)
      const first = yield* start(1)
      // A runner takes a moment to acquire its shards.
      yield* advanceTo(5_000)
      const info = yield* Reminders.registerFor(kind, "g", "moved", wake("moved"), Reminders.after("15 seconds")).pipe(
        Effect.provide(first.context)
      )
      yield* advanceTo(7_000)
      yield* Scope.close(first.scope, Exit.void)
      const second = yield* start(2)
      yield* advanceTo(info.nextDue - 1)
      assert.deepStrictEqual(delivered, [])
      yield* advanceTo(info.nextDue)
      assert.deepStrictEqual(delivered, [["moved", info.nextDue]])
      yield* Scope.close(second.scope, Exit.void)
    })
  )
})

describe("armed due times: one sorted store, one timer", () => {
  /** Deterministic pseudo-random integers in [0, n) (xorshift32). */
  const random = (seed: number) => (n: number) => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }

  it("a merge holds the sorted union of what it was given, each time once", () => {
    const next = random(7)
    for (let round = 0; round < 200; round++) {
      const store = new Arming.DueTimes()
      const reference = new Set<number>()
      let dropped = 0
      for (let step = 0; step < 12; step++) {
        if (next(4) === 0) {
          const now = dropped + next(400)
          store.dropThrough(now)
          for (const t of reference) if (t <= now) reference.delete(t)
          dropped = now
          continue
        }
        const times = Array.from({ length: next(150) }, () => dropped + 1 + next(1_000))
        // Scans return sorted, distinct times; a few rounds give anything else (a duplicate, out of order).
        const given = round % 5 === 0 ? times : Array.from(new Set(times)).sort((a, b) => a - b)
        const fresh = new Set(given.filter((t) => !reference.has(t))).size
        assert.strictEqual(store.merge(given), fresh, `round ${round} step ${step}`)
        for (const t of given) reference.add(t)
        assert.deepStrictEqual(
          store.toArray(),
          Array.from(reference).sort((a, b) => a - b),
          `round ${round} step ${step}`
        )
      }
    }
  })

  it("a merge of times already held adds nothing and keeps the buffer", () => {
    const store = new Arming.DueTimes()
    assert.strictEqual(store.merge([10, 20, 30]), 3)
    const capacity = store.capacity
    assert.strictEqual(store.merge([10, 30]), 0)
    assert.strictEqual(store.merge([20, 20, Number.NaN]), 0)
    assert.deepStrictEqual(store.toArray(), [10, 20, 30])
    assert.strictEqual(store.capacity, capacity)
  })

  it("the buffer grows to what is held and is released once it fired", () => {
    const store = new Arming.DueTimes()
    const times = Array.from({ length: 10_000 }, (_, i) => 1_000 + i)
    assert.strictEqual(store.merge(times), 10_000)
    assert.isAtLeast(store.capacity, 10_000)
    assert.isAtMost(store.capacity, 32_768)
    store.dropThrough(10_500)
    assert.strictEqual(store.size, 499)
    assert.isAtMost(store.capacity, 4_096)
    store.dropThrough(20_000)
    assert.strictEqual(store.size, 0)
    assert.strictEqual(store.capacity, 0)
    assert.strictEqual(store.first(), undefined)
  })

  /**
   * An arming over a scripted scan query: each read (through the wrapped storage) makes a scan that returns the next
   * script entry; `polls` records the clock at each opening of the read loop.
   */
  const scripted = (scans: Array<ReadonlyArray<number>>) =>
    Effect.gen(function* () {
      const polls: Array<number> = []
      const scanned: Array<number> = []
      const arming = yield* Arming.makeWith((_shards, now) =>
        Effect.suspend(() => {
          scanned.push(now)
          const times = scans.shift()
          return times === undefined ? Effect.fail("no script left") : Effect.succeed(times)
        })
      )
      arming.attach(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => polls.push(now))))
      const storage = arming.wrap({
        unprocessedMessages: () => Effect.succeed([])
      } as unknown as MessageStorage.MessageStorage["Type"])
      const read = Effect.zipRight(storage.unprocessedMessages([ShardId.make("default", 1)]), settle)
      return { arming, polls, read, scanned }
    })

  it.scoped("due times armed over overlapping scans each open the read loop once, in order, at their instant", () =>
    Effect.gen(function* () {
      const { arming, polls, read, scanned } = yield* scripted([
        [1_000, 1_200, 1_400, 3_000],
        [1_200, 1_300, 1_400, 2_500],
        [1_100, 1_300, 3_000],
        [1_200, 1_300, 1_400]
      ])
      yield* read
      assert.deepStrictEqual(arming.armed.toArray(), [1_000, 1_200, 1_400, 3_000])
      yield* advanceTo(999)
      assert.deepStrictEqual(polls, [])
      yield* advanceTo(1_000)
      assert.deepStrictEqual(polls, [1_000])
      yield* read
      yield* read
      assert.deepStrictEqual(arming.armed.toArray(), [1_100, 1_200, 1_300, 1_400, 2_500, 3_000])
      // Every time of this scan is armed already: nothing is added, the buffer stays.
      const capacity = arming.armed.capacity
      yield* read
      assert.deepStrictEqual(scanned, [0, 1_000, 1_000, 1_000])
      assert.strictEqual(arming.armed.size, 6)
      assert.strictEqual(arming.armed.capacity, capacity)
      for (const instant of [1_100, 1_200, 1_300, 1_400, 2_500, 3_000]) {
        const before = polls.length
        yield* advanceTo(instant - 1)
        assert.strictEqual(polls.length, before, `before ${instant}`)
        yield* advanceTo(instant)
        assert.deepStrictEqual(polls.slice(before), [instant], `at ${instant}`)
      }
      assert.deepStrictEqual(polls, [1_000, 1_100, 1_200, 1_300, 1_400, 2_500, 3_000])
      yield* advanceTo(20_000)
      assert.strictEqual(polls.length, 7)
      assert.strictEqual(arming.armed.size, 0)
      // A failed scan (the script is over) arms nothing and the next read scans again.
      yield* read
      yield* read
      assert.deepStrictEqual(scanned.length, 6)
      assert.strictEqual(arming.armed.size, 0)
    })
  )

  it.scoped("a rolling window of due times keeps the store bounded and opens the read loop once at each", () =>
    Effect.gen(function* () {
      // Scans every 500 ms of a 2 s window holding a due time every 5 ms: each scan overlaps the last three.
      const window = 2_000
      const step = 10
      const scans: Array<ReadonlyArray<number>> = []
      for (let scan = 0; scan < 10; scan++) {
        scans.push(Array.from({ length: window / step }, (_, i) => scan * 500 + (i + 1) * step))
      }
      const { arming, polls, read } = yield* scripted(scans)
      let largest = 0
      for (let scan = 0; scan < 10; scan++) {
        yield* advanceTo(scan * 500)
        yield* read
        largest = Math.max(largest, arming.armed.capacity)
        assert.isAtMost(arming.armed.size, window / step)
      }
      yield* advanceTo(10_000)
      const expected = Array.from({ length: (4_500 + window) / step }, (_, i) => (i + 1) * step)
      assert.deepStrictEqual(polls, expected)
      assert.isAtMost(largest, 1_024)
      assert.strictEqual(arming.armed.size, 0)
      assert.isAtMost(arming.armed.capacity, 64)
    })
  )
})
