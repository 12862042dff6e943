import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Metric, Ref, Schedule, Scope, TestClock } from "effect"
import { Actor, ActorRef, ActorSystem, Entity, EventStream, Grain, Grains, Metrics, Passivation, Spot } from "tickwork"
import { TestProbe } from "tickwork/testkit"
import { systemOf } from "../src/internal/actorSystem.js"
import { captureLogs } from "./utils.js"

/** A system with the canaries' grain kind registered; the test body gets the canaries. */
const withCanaries = <A, E>(
  body: (canaries: { readonly counts: Effect.Effect<[number, number, number]> }) => Effect.Effect<A, E, any>
) =>
  Effect.gen(function* () {
    const grainTicks = yield* Ref.make(0)
    const Beacon = Grain.make<"wake" | "tick">()({
      name: "beacon",
      passivation: Passivation.never,
      onActivate: (props) => Effect.orDie(Effect.asVoid(props.schedule("tick", "100 millis"))),
      onReceive: (ctx) => (ctx.message === "tick" ? Ref.update(grainTicks, (n) => n + 1) : Effect.void)
    })
    const layer = Grains.layer([Beacon]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "reliability" })))
    return yield* Effect.gen(function* () {
      const actorTicks = yield* Ref.make(0)
      const spotTicks = yield* Ref.make(0)
      const Ticker = Actor.make<"tick">()({
        preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("tick", "tick", "100 millis")),
        receive: () => Ref.update(actorTicks, (n) => n + 1)
      })
      yield* ActorSystem.spawn(Ticker, "ticker")
      yield* Spot.spawn<number>(
        {
          initialState: 0,
          onStart: (ctx) =>
            Effect.orDie(
              ctx.timers.start({
                name: "tick",
                period: "100 millis",
                handler: () => Ref.update(spotTicks, (n) => n + 1)
              })
            )
        },
        "spot"
      )
      yield* Grains.tell(Beacon, "b-1", "wake")
      return yield* body({ counts: Effect.all([Ref.get(actorTicks), Ref.get(spotTicks), Ref.get(grainTicks)]) })
    }).pipe(Effect.provide(layer))
  })

/** A custom ActorRef whose `unsafeTell` (and `tell`) throws. */
const throwingRef: ActorRef.ActorRef<string> = {
  [ActorRef.TypeId]: ActorRef.TypeId,
  path: "/custom/throws",
  tell: () => Effect.void,
  unsafeTell: () => {
    throw new Error("this ref refuses every message")
  },
  pipe() {
    return this
  }
}

const faults = (kind: string) => Effect.map(Metric.value(Metrics.timerFaults(kind)), (state) => state.count)

