/**
 * `Reminders.registerManyFor`: many reminders in one transaction, all or none, with the typed errors of
 * `registerFor` for bad input.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { advance, dropPrefixTables, failureTag, freshPrefix, pgStorage, pgUnavailable } from "./conformance-helpers.js"

const pgSkip = await pgUnavailable("registerManyFor", "the PostgreSQL variant")

const Msg = Schema.TaggedStruct("Wake", { label: Schema.String })
type Msg = typeof Msg.Type

const makeSubject = () => {
  const delivered: Array<string> = []
  const kind = ClusterGrain.make(
    Grain.make<Msg>()({
      name: "batched",
      onReceive: (ctx) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => delivered.push(`${ctx.identity.key}:${ctx.message.label}@${now}`))
        )
    }),
    { message: Msg }
  )
  return { delivered, kind }
}

const wake = (label: string): Msg => ({ _tag: "Wake", label })

const listed = (kind: ClusterGrain.ClusterGrain<Msg, any, any, any>, keys: ReadonlyArray<string>) =>
  Effect.map(
    Effect.forEach(keys, (key) =>
      Effect.map(Reminders.listFor(kind, key), (list) => list.map((r) => `${key}/${r.name}`))
    ),
    (lists) => lists.flat()
  )

/** A test runner hosting `kind`, with the reminders service. */
const hosting = (kind: ClusterGrain.ClusterGrain<Msg, any, any, any>) =>
  Layer.build(
    ClusterGrain.layer([kind]).pipe(
      Layer.provideMerge(Reminders.layer()),
      Layer.provideMerge(ActorSystem.layer({ name: "runner" })),
      Layer.provideMerge(ClusterRunner.layerTest())
    )
  )

