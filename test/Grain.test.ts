import { assert, describe, it } from "@effect/vitest"
import { Context, type Duration, Effect, Either, Fiber, Layer, TestClock } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers, Passivation } from "tickwork"
import { TestProbe, TestSystem } from "tickwork/testkit"
import { captureLogs } from "./utils.js"

/** Messages of the grain under test: commands that exercise the grain API from inside `onReceive`. */
type Msg =
  | { readonly _tag: "Tick"; readonly label: string }
  | { readonly _tag: "Slow"; readonly millis: number }
  | { readonly _tag: "Die" }
  | { readonly _tag: "Noop" }

const tick = (label: string): Msg => ({ _tag: "Tick", label })

interface Setup {
  readonly onActivate?: (props: Grain.GrainProps<Msg>) => Effect.Effect<void, unknown>
  readonly onDeactivate?: (props: Grain.GrainProps<Msg>) => Effect.Effect<void, unknown>
  readonly onTick?: (ctx: Grain.GrainContext<Msg>) => Effect.Effect<void, unknown>
  readonly passivation?: Passivation.Passivation
  readonly mailboxCapacity?: number
}

/** A grain kind that reports its lifecycle and ticks to `probe` as "event#activation". */
const makeKind = (probe: TestProbe.TestProbe<string>, setup: Setup = {}) => {
  let activations = 0
  return Grain.make<Msg>()({
    name: "subject",
    ...(setup.passivation === undefined ? {} : { passivation: setup.passivation }),
    ...(setup.mailboxCapacity === undefined ? {} : { mailboxCapacity: setup.mailboxCapacity }),
    onActivate: (props) =>
      Effect.gen(function* () {
        const n = ++activations
        yield* probe.ref.tell(`activate#${n}`)
        if (setup.onActivate !== undefined) yield* setup.onActivate(props)
        yield* probe.ref.tell(`activated#${n}`)
        return n
      }),
    onReceive: (ctx, n) => {
      const msg = ctx.message
      switch (msg._tag) {
        case "Tick":
          return Effect.as(
            Effect.zipRight(
              probe.ref.tell(`${msg.label}#${n}${ctx.isTick ? "" : "(told)"}`),
              setup.onTick === undefined ? Effect.void : setup.onTick(ctx)
            ),
            n
          )
        case "Slow":
          return Effect.as(Effect.sleep(msg.millis), n)
        case "Die":
          return Effect.die("boom")
        case "Noop":
          return Effect.succeed(n)
      }
    },
    onDeactivate: (props, n) =>
      Effect.gen(function* () {
        yield* probe.ref.tell(`deactivate#${n}`)
        if (setup.onDeactivate !== undefined) yield* Effect.orDie(setup.onDeactivate(props))
      })
  })
}

const live = (kind: Grain.Grain<Msg, number, unknown, never>, options: Grains.Options = {}) =>
  TestSystem.layer({ name: "grains", grains: [kind], grainsOptions: options })

/** A test body with a probe and a grain kind made from `setup`, run with the grains layer for that kind. */
const withGrain = <A, E>(
  setup: Setup,
  body: (
    probe: TestProbe.TestProbe<string>,
    kind: Grain.Grain<Msg, number, unknown, never>
  ) => Effect.Effect<A, E, Grains.Grains | ActorSystem.ActorSystem | TestSystem.TestSystem>
) =>
  Effect.flatMap(TestProbe.make<string>(), (probe) => {
    const kind = makeKind(probe, setup)
    return body(probe, kind).pipe(Effect.provide(live(kind)))
  })

/** Runs `f` inside grain "k" (activated if it is not) and gives what it gives; a failure of `f` is the caller's. */
const run = <A, E>(
  kind: Grain.Grain<Msg, number, unknown, never>,
  f: (props: Grain.GrainProps<Msg>) => Effect.Effect<A, E>
) => TestSystem.inside(TestSystem.grain(kind, "k"), (props) => f(props))

const events = (probe: TestProbe.TestProbe<string>) => Effect.map(probe.receiveAll, (all) => all.map((r) => r.message))

const timed = (probe: TestProbe.TestProbe<string>) =>
  Effect.map(probe.receiveAll, (all) => all.map((r) => `${r.message}@${r.at}`))