describe("reliability: nothing a user passes stops the engine", () => {
  it.effect("with no bad input, the canaries tick 9 times each in 950 ms", () =>
    withCanaries(({ counts }) =>
      Effect.gen(function* () {
        yield* TestClock.adjust("950 millis")
        assert.deepStrictEqual(yield* counts, [9, 9, 9])
      })
    )
  )

  it.effect("a target that is not an ActorRef is a typed error at once, for every message schedule", () =>
    withCanaries(({ counts }) =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const refs = new Map<string, ActorRef.ActorRef<string>>()
        const bad: ReadonlyArray<unknown> = [refs.get("sinc"), {}, null, "a-path", 42, () => {}]
        for (const target of bad) {
          const t = target as ActorRef.ActorRef<string>
          const attempts: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>> = [
            system.scheduler.scheduleOnce("10 millis", t, "typo"),
            system.scheduler.scheduleAtFixedRate("10 millis", "10 millis", t, "typo"),
            system.scheduler.scheduleWithCron(t, "typo", "* * * * * ?")
          ]
          for (const attempt of attempts) {
            const error = yield* Effect.flip(attempt)
            assert.strictEqual(error._tag, "InvalidTimerTarget", String(target))
            assert.include(error.message, "the target must be an ActorRef")
          }
          const thrown = (() => {
            try {
              system.scheduler.unsafeScheduleOnce("10 millis", t, "typo")
              return undefined
            } catch (error) {
              return error
            }
          })()
          assert.strictEqual((thrown as { _tag?: string })._tag, "InvalidTimerTarget")
        }
        const probe = yield* TestProbe.make<string>()
        const badSender = yield* Effect.flip(
          system.scheduler.scheduleOnce("10 millis", probe.ref, "x", {} as ActorRef.ActorRef<unknown>)
        )
        assert.include(badSender.message, "the sender must be an ActorRef")
        const badTask = yield* Effect.flip(
          system.scheduler.scheduleOnceFunction("10 millis", (() => {}) as unknown as Effect.Effect<void>)
        )
        assert.strictEqual(badTask._tag, "InvalidTimerTarget")
        assert.include(badTask.message, "the task must be an Effect")
        const badCron = yield* Effect.flip(
          system.scheduler.scheduleWithCron(probe.ref, "x", undefined as unknown as string)
        )
        assert.strictEqual(badCron._tag, "InvalidCronExpression")
        const badReference = yield* Effect.flip(
          system.scheduler.scheduleWithCron(probe.ref, "x", "* * * * * ?", { reference: "  " })
        )
        assert.strictEqual(badReference._tag, "InvalidTimerReference")
        yield* TestClock.adjust("950 millis")
        assert.deepStrictEqual(yield* counts, [9, 9, 9])
        const stats = yield* system.stats
        assert.isTrue(stats.engineRunning)
        assert.strictEqual(stats.engineRestarts, 0)
      })
    )
  )

  it.effect(
    "a custom ActorRef that throws is that schedule's fault alone: logged, counted, published, it keeps firing",
    () => {
      const { layer: logs, logs: lines } = captureLogs()
      return withCanaries(({ counts }) =>
        Effect.gen(function* () {
          const system = yield* ActorSystem.ActorSystem
          const errors = yield* TestProbe.make<EventStream.SchedulerError>()
          yield* system.eventStream.subscribe(errors.ref, EventStream.SchedulerError)
          yield* TestClock.adjust("50 millis") // the canaries have started and armed their timers
          const before = yield* faults("scheduler_message")
          const timersBefore = (yield* system.stats).timers
          const once = yield* system.scheduler.scheduleOnce("10 millis", throwingRef, "x")
          yield* system.scheduler.scheduleAtFixedRate("50 millis", "100 millis", throwingRef, "y")
          yield* TestClock.adjust("900 millis")
          assert.deepStrictEqual(yield* counts, [9, 9, 9])
          assert.strictEqual((yield* faults("scheduler_message")) - before, 10, "the one-shot and 9 periodic firings")
          const published = yield* errors.receiveAll
          assert.strictEqual(published.length, 10)
          assert.strictEqual(published[0]!.message.target, "/custom/throws")
          const logged = lines.filter((line) => line.level === "ERROR" && line.message.includes("faulted while firing"))
          assert.strictEqual(logged.length, 10)
          assert.strictEqual(logged[0]!.annotations.timer_kind, "scheduler_message")
          assert.include(logged[0]!.message, "it will not fire again", "the one-shot is done")
          assert.include(logged[1]!.message, "it keeps its schedule", "the periodic schedule goes on")
          assert.isFalse(yield* once.cancel, "the faulted one-shot is settled")
          const stats = yield* system.stats
          assert.isTrue(stats.engineRunning)
          // the periodic schedule is still on the books; the faulted one-shot has left them
          assert.strictEqual(stats.timers, timersBefore + 1)
        })
      ).pipe(Effect.provide(logs))
    }
  )

  it.effect("a Schedule whose step dies ends that timer alone; the actor and the other timers go on", () =>
    withCanaries(({ counts }) =>
      Effect.gen(function* () {
        const probe = yield* TestProbe.make<string>()
        const before = yield* faults("actor_timer")
        const Fragile = Actor.make<string>()({
          preStart: (ctx) =>
            ctx.timers.startTimerWithSchedule(
              "fragile",
              "step",
              Schedule.spaced("100 millis").pipe(
                Schedule.map((n) => {
                  if (n >= 2) throw new Error("a Schedule that throws")
                  return n
                })
              )
            ),
          receive: (msg, ctx) =>
            Effect.flatMap(ctx.timers.isTimerActive("fragile"), (active) => probe.ref.tell(`${msg}:${active}`))
        })
        yield* ActorSystem.spawn(Fragile, "fragile")
        yield* TestClock.adjust("950 millis")
        assert.deepStrictEqual(yield* counts, [9, 9, 9])
        const seen = (yield* probe.receiveAll).map((r) => r.message)
        assert.isAtLeast(seen.length, 2)
        assert.strictEqual((yield* faults("actor_timer")) - before, 1)
        // after the fault the timer is no longer active, and it never ticks again
        yield* TestClock.adjust("1 second")
        yield* probe.expectNoMessage()
      })
    )
  )

  it.effect("the driver fiber killed on purpose is restarted at once, loudly, with every pending timer kept", () => {
    const { layer: logs, logs: lines } = captureLogs()
    return withCanaries(({ counts }) =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const impl = systemOf(system)!
        const probe = yield* TestProbe.make<string>()
        yield* system.scheduler.scheduleOnce("2 seconds", probe.ref, "far")
        yield* TestClock.adjust("450 millis")
        const pending = impl.driver.size
        yield* Fiber.interruptFork(impl.driverFiber!)
        yield* TestClock.adjust("500 millis")
        assert.deepStrictEqual(yield* counts, [9, 9, 9], "no tick lost across the restart")
        const stats = yield* system.stats
        assert.isTrue(stats.engineRunning)
        assert.strictEqual(stats.engineRestarts, 1)
        const logged = lines.filter((line) => line.level === "ERROR" && line.message.includes("stopped unexpectedly"))
        assert.strictEqual(logged.length, 1)
        assert.include(logged[0]!.message, `restarting it with its ${pending} pending timers`)
        yield* probe.expectNoMessage("1049 millis")
        yield* TestClock.adjust("1 millis")
        yield* probe.expectMessageEquals("far")
      })
    ).pipe(Effect.provide(logs))
  })

  it.effect("a handler that returns undefined instead of an Effect is supervised like any defect", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const Sloppy = Actor.make<string>()({
        preStart: () => probe.ref.tell("started"),
        receive: (msg) => (msg === "bad" ? (undefined as unknown as Effect.Effect<void>) : probe.ref.tell(msg))
      })
      const ref = yield* ActorSystem.spawn(Sloppy, "sloppy")
      yield* probe.expectMessageEquals("started")
      yield* ref.tell("bad")
      yield* probe.expectMessageEquals("started") // restarted by the guardian
      yield* ref.tell("good")
      yield* probe.expectMessageEquals("good")
    }).pipe(Effect.provide(ActorSystem.layer({ name: "sloppy" })))
  )
})

