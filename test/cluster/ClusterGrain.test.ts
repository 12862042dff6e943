import { EntityId, Sharding } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Fiber, Layer, ParseResult, Schema, Scope, TestClock } from "effect"
import { ActorSystem, Grain, GrainTimers, Passivation } from "tickwork"
import { ClusterGrain, ClusterRunner } from "tickwork/cluster"
import { advance } from "./conformance-helpers.js"

/** Commands that exercise the grain API from inside `onReceive`; each crosses the wire through this schema. */
const Msg = Schema.Union(
  Schema.TaggedStruct("Tick", { label: Schema.String }),
  Schema.TaggedStruct("Once", {
    label: Schema.String,
    millis: Schema.Number,
    reference: Schema.optional(Schema.String),
    keepAlive: Schema.optional(Schema.Boolean)
  }),
  Schema.TaggedStruct("Every", {
    label: Schema.String,
    millis: Schema.Number,
    reference: Schema.optional(Schema.String),
    keepAlive: Schema.optional(Schema.Boolean)
  }),
  Schema.TaggedStruct("Cron", { label: Schema.String, expression: Schema.String }),
  Schema.TaggedStruct("Cancel", { reference: Schema.String }),
  Schema.TaggedStruct("Timers", {}),
  Schema.TaggedStruct("Echo", { text: Schema.String }),
  Schema.TaggedStruct("Refuse", {}),
  Schema.TaggedStruct("Ignore", {}),
  Schema.TaggedStruct("Die", {}),
  Schema.TaggedStruct("Forward", { key: Schema.String, label: Schema.String })
)
type Msg = typeof Msg.Type

const Reply = Schema.Union(Schema.String, Schema.Array(Schema.String))

interface Subject {
  readonly events: Array<string>
  readonly kind: ClusterGrain.ClusterGrain<Msg, string | ReadonlyArray<string>, string>
}

const timerOptions = (msg: { readonly reference?: string | undefined; readonly keepAlive?: boolean | undefined }) => [
  ...(msg.reference === undefined ? [] : [GrainTimers.withTimerReference(msg.reference)]),
  ...(msg.keepAlive === true ? [GrainTimers.withTimerKeepAlive()] : [])
]

/** A cluster grain kind that records its lifecycle and ticks as "event@key#activation". */
const makeSubject = (
  options: {
    readonly passivation?: Passivation.Passivation
    readonly name?: string
    readonly persisted?: boolean
    /** Timers the grain registers in onActivate (dormant until the activation completes). */
    readonly onActivate?: (props: Grain.GrainProps<Msg>) => Effect.Effect<unknown, unknown>
  } = {}
) => {
  const events: Array<string> = []
  let activations = 0
  const grain = Grain.make<Msg>()({
    name: options.name ?? "subject",
    ...(options.passivation === undefined ? {} : { passivation: options.passivation }),
    onActivate: (props) =>
      Effect.gen(function* () {
        const n = ++activations
        events.push(`activate@${props.identity.key}#${n}`)
        if (options.onActivate !== undefined) yield* Effect.orDie(options.onActivate(props))
        // Time passes inside onActivate: timers registered above stay dormant meanwhile.
        yield* Effect.sleep(options.onActivate === undefined ? 0 : 5_000)
        events.push(`activated@${props.identity.key}#${n}`)
        return n
      }),
    onReceive: (ctx, n) => {
      const msg = ctx.message
      const record = (event: string) => Effect.sync(() => events.push(`${event}#${n}`))
      /** Replies "ok", or the tag of the timer API's typed error. */
      const answer = (effect: Effect.Effect<unknown, { readonly _tag: string }>) =>
        Effect.flatMap(Effect.either(effect), (result) => ctx.reply(result._tag === "Left" ? result.left._tag : "ok"))
      const run = (): Effect.Effect<unknown, unknown> => {
        switch (msg._tag) {
          case "Tick":
            return record(`${msg.label}@${ctx.identity.key}${ctx.isTick ? "" : "(told)"}`)
          case "Once":
            return answer(ctx.scheduleOnce({ _tag: "Tick", label: msg.label }, msg.millis, ...timerOptions(msg)))
          case "Every":
            return answer(ctx.schedule({ _tag: "Tick", label: msg.label }, msg.millis, ...timerOptions(msg)))
          case "Cron":
            return answer(
              ctx.scheduleWithCron({ _tag: "Tick", label: msg.label }, msg.expression, GrainTimers.withTimeZone("UTC"))
            )
          case "Cancel":
            return answer(ctx.cancelSchedule(msg.reference))
          case "Timers":
            return Effect.flatMap(ctx.timers, (timers) => ctx.reply(timers.map((t) => t.reference)))
          case "Echo":
            return ctx.reply(msg.text)
          case "Refuse":
            return ctx.err("refused")
          case "Ignore":
            return ctx.unhandled
          case "Die":
            return Effect.die("boom")
          case "Forward":
            return ctx.tellGrain(grain, msg.key, { _tag: "Tick", label: msg.label })
        }
      }
      return Effect.as(run(), n)
    },
    onDeactivate: (props, n) => Effect.sync(() => events.push(`deactivate@${props.identity.key}#${n}`))
  })
  const kind = ClusterGrain.make(grain, {
    message: Msg,
    reply: Reply,
    error: Schema.String,
    persisted: options.persisted ?? false
  })
  return { events, kind } satisfies Subject
}