describe("Grains", () => {
  it.effect("a tell activates the grain on demand; exactly one activation per identity", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const kind = makeKind(probe)
      yield* Effect.provide(
        Effect.gen(function* () {
          yield* Effect.all(
            [
              Grains.tell(kind, "k", tick("a")),
              Grains.tell(kind, "k", tick("b")),
              Grains.tell(kind, "other", tick("c"))
            ],
            { concurrency: "unbounded" }
          )
          const all = yield* events(probe)
          assert.strictEqual(all.filter((e) => e.startsWith("activate#")).length, 2)
          assert.includeMembers(all, ["a#1(told)", "b#1(told)"])
          assert.isBelow(all.indexOf("a#1(told)"), all.indexOf("b#1(told)"))
          const grains = yield* Grains.Grains
          assert.strictEqual(yield* grains.activations, 2)
          assert.isTrue(yield* grains.isActive(kind, "k"))
        }),
        live(kind)
      )
    })
  )

  it.effect(
    "thousands of activations started in one go all activate (the spawner may yield before spawn returns)",
    () =>
      Effect.gen(function* () {
        const Plain = Grain.make<string>()({ name: "plain", onReceive: (_ctx, state) => Effect.succeed(state) })
        const { layer, logs } = captureLogs()
        yield* Effect.gen(function* () {
          // Effect yields a fiber after 2,048 operations: the failure this pins down came once per ~2,040 keys.
          const keys = Array.from({ length: 5_000 }, (_, i) => `k${i}`)
          yield* Effect.forEach(keys, (key) => Grains.tell(Plain, key, "hi"), { discard: true })
          yield* Effect.yieldNow()
          assert.strictEqual(yield* (yield* Grains.Grains).activations, keys.length)
        }).pipe(
          Effect.provide(
            Layer.merge(Grains.layer([Plain]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "many" }))), layer)
          )
        )
        assert.deepStrictEqual(
          logs.filter((log) => log.level === "ERROR").map((log) => log.message),
          []
        )
      })
  )

  it.effect("ask: reply, noErr, err, unhandled and timeout", () =>
    Effect.gen(function* () {
      const Kind = Grain.make<string>()({
        name: "asker",
        onReceive: (ctx) => {
          switch (ctx.message) {
            case "value":
              return ctx.reply(42)
            case "noErr":
              return ctx.noErr
            case "err":
              return ctx.err("out of stock")
            case "silent":
              return Effect.void
            case "slow":
              return Effect.sleep("10 seconds")
            default:
              return ctx.unhandled
          }
        }
      })
      yield* Effect.gen(function* () {
        assert.strictEqual(yield* Grains.ask<number>(Kind, "k", "value"), 42)
        assert.isUndefined(yield* Grains.ask(Kind, "k", "noErr"))
        assert.isUndefined(yield* Grains.ask(Kind, "k", "silent"))
        const err = yield* Effect.flip(Grains.ask(Kind, "k", "err"))
        assert.strictEqual(err._tag, "GrainReplyError")
        assert.strictEqual((err as Grain.GrainReplyError).error, "out of stock")
        const unhandled = yield* Effect.flip(Grains.ask(Kind, "k", "???"))
        assert.strictEqual(unhandled._tag, "GrainMessageUnhandled")
        const slow = yield* Effect.fork(Grains.ask(Kind, "k", "slow", "1 second"))
        yield* TestClock.adjust("1 second")
        const timeout = yield* Effect.flip(slow)
        assert.strictEqual(timeout._tag, "AskTimeout")
      }).pipe(Effect.provide(Grains.layer([Kind]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "ask" })))))
    })
  )

  it.effect(
    "handlers run with no deadline from any caller: an ask that times out does not interrupt the handler",
    () => {
      let finished = false
      const onTick = () =>
        Effect.zipRight(
          Effect.sleep("500 millis"),
          Effect.sync(() => (finished = true))
        )
      return withGrain({ passivation: Passivation.never, onTick }, (_probe, kind) =>
        Effect.gen(function* () {
          const asking = yield* Effect.fork(Grains.ask(kind, "k", tick("slow"), "100 millis"))
          yield* TestClock.adjust("100 millis")
          assert.strictEqual((yield* Effect.flip(asking))._tag, "AskTimeout")
          assert.isFalse(finished)
          yield* TestClock.adjust("400 millis")
          assert.isTrue(finished)
        })
      )
    }
  )

  it.effect("handlers get the services of the layer that registered the kind, whoever sends the message", () => {
    class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}
    const Greeter = Grain.make<"hi">()({
      name: "greeter",
      onReceive: (ctx) => Effect.flatMap(Greeting, (greeting) => ctx.reply(`${greeting} from ${ctx.identity.key}`))
    })
    const GreeterLive = Grains.layer([Greeter]).pipe(
      Layer.provide(Layer.succeed(Greeting, "hello")),
      Layer.provideMerge(ActorSystem.layer({ name: "grains-services" }))
    )
    return Effect.gen(function* () {
      // the sender has a Greeting of its own, which must not reach the activation it starts
      const first = yield* Grains.ask<string>(Greeter, "a", "hi").pipe(Effect.provideService(Greeting, "psst"))
      const second = yield* Grains.ask<string>(Greeter, "b", "hi")
      assert.deepStrictEqual([first, second], ["hello from a", "hello from b"])
    }).pipe(Effect.provide(GreeterLive))
  })

  it.effect("an unknown grain kind is a typed error", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const registered = makeKind(probe)
      const Stranger = Grain.make<string>()({ name: "stranger", onReceive: () => Effect.void })
      const error = yield* Effect.flip(Grains.tell(Stranger, "k", "hi")).pipe(Effect.provide(live(registered)))
      assert.strictEqual(error._tag, "UnknownGrainKind")
      assert.strictEqual(error.kind, "stranger")
    })
  )

  describe("timers", () => {
    it.effect("scheduleOnce / schedule deliver the scheduled message through onReceive, as ticks", () =>
      withGrain({ passivation: Passivation.never }, (probe, kind) =>
        Effect.gen(function* () {
          yield* run(kind, (ctx) =>
            Effect.all([ctx.scheduleOnce(tick("once"), "150 millis"), ctx.schedule(tick("every"), "100 millis")])
          )
          yield* TestClock.adjust("350 millis")
          assert.deepStrictEqual(yield* timed(probe), [
            "activate#1@0",
            "activated#1@0",
            "every#1@100",
            "once#1@150",
            "every#1@200",
            "every#1@300"
          ])
        })
      )
    )

    it.effect("timers registered in onActivate stay dormant until activation completes", () =>
      withGrain(
        {
          passivation: Passivation.never,
          onActivate: (props) =>
            Effect.zipRight(
              Effect.all([props.scheduleOnce(tick("early"), 0), props.schedule(tick("every"), "30 millis")]),
              Effect.sleep("100 millis") // a slow activation
            )
        },
        (probe, kind) =>
          Effect.gen(function* () {
            yield* Grains.tell(kind, "k", { _tag: "Noop" })
            yield* TestClock.adjust("100 millis")
            // nothing fired into the grain before it was ready; the due ticks arrive right after, then the grid goes on
            // "every" came due at 30, 60 and 90 while dormant: it is delivered once; its grid stays 30, 60, ... after
            assert.deepStrictEqual(yield* timed(probe), [
              "activate#1@0",
              "activated#1@100",
              "early#1@100",
              "every#1@100"
            ])
            yield* TestClock.adjust("20 millis")
            assert.deepStrictEqual(yield* timed(probe), ["every#1@120"])
          })
      )
    )

    it.effect("timers registered in a failing onActivate are discarded; no activation remains", () =>
      withGrain(
        {
          onActivate: (props) => Effect.zipRight(props.schedule(tick("every"), "10 millis"), Effect.fail("no database"))
        },
        (probe, kind) =>
          Effect.gen(function* () {
            const failed = yield* Effect.flip(Grains.ask(kind, "k", { _tag: "Noop" }))
            assert.strictEqual(failed._tag, "GrainActivationFailed")
            yield* TestClock.adjust("1 second")
            assert.deepStrictEqual(yield* events(probe), ["activate#1"])
            const grains = yield* Grains.Grains
            assert.strictEqual(yield* grains.activations, 0)
            const system = yield* ActorSystem.ActorSystem
            const stats = yield* system.stats
            assert.strictEqual(stats.engineEntries, 0)
            assert.strictEqual(stats.actors, 0)
          })
      )
    )

    it.effect("a defect in onActivate also leaves no activation and no timer", () =>
      withGrain(
        {
          onActivate: (props) => Effect.zipRight(props.scheduleOnce(tick("x"), 0), Effect.die("bug"))
        },
        (probe, kind) =>
          Effect.gen(function* () {
            const failed = yield* Effect.flip(Grains.ask(kind, "k", { _tag: "Noop" }))
            assert.strictEqual(failed._tag, "GrainActivationFailed")
            yield* TestClock.adjust("1 second")
            assert.strictEqual((yield* (yield* ActorSystem.ActorSystem).stats).engineEntries, 0)
            // the next message tries a new activation
            yield* Grains.tell(kind, "k", { _tag: "Noop" })
            assert.include(yield* events(probe), "activate#2")
          })
      )
    )

    it.effect("passivation stops all timers before onDeactivate, where scheduling fails with GrainTimersStopped", () =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const seenInDeactivate: Array<string> = []
        const kind = makeKind(probe, {
          passivation: Passivation.idle("1 second"),
          onActivate: (props) => props.schedule(tick("every"), "300 millis"),
          onDeactivate: (props) =>
            Effect.gen(function* () {
              seenInDeactivate.push(`timers=${(yield* props.timers).length}`)
              const scheduled = yield* Effect.flip(props.scheduleOnce(tick("late"), 10))
              seenInDeactivate.push(scheduled._tag)
              const cancelled = yield* Effect.flip(props.cancelSchedule("$timer-1"))
              seenInDeactivate.push(cancelled._tag)
            })
        })
        yield* Effect.gen(function* () {
          yield* Grains.tell(kind, "k", { _tag: "Noop" })
          yield* TestClock.adjust("5 seconds")
          // ticks at 300, 600, 900 did not reset the idle clock: deactivated at 1000; no tick afterwards
          assert.deepStrictEqual(yield* timed(probe), [
            "activate#1@0",
            "activated#1@0",
            "every#1@300",
            "every#1@600",
            "every#1@900",
            "deactivate#1@1000"
          ])
          assert.deepStrictEqual(seenInDeactivate, ["timers=0", "GrainTimersStopped", "GrainTimersStopped"])
          assert.strictEqual((yield* (yield* ActorSystem.ActorSystem).stats).engineEntries, 0)
        }).pipe(Effect.provide(live(kind)))
      })
    )

    it.effect("a timer never reactivates a passivated grain; a reactivated grain starts with no timers", () =>
      withGrain({ passivation: Passivation.idle("1 second") }, (probe, kind) =>
        Effect.gen(function* () {
          yield* run(kind, (ctx) => ctx.schedule(tick("every"), "400 millis"))
          yield* TestClock.adjust("1 second")
          yield* probe.receiveAll
          yield* TestClock.adjust("10 seconds")
          yield* probe.expectNoMessage()
          assert.isFalse(yield* (yield* Grains.Grains).isActive(kind, "k"))
          assert.deepStrictEqual(yield* run(kind, (ctx) => ctx.timers), [])
          assert.include(yield* events(probe), "activate#2")
        })
      )
    )

    it.effect("keep-alive ticks count as activity; ordinary ticks do not", () =>
      withGrain(
        {
          passivation: Passivation.idle("1 second"),
          onActivate: (props) => props.schedule(tick("alive"), "500 millis", GrainTimers.withTimerKeepAlive())
        },
        (probe, kind) =>
          Effect.gen(function* () {
            yield* Grains.tell(kind, "k", { _tag: "Noop" })
            yield* TestClock.adjust("10 seconds")
            assert.notInclude(yield* events(probe), "deactivate#1")
            assert.isTrue(yield* (yield* Grains.Grains).isActive(kind, "k"))
            // cancel the keep-alive timer: the grain now passivates one idle period after the last tick
            yield* run(kind, (ctx) => ctx.cancelSchedule("$timer-1"))
            yield* TestClock.adjust("1 second")
            assert.include(yield* events(probe), "deactivate#1")
          })
      )
    )

    it.effect("delivered ticks count as processed messages for message-count passivation", () =>
      withGrain(
        {
          passivation: Passivation.messageCount(3),
          onActivate: (props) => props.schedule(tick("t"), "100 millis")
        },
        (probe, kind) =>
          Effect.gen(function* () {
            yield* Grains.tell(kind, "k", { _tag: "Noop" }) // 1
            yield* TestClock.adjust("1 second") // ticks at 100 (2) and 200 (3): deactivated
            assert.deepStrictEqual(yield* timed(probe), [
              "activate#1@0",
              "activated#1@0",
              "t#1@100",
              "t#1@200",
              "deactivate#1@200"
            ])
          })
      )
    )

    it.effect("a message arriving while the grain deactivates waits for the next activation", () =>
      Effect.gen(function* () {
        let slowOnce = true
        const probe = yield* TestProbe.make<string>()
        const kind = makeKind(probe, {
          passivation: Passivation.idle("1 second"),
          // the first deactivation is slow
          onDeactivate: () => {
            if (!slowOnce) return Effect.void
            slowOnce = false
            return Effect.sleep("500 millis")
          }
        })
        yield* Effect.gen(function* () {
          yield* Grains.tell(kind, "k", { _tag: "Noop" })
          yield* TestClock.adjust("1100 millis") // deactivating since 1000, until 1500
          yield* Grains.tell(kind, "k", tick("during-1"))
          yield* Grains.tell(kind, "k", tick("during-2"))
          const answer = yield* Effect.fork(run(kind, () => Effect.succeed("ok")))
          yield* TestClock.adjust("400 millis")
          const all = yield* events(probe)
          assert.deepStrictEqual(all, [
            "activate#1",
            "activated#1",
            "deactivate#1",
            "activate#2",
            "activated#2",
            "during-1#2(told)",
            "during-2#2(told)"
          ])
          assert.strictEqual(yield* answer, "ok")
        }).pipe(Effect.provide(live(kind)))
      })
    )

    it.effect("a failure deactivates the grain (timers stop); the next message reactivates it", () =>
      withGrain(
        {
          passivation: Passivation.never,
          onActivate: (props) => props.schedule(tick("t"), "100 millis")
        },
        (probe, kind) =>
          Effect.gen(function* () {
            yield* Grains.tell(kind, "k", { _tag: "Noop" })
            yield* TestClock.adjust("150 millis")
            const failed = yield* Effect.flip(Grains.ask(kind, "k", { _tag: "Die" }))
            assert.strictEqual(failed._tag, "GrainFailed")
            yield* TestClock.adjust("1 second")
            assert.deepStrictEqual(yield* events(probe), ["activate#1", "activated#1", "t#1", "deactivate#1"])
            yield* Grains.tell(kind, "k", tick("again"))
            yield* TestClock.adjust("100 millis")
            assert.deepStrictEqual(yield* events(probe), ["activate#2", "activated#2", "again#2(told)", "t#2"])
          })
      )
    )

    it.effect("shutdown deactivates: timers stop and onDeactivate runs", () =>
      withGrain(
        {
          passivation: Passivation.never,
          onActivate: (props) => props.schedule(tick("t"), "100 millis")
        },
        (probe, kind) =>
          Effect.gen(function* () {
            yield* Grains.tell(kind, "k", { _tag: "Noop" })
            yield* TestClock.adjust("100 millis")
            const system = yield* ActorSystem.ActorSystem
            yield* system.shutdown
            assert.deepStrictEqual(yield* events(probe), ["activate#1", "activated#1", "t#1", "deactivate#1"])
            const stats = yield* system.stats
            assert.strictEqual(stats.engineEntries, 0)
            assert.strictEqual(stats.fibers, 0)
          })
      )
    )

    it.effect("a tick already in the mailbox when its timer is cancelled, or the grain deactivates, is dropped", () =>
      withGrain({ passivation: Passivation.never }, (probe, kind) =>
        Effect.gen(function* () {
          yield* run(kind, (ctx) => ctx.scheduleOnce(tick("once"), "10 millis", GrainTimers.withTimerReference("r")))
          // a 50 ms command: the tick queues behind it at 10, then the command cancels the timer
          const cancel = yield* Effect.fork(
            run(kind, (ctx) => Effect.zipRight(Effect.sleep("50 millis"), ctx.cancelSchedule("r")))
          )
          yield* TestClock.adjust("100 millis")
          yield* cancel
          assert.notInclude(yield* events(probe), "once#1")
          assert.strictEqual((yield* TestSystem.counts(TestSystem.grain(kind, "k"), "r")).stale, 1)

          // deactivation with a tick queued: the tick is dropped with the activation
          yield* run(kind, (ctx) => ctx.scheduleOnce(tick("orphan"), "10 millis"))
          yield* Grains.tell(kind, "k", { _tag: "Slow", millis: 50 })
          yield* Grains.tell(kind, "k", { _tag: "Die" }) // queued behind Slow, ahead of the tick
          yield* TestClock.adjust("1 second")
          const all = yield* events(probe)
          assert.include(all, "deactivate#1")
          assert.notInclude(all.join(","), "orphan")
        })
      )
    )

    it.effect("references: reuse replaces, cancel, ScheduledReferenceNotFound for unknown or fired one-shots", () =>
      withGrain({ passivation: Passivation.never }, (probe, kind) =>
        Effect.gen(function* () {
          yield* run(kind, (ctx) =>
            Effect.zipRight(
              ctx.schedule(tick("old"), "100 millis", { reference: "hb" }),
              ctx.schedule(tick("new"), "150 millis", GrainTimers.withTimerReference("hb"))
            )
          )
          yield* TestClock.adjust("300 millis")
          assert.deepStrictEqual(yield* events(probe), ["activate#1", "activated#1", "new#1", "new#1"])
          const unknown = yield* Effect.flip(run(kind, (ctx) => ctx.cancelSchedule("nope")))
          assert.strictEqual(unknown._tag, "ScheduledReferenceNotFound")
          const once = yield* run(kind, (ctx) => ctx.scheduleOnce(tick("once"), "10 millis"))
          yield* TestClock.adjust("10 millis")
          const fired = yield* Effect.flip(run(kind, (ctx) => ctx.cancelSchedule(once)))
          assert.strictEqual(fired._tag, "ScheduledReferenceNotFound")
          yield* run(kind, (ctx) => ctx.cancelSchedule("hb"))
          yield* probe.receiveAll
          yield* TestClock.adjust("1 second")
          yield* probe.expectNoMessage()
        })
      )
    )

    it.effect("bad input: InvalidTimerInterval, InvalidTimerDelay, InvalidCronExpression", () =>
      withGrain({ passivation: Passivation.never }, (_probe, kind) =>
        Effect.gen(function* () {
          const flip = <A, E>(f: (ctx: Grain.GrainProps<Msg>) => Effect.Effect<A, E>) => Effect.flip(run(kind, f))
          assert.strictEqual((yield* flip((ctx) => ctx.schedule(tick("x"), 0)))._tag, "InvalidTimerInterval")
          assert.strictEqual((yield* flip((ctx) => ctx.schedule(tick("x"), -5)))._tag, "InvalidTimerInterval")
          assert.strictEqual((yield* flip((ctx) => ctx.scheduleOnce(tick("x"), -1)))._tag, "InvalidTimerDelay")
          const cron = yield* flip((ctx) => ctx.scheduleWithCron(tick("x"), "0 0 25 * * ?"))
          assert.strictEqual(cron._tag, "InvalidCronExpression")
          assert.strictEqual(cron._tag === "InvalidCronExpression" ? cron.field : undefined, "hours")
          assert.deepStrictEqual(yield* run(kind, (ctx) => ctx.timers), [])
        })
      )
    )

    it.effect("cron timers fire at exactly the expression's instants (UTC, named zone)", () =>
      withGrain({ passivation: Passivation.never }, (probe, kind) =>
        Effect.gen(function* () {
          // TestClock starts at 1970-01-01T00:00:00Z
          yield* run(kind, (ctx) =>
            Effect.all([
              ctx.scheduleWithCron(tick("quarter"), "0 0/15 * * * ?", GrainTimers.withTimeZone("UTC")),
              // 01:30 in Berlin (UTC+1 in January) is 00:30 UTC
              ctx.scheduleWithCron(tick("berlin"), "0 30 1 * * ?", GrainTimers.withTimeZone("Europe/Berlin"))
            ])
          )
          const listed = yield* run(kind, (ctx) => ctx.timers)
          assert.deepStrictEqual(
            listed.map((t) => [t.reference, t.kind, t.nextDue]),
            [
              ["$timer-1", "cron", 15 * 60_000],
              ["$timer-2", "cron", 30 * 60_000]
            ]
          )
          yield* TestClock.adjust("1 hour")
          assert.deepStrictEqual(yield* timed(probe), [
            "activate#1@0",
            "activated#1@0",
            `quarter#1@${15 * 60_000}`,
            // equal deadlines fire in the order they were (re-)armed: berlin at 0, quarter at 15 min
            `berlin#1@${30 * 60_000}`,
            `quarter#1@${30 * 60_000}`,
            `quarter#1@${45 * 60_000}`,
            `quarter#1@${60 * 60_000}`
          ])
        })
      )
    )

    it.effect("schedule keeps a fixed cadence: a slow handler queues ticks, execution never overlaps", () =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        let running = 0
        let maxRunning = 0
        const kind = makeKind(probe, {
          passivation: Passivation.never,
          onTick: () =>
            Effect.acquireUseRelease(
              Effect.sync(() => {
                running++
                maxRunning = Math.max(maxRunning, running)
              }),
              () => Effect.sleep("250 millis"),
              () => Effect.sync(() => running--)
            )
        })
        yield* Effect.gen(function* () {
          yield* run(kind, (ctx) => ctx.schedule(tick("t"), "100 millis"))
          yield* TestClock.adjust("1 second")
          assert.deepStrictEqual(
            (yield* probe.receiveAll).slice(2).map((r) => r.at),
            [100, 350, 600, 850]
          )
          assert.strictEqual(maxRunning, 1)
        }).pipe(Effect.provide(live(kind)))
      })
    )

    it.effect("err, unhandled and failures on a tick are logged as warnings; the grain and its timers go on", () => {
      const { layer, logs } = captureLogs()
      return Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const label = (ctx: Grain.GrainContext<Msg>) => (ctx.message as { label: string }).label
        const kind = makeKind(probe, {
          passivation: Passivation.never,
          onTick: (ctx) =>
            label(ctx) === "err"
              ? ctx.err("disk full")
              : label(ctx) === "twice"
                ? Effect.zipRight(ctx.noErr, ctx.noErr) // a second signal is a defect
                : label(ctx) === "fail"
                  ? Effect.fail("tick failed")
                  : ctx.unhandled
        })
        yield* Effect.gen(function* () {
          yield* run(kind, (ctx) =>
            Effect.all([ctx.scheduleOnce(tick("err"), 10), ctx.scheduleOnce(tick("unhandled"), 20)])
          )
          yield* TestClock.adjust("20 millis")
          const warnings = () => logs.filter((l) => l.level === "WARN").map((l) => l.message)
          assert.isTrue(warnings().some((w) => w.includes("reported an error for a timer tick")))
          assert.isTrue(warnings().some((w) => w.includes("did not handle a timer tick")))
          // DESIGN §5: a failing tick handler is logged as a warning; the grain stays, and so does the timer
          yield* run(kind, (ctx) => Effect.all([ctx.scheduleOnce(tick("twice"), 10), ctx.schedule(tick("fail"), 100)]))
          yield* TestClock.adjust("300 millis")
          assert.strictEqual(warnings().filter((w) => w.includes("failed handling a timer tick")).length, 4)
          assert.notInclude(yield* events(probe), "deactivate#1")
          assert.isTrue(yield* (yield* Grains.Grains).isActive(kind, "k"))
          // on an asked message, a second signal fails the grain: GrainFailed, and it deactivates
          const failed = yield* Effect.flip(Grains.ask(kind, "k", tick("twice")))
          assert.strictEqual(failed._tag, "GrainFailed")
          assert.include(yield* events(probe), "deactivate#1")
        }).pipe(Effect.provide(live(kind)))
      }).pipe(Effect.provide(layer))
    })

    it.effect(
      "an onReceive that throws on a tick fails like a failing tick handler; the grain and all timers go on",
      () => {
        const { layer, logs } = captureLogs()
        return Effect.gen(function* () {
          const probe = yield* TestProbe.make<string>()
          const kind = makeKind(probe, {
            passivation: Passivation.never,
            onTick: (ctx) => {
              if ((ctx.message as { label: string }).label === "boom") throw new Error("thrown while making the effect")
              return Effect.void
            }
          })
          yield* Effect.gen(function* () {
            yield* run(kind, (ctx) => Effect.all([ctx.scheduleOnce(tick("boom"), 10), ctx.schedule(tick("on"), 100)]))
            yield* TestClock.adjust("300 millis")
            const warnings = logs.filter((l) => l.level === "WARN").map((l) => l.message)
            assert.strictEqual(warnings.filter((w) => w.includes("failed handling a timer tick")).length, 1)
            // the periodic timer of the same grain kept firing: the timer driver that handled the tick is alive
            assert.deepStrictEqual(
              (yield* events(probe)).filter((e) => e.startsWith("on")),
              ["on#1", "on#1", "on#1"]
            )
            assert.isTrue(yield* (yield* Grains.Grains).isActive(kind, "k"))
          }).pipe(Effect.provide(live(kind)))
        }).pipe(Effect.provide(layer))
      }
    )

    it.effect("a keep-alive timer keeps the grain available for a tick due after the idle timeout", () =>
      withGrain({ passivation: Passivation.idle("1 second") }, (probe, kind) =>
        Effect.gen(function* () {
          yield* run(kind, (ctx) => ctx.scheduleOnce(tick("late"), "3 seconds", GrainTimers.withTimerKeepAlive()))
          yield* TestClock.adjust("3 seconds")
          assert.include(yield* events(probe), "late#1")
          // once the one-shot has fired, nothing holds the grain: it passivates one idle period later
          yield* TestClock.adjust("1 second")
          assert.include(yield* events(probe), "deactivate#1")
        })
      )
    )

    it.effect("an ask that cannot be queued (full bounded mailbox) fails at once", () =>
      withGrain({ passivation: Passivation.never, mailboxCapacity: 1 }, (_probe, kind) =>
        Effect.gen(function* () {
          yield* Grains.tell(kind, "k", { _tag: "Slow", millis: 1000 })
          yield* TestClock.adjust("1 millis") // the slow message runs; the mailbox is empty again
          yield* Grains.tell(kind, "k", { _tag: "Noop" }) // fills it
          const failed = yield* Effect.flip(Grains.ask(kind, "k", { _tag: "Noop" }))
          assert.strictEqual(failed._tag, "AskUndeliverable")
        })
      )
    )

    it.effect("a full bounded mailbox drops ticks (counted) while interval timers keep firing", () =>
      withGrain(
        {
          passivation: Passivation.never,
          mailboxCapacity: 1,
          onTick: () => Effect.sleep("1 second")
        },
        (probe, kind) =>
          Effect.gen(function* () {
            yield* run(kind, (ctx) => ctx.schedule(tick("t"), "100 millis"))
            yield* TestClock.adjust("2 seconds")
            // 100 runs until 1100 with 200 queued (capacity 1); 300..1000 dropped; the timer keeps firing after
            assert.deepStrictEqual(
              (yield* probe.receiveAll).slice(2).map((r) => r.at),
              [100, 1100]
            )
            // the ticks of 200 and 1100 took the one place in turn; 300..1000 and 1200..2000 found it taken
            const counts = yield* TestSystem.counts(TestSystem.grain(kind, "k"), "$timer-1")
            assert.strictEqual(counts.dropped.mailbox_full, 17)
            assert.strictEqual(counts.delivered, 2, "100 and 200; 1100 waits in the mailbox")
          })
      )
    )

    it.effect("tellGrain and tellActor from inside a grain", () =>
      withGrain({ passivation: Passivation.never }, (probe, kind) =>
        Effect.gen(function* () {
          yield* run(kind, (ctx) =>
            Effect.zipRight(ctx.tellGrain(kind, "other", tick("hello")), ctx.tellActor(probe.ref, "to-actor"))
          )
          const all = yield* events(probe)
          assert.includeMembers(all, ["to-actor", "hello#2(told)"])
        })
      )
    )
  })
})

