/**
 * Local arming (src/cluster/internal/arming.ts): reminder occurrences and cron instants are delivered at their
 * instant, not at the runner's next storage poll. The storage poll is set to 10 seconds here, so a delivery on time
 * can only come from the arming.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, DateTime, Effect, Exit, Layer, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"
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