/** A grain kind whose `onDeactivate` never returns. */
const Lingering = Grain.make<string>()({
  name: "lingering",
  passivation: Passivation.messageCount(1), // deactivates after its first message
  onReceive: () => Effect.void,
  onDeactivate: () => Effect.never
})

describe("reliability: a stop takes a bounded time", () => {
  const Hanging = (probe: TestProbe.TestProbe<string>, hangIn: "receive" | "postStop") =>
    Actor.make<string>()({
      receive: (msg) => (msg === "hang" && hangIn === "receive" ? Effect.never : probe.ref.tell(msg)),
      postStop: () => Effect.zipRight(probe.ref.tell("postStop"), hangIn === "postStop" ? Effect.never : Effect.void)
    })

  it.effect("system.stop of an actor whose handler never returns is forced after stopTimeout, with a warning", () => {
    const { layer: logs, logs: lines } = captureLogs()
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const ref = yield* system.spawn(Hanging(probe, "receive"), "stuck")
      yield* ref.tell("hang")
      const stopping = yield* Effect.fork(system.stop(ref))
      yield* TestClock.adjust("2999 millis")
      assert.isNull(stopping.unsafePoll(), "still waiting for the handler")
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(stopping)
      yield* probe.expectMessageEquals("postStop")
      const warned = lines.filter((line) => line.level === "WARN" && line.message.includes("did not stop"))
      assert.strictEqual(warned.length, 1)
      assert.include(warned[0]!.message, "actor /user/stuck did not stop within the stop timeout (3000 ms)")
      assert.strictEqual((yield* system.stats).actors, 0)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "bounded", stopTimeout: "3 seconds" })), Effect.provide(logs))
  })

  it.effect(
    "a postStop that never returns ends the stop after stopTimeout; a stop that finishes in time leaves nothing armed",
    () =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        const quick = yield* system.spawn(Hanging(probe, "receive"), "quick")
        yield* system.stop(quick)
        yield* probe.expectMessageEquals("postStop")
        assert.strictEqual((yield* system.stats).engineEntries, 0, "the stop timeout was disarmed")
        const ref = yield* system.spawn(Hanging(probe, "postStop"), "stuck-in-post-stop")
        const stopping = yield* Effect.fork(system.stop(ref))
        yield* probe.expectMessageEquals("postStop")
        yield* TestClock.adjust("999 millis")
        assert.isNull(stopping.unsafePoll())
        yield* TestClock.adjust("1 millis")
        yield* Fiber.join(stopping)
        assert.strictEqual((yield* system.stats).actors, 0)
      }).pipe(Effect.provide(ActorSystem.layer({ name: "bounded", stopTimeout: "1 second" })))
  )

  it.effect("shutdown with a postStop that never returns ends after stopTimeout", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        ActorSystem.layer({ name: "bounded", stopTimeout: "1 second" }),
        scope
      )
      const system = Context.get(context, ActorSystem.ActorSystem)
      yield* system.spawn(Hanging(probe, "postStop"), "stuck")
      yield* TestClock.adjust("1 millis")
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* probe.expectMessageEquals("postStop")
      yield* TestClock.adjust("999 millis")
      assert.isNull(closing.unsafePoll())
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(closing)
    })
  )

  it.effect("shutdown leaves none of the stopped actors' diagnostic context on the caller", () => {
    const { layer: logs, logs: lines } = captureLogs()
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const Busy = Actor.make<string>()({ receive: () => Effect.sleep("1 hour") })
      const ref = yield* system.spawn(Busy, "busy")
      yield* ref.tell("work")
      yield* TestClock.adjust("1 millis")
      yield* system.shutdown
      yield* Effect.logInfo("after shutdown")
      const after = lines.find((line) => line.message === "after shutdown")!
      assert.deepStrictEqual(after.annotations, {})
    }).pipe(Effect.provide(ActorSystem.layer({ name: "clean" })), Effect.provide(logs))
  })

  it.effect("an entity's sleep and a grain's deactivation take a bounded time too", () => {
    const { layer: logs, logs: lines } = captureLogs()
    return Effect.gen(function* () {
      const Stuck = Entity.make<{ readonly n: number }, { readonly _tag: "Hang" }>()({
        name: "Stuck",
        initialize: () => Effect.succeed({ n: 0 }),
        commands: { Hang: () => Effect.never }
      })
      const registry = yield* Entity.makeRegistry(Stuck)
      yield* registry.tell("e-1", { _tag: "Hang" })
      yield* TestClock.adjust("1 millis")
      const sleeping = yield* Effect.fork(registry.sleep("e-1"))
      yield* TestClock.adjust("999 millis")
      assert.isNull(sleeping.unsafePoll(), "the handler has not returned")
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(sleeping)
      assert.isTrue(
        lines.some((line) => line.level === "WARN" && line.message.includes("did not stop within the stop timeout"))
      )
      const system = yield* ActorSystem.ActorSystem
      const actors = (yield* system.stats).actors
      yield* Grains.tell(Lingering, "g-1", "hello") // handled, then the grain deactivates: onDeactivate hangs
      yield* TestClock.adjust("999 millis")
      assert.strictEqual((yield* system.stats).actors, actors + 1, "still deactivating")
      yield* TestClock.adjust("1 millis")
      assert.isTrue(
        lines.some((line) => line.level === "WARN" && line.message.includes("onDeactivate did not finish within"))
      )
      assert.strictEqual((yield* system.stats).actors, actors)
    }).pipe(
      Effect.scoped,
      Effect.provide(
        Grains.layer([Lingering]).pipe(
          Layer.provideMerge(ActorSystem.layer({ name: "bounded", stopTimeout: "1 second" }))
        )
      ),
      Effect.provide(logs)
    )
  })

  it.effect("stopTimeout must be a positive finite duration", () =>
    Effect.gen(function* () {
      for (const stopTimeout of [0, -1, "soon", Number.NaN, Number.POSITIVE_INFINITY]) {
        const error = yield* Effect.flip(ActorSystem.decodeOptions({ name: "x", stopTimeout }))
        assert.include(error.message, "- stopTimeout: must be a positive finite duration", String(stopTimeout))
      }
    })
  )
})