describe("bad input", () => {
  /** Runs a schedule call in the grain and returns its error (the call must fail), after checking nothing is armed. */
  const rejected = (
    kind: Grain.Grain<Msg, number, unknown, never>,
    f: (ctx: Grain.GrainProps<Msg>) => Effect.Effect<unknown, unknown>
  ) =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(run(kind, f))
      assert.deepStrictEqual(yield* run(kind, (ctx) => ctx.timers), [], "nothing was registered")
      return error as { readonly _tag: string; readonly message: string; readonly option?: string }
    })

  it.effect("an interval below the engine's 1 ms resolution is InvalidTimerInterval", () =>
    withGrain({ passivation: Passivation.never }, (_probe, kind) =>
      Effect.gen(function* () {
        for (const interval of [0.001, 0.999, "500 micros"] as const) {
          const error = yield* rejected(kind, (ctx) => ctx.schedule(tick("x"), interval))
          assert.strictEqual(error._tag, "InvalidTimerInterval")
          assert.include(error.message, "must be at least 1 ms")
        }
        yield* run(kind, (ctx) => ctx.schedule(tick("x"), 1)) // 1 ms is fine
      })
    )
  )

  it.effect("a cron with no instant after now is InvalidCronExpression, not a timer that never fires", () =>
    withGrain({ passivation: Passivation.never }, (_probe, kind) =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.parse("2026-03-01T00:00:00Z"))
        const error = yield* rejected(kind, (ctx) =>
          ctx.scheduleWithCron(tick("x"), "0 0 0 1 1 ? 1999", GrainTimers.withTimeZone("UTC"))
        )
        assert.strictEqual(error._tag, "InvalidCronExpression")
        assert.include(error.message, "it has no instant after 2026-03-01T00:00:00.000Z, so it could never fire")
        // the same expression with a year still ahead is accepted
        yield* run(kind, (ctx) => ctx.scheduleWithCron(tick("x"), "0 0 0 1 1 ? 2099"))
      })
    )
  )

  it.effect("withTimeZone on a timer that is not a cron timer is InvalidTimerOptions naming the option", () =>
    withGrain({ passivation: Passivation.never }, (_probe, kind) =>
      Effect.gen(function* () {
        const zone = GrainTimers.withTimeZone("Europe/Berlin")
        for (const f of [
          (ctx: Grain.GrainProps<Msg>) => ctx.schedule(tick("x"), "1 second", zone),
          (ctx: Grain.GrainProps<Msg>) => ctx.scheduleOnce(tick("x"), "1 second", zone)
        ]) {
          const error = yield* rejected(kind, f)
          assert.strictEqual(error._tag, "InvalidTimerOptions")
          assert.strictEqual(error.option, "timeZone")
          assert.include(
            error.message,
            "invalid timer option timeZone for grain subject/k: applies to cron timers only"
          )
        }
      })
    )
  )

  it.effect("an empty, blank, reserved or non-string reference is InvalidTimerReference", () =>
    withGrain({ passivation: Passivation.never }, (_probe, kind) =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          ["", 'invalid timer reference "": must not be empty or blank'],
          ["   ", 'invalid timer reference "   ": must not be empty or blank'],
          [undefined, "must be a string"],
          [42, "must be a string"],
          ["$timer-1", 'invalid timer reference "$timer-1": references starting with "$" are reserved']
        ]
        for (const [reference, message] of cases) {
          const error = yield* rejected(kind, (ctx) =>
            ctx.schedule(tick("x"), "1 second", GrainTimers.withTimerReference(reference as string))
          )
          assert.strictEqual(error._tag, "InvalidTimerReference")
          assert.include(error.message, message)
        }
      })
    )
  )

  it.effect("unknown options, options of the wrong kind and non-object options are InvalidTimerOptions", () =>
    withGrain({ passivation: Passivation.never }, (_probe, kind) =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [unknown, string, string]> = [
          [{ refernce: "poll" }, "refernce", "is not a grain timer option (reference, keepAlive, timeZone)"],
          [{ keepAlive: "yes" }, "keepAlive", 'must be true or false, got "yes"'],
          ["poll", "options", 'each option must be an object such as withTimerReference("poll"), got "poll"'],
          [null, "options", "got null"],
          [["poll"], "options", "each option must be an object"]
        ]
        for (const [option, name, reason] of cases) {
          const error = yield* rejected(kind, (ctx) =>
            ctx.scheduleOnce(tick("x"), "1 second", option as GrainTimers.TimerOptions)
          )
          assert.strictEqual(error._tag, "InvalidTimerOptions")
          assert.strictEqual(error.option, name)
          assert.include(error.message, reason)
        }
      })
    )
  )

  it.effect(
    "a cron timer's zone: a non-string is InvalidTimerOptions, an unknown IANA name InvalidCronExpression",
    () =>
      withGrain({ passivation: Passivation.never }, (_probe, kind) =>
        Effect.gen(function* () {
          const notAString = yield* rejected(kind, (ctx) =>
            ctx.scheduleWithCron(tick("x"), "0 0 * * * ?", GrainTimers.withTimeZone(1 as unknown as string))
          )
          assert.strictEqual(notAString._tag, "InvalidTimerOptions")
          assert.include(notAString.message, "must be an IANA zone name, got 1")
          for (const zone of ["Mars/Olympus_Mons", ""]) {
            const unknown = yield* rejected(kind, (ctx) =>
              ctx.scheduleWithCron(tick("x"), "0 0 * * * ?", GrainTimers.withTimeZone(zone))
            )
            assert.strictEqual(unknown._tag, "InvalidCronExpression")
            assert.include(unknown.message, `unknown time zone '${zone}'`)
          }
        })
      )
  )

  it.effect("a cron expression that is not a string is InvalidCronExpression (was a defect)", () =>
    withGrain({ passivation: Passivation.never }, (_probe, kind) =>
      Effect.gen(function* () {
        const error = yield* rejected(kind, (ctx) => ctx.scheduleWithCron(tick("x"), undefined as unknown as string))
        assert.strictEqual(error._tag, "InvalidCronExpression")
        assert.include(error.message, "the expression must be a string")
      })
    )
  )

  /** Builds a Grains layer and returns the error it fails with. */
  const layerError = (kinds: unknown, options?: unknown) =>
    Layer.build(
      Grains.layer(kinds as ReadonlyArray<Grain.Grain<any, any, any, any>>, options as Grains.Options).pipe(
        Layer.provide(ActorSystem.layer({ name: "bad-grains" }))
      )
    ).pipe(Effect.scoped, Effect.flip)

  const echo = (fields: Record<string, unknown> = {}) =>
    Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message), ...fields })

  it("Passivation constructors never throw, whatever they are given", () => {
    for (const timeout of ["soon", 0, -1, Number.NaN, Number.POSITIVE_INFINITY, 0.5, undefined, {}]) {
      assert.strictEqual(Passivation.idle(timeout as Duration.DurationInput)._tag, "Idle")
    }
    for (const count of [0, -1, 1.5, Number.NaN, "3"]) {
      assert.strictEqual(Passivation.messageCount(count as number)._tag, "MessageCount")
    }
    // a usable strategy is plain data, as before
    assert.deepStrictEqual(Passivation.idle("2 seconds"), { _tag: "Idle", timeoutMillis: 2000 })
    const soon = Passivation.idle("soon" as Duration.DurationInput)
    assert.deepStrictEqual(JSON.parse(JSON.stringify(soon)), { _tag: "Idle", timeoutMillis: null })
  })

  it.effect("an unusable passivation of a kind fails Grains.layer with InvalidGrainKind naming it", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [Passivation.Passivation, string]> = [
        [Passivation.idle("soon" as Duration.DurationInput), 'Passivation.idle: the timeout "soon" is not a duration'],
        [Passivation.idle(0), "Passivation.idle: the timeout must be strictly positive"],
        [Passivation.idle(-1), "Passivation.idle: the timeout must not be negative"],
        [Passivation.idle(Number.NaN), "Passivation.idle: the timeout NaN is not a duration"],
        [Passivation.idle(Number.POSITIVE_INFINITY), "Passivation.idle: the timeout must be finite"],
        [Passivation.idle(0.5), "Passivation.idle: the timeout must be at least 1 ms"],
        [Passivation.messageCount(0), "the message count must be a whole number >= 1, got 0"],
        [Passivation.messageCount(-1), "got -1"],
        [Passivation.messageCount(1.5), "got 1.5"],
        [Passivation.messageCount(Number.NaN), "got NaN"],
        [{ _tag: "Idle", timeoutMillis: -5 }, "the idle timeout must not be negative"],
        ["Never" as unknown as Passivation.Passivation, '"Never" is not a passivation strategy'],
        [{ _tag: "Sometimes" } as unknown as Passivation.Passivation, "it is not a passivation strategy"]
      ]
      for (const [passivation, reason] of cases) {
        const error = yield* layerError([echo({ passivation })])
        assert.strictEqual(error._tag, "InvalidGrainKind")
        assert.strictEqual((error as Grain.InvalidGrainKind).field, "passivation")
        assert.include(error.message, "invalid grain kind echo (passivation): ")
        assert.include(error.message, reason)
      }
    })
  )

  it.effect("an unusable default passivation, unknown options and non-array kinds fail with InvalidGrainsOptions", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [unknown, unknown, string]> = [
        [
          [echo()],
          { passivation: Passivation.messageCount(0) },
          "invalid Grains option passivation: the message count"
        ],
        [[echo()], { passivaton: Passivation.never }, "invalid Grains option passivaton: is not a Grains option"],
        [[echo()], null, "invalid Grains option options: must be an object"],
        [echo(), {}, "invalid Grains option kinds: must be an array of grain kinds, got an object"]
      ]
      for (const [kinds, options, message] of cases) {
        const error = yield* layerError(kinds, options)
        assert.strictEqual(error._tag, "InvalidGrainsOptions")
        assert.include(error.message, message)
      }
    })
  )

  it.effect("a kind the layer cannot run fails Grains.layer with InvalidGrainKind (Grain.make never throws)", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [[echo({ name: "" })], "name", 'must be a non-empty string, got ""'],
        [[echo({ name: "  " })], "name", "must be a non-empty string"],
        [[echo({ name: 7 })], "name", "got 7"],
        [[Grain.make<string>()(undefined as never)], "name", "got undefined"],
        [[echo(), echo()], "name", "the name is registered twice"],
        [[echo({ onReceive: undefined })], "onReceive", "must be a function returning an Effect, got undefined"],
        [
          [echo({ onActivate: Effect.succeed(0) })],
          "onActivate",
          "must be a function returning an Effect, got an Effect"
        ],
        [[echo({ mailboxCapacity: 0 })], "mailboxCapacity", "must be a whole number >= 1, got 0"],
        [[echo({ mailboxCapacity: 1.5 })], "mailboxCapacity", "got 1.5"],
        [[echo({ mailboxCapacity: "10" })], "mailboxCapacity", 'got "10"'],
        [
          [{ name: "echo", onReceive: () => Effect.void }],
          "kind",
          "an object is not a grain kind: make one with Grain.make"
        ]
      ]
      for (const [kinds, field, reason] of cases) {
        const error = yield* layerError(kinds)
        assert.strictEqual(error._tag, "InvalidGrainKind")
        assert.strictEqual((error as Grain.InvalidGrainKind).field, field)
        assert.include(error.message, reason)
      }
    })
  )

  it.effect("a key that is not a non-empty string is InvalidGrainKey: nothing is sent, no grain activates", () =>
    withGrain({ passivation: Passivation.never }, (probe, kind) =>
      Effect.gen(function* () {
        const grains = yield* Grains.Grains
        for (const key of [undefined, 42, "", null]) {
          const told = yield* Effect.flip(Grains.tell(kind, key as string, tick("x")))
          assert.strictEqual(told._tag, "InvalidGrainKey")
          assert.include(told.message, "a grain key must be a non-empty string")
          const asked = yield* Effect.flip(Grains.ask(kind, key as string, tick("x")))
          assert.strictEqual(asked._tag, "InvalidGrainKey")
          const timers = yield* Effect.flip(grains.timers(kind, key as string))
          assert.strictEqual(timers._tag, "InvalidGrainKey")
        }
        const told = yield* Effect.flip(Grains.tell(kind, 42 as unknown as string, tick("x")))
        assert.strictEqual(
          told.message,
          "invalid key 42 for grain kind subject: a grain key must be a non-empty string"
        )
        assert.strictEqual(yield* grains.activations, 0)
        assert.deepStrictEqual(yield* events(probe), [])
        // and from inside a grain
        const inside = yield* Effect.flip(
          run(kind, (ctx) => ctx.tellGrain(kind, undefined as unknown as string, tick("x")))
        )
        assert.strictEqual(inside._tag, "InvalidGrainKey")
        assert.strictEqual(yield* grains.activations, 1, "only the grain that ran the code")
      })
    )
  )

  it.effect("Grains.ask with a timeout of 'soon', -1, NaN, Infinity or 0 is InvalidTimerDelay and sends nothing", () =>
    withGrain({ passivation: Passivation.never }, (probe, kind) =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          ["soon", '"soon" is not a duration'],
          [-1, "must not be negative"],
          [Number.NaN, "NaN is not a duration"],
          [Number.POSITIVE_INFINITY, "must be finite"],
          [0, "must be more than 0"]
        ]
        for (const [timeout, reason] of cases) {
          const error = yield* Effect.flip(Grains.ask(kind, "k", tick("asked"), timeout as number))
          assert.strictEqual(error._tag, "InvalidTimerDelay")
          assert.include(error.message, reason)
        }
        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual(yield* events(probe), [], "no grain was activated, no message sent")
        assert.isUndefined(yield* Grains.ask(kind, "k", tick("asked"), "1 second"))
        assert.include(yield* events(probe), "asked#1(told)")
      })
    )
  )
})

