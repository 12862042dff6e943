import { assert, describe, it } from "@effect/vitest"
import { Data, Effect, Exit, Layer, TestClock } from "effect"
import { Actor, ActorRef, ActorSystem, EventStream, LogContext, Workers } from "tickwork"
import { TestProbe } from "tickwork/testkit"
import { captureLogs } from "./utils.js"

const SystemLive = ActorSystem.layer({ name: "system" })

type CounterMsg =
  | { readonly _tag: "Add"; readonly n: number }
  | { readonly _tag: "Get"; readonly replyTo: ActorRef.ActorRef<number> }
  | { readonly _tag: "Ignore" }

const Counter = Actor.make<CounterMsg>()({
  preStart: () => Effect.succeed(0),
  receive: (msg, _ctx, count) => {
    switch (msg._tag) {
      case "Add":
        return Effect.succeed(count + msg.n)
      case "Get":
        return Effect.as(msg.replyTo.tell(count), count)
      case "Ignore":
        return Effect.succeed(count)
    }
  }
})

const get = (ref: ActorRef.ActorRef<CounterMsg>) =>
  ActorRef.ask(ref, (replyTo: ActorRef.ActorRef<number>) => ({ _tag: "Get", replyTo }) as const)

describe("ActorSystem.layer options", () => {
  const build = (options: unknown) =>
    Layer.build(ActorSystem.layer(options as ActorSystem.Options)).pipe(Effect.scoped, Effect.flip)

  it.effect("rejects bad options with a readable error naming each option", () =>
    Effect.gen(function* () {
      const error = yield* build({ name: "", mailboxCapacity: 0, throughput: 1.5, askTimeout: "-1 seconds" })
      assert.strictEqual(error._tag, "InvalidActorSystemOptions")
      assert.include(error.message, "name:")
      assert.include(error.message, "mailboxCapacity:")
      assert.include(error.message, "throughput:")
      assert.include(error.message, "askTimeout")
    })
  )

  it.effect("rejects unknown options and a missing name", () =>
    Effect.gen(function* () {
      const unknown = yield* build({ name: "ok", mailboxSize: 3 })
      assert.include(unknown.message, "mailboxSize")
      const missing = yield* build({})
      assert.include(missing.message, "name")
      const guardian = yield* build({ name: "ok", guardian: "explode" })
      assert.include(guardian.message, "guardian")
    })
  )

  it.effect("reports one line per bad option and nothing else, whatever the caller passed", () =>
    Effect.gen(function* () {
      const details = (options: unknown) =>
        Effect.map(Effect.flip(ActorSystem.decodeOptions(options)), (error) => error.details)
      for (const input of [undefined, null, "app", 42, [1]]) {
        const text = yield* details(input)
        assert.match(text, /^- options: must be an object such as \{ name: "app" \}, got /, String(input))
        assert.notInclude(text, "\n", "one line")
      }
      assert.strictEqual(
        yield* details({ name: 5, throughput: "x", mailboxCapacity: 0, askTimeout: "soon", guardian: "explode" }),
        [
          "- name: expected string, got 5",
          "- mailboxCapacity: must be a positive integer",
          '- askTimeout: must be a positive finite duration such as "5 seconds" or 5000 (millis)',
          '- throughput: expected number, got "x"',
          '- guardian: expected "restart", "stop" or "resume", got "explode"'
        ].join("\n")
      )
      assert.strictEqual(
        yield* details({ name: "ok", workers: { maxThreads: "2" } }),
        '- workers.maxThreads: expected number, got "2"'
      )
      assert.strictEqual(yield* details({}), "- name: is missing")
    })
  )

  it.effect("validates the worker pool options inside the root options", () =>
    Effect.gen(function* () {
      const error = yield* build({ name: "ok", workers: { minThreads: 4, maxThreads: 2 } })
      assert.strictEqual(error._tag, "InvalidActorSystemOptions")
      assert.include(error.message, "workers")
      assert.include(error.message, "minThreads")
      const negative = yield* build({ name: "ok", workers: { queueLength: -1 } })
      assert.include(negative.message, "workers.queueLength")
    })
  )

  it.effect("provides the system's worker pool; no thread starts before the first CPU task by default", () =>
    Effect.gen(function* () {
      const workers = yield* Workers.Workers
      const stats = yield* workers.stats
      assert.strictEqual(stats.threads, 0)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "pool", workers: { maxThreads: 2 } })))
  )

  it.effect("uses a Workers layer provided around it instead of a pool of its own; both at once is an error", () =>
    Effect.gen(function* () {
      const outerPool = Workers.layer({ minThreads: 0, maxThreads: 1 })
      const used = yield* Effect.gen(function* () {
        const workers = yield* Workers.Workers
        return workers.options.maxThreads
      }).pipe(Effect.provide(ActorSystem.layer({ name: "outer" })), Effect.provide(outerPool))
      assert.strictEqual(used, 1)
      const both = yield* Effect.flip(
        Layer.build(ActorSystem.layer({ name: "both", workers: { maxThreads: 2 } })).pipe(
          Effect.scoped,
          Effect.provide(outerPool)
        )
      )
      assert.strictEqual(both._tag, "InvalidActorSystemOptions")
      assert.include(both.message, "a Workers layer is provided around the system as well")
    })
  )

  it.effect("accepts durations as strings or millis", () =>
    Effect.gen(function* () {
      const ok = yield* Layer.build(
        ActorSystem.layer({ name: "ok", askTimeout: "2 seconds", mailboxCapacity: 10, throughput: 8, guardian: "stop" })
      ).pipe(Effect.scoped, Effect.exit)
      assert.isTrue(Exit.isSuccess(ok))
    })
  )
})