describe("reliability: dead letters are visible", () => {
  const Busy = Actor.make<string>()({ receive: () => Effect.sleep("1 hour") })

  it.effect("a flood into a bounded mailbox logs the first 10, then one line with the count not logged", () => {
    const { layer: logs, logs: lines } = captureLogs()
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const ref = yield* system.spawn(Actor.withMailboxCapacity(Busy, 1), "busy")
      yield* ref.tell("first") // taken by the handler, which then sleeps
      yield* TestClock.adjust("1 millis")
      for (let i = 0; i < 100_000; i++) ref.unsafeTell(`m-${i}`)
      yield* TestClock.adjust("1 millis")
      const dead = () => lines.filter((line) => line.message.startsWith("dead letter"))
      assert.strictEqual(dead().length, 10)
      assert.strictEqual(dead()[0]!.level, "WARN")
      assert.strictEqual(dead()[0]!.message, 'dead letter: "m-1" to /user/busy was not delivered (its mailbox is full)')
      assert.strictEqual(dead()[0]!.annotations.recipient, "/user/busy")
      assert.include(dead()[9]!.message, "further dead letters are counted, not logged, for 300000 ms")
      const summary = () => lines.filter((line) => line.message.includes("more dead letters were not logged"))
      assert.strictEqual(summary().length, 0)
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual(summary().length, 1)
      assert.strictEqual(summary()[0]!.message.split(" ")[0], String(100_000 - 1 - 10))
      assert.strictEqual((yield* system.stats).deadLetters, 100_000 - 1)
      // a new interval: the next dead letter gets a line again
      ref.unsafeTell("later")
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(dead().length, 11)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "dead-letters" })), Effect.provide(logs))
  })

  it.effect("tells to a stopped actor are logged at info level, after shutdown too; logDeadLetters 0 logs none", () => {
    const { layer: logs, logs: lines } = captureLogs()
    return Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(ActorSystem.layer({ name: "after" }), scope)
      const system = Context.get(context, ActorSystem.ActorSystem)
      const ref = yield* system.spawn(Busy, "gone")
      yield* TestClock.adjust("1 millis")
      yield* Scope.close(scope, Exit.void)
      yield* ref.tell("after shutdown")
      yield* TestClock.adjust("1 millis")
      const dead = lines.filter((line) => line.message.startsWith("dead letter"))
      assert.deepStrictEqual(
        dead.map((line) => [line.level, line.message]),
        [["INFO", 'dead letter: "after shutdown" to /user/gone was not delivered (it has stopped)']]
      )
      const quiet = yield* Scope.make()
      const quietSystem = Context.get(
        yield* Layer.buildWithScope(ActorSystem.layer({ name: "quiet", logDeadLetters: 0 }), quiet),
        ActorSystem.ActorSystem
      )
      yield* quietSystem.deadLetters.tell("nobody")
      yield* TestClock.adjust("1 millis")
      yield* Scope.close(quiet, Exit.void)
      assert.strictEqual(lines.filter((line) => line.message.startsWith("dead letter")).length, 1)
      assert.strictEqual((yield* quietSystem.stats).deadLetters, 1)
    }).pipe(Effect.provide(logs))
  })
})