describe("one grain kind per name and system", () => {
  /** A grain that counts what it is told and replies with the count when asked for it. */
  const makeCounter = () =>
    Grain.make<"add" | "get">()({
      name: "counter",
      onActivate: () => Effect.succeed(0),
      onReceive: (ctx, n) => {
        if (ctx.message === "add") return Effect.succeed(n + 1)
        return Effect.as(ctx.reply(n), n)
      }
    })
  /** A second `Grains` layer in the test's system. */
  const grainsOf = (kinds: ReadonlyArray<Grain.Grain<any, any, any, any>>) =>
    Effect.map(Layer.build(Grains.layer(kinds)), Context.get(Grains.Grains))

  it.effect("two Grains layers with the same kind in one system reach the same activation", () =>
    Effect.gen(function* () {
      const Counter = makeCounter()
      const first = yield* grainsOf([Counter])
      const second = yield* grainsOf([Counter])
      yield* first.tell(Counter, "c1", "add")
      yield* second.tell(Counter, "c1", "add")
      const fiber = yield* Effect.fork(Effect.either(second.ask(Counter, "c1", "get", "1 second")))
      yield* TestClock.adjust("2 seconds")
      const answer = yield* Fiber.join(fiber)
      assert.deepStrictEqual(answer, Either.right(2))
      assert.isTrue(yield* first.isActive(Counter, "c1"))
    }).pipe(Effect.scoped, Effect.provide(TestSystem.layer({ name: "grains-twice" })))
  )

  it.effect("another kind under a name registered in the system is InvalidGrainKind (name)", () =>
    Effect.gen(function* () {
      yield* grainsOf([makeCounter()])
      const error = yield* Effect.flip(grainsOf([makeCounter()]))
      assert.strictEqual(error._tag, "InvalidGrainKind")
      if (error._tag !== "InvalidGrainKind") return
      assert.strictEqual(error.field, "name")
      assert.include(error.message, "ActorSystem grains-twice")
    }).pipe(Effect.scoped, Effect.provide(TestSystem.layer({ name: "grains-twice" })))
  )
})