const runner = (kinds: ReadonlyArray<ClusterGrain.ClusterGrain<any, any, any, any>>) =>
  ClusterGrain.layer(kinds).pipe(
    Layer.provideMerge(ClusterRunner.layerTest()),
    Layer.provideMerge(ActorSystem.layer({ name: "runner" }))
  )

describe("ClusterGrain", () => {
  it.effect("tell activates the grain on demand; exactly one activation per identity", () => {
    const { events, kind } = makeSubject()
    return Effect.gen(function* () {
      yield* TestClock.adjust(1)
      yield* Effect.forEach(["1", "2", "3"], (label) => ClusterGrain.tell(kind, "a", { _tag: "Tick", label }), {
        concurrency: "unbounded"
      })
      yield* ClusterGrain.tell(kind, "b", { _tag: "Tick", label: "4" })
      yield* ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "sync" })
      yield* ClusterGrain.ask(kind, "b", { _tag: "Echo", text: "sync" })
      assert.deepStrictEqual(
        events.filter((e) => e.startsWith("activate@")),
        ["activate@a#1", "activate@b#2"]
      )
      assert.deepStrictEqual(events.filter((e) => e.includes("(told)")).sort(), [
        "1@a(told)#1",
        "2@a(told)#1",
        "3@a(told)#1",
        "4@b(told)#2"
      ])
    }).pipe(Effect.provide(runner([kind])))
  })

  it.effect("ask: reply, noErr, err, unhandled and a failure, each through the schemas", () => {
    const { events, kind } = makeSubject()
    return Effect.gen(function* () {
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "hi" }), "hi")
      assert.strictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Tick", label: "t" }), undefined)
      const refused = yield* Effect.flip(ClusterGrain.ask(kind, "a", { _tag: "Refuse" }))
      assert.strictEqual(refused._tag, "GrainReplyError")
      assert.strictEqual((refused as Grain.GrainReplyError).error, "refused")
      assert.strictEqual((refused as Grain.GrainReplyError).grain, "subject/a")
      const ignored = yield* Effect.flip(ClusterGrain.ask(kind, "a", { _tag: "Ignore" }))
      assert.strictEqual(ignored._tag, "GrainMessageUnhandled")
      const died = yield* Effect.flip(ClusterGrain.ask(kind, "a", { _tag: "Die" }))
      assert.strictEqual(died._tag, "GrainFailed")
      assert.include(String((died as Grain.GrainFailed).cause), "boom")
      // The failure deactivated the grain; the next message reactivates it.
      assert.strictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "again" }), "again")
      assert.deepStrictEqual(
        events.filter((e) => /^(de)?activate@/.test(e)),
        ["activate@a#1", "deactivate@a#1", "activate@a#2"]
      )
    }).pipe(Effect.provide(runner([kind])))
  })

  it.effect("an ask that gets no answer in time fails with AskTimeout and does not interrupt the handler", () => {
    const slow = Grain.make<number>()({
      name: "slow",
      onReceive: (ctx) => Effect.zipRight(Effect.sleep(ctx.message), ctx.reply("done"))
    })
    const kind = ClusterGrain.make(slow, { message: Schema.Number, reply: Schema.String })
    return Effect.gen(function* () {
      yield* TestClock.adjust(1)
      const fiber = yield* Effect.fork(ClusterGrain.ask(kind, "s", 10_000, { timeout: "1 second" }))
      yield* TestClock.adjust("1 second")
      const error = yield* Effect.flip(fiber.await.pipe(Effect.flatten))
      assert.strictEqual(error._tag, "AskTimeout")
      yield* TestClock.adjust("9 seconds")
      // The grain finished the slow message and handles the next one.
      const next = yield* Effect.fork(ClusterGrain.ask(kind, "s", 0))
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* next.await.pipe(Effect.flatten), "done")
    }).pipe(Effect.provide(runner([kind])))
  })

  describe("timers", () => {
    it.effect("scheduleOnce and schedule deliver ticks through onReceive with single-process semantics", () => {
      const { events, kind } = makeSubject()
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        yield* ClusterGrain.ask(kind, "a", { _tag: "Once", label: "once", millis: 500 })
        yield* ClusterGrain.ask(kind, "a", { _tag: "Every", label: "every", millis: 1_000, reference: "e" })
        yield* TestClock.adjust(500)
        assert.deepStrictEqual(events.slice(2), ["once@a#1"])
        yield* TestClock.adjust(2_500)
        assert.deepStrictEqual(events.slice(2), ["once@a#1", "every@a#1", "every@a#1", "every@a#1"])
        assert.deepStrictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Timers" }), ["e"])
        yield* ClusterGrain.ask(kind, "a", { _tag: "Cancel", reference: "e" })
        yield* TestClock.adjust(5_000)
        assert.strictEqual(events.filter((e) => e.startsWith("every")).length, 3)
        assert.deepStrictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Timers" }), [])
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("references and bad input as in one process: reuse replaces, cancel, typed errors", () => {
      const { events, kind } = makeSubject()
      const ask = (msg: Msg) => ClusterGrain.ask(kind, "a", msg)
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        assert.strictEqual(yield* ask({ _tag: "Every", label: "first", millis: 1_000, reference: "r" }), "ok")
        assert.strictEqual(yield* ask({ _tag: "Every", label: "second", millis: 1_000, reference: "r" }), "ok")
        yield* TestClock.adjust(3_000)
        assert.deepStrictEqual(events.slice(2), ["second@a#1", "second@a#1", "second@a#1"])
        assert.strictEqual(yield* ask({ _tag: "Cancel", reference: "r" }), "ok")
        assert.strictEqual(yield* ask({ _tag: "Cancel", reference: "r" }), "ScheduledReferenceNotFound")
        assert.strictEqual(yield* ask({ _tag: "Every", label: "x", millis: 0 }), "InvalidTimerInterval")
        assert.strictEqual(yield* ask({ _tag: "Once", label: "x", millis: -1 }), "InvalidTimerDelay")
        assert.strictEqual(
          yield* ask({ _tag: "Cron", label: "x", expression: "61 * * * * ?" }),
          "InvalidCronExpression"
        )
        assert.deepStrictEqual(yield* ask({ _tag: "Timers" }), [])
        // Bad timer input is an answer, not a failure: the activation is still the first.
        assert.notInclude(events, "deactivate@a#1")
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("timers registered in onActivate stay dormant until the activation completes", () => {
      const { events, kind } = makeSubject({
        onActivate: (props) => props.schedule({ _tag: "Tick", label: "early" }, 1_000)
      })
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        yield* ClusterGrain.tell(kind, "a", { _tag: "Tick", label: "first" })
        yield* TestClock.adjust(4_999)
        assert.deepStrictEqual(events, ["activate@a#1"])
        yield* TestClock.adjust(1)
        // The told message waited in the mailbox; the ticks that came due while activating are delivered once,
        // right away, after it; then the grid goes on.
        assert.deepStrictEqual([...events], ["activate@a#1", "activated@a#1", "first@a(told)#1", "early@a#1"])
        yield* TestClock.adjust(1_000)
        assert.strictEqual(events.at(-1), "early@a#1")
        assert.strictEqual(events.filter((e) => e === "early@a#1").length, 2)
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("cron timers fire at the expression's instants", () => {
      const { events, kind } = makeSubject()
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        yield* ClusterGrain.ask(kind, "a", { _tag: "Cron", label: "cron", expression: "*/10 * * * * ?" })
        yield* TestClock.adjust(29_000)
        assert.deepStrictEqual(events.slice(2), ["cron@a#1", "cron@a#1"])
        yield* TestClock.adjust(1_000)
        assert.deepStrictEqual(events.slice(2), ["cron@a#1", "cron@a#1", "cron@a#1"])
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect(
      "idle passivation stops the timers before onDeactivate; timers never reactivate; reactivation has none",
      () => {
        const { events, kind } = makeSubject({ passivation: Passivation.idle("10 seconds") })
        return Effect.gen(function* () {
          yield* TestClock.adjust(1)
          yield* ClusterGrain.ask(kind, "a", { _tag: "Every", label: "every", millis: 3_000, reference: "e" })
          yield* ClusterGrain.ask(kind, "a", { _tag: "Once", label: "late", millis: 60_000, reference: "late" })
          // Ordinary ticks are not activity: the idle grain is passivated within maxIdleTime + reaper period.
          yield* advance(25)
          const deactivated = events.indexOf("deactivate@a#1")
          assert.isAbove(deactivated, 0)
          const ticks = events.filter((e) => e === "every@a#1").length
          assert.isAtLeast(ticks, 3)
          assert.deepStrictEqual(events.slice(deactivated + 1), [])
          // The one-shot due at 60 s never reactivates the grain.
          yield* advance(60)
          assert.deepStrictEqual(events.slice(deactivated + 1), [])
          // The next message reactivates it, with no timers.
          assert.deepStrictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Timers" }), [])
          assert.deepStrictEqual(events.slice(deactivated + 1), ["activate@a#2", "activated@a#2"])
        }).pipe(Effect.provide(runner([kind])))
      }
    )

    it.effect("a keep-alive timer holds passivation off; once cancelled, idle time counts again", () => {
      const { events, kind } = makeSubject({ passivation: Passivation.idle("10 seconds") })
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        yield* ClusterGrain.ask(kind, "a", {
          _tag: "Every",
          label: "beat",
          millis: 20_000,
          reference: "beat",
          keepAlive: true
        })
        yield* advance(90)
        assert.notInclude(events, "deactivate@a#1")
        assert.strictEqual(events.filter((e) => e === "beat@a#1").length, 4)
        yield* ClusterGrain.ask(kind, "a", { _tag: "Cancel", reference: "beat" })
        yield* advance(5)
        assert.notInclude(events, "deactivate@a#1")
        yield* advance(25)
        assert.include(events, "deactivate@a#1")
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("message-count passivation deactivates locally; the next message reactivates", () => {
      const { events, kind } = makeSubject({ passivation: Passivation.messageCount(2) })
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        yield* ClusterGrain.ask(kind, "a", { _tag: "Every", label: "every", millis: 1_000 })
        yield* TestClock.adjust(1_000)
        assert.deepStrictEqual(events, ["activate@a#1", "activated@a#1", "every@a#1", "deactivate@a#1"])
        yield* ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "x" })
        assert.strictEqual(events.at(-1), "activated@a#2")
      }).pipe(Effect.provide(runner([kind])))
    })
  })

  it.effect("a failing onActivate is GrainActivationFailed with its cause; the next message activates again", () => {
    let attempts = 0
    const fragile = Grain.make<string>()({
      name: "fragile",
      onActivate: () =>
        Effect.suspend(() => (++attempts === 1 ? Effect.fail("no config yet") : Effect.succeed(attempts))),
      onReceive: (ctx, n) => Effect.as(ctx.reply(`activation ${n}`), n)
    })
    const kind = ClusterGrain.make(fragile, { message: Schema.String, reply: Schema.String })
    return Effect.gen(function* () {
      yield* TestClock.adjust(1)
      const error = yield* Effect.flip(ClusterGrain.ask(kind, "f", "hi"))
      assert.strictEqual(error._tag, "GrainActivationFailed")
      assert.strictEqual((error as Grain.GrainActivationFailed).grain, "fragile/f")
      assert.include(String((error as Grain.GrainActivationFailed).cause), "no config yet")
      assert.strictEqual(yield* ClusterGrain.ask(kind, "f", "hi"), "activation 2")
    }).pipe(Effect.provide(runner([kind])))
  })

  it.effect("a runner that shuts down deactivates its grains: timers stop, onDeactivate runs", () => {
    const { events, kind } = makeSubject()
    return Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(runner([kind]), scope)
      yield* TestClock.adjust(1)
      yield* ClusterGrain.ask(kind, "a", { _tag: "Every", label: "every", millis: 1_000 }).pipe(Effect.provide(context))
      yield* TestClock.adjust(2_000)
      assert.deepStrictEqual(events, ["activate@a#1", "activated@a#1", "every@a#1", "every@a#1"])
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(events.at(-1), "deactivate@a#1")
      yield* TestClock.adjust(5_000)
      assert.strictEqual(events.at(-1), "deactivate@a#1")
      assert.strictEqual(events.length, 5)
    })
  })

  it.effect("tellGrain from inside a cluster grain routes through the cluster", () => {
    const { events, kind } = makeSubject()
    const local = Grain.make<string>()({ name: "local-only", onReceive: () => Effect.void })
    const probe = ClusterGrain.make(
      Grain.make<string>()({
        name: "prober",
        onReceive: (ctx) =>
          Effect.flatMap(Effect.either(ctx.tellGrain(local, "x", "hi")), (result) =>
            ctx.reply(result._tag === "Left" ? result.left._tag : "sent")
          )
      }),
      { message: Schema.String, reply: Schema.String }
    )
    return Effect.gen(function* () {
      yield* TestClock.adjust(1)
      yield* ClusterGrain.ask(kind, "a", { _tag: "Forward", key: "b", label: "forwarded" })
      yield* ClusterGrain.ask(kind, "b", { _tag: "Echo", text: "sync" })
      assert.include(events, "forwarded@b(told)#2")
      // A kind that is not a cluster grain cannot be reached from a cluster grain.
      assert.strictEqual(yield* ClusterGrain.ask(probe, "p", "go"), "UnknownGrainKind")
    }).pipe(Effect.provide(runner([kind, probe])))
  })

  describe("bad input", () => {
    it.effect("a kind no runner registers is a prompt UnknownClusterGrainKind, for tell and ask", () => {
      const { kind } = makeSubject()
      const { kind: other } = makeSubject({ name: "unregistered" })
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        const told = yield* Effect.flip(ClusterGrain.tell(other, "a", { _tag: "Tick", label: "x" }))
        assert.strictEqual(told._tag, "UnknownClusterGrainKind")
        assert.include(told.message, "unregistered/a")
        const asked = yield* Effect.flip(ClusterGrain.ask(other, "a", { _tag: "Echo", text: "x" }))
        assert.strictEqual(asked._tag, "UnknownClusterGrainKind")
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("a message that does not encode with the kind's schema is InvalidGrainMessage", () => {
      const { events, kind } = makeSubject()
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        const bad = { _tag: "Tick", label: 42 } as unknown as Msg
        const told = yield* Effect.flip(ClusterGrain.tell(kind, "a", bad))
        assert.strictEqual(told._tag, "InvalidGrainMessage")
        assert.include(told.message, "label")
        const asked = yield* Effect.flip(ClusterGrain.ask(kind, "a", bad))
        assert.strictEqual(asked._tag, "InvalidGrainMessage")
        assert.deepStrictEqual(events, [])
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("a reply or error value that does not encode with the kind's schemas is InvalidGrainReply", () => {
      const grain = Grain.make<string>()({
        name: "wrong-reply",
        onReceive: (ctx) => (ctx.message === "number" ? ctx.reply(42) : ctx.message === "err" ? ctx.err(42) : ctx.noErr)
      })
      const kind = ClusterGrain.make(grain, { message: Schema.String, reply: Schema.String, error: Schema.String })
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        const wrongType = yield* Effect.flip(ClusterGrain.ask(kind, "t", "number"))
        assert.strictEqual(wrongType._tag, "InvalidGrainReply")
        assert.include(wrongType.message, "Expected string, actual 42")
        const wrongError = yield* Effect.flip(ClusterGrain.ask(kind, "t", "err"))
        assert.strictEqual(wrongError._tag, "InvalidGrainReply")
        assert.strictEqual(yield* ClusterGrain.ask(kind, "t", "ok"), undefined)
      }).pipe(Effect.provide(runner([kind])))
    })

    it("a kind's entity protocol and client are typed by its message, reply and error types", () => {
      const kind = ClusterGrain.make(Grain.make<string>()({ name: "typed", onReceive: (ctx) => ctx.reply(1) }), {
        message: Schema.String,
        reply: Schema.Number,
        error: Schema.Literal("refused")
      })
      const asked: Effect.Effect<number | undefined, ClusterGrain.AskError, Sharding.Sharding> = ClusterGrain.ask(
        kind,
        "k",
        "hello"
      )
      const raw = Effect.flatMap(kind.entity.client, (client) => client("k").Ask({ message: "hello" }))
      const failure = Effect.flip(raw).pipe(
        Effect.map((error) => {
          if (error._tag !== "ReplyError") return undefined
          const refused: "refused" = error.error
          // @ts-expect-error: the ctx.err value is the kind's E, not anything
          const other: number = error.error
          return [refused, other]
        })
      )
      // @ts-expect-error: a message that is not the kind's Msg does not compile
      const wrong = () => ClusterGrain.tell(kind, "k", 42)
      // @ts-expect-error: nor through the entity's own client
      const wrongRaw = Effect.flatMap(kind.entity.client, (client) => client("k").Tell({ message: 42 }))
      assert.isTrue(Effect.isEffect(asked) && Effect.isEffect(failure) && Effect.isEffect(wrongRaw))
      assert.isFunction(wrong)
    })

    it("a grain made a cluster grain twice throws (a programmer mistake)", () => {
      const grain = Grain.make<string>()({ name: "twice", onReceive: () => Effect.void })
      const kind = ClusterGrain.make(grain, { message: Schema.String })
      assert.throws(() => ClusterGrain.make(grain, { message: Schema.String }), /already a cluster grain/)
      assert.isTrue(ClusterGrain.isClusterGrain(kind))
      assert.isFalse(ClusterGrain.isClusterGrain(grain))
    })

    it.effect("an unusable maxIdleTime or passivation fails ClusterGrain.layer with InvalidGrainKind naming it", () =>
      Effect.gen(function* () {
        const grain = (name: string, passivation?: Passivation.Passivation) =>
          Grain.make<string>()({
            name,
            ...(passivation === undefined ? {} : { passivation }),
            onReceive: () => Effect.void
          })
        const idle = (name: string, maxIdleTime: Duration.DurationInput) =>
          ClusterGrain.make(grain(name), { message: Schema.String, maxIdleTime })
        const cases: ReadonlyArray<readonly [ClusterGrain.Any, string, string]> = [
          [idle("zero-idle", 0), "maxIdleTime", 'must be a positive duration ("Infinity" never passivates), got "0"'],
          [idle("negative-idle", "-5 seconds"), "maxIdleTime", 'got "-5 seconds"'],
          [idle("word-idle", "soon" as Duration.DurationInput), "maxIdleTime", 'got "soon"'],
          [idle("nan-idle", Number.NaN), "maxIdleTime", 'got "NaN"'],
          [
            ClusterGrain.make(grain("soon", Passivation.idle("soon" as Duration.DurationInput)), {
              message: Schema.String
            }),
            "passivation",
            "Passivation.idle: the timeout"
          ],
          [
            ClusterGrain.make(grain("no-count", Passivation.messageCount(0)), { message: Schema.String }),
            "passivation",
            "the message count must be a whole number >= 1, got 0"
          ]
        ]
        for (const [kind, field, reason] of cases) {
          const error = yield* Effect.flip(Effect.scoped(Layer.build(runner([kind]))))
          assert.strictEqual(error._tag, "InvalidGrainKind", kind.name)
          if (error._tag !== "InvalidGrainKind") continue
          assert.strictEqual(error.kind, kind.name)
          assert.strictEqual(error.field, field)
          assert.include(error.reason, reason)
        }
        // The same checks leave usable values alone: an infinite idle time never passivates, a kind's idle timeout is used.
        assert.isTrue(Duration.equals(idle("forever", Duration.infinity).maxIdleTime!, Duration.infinity))
        const idling = ClusterGrain.make(grain("idling", Passivation.idle("2 minutes")), { message: Schema.String })
        assert.strictEqual(Duration.toMillis(idling.maxIdleTime!), 120_000)
        yield* Effect.scoped(Layer.build(runner([idling])))
      })
    )

    it.effect("ClusterGrain.layer refuses what it cannot host: a duplicate name, a kind not made by make", () =>
      Effect.gen(function* () {
        const first = ClusterGrain.make(Grain.make<string>()({ name: "dup", onReceive: () => Effect.void }), {
          message: Schema.String
        })
        const second = ClusterGrain.make(Grain.make<string>()({ name: "dup", onReceive: () => Effect.void }), {
          message: Schema.String
        })
        const duplicate = yield* Effect.flip(Effect.scoped(Layer.build(runner([first, second]))))
        assert.strictEqual(duplicate._tag, "InvalidGrainKind")
        if (duplicate._tag === "InvalidGrainKind") {
          assert.strictEqual(duplicate.field, "name")
          assert.include(duplicate.reason, "registered twice")
        }
        const local = Grain.make<string>()({ name: "local", onReceive: () => Effect.void })
        const notCluster = yield* Effect.flip(
          Effect.scoped(Layer.build(runner([local as unknown as ClusterGrain.Any])))
        )
        assert.strictEqual(notCluster._tag, "InvalidGrainKind")
        if (notCluster._tag === "InvalidGrainKind") {
          assert.strictEqual(notCluster.kind, "local")
          assert.strictEqual(notCluster.field, "kind")
          assert.include(notCluster.reason, "ClusterGrain.make")
        }
        const notArray = yield* Effect.flip(
          Effect.scoped(Layer.build(runner("dup" as unknown as ReadonlyArray<ClusterGrain.Any>)))
        )
        assert.strictEqual(notArray._tag, "InvalidGrainKind")
      })
    )

    it.effect("a key that is not a non-empty string is InvalidGrainKey for tell and ask, and nothing is sent", () => {
      const { events, kind } = makeSubject()
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        for (const key of ["", undefined, 42] as ReadonlyArray<unknown> as ReadonlyArray<string>) {
          const told = yield* Effect.flip(ClusterGrain.tell(kind, key, { _tag: "Tick", label: "x" }))
          assert.strictEqual(told._tag, "InvalidGrainKey", String(key))
          const asked = yield* Effect.flip(ClusterGrain.ask(kind, key, { _tag: "Echo", text: "x" }))
          assert.strictEqual(asked._tag, "InvalidGrainKey", String(key))
          assert.include(asked.message, "a grain key must be a non-empty string")
        }
        assert.deepStrictEqual(events, [], "no grain was activated")
      }).pipe(Effect.provide(runner([kind])))
    })

    it.effect("a bad ask or send timeout is InvalidTimerDelay, and nothing is sent", () => {
      const { events, kind } = makeSubject()
      return Effect.gen(function* () {
        yield* TestClock.adjust(1)
        const bad: ReadonlyArray<Duration.DurationInput> = [
          0,
          -1,
          Number.NaN,
          "-2 seconds",
          "soon" as Duration.DurationInput
        ]
        for (const timeout of bad) {
          const asked = yield* Effect.flip(ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "x" }, { timeout }))
          assert.strictEqual(asked._tag, "InvalidTimerDelay", String(timeout))
          const told = yield* Effect.flip(ClusterGrain.tell(kind, "a", { _tag: "Tick", label: "x" }, { timeout }))
          assert.strictEqual(told._tag, "InvalidTimerDelay", String(timeout))
        }
        const zero = yield* Effect.flip(ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "x" }, { timeout: 0 }))
        assert.include(zero.message, "an ask timeout must be more than 0")
        const zeroTell = yield* Effect.flip(ClusterGrain.tell(kind, "a", { _tag: "Tick", label: "x" }, { timeout: 0 }))
        assert.include(zeroTell.message, "a send timeout must be more than 0")
        assert.deepStrictEqual(events, [], "no grain was activated")
        assert.strictEqual(yield* ClusterGrain.ask(kind, "a", { _tag: "Echo", text: "ok" }, { timeout: 1 }), "ok")
        yield* ClusterGrain.tell(kind, "a", { _tag: "Tick", label: "t" }, { timeout: "1 second" })
      }).pipe(Effect.provide(runner([kind])))
    })
  })

  describe("several runners over one storage", () => {
    /** Two runners in this process sharing one SQLite storage; persisted messages travel between them. */
    const twoRunners = (
      kinds: ReadonlyArray<ClusterGrain.ClusterGrain<any, any, any, any>>,
      kindsOnB: ReadonlyArray<ClusterGrain.ClusterGrain<any, any, any, any>> = kinds
    ) =>
      Effect.gen(function* () {
        const storage = yield* Layer.build(ClusterRunner.layerStorage(ClusterRunner.sqlite(":memory:")))
        const make = (port: number) =>
          ClusterGrain.layer(port === 1 ? kinds : kindsOnB).pipe(
            Layer.provideMerge(ClusterRunner.layerTestRunner({ port })),
            Layer.provideMerge(ActorSystem.layer({ name: `runner-${port}` })),
            Layer.provide(Layer.succeedContext(storage))
          )
        const a = yield* Layer.build(make(1))
        const b = yield* Layer.build(make(2))
        yield* TestClock.adjust(5_000)
        const sharding = Context.get(a, Sharding.Sharding)
        /** The first key whose shard runner 1 does not own: messages to it cross to runner 2. */
        const remoteKey = Array.from({ length: 100 }, (_, i) => `k${i}`).find(
          (key) => !sharding.hasShardId(sharding.getShardId(EntityId.make(key), "default"))
        )!
        return { a, b, remoteKey }
      })

    /** Runs `effect` on a runner, moving the clock on so storage polls deliver the persisted messages. */
    const onRunner = <A, E>(context: Context.Context<any>, effect: Effect.Effect<A, E, any>) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Effect.provide(effect, context))
        yield* advance(10)
        return yield* Fiber.join(fiber)
      })

    it.scoped("messages from both runners reach one activation per identity", () => {
      const { events, kind: persisted } = makeSubject({ persisted: true })
      return Effect.gen(function* () {
        const { a, b, remoteKey } = yield* twoRunners([persisted])
        for (const [i, runner] of [a, b, a, b].entries()) {
          yield* onRunner(runner, ClusterGrain.tell(persisted, remoteKey, { _tag: "Tick", label: `m${i}` }))
        }
        assert.strictEqual(yield* onRunner(a, ClusterGrain.ask(persisted, remoteKey, { _tag: "Echo", text: "x" })), "x")
        assert.deepStrictEqual(
          events.filter((e) => e.startsWith("activate@")),
          [`activate@${remoteKey}#1`]
        )
        assert.deepStrictEqual(
          events.filter((e) => e.includes("(told)")),
          ["m0", "m1", "m2", "m3"].map((m) => `${m}@${remoteKey}(told)#1`)
        )
      })
    })

    it.scoped(
      "the owner of the grain's shard lacks the kind: an ask is bounded, a persisted tell waits for the kind",
      () => {
        const { events, kind } = makeSubject({ name: "late-kind", persisted: true })
        return Effect.gen(function* () {
          const { a, b, remoteKey } = yield* twoRunners([kind], [])
          // Runner 1 does not own the shard, so it cannot see that runner 2 lacks the kind: the bound gives AskTimeout.
          const asked = yield* onRunner(
            a,
            Effect.flip(ClusterGrain.ask(kind, remoteKey, { _tag: "Echo", text: "x" }, { timeout: "3 seconds" }))
          )
          assert.strictEqual(asked._tag, "AskTimeout")
          // A persisted tell is accepted once stored; it is delivered once runner 2 registers the kind.
          yield* onRunner(a, ClusterGrain.tell(kind, remoteKey, { _tag: "Tick", label: "kept" }))
          assert.deepStrictEqual(events, [])
          yield* Layer.build(ClusterGrain.layer([kind])).pipe(Effect.provide(b))
          yield* advance(5)
          assert.include(events, `kept@${remoteKey}(told)#1`)
        })
      }
    )

    it.scoped("a persisted message the hosting runner cannot decode is InvalidGrainMessage for the asker", () => {
      // Two versions of one kind: the hosting runners know the new message schema, a sender still uses the old one.
      const current = Grain.make<string>()({ name: "versioned", onReceive: (ctx) => ctx.reply(ctx.message) })
      const hosted = ClusterGrain.make(current, { message: Schema.String, reply: Schema.String, persisted: true })
      const outdated = ClusterGrain.make(Grain.make<number>()({ name: "versioned", onReceive: () => Effect.void }), {
        message: Schema.Number,
        reply: Schema.String,
        persisted: true
      })
      return Effect.gen(function* () {
        const { a, remoteKey } = yield* twoRunners([hosted])
        assert.strictEqual(
          yield* onRunner(a, ClusterGrain.ask(hosted, remoteKey, "fine", { timeout: "30 seconds" })),
          "fine"
        )
        const error = yield* onRunner(
          a,
          Effect.flip(ClusterGrain.ask(outdated, remoteKey, 7, { timeout: "30 seconds" }))
        )
        assert.strictEqual(error._tag, "InvalidGrainMessage")
        assert.include(error.message, `versioned/${remoteKey}`)
        assert.include(error.message, "Expected string, actual 7")
      })
    })

    it.scoped("a reply that does not decode on the asking runner is InvalidGrainReply", () => {
      const Tricky = Schema.transformOrFail(Schema.String, Schema.String, {
        strict: true,
        decode: (s, _, ast) =>
          s === "undecodable"
            ? ParseResult.fail(new ParseResult.Type(ast, s, "cannot decode"))
            : ParseResult.succeed(s),
        encode: ParseResult.succeed
      })
      const grain = Grain.make<string>()({ name: "tricky", onReceive: (ctx) => ctx.reply(ctx.message) })
      const kind = ClusterGrain.make(grain, { message: Schema.String, reply: Tricky, persisted: true })
      return Effect.gen(function* () {
        const { a, remoteKey } = yield* twoRunners([kind])
        assert.strictEqual(
          yield* onRunner(a, ClusterGrain.ask(kind, remoteKey, "fine", { timeout: "30 seconds" })),
          "fine"
        )
        const error = yield* onRunner(
          a,
          Effect.flip(ClusterGrain.ask(kind, remoteKey, "undecodable", { timeout: "30 seconds" }))
        )
        assert.strictEqual(error._tag, "InvalidGrainReply")
        assert.include(error.message, "cannot decode")
      })
    })
  })
})