describe("Reminders.registerManyFor", () => {
  it.scoped(
    "registers every reminder of the batch; each is delivered when due",
    () =>
      Effect.gen(function* () {
        const { delivered, kind } = makeSubject()
        const runner = yield* hosting(kind)
        yield* TestClock.adjust(1)
        const keys = Array.from({ length: 520 }, (_, i) => `k${i}`)
        const infos = yield* Reminders.registerManyFor(
          kind,
          keys.map((key, i) => ({ key, name: "r", message: wake(`n${i}`), schedule: Reminders.after(1_000 + i) }))
        ).pipe(Effect.provide(runner))
        assert.deepStrictEqual(
          infos.map((info) => info.nextDue),
          keys.map((_, i) => 1_001 + i)
        )
        // More rows than one upsert statement holds: all are listed.
        assert.strictEqual((yield* listed(kind, keys).pipe(Effect.provide(runner))).length, 520)
        yield* advance(3)
        assert.strictEqual(delivered.length, 520)
        assert.include(delivered, "k519:n519@1520")
        // An empty batch is no error and writes nothing.
        assert.deepStrictEqual(yield* Reminders.registerManyFor(kind, []).pipe(Effect.provide(runner)), [])
      }),
    120_000
  )

  it.scoped("one-shots given in millis: due as registerFor makes them; NaN and infinite times are typed errors", () =>
    Effect.gen(function* () {
      const { kind } = makeSubject()
      const runner = yield* hosting(kind)
      yield* TestClock.adjust(1_000)
      const schedules = [
        Reminders.after(1.5),
        Reminders.after(0),
        Reminders.at(500),
        Reminders.at(2_000.25),
        Reminders.after("1 second"),
        Reminders.at(3_000, { period: 10 })
      ]
      const many = yield* Reminders.registerManyFor(
        kind,
        schedules.map((schedule, i) => ({ key: "g", name: `m${i}`, message: wake("x"), schedule }))
      ).pipe(Effect.provide(runner))
      const single = yield* Effect.forEach(schedules, (schedule, i) =>
        Reminders.registerFor(kind, "h", `s${i}`, wake("x"), schedule)
      ).pipe(Effect.provide(runner))
      assert.deepStrictEqual(
        many.map((info) => [info.nextDue, info.periodMillis]),
        single.map((info) => [info.nextDue, info.periodMillis])
      )
      assert.deepStrictEqual(
        many.map((info) => info.nextDue),
        [1_002, 1_000, 1_000, 2_001, 2_000, 3_000]
      )
      for (const schedule of [
        Reminders.at(Number.NaN),
        Reminders.at(Number.POSITIVE_INFINITY),
        Reminders.after(Number.NaN),
        Reminders.after(Number.POSITIVE_INFINITY)
      ]) {
        const tag = yield* failureTag(
          Reminders.registerManyFor(kind, [{ key: "g", name: "bad", message: wake("x"), schedule }]).pipe(
            Effect.provide(runner)
          )
        )
        assert.strictEqual(tag, "InvalidTimerDelay")
      }
    })
  )

  it.scoped("the same (key, name) twice: the later one wins", () =>
    Effect.gen(function* () {
      const { delivered, kind } = makeSubject()
      const runner = yield* hosting(kind)
      yield* TestClock.adjust(1)
      yield* Reminders.registerManyFor(kind, [
        { key: "g", name: "r", message: wake("first"), schedule: Reminders.after("1 second") },
        { key: "g", name: "r", message: wake("second"), schedule: Reminders.after("2 seconds") }
      ]).pipe(Effect.provide(runner))
      const list = yield* Reminders.listFor(kind, "g").pipe(Effect.provide(runner))
      assert.deepStrictEqual(
        list.map((r) => r.nextDue),
        [2_001]
      )
      yield* advance(4)
      assert.deepStrictEqual(delivered, ["g:second@2001"])
    })
  )

  it.scoped("bad input: the first bad registration's typed error, and nothing of the batch is registered", () =>
    Effect.gen(function* () {
      const { kind } = makeSubject()
      const runner = yield* hosting(kind)
      yield* TestClock.adjust(1)
      const good = { key: "ok", name: "r", message: wake("ok"), schedule: Reminders.after("1 second") }
      const cases: ReadonlyArray<[string, Reminders.Registration<Msg>]> = [
        ["InvalidReminderName", { key: "a", name: "", message: wake("x"), schedule: Reminders.after("1 second") }],
        ["InvalidTimerDelay", { key: "a", name: "r", message: wake("x"), schedule: Reminders.after(-5) }],
        [
          "InvalidTimerInterval",
          { key: "a", name: "r", message: wake("x"), schedule: Reminders.after("1 second", { period: 0 }) }
        ],
        ["InvalidCronExpression", { key: "a", name: "r", message: wake("x"), schedule: Reminders.cron("nope") }],
        [
          "ReminderNeverFires",
          { key: "a", name: "r", message: wake("x"), schedule: Reminders.cron("0 0 0 1 1 ? 1970") }
        ],
        [
          "InvalidGrainMessage",
          { key: "a", name: "r", message: { _tag: "Wake" } as unknown as Msg, schedule: Reminders.after("1 second") }
        ]
      ]
      for (const [tag, bad] of cases) {
        const exit = yield* Effect.exit(
          Reminders.registerManyFor(kind, [good, bad, { ...good, key: "late" }]).pipe(Effect.provide(runner))
        )
        assert.isTrue(Exit.isFailure(exit), tag)
        const error = Exit.isFailure(exit) ? (exit.cause as any).error : undefined
        assert.strictEqual(error?._tag, tag)
        assert.deepStrictEqual(yield* listed(kind, ["ok", "a", "late"]).pipe(Effect.provide(runner)), [], tag)
      }
    })
  )

  it.scoped("a batch the cluster refuses registers nothing and leaves the reminders it was to replace", () =>
    Effect.gen(function* () {
      const { kind } = makeSubject()
      const base = yield* Layer.build(
        Reminders.layer().pipe(
          Layer.provideMerge(ClusterRunner.layerTest()),
          Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
        )
      )
      const hosting = yield* Scope.make()
      yield* Layer.buildWithScope(ClusterGrain.layer([kind]), hosting).pipe(Effect.provide(base))
      yield* TestClock.adjust(1)
      yield* Reminders.registerFor(kind, "g", "kept", wake("old"), Reminders.after("10 seconds")).pipe(
        Effect.provide(base)
      )
      // The kind leaves the runner, which owns every shard: every send of the batch is refused.
      yield* Scope.close(hosting, Exit.void)
      const refused = yield* failureTag(
        Reminders.registerManyFor(kind, [
          { key: "g", name: "kept", message: wake("new"), schedule: Reminders.after("20 seconds") },
          { key: "h", name: "fresh", message: wake("new"), schedule: Reminders.after("20 seconds") }
        ]).pipe(Effect.provide(base))
      )
      assert.strictEqual(refused, "UnknownClusterGrainKind")
      const after = yield* Effect.forEach(["g", "h"], (key) => Reminders.listFor(kind, key)).pipe(Effect.provide(base))
      assert.deepStrictEqual(
        after.flat().map((r) => `${r.name}:${r.nextDue}`),
        ["kept:10001"]
      )
    })
  )

  for (const backend of ["sqlite", "pg"] as const) {
    it.scoped.skipIf(backend === "pg" && pgSkip !== undefined)(
      `${backend}: a large batch the cluster refuses (on PostgreSQL checked a chunk at a time while the chunk before ` +
        "is written) registers nothing; a bad registration after the refused ones is the batch's error",
      () =>
        Effect.gen(function* () {
          const { kind } = makeSubject()
          const prefix = freshPrefix("rm")
          const base = yield* Layer.build(
            Reminders.layer().pipe(
              Layer.provideMerge(
                ClusterRunner.layerTest(backend === "pg" ? { storage: pgStorage, tablePrefix: prefix } : {})
              ),
              Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
            )
          )
          if (backend === "pg")
            yield* Effect.addFinalizer(() => Effect.orDie(dropPrefixTables(prefix)).pipe(Effect.provide(base)))
          const hosting = yield* Scope.make()
          yield* Layer.buildWithScope(ClusterGrain.layer([kind]), hosting).pipe(Effect.provide(base))
          yield* TestClock.adjust(1)
          const batch = Array.from({ length: 2_500 }, (_, i) => ({
            key: `k${i % 30}`,
            name: `r${i}`,
            message: wake(`n${i}`),
            schedule: Reminders.after("1 day")
          }))
          yield* Reminders.registerManyFor(kind, batch).pipe(Effect.provide(base))
          // The kind leaves the runner, which owns every shard: every registration of the batch is refused.
          yield* Scope.close(hosting, Exit.void)
          yield* TestClock.adjust(1)
          const failureOf = (registrations: ReadonlyArray<Reminders.Registration<Msg>>) =>
            failureTag(Reminders.registerManyFor(kind, registrations).pipe(Effect.provide(base)))
          const replacing = batch.map((registration) => ({
            ...registration,
            message: wake("new"),
            schedule: Reminders.after("2 days")
          }))
          assert.strictEqual(yield* failureOf(replacing), "UnknownClusterGrainKind")
          yield* TestClock.adjust(1)
          replacing[2_400] = { ...replacing[2_400]!, schedule: Reminders.cron("nope") }
          assert.strictEqual(yield* failureOf(replacing), "InvalidCronExpression")
          const kept = yield* Effect.forEach(
            Array.from({ length: 30 }, (_, i) => `k${i}`),
            (key) => Reminders.listFor(kind, key)
          ).pipe(Effect.provide(base))
          assert.strictEqual(kept.flat().length, 2_500)
          assert.isTrue(kept.flat().every((info) => info.nextDue === 86_400_001))
        }),
      60_000
    )
  }
})
