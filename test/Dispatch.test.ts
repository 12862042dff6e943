/**
 * Ready actors' drains share dispatcher fibers (src/internal/dispatcher.ts). These tests pin what a fiber of its own
 * per actor guaranteed: a suspending handler holds up nobody else, each actor runs with its own services, log
 * annotation and FiberRefs, and a tell storm leaves room for other fibers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, type Duration, Effect, FiberRef, HashMap, Layer, Option, TestClock } from "effect"
import { Actor, type ActorRef, ActorSystem, type Timers } from "tickwork"
import { TestProbe } from "tickwork/testkit"
import type { CellRef } from "../src/internal/actorCell.js"
import * as effectInternals from "../src/internal/effectInternals.js"
import { captureLogs } from "./utils.js"

const SystemLive = ActorSystem.layer({ name: "dispatch" })

class Color extends Context.Tag("test/Color")<Color, string>() {}

/** Arms the actor's one timer, key "t": a single "tick" after `delay`. */
const tickAfter = (ctx: { readonly timers: Timers.TimerScheduler<"tick"> }, delay: Duration.DurationInput) =>
  Effect.orDie(ctx.timers.startSingleTimer("t", "tick", delay))

describe("actors sharing dispatcher fibers", () => {
  it.scoped("a tick handler that suspends holds up no other actor's tick due in the same turn", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const make = (name: string, work: Effect.Effect<void>) =>
        Actor.make<"tick">()({
          preStart: (ctx) => tickAfter(ctx, "100 millis"),
          receive: () => Effect.zipRight(work, probe.ref.tell(name))
        })
      yield* system.spawn(make("first", Effect.void), "first")
      yield* system.spawn(make("slow", Effect.sleep("1 second")), "slow")
      yield* system.spawn(make("last", Effect.void), "last")
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["first", "last"]
      )
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* probe.expectMessage, "slow")
    }).pipe(Effect.provide(SystemLive))
  )

  it.scoped("each actor runs with its own services, log annotation and FiberRefs", () => {
    const { layer, logs } = captureLogs()
    const Local = FiberRef.unsafeMake(0)
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const Painter = Actor.make<"tick">()({
        preStart: (ctx) => tickAfter(ctx, "10 millis"),
        receive: (_msg, ctx) =>
          Effect.gen(function* () {
            const color = yield* Color
            const before = yield* FiberRef.get(Local)
            // a FiberRef set here must not be seen by the next actor drained on the same fiber
            yield* FiberRef.set(Local, before + 1)
            yield* Effect.logInfo(`painting ${color}`)
            yield* probe.ref.tell(`${ctx.path} ${color} ${before}`)
          })
      })
      for (const color of ["red", "green", "blue"]) {
        yield* Effect.provideService(system.spawn(Painter, color), Color, color)
      }
      yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(
        (yield* probe.receiveAll).map((r) => r.message),
        ["/user/red red 0", "/user/green green 0", "/user/blue blue 0"]
      )
      const painted = logs.filter((log) => log.message.startsWith("painting"))
      assert.deepStrictEqual(
        painted.map((log) => [log.message, log.annotations.actor]),
        [
          ["painting red", "/user/red"],
          ["painting green", "/user/green"],
          ["painting blue", "/user/blue"]
        ]
      )
    }).pipe(Effect.provide(Layer.merge(SystemLive, layer)))
  })

  it.scoped("actors spawned from one fiber share its services; each logs with its own annotation alone", () => {
    const { layer, logs } = captureLogs()
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const Greeter = Actor.make<"hi">()({
        receive: () => Effect.flatMap(Color, (color) => Effect.logInfo(`hi in ${color}`))
      })
      // One fiber, one set of FiberRefs: the actors share what they start from (the spawner's base), and neither the
      // spawner's annotation nor its log span may reach them.
      const refs = yield* Effect.forEach(["a", "b", "c"], (name) => system.spawn(Greeter, name)).pipe(
        Effect.annotateLogs("request", "r1"),
        Effect.withLogSpan("spawning"),
        Effect.provideService(Color, "teal")
      )
      yield* Effect.forEach(refs, (ref) => ref.tell("hi"), { discard: true })
      yield* TestClock.adjust(0)
      const greeted = logs.filter((log) => log.message.startsWith("hi in"))
      assert.deepStrictEqual(
        greeted.map((log) => [log.message, log.annotations, log.spans]),
        ["a", "b", "c"].map((name) => ["hi in teal", { actor: `/user/${name}` }, []])
      )
      // and they hold one base between them, not FiberRefs of their own
      const bases = new Set(refs.map((ref) => (ref as unknown as CellRef<unknown>).cell.baseRefs))
      assert.strictEqual(bases.size, 1)
    }).pipe(Effect.provide(Layer.merge(SystemLive, layer)))
  })

  it.scoped("each drain starts from the actor's own FiberRefs, more actors than the cache holds included", () => {
    const Local = FiberRef.unsafeMake(0)
    return Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const seen: Array<string> = []
      const Counter = Actor.make<"go">()({
        receive: (_msg, ctx) =>
          Effect.gen(function* () {
            const before = yield* FiberRef.get(Local)
            yield* FiberRef.set(Local, before + 1)
            const annotations = yield* Effect.logAnnotations
            const actor = annotations.pipe(
              HashMap.get("actor"),
              Option.getOrElse(() => "none")
            )
            const color = yield* Color
            seen.push(`${actor === ctx.path ? "own" : `wrong ${String(actor)}`} ${color} ${before}`)
          })
      })
      // 1,100 actors: more than the 1,024 FiberRefs the system keeps, so the second round makes some anew
      const refs = yield* Effect.forEach(
        Array.from({ length: 1_100 }, (_, i) => `c${i}`),
        (name) => system.spawn(Counter, name)
      ).pipe(Effect.provideService(Color, "plum"))
      for (let round = 0; round < 2; round++) {
        yield* Effect.forEach(refs, (ref) => ref.tell("go"), { discard: true })
        yield* TestClock.adjust(0)
      }
      assert.strictEqual(seen.length, 2_200)
      assert.deepStrictEqual(
        seen.filter((line) => line !== "own plum 0"),
        [],
        "every drain saw its own annotation and services, and none saw what an earlier drain set"
      )
    }).pipe(Effect.provide(SystemLive))
  })

  it.scoped("a handler written as Effect.sync that throws is supervised like any other defect", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<string>()
      const Fragile = Actor.make<"boom" | "ping">()({
        preStart: () => probe.ref.tell("started"),
        receive: (msg) =>
          Effect.sync(() => {
            if (msg === "boom") throw new Error("boom")
            probe.ref.unsafeTell("pong")
          })
      })
      const ref = yield* system.spawn(Fragile, "fragile")
      yield* ref.tell("boom")
      yield* ref.tell("ping")
      // the guardian restarts it (preStart again), and the next message is handled by the new incarnation
      assert.deepStrictEqual(yield* probe.expectMessage, "started")
      assert.deepStrictEqual(yield* probe.expectMessage, "started")
      assert.deepStrictEqual(yield* probe.expectMessage, "pong")
    }).pipe(Effect.provide(SystemLive))
  )

  // The order of two different receivers within one millisecond is the fast path's, not a guarantee: with effect's
  // internals out of reach (TICKWORK_EFFECT_INTERNALS=public) a handler goes through the run loop at the end of the turn.
  it.scoped.skipIf(effectInternals.mode === "public")(
    "a tick for an idle actor is handled as it fires, before what fires after it in the same turn",
    () =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        const Quick = Actor.make<"tick">()({
          preStart: (ctx) => Effect.zipRight(tickAfter(ctx, "10 millis"), probe.ref.tell("started")),
          receive: () => Effect.sync(() => probe.ref.unsafeTell("handled"))
        })
        yield* system.spawn(Quick, "quick")
        assert.strictEqual(yield* probe.expectMessage, "started")
        // due in the same millisecond and armed after the actor's timer: it fires next, straight to the probe
        yield* system.scheduler.scheduleOnce("10 millis", probe.ref, "fired next")
        yield* TestClock.adjust("10 millis")
        // through the mailbox and the dispatcher, the tick would be handled at the end of the turn, after it
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.message),
          ["handled", "fired next"]
        )
      }).pipe(Effect.provide(SystemLive))
  )

  it.scoped(
    "a tick handled as it fires whose handler suspends keeps the actor's order: what it told itself waits",
    () =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        const Sleeper = Actor.make<"tick" | "after">()({
          preStart: (ctx) => tickAfter(ctx, "10 millis"),
          receive: (msg, ctx) => {
            if (msg === "after") return probe.ref.tell("after")
            // told while the tick's handler is being made, before it ran: it must wait for the handler to finish
            ctx.self.unsafeTell("after")
            return Effect.zipRight(Effect.sleep("50 millis"), probe.ref.tell("tick done"))
          }
        })
        yield* system.spawn(Sleeper, "sleeper")
        yield* TestClock.adjust("10 millis")
        assert.deepStrictEqual(yield* probe.receiveAll, [])
        yield* TestClock.adjust("50 millis")
        assert.deepStrictEqual(
          (yield* probe.receiveAll).map((r) => r.message),
          ["tick done", "after"]
        )
      }).pipe(Effect.provide(SystemLive))
  )

  it.scoped(
    "a tick handled as it fires by an Effect.sync handler that throws is supervised like any other defect",
    () =>
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const probe = yield* TestProbe.make<string>()
        let ticks = 0
        const Fragile = Actor.make<"tick">()({
          preStart: (ctx) => Effect.zipRight(probe.ref.tell("started"), tickAfter(ctx, "10 millis")),
          receive: () =>
            Effect.sync(() => {
              if (++ticks === 1) throw new Error("boom")
              probe.ref.unsafeTell("ticked")
            })
        })
        yield* system.spawn(Fragile, "fragile")
        assert.strictEqual(yield* probe.expectMessage, "started")
        yield* TestClock.adjust("10 millis")
        // restarted by the guardian: a new incarnation with a new timer, whose tick is handled
        assert.strictEqual(yield* probe.expectMessage, "started")
        yield* TestClock.adjust("10 millis")
        assert.strictEqual(yield* probe.expectMessage, "ticked")
      }).pipe(Effect.provide(SystemLive))
  )

  it.scoped("after `throughput` messages in a row an actor lets the other ready actors go first", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const handled: Array<string> = []
      const Recorder = Actor.make<number>()({
        receive: (n, ctx) =>
          Effect.sync(() => {
            handled.push(`${ctx.path}#${n}`)
          })
      })
      const busy = yield* system.spawn(Recorder, "busy")
      const other = yield* system.spawn(Recorder, "other")
      for (let i = 0; i < 100; i++) yield* busy.tell(i)
      yield* other.tell(0)
      yield* Effect.yieldNow()
      while (handled.length < 101) yield* Effect.yieldNow()
      // throughput 10: the busy actor handles 10, then the other actor's message comes before the busy actor's rest
      assert.strictEqual(handled.indexOf("/user/other#0"), 10)
      assert.deepStrictEqual(
        handled.filter((entry) => entry.startsWith("/user/busy")),
        Array.from({ length: 100 }, (_, i) => `/user/busy#${i}`)
      )
    }).pipe(Effect.provide(ActorSystem.layer({ name: "fair", throughput: 10 })))
  )

  it.scoped("actors that keep telling each other leave room for other fibers and for timers", () =>
    Effect.gen(function* () {
      const system = yield* ActorSystem.ActorSystem
      const probe = yield* TestProbe.make<"timer">()
      let exchanged = 0
      const players: Array<ActorRef.ActorRef<"ball" | "tick">> = []
      const Player = Actor.make<"ball" | "tick">()({
        preStart: (ctx) => (ctx.path === "/user/ping" ? tickAfter(ctx, "5 millis") : Effect.void),
        receive: (msg, ctx) =>
          Effect.suspend(() => {
            if (msg === "tick") return probe.ref.tell("timer")
            exchanged++
            return players[ctx.path === "/user/ping" ? 1 : 0]!.tell("ball")
          })
      })
      const ping = yield* system.spawn(Player, "ping")
      const pong = yield* system.spawn(Player, "pong")
      players.push(ping, pong)
      yield* ping.tell("ball")
      // Had the rally run as one synchronous loop, this fiber would never get back control.
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      const seen = exchanged
      assert.isAbove(seen, 0)
      yield* TestClock.adjust("5 millis")
      assert.strictEqual(yield* probe.expectMessage, "timer")
      assert.isAbove(exchanged, seen)
      yield* system.stop(ping)
      yield* system.stop(pong)
    }).pipe(Effect.provide(SystemLive))
  )
})