describe("reliability: every bad input to an actor is a typed error", () => {
  it.effect("context.timers: a Schedule that is not one, a receive timeout below 1 ms", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const Checks = Actor.make<string>()({
        preStart: (ctx) =>
          Effect.gen(function* () {
            const schedule = yield* Effect.flip(
              ctx.timers.startTimerWithSchedule("s", "s", "100 millis" as unknown as Schedule.Schedule<unknown>)
            )
            yield* probe.ref.tell(`${schedule._tag}: ${schedule.message}`)
            for (const timeout of [0, "0 millis", -1, "soon"]) {
              const error = yield* Effect.flip(ctx.setReceiveTimeout(timeout as number, "idle"))
              yield* probe.ref.tell(`${error._tag}: ${error.reason}`)
            }
            assert.deepStrictEqual(yield* ctx.timers.activeKeys, [])
          }),
        receive: () => Effect.void
      })
      yield* ActorSystem.spawn(Checks, "checks")
      assert.match(yield* probe.expectMessage, /^InvalidTimerInterval: .*the schedule must be an Effect Schedule/)
      assert.strictEqual(
        yield* probe.expectMessage,
        "InvalidTimerDelay: a receive timeout must be at least 1 ms (cancel it with cancelReceiveTimeout)"
      )
      assert.include(yield* probe.expectMessage, "at least 1 ms")
      assert.strictEqual(yield* probe.expectMessage, "InvalidTimerDelay: must not be negative")
      assert.include(yield* probe.expectMessage, "is not a duration")
    }).pipe(Effect.provide(ActorSystem.layer({ name: "inputs" })))
  )

  it.effect(
    "the event stream: bad subscriptions are typed errors; a subscriber that throws misses only its event",
    () => {
      const { layer: logs, logs: lines } = captureLogs()
      return Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<EventStream.DeadLetter>()
        const notARef = yield* Effect.flip(
          system.eventStream.subscribe({} as ActorRef.ActorRef<unknown>, EventStream.DeadLetter)
        )
        assert.strictEqual(notARef._tag, "InvalidSubscription")
        assert.include(notARef.message, "the subscriber must be an ActorRef")
        const noClassifier = yield* Effect.flip(
          system.eventStream.subscribe(
            probe.ref,
            undefined as unknown as EventStream.Classifier<EventStream.DeadLetter>
          )
        )
        assert.include(noClassifier.message, "the classifier must be a class or an object with an is function")
        // a classifier that throws and a custom ref that throws, before the probe's subscription
        yield* system.eventStream.subscribe(throwingRef as ActorRef.ActorRef<unknown>, EventStream.DeadLetter)
        yield* system.eventStream.subscribe(probe.ref, {
          is: (u: unknown): u is EventStream.DeadLetter => {
            if (u instanceof EventStream.DeadLetter && u.message === "trap") throw new Error("classifier bug")
            return u instanceof EventStream.DeadLetter
          }
        })
        yield* system.deadLetters.tell("trap")
        yield* system.deadLetters.tell("fine")
        assert.strictEqual((yield* probe.expectMessage).message, "fine")
        yield* TestClock.adjust("1 millis")
        const errors = lines.filter((line) => line.level === "ERROR" && line.message.includes("subscriber threw"))
        assert.strictEqual(errors.length, 3, "the custom ref twice, the classifier once")
      }).pipe(Effect.provide(ActorSystem.layer({ name: "events" })), Effect.provide(logs))
    }
  )
})