describe("ActorSystem", () => {
  it.effect("spawn, tell, ask", () =>
    Effect.gen(function* () {
      const counter = yield* ActorSystem.spawn(Counter, "counter")
      assert.strictEqual(counter.path, "/user/counter")
      yield* counter.tell({ _tag: "Add", n: 2 })
      yield* ActorRef.tell(counter, { _tag: "Add", n: 3 })
      assert.strictEqual(yield* get(counter), 5)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("ask times out on the test clock with AskTimeout", () =>
    Effect.gen(function* () {
      const counter = yield* ActorSystem.spawn(Counter, "counter")
      const asking = yield* Effect.fork(
        ActorRef.ask(counter, (_: ActorRef.ActorRef<number>) => ({ _tag: "Ignore" }) as const, "1 second")
      )
      yield* TestClock.adjust("1 second")
      const exit = yield* asking.await
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(exit)
      assert.strictEqual(error._tag, "AskTimeout")
      assert.strictEqual((error as ActorRef.AskTimeout).timeoutMillis, 1000)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("ask uses the system's askTimeout by default", () =>
    Effect.gen(function* () {
      const counter = yield* ActorSystem.spawn(Counter, "counter")
      const asking = yield* Effect.fork(
        ActorRef.ask(counter, (_: ActorRef.ActorRef<number>) => ({ _tag: "Ignore" }) as const)
      )
      yield* TestClock.adjust("299 millis")
      assert.isNull(asking.unsafePoll())
      yield* TestClock.adjust("1 millis")
      const error = yield* Effect.flip(asking)
      assert.strictEqual(error._tag, "AskTimeout")
    }).pipe(Effect.provide(ActorSystem.layer({ name: "ask", askTimeout: 300 })))
  )

  it.effect("ask to a stopped actor fails at once with AskUndeliverable", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const counter = yield* ActorSystem.spawn(Counter, "counter")
      yield* system.stop(counter)
      const error = yield* Effect.flip(get(counter))
      assert.strictEqual(error._tag, "AskUndeliverable")
      assert.strictEqual((error as ActorRef.AskUndeliverable).reason, "stopped")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("spawn rejects bad and duplicate names; generated names are unique", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      yield* system.spawn(Counter, "taken")
      const taken = yield* Effect.flip(system.spawn(Counter, "taken"))
      assert.strictEqual(taken._tag, "ActorNameTaken")
      for (const bad of ["", "a/b", "$reserved"]) {
        const error = yield* Effect.flip(system.spawn(Counter, bad))
        assert.strictEqual(error._tag, "InvalidActorName", bad)
      }
      const a = yield* system.spawn(Counter)
      const b = yield* system.spawn(Counter)
      assert.notStrictEqual(a.path, b.path)
      assert.match(a.path, /^\/user\/\$/)
      // a stopped actor's name can be reused
      const first = yield* system.spawn(Counter, "reused")
      yield* system.stop(first)
      const second = yield* system.spawn(Counter, "reused")
      assert.strictEqual(yield* get(second), 0)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("messages to a stopped actor, and those left in its mailbox, become dead letters", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const letters = yield* TestProbe.make<EventStream.DeadLetter>()
      yield* system.eventStream.subscribe(letters.ref, EventStream.DeadLetter)
      const Slow = Actor.make<string>()({ receive: () => Effect.sleep("1 second") })
      const slow = yield* system.spawn(Slow, "slow")
      yield* slow.tell("first")
      yield* slow.tell("queued")
      yield* TestClock.adjust("10 millis")
      const stopping = yield* Effect.fork(system.stop(slow))
      yield* TestClock.adjust("1 second")
      yield* stopping
      yield* slow.tell("after")
      const all = yield* letters.receiveAll
      assert.deepStrictEqual(
        all.map((l) => [l.message.message, l.message.reason]),
        [
          ["queued", "stopped"],
          ["after", "stopped"]
        ]
      )
      assert.strictEqual((yield* system.stats).deadLetters, 2)
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("a user message to a full bounded mailbox becomes a dead letter; ask fails at once", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const letters = yield* TestProbe.make<EventStream.DeadLetter>()
      yield* system.eventStream.subscribe(letters.ref, EventStream.DeadLetter)
      const probe = yield* TestProbe.make<string>()
      const Slow = Actor.make<string>()({
        receive: (msg) => Effect.zipRight(probe.ref.tell(msg), Effect.sleep("1 second"))
      }).pipe(Actor.withMailboxCapacity(2))
      const slow = yield* system.spawn(Slow, "slow")
      yield* slow.tell("1") // taken at once, handler busy
      yield* TestClock.adjust("1 millis")
      yield* slow.tell("2")
      yield* slow.tell("3")
      yield* slow.tell("4") // full
      const letter = yield* letters.expectMessage
      assert.strictEqual(letter.message, "4")
      assert.strictEqual(letter.reason, "mailbox-full")
      const asked = yield* Effect.flip(ActorRef.ask(slow, (_: ActorRef.ActorRef<string>) => "5"))
      assert.strictEqual(asked._tag, "AskUndeliverable")
      yield* TestClock.adjust("3 seconds")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["1", "2", "3"]
      )
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("the system default mailboxCapacity applies to every actor", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const letters = yield* TestProbe.make<EventStream.DeadLetter>()
      yield* system.eventStream.subscribe(letters.ref, EventStream.DeadLetter)
      const Blocked = Actor.make<string>()({ receive: () => Effect.never })
      const ref = yield* system.spawn(Blocked, "blocked")
      yield* ref.tell("a") // taken by the handler, which never returns
      yield* TestClock.adjust(0)
      yield* ref.tell("b")
      yield* ref.tell("c")
      yield* ref.tell("d")
      yield* ref.tell("e")
      assert.deepStrictEqual(
        (yield* letters.receiveAll).map((l) => l.message.message),
        ["d", "e"]
      )
    }).pipe(Effect.provide(ActorSystem.layer({ name: "bounded", mailboxCapacity: 2 })))
  )

  it.effect("event stream: subscribe by class or refinement, unsubscribe, and auto-unsubscribe on stop", () =>
    Effect.gen(function* () {
      class Deployed extends Data.TaggedClass("Deployed")<{ readonly version: string }> {}
      const system = yield* ActorSystem.ActorSystem
      const byClass = yield* TestProbe.make<Deployed>()
      const byRefinement = yield* TestProbe.make<string>()
      yield* system.eventStream.subscribe(byClass.ref, Deployed)
      yield* system.eventStream.subscribe(byClass.ref, Deployed) // idempotent
      yield* system.eventStream.subscribe(byRefinement.ref, { is: (u): u is string => typeof u === "string" })
      yield* system.eventStream.publish(new Deployed({ version: "1.2" }))
      yield* system.eventStream.publish("hello")
      yield* system.eventStream.publish(42)
      assert.deepStrictEqual(
        (yield* byClass.receiveAll).map((r) => r.message.version),
        ["1.2"]
      )
      assert.deepStrictEqual(
        (yield* byRefinement.receiveAll).map((r) => r.message),
        ["hello"]
      )
      yield* system.eventStream.unsubscribe(byClass.ref)
      yield* system.eventStream.publish(new Deployed({ version: "1.3" }))
      yield* byClass.expectNoMessage()

      const seen = yield* TestProbe.make<string>()
      const Listener = Actor.make<Deployed>()({ receive: (e) => seen.ref.tell(e.version) })
      const listener = yield* system.spawn(Listener, "listener")
      yield* system.eventStream.subscribe(listener, Deployed)
      yield* system.eventStream.publish(new Deployed({ version: "2.0" }))
      yield* seen.expectMessageEquals("2.0")
      yield* system.stop(listener)
      const letters = yield* TestProbe.make<EventStream.DeadLetter>()
      yield* system.eventStream.subscribe(letters.ref, EventStream.DeadLetter)
      yield* system.eventStream.publish(new Deployed({ version: "3.0" }))
      yield* letters.expectNoMessage() // the stopped listener was unsubscribed, so nothing is undeliverable
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("receive timeout fires after silence, repeats, and is not reset by ticks", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      type Msg = "timeout" | "tick" | "work"
      const Idle = Actor.make<Msg>()({
        preStart: (ctx) =>
          Effect.zipRight(
            Effect.orDie(ctx.setReceiveTimeout("1 second", "timeout")),
            Effect.orDie(ctx.timers.startTimerAtFixedRate("tick", "tick", "300 millis"))
          ),
        receive: (msg) => (msg === "tick" ? Effect.void : probe.ref.tell(msg))
      })
      const ref = yield* ActorSystem.spawn(Idle, "idle")
      yield* TestClock.adjust("1 second")
      const first = yield* probe.expectReceived
      assert.deepStrictEqual([first.message, first.at], ["timeout", 1000], "ticks every 300 ms did not reset it")
      yield* TestClock.adjust("500 millis")
      yield* ref.tell("work") // activity at 1500
      yield* probe.expectMessageEquals("work")
      yield* TestClock.adjust("999 millis")
      yield* probe.expectNoMessage()
      yield* TestClock.adjust("1 millis")
      const second = yield* probe.expectReceived
      assert.deepStrictEqual([second.message, second.at], ["timeout", 2500])
      yield* TestClock.adjust("1 second")
      const third = yield* probe.expectReceived
      assert.deepStrictEqual([third.message, third.at], ["timeout", 3500], "it repeats while idle")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("cancelReceiveTimeout stops it; a bad timeout is a typed error", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const results = yield* TestProbe.make<string>()
      type Msg = "timeout" | "cancel" | "bad"
      const Idle = Actor.make<Msg>()({
        preStart: (ctx) => Effect.orDie(ctx.setReceiveTimeout("1 second", "timeout")),
        receive: (msg, ctx) =>
          msg === "cancel"
            ? ctx.cancelReceiveTimeout
            : msg === "bad"
              ? Effect.flip(ctx.setReceiveTimeout(-1, "timeout")).pipe(Effect.flatMap((e) => results.ref.tell(e._tag)))
              : probe.ref.tell(msg)
      })
      const ref = yield* ActorSystem.spawn(Idle, "idle")
      yield* ref.tell("bad")
      yield* results.expectMessageEquals("InvalidTimerDelay")
      yield* ref.tell("cancel")
      yield* probe.expectNoMessage("5 seconds")
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("logs carry the actor's path; LogContext.snapshot/run restores the arming context on purpose", () => {
    const { layer, logs } = captureLogs()
    return Effect.gen(function* () {
      type Msg = { readonly _tag: "Arm" } | { readonly _tag: "Sweep"; readonly armedUnder: LogContext.LogContext }
      const Sweeper = Actor.make<Msg>()({
        receive: (msg, ctx) =>
          msg._tag === "Arm"
            ? Effect.flatMap(LogContext.snapshot, (armedUnder) =>
                Effect.orDie(ctx.timers.startSingleTimer("sweep", { _tag: "Sweep", armedUnder }, "1 minute"))
              )
            : Effect.zipRight(Effect.logInfo("plain"), LogContext.run(msg.armedUnder, Effect.logInfo("restored")))
      })
      const ref = yield* ActorSystem.spawn(Sweeper, "sweeper")
      yield* ref.tell({ _tag: "Arm" }).pipe(Effect.annotateLogs("tenant", "acme"))
      yield* TestClock.adjust("1 minute")
      const plain = logs.find((l) => l.message === "plain")!
      assert.deepStrictEqual(plain.annotations, { actor: "/user/sweeper" })
      const restored = logs.find((l) => l.message === "restored")!
      assert.strictEqual(restored.annotations.tenant, "acme")
      assert.strictEqual(restored.annotations.actor, "/user/sweeper")
    }).pipe(Effect.provide(SystemLive), Effect.provide(layer))
  })

  it.effect("shutdown stops every actor (children first, postStop runs), leaving no fiber, timer or engine entry", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const stops = yield* TestProbe.make<string>()
      const Leaf = (name: string) =>
        Actor.make<string>()({
          preStart: (ctx) => Effect.orDie(ctx.timers.startTimerWithFixedDelay("t", "tick", "1 second")),
          receive: () => Effect.sleep("1 hour"), // a handler in flight at shutdown is interrupted
          postStop: () => stops.ref.tell(name)
        })
      const Parent = Actor.make<string>()({
        preStart: (ctx) =>
          Effect.orDie(Effect.zipRight(ctx.spawn(Leaf("child-a"), "a"), ctx.spawn(Leaf("child-b"), "b"))),
        receive: () => Effect.void,
        postStop: () => stops.ref.tell("parent")
      })
      yield* system.spawn(Parent, "parent")
      yield* system.spawn(Leaf("solo"), "solo")
      yield* system.scheduler.scheduleAtFixedRateFunction("1 second", "1 second", Effect.sleep("10 seconds"))
      yield* TestClock.adjust("1500 millis") // handlers and a task are in flight
      const before = yield* system.stats
      assert.strictEqual(before.actors, 4)
      // three leaves are in a handler, the task runs, the driver waits; the idle parent holds no fiber
      assert.strictEqual(before.fibers, 5)
      assert.isAtLeast(before.engineEntries, 4)
      yield* system.shutdown
      const order = (yield* stops.receiveAll).map((r) => r.message)
      assert.sameMembers(order, ["child-a", "child-b", "parent", "solo"])
      assert.isBelow(order.indexOf("child-a"), order.indexOf("parent"))
      assert.isBelow(order.indexOf("child-b"), order.indexOf("parent"))
      assert.deepStrictEqual(yield* system.stats, {
        actors: 0,
        fibers: 0,
        timers: 0,
        engineEntries: 0,
        engineRunning: false,
        engineRestarts: 0,
        deadLetters: (yield* system.stats).deadLetters
      })
      const late = yield* Effect.flip(system.spawn(Leaf("late"), "late"))
      assert.strictEqual(late._tag, "ActorSystemTerminated")
      yield* system.shutdown // idempotent
    }).pipe(Effect.provide(SystemLive))
  )

  it.effect("stop lets the current message finish, then runs postStop", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const Worker = Actor.make<string>()({
        receive: (msg) => Effect.zipRight(Effect.sleep("100 millis"), probe.ref.tell(`done ${msg}`)),
        postStop: () => probe.ref.tell("stopped")
      })
      const ref = yield* system.spawn(Worker, "worker")
      yield* ref.tell("job")
      yield* TestClock.adjust("10 millis")
      const stopping = yield* Effect.fork(system.stop(ref))
      yield* TestClock.adjust("100 millis")
      yield* stopping
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["done job", "stopped"]
      )
    }).pipe(Effect.provide(SystemLive))
  )
})
