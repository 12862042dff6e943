/**
 * Every context a handler gets is safe to destructure: its operations are properties that work off their object.
 * (`ctx` and `ctx.timers` of an actor: test/Timers.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref, TestClock } from "effect"
import { ActorSystem, Entity, Grain, Grains, Passivation, Spot } from "tickwork"

describe("contexts are safe to destructure", () => {
  it.effect("a grain's props (onActivate) and context (onReceive)", () =>
    Effect.gen(function* () {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const note = (line: string) => Ref.update(seen, (lines) => [...lines, line])
      const Detached: Grain.Grain<"go" | "tick" | "ask", void> = Grain.make<"go" | "tick" | "ask">()({
        name: "detached",
        passivation: Passivation.never,
        onActivate: ({ schedule, scheduleOnce, scheduleWithCron, cancelSchedule, timers, identity }) =>
          Effect.gen(function* () {
            yield* Effect.orDie(schedule("tick", "1 second", { reference: "every" }))
            yield* Effect.orDie(scheduleOnce("tick", "1 hour", { reference: "once" }))
            yield* Effect.orDie(scheduleWithCron("tick", "0 0 * * * ?", { reference: "cron" }))
            yield* Effect.orDie(cancelSchedule("once"))
            yield* note(`${identity.key}: ${(yield* timers).map((t) => t.reference).join(",")}`)
          }),
        onReceive: ({ message, reply, isTick, tellGrain }) =>
          message === "ask"
            ? reply(isTick)
            : message === "go"
              ? Effect.orDie(tellGrain(Detached, "other", "tick"))
              : note(`tick ${isTick}`)
      })
      yield* Effect.gen(function* () {
        yield* Grains.tell(Detached, "g-1", "go")
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* Grains.ask(Detached, "g-1", "ask"), false)
      }).pipe(Effect.provide(Grains.layer([Detached]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "grain" })))))
      const lines = yield* Ref.get(seen)
      assert.includeMembers([...lines], ["g-1: every,cron", "other: every,cron", "tick false", "tick true"])
    })
  )

  it.effect("an entity's context", () =>
    Effect.gen(function* () {
      type Cmd = { readonly _tag: "Poll" } | { readonly _tag: "Later" } | { readonly _tag: "Start" }
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      const Detached = Entity.make<{ readonly polls: number }, Cmd>()({
        name: "Detached",
        initialize: () => Effect.succeed({ polls: 0 }),
        commands: {
          Start: (
            _cmd,
            model,
            { startPeriodicTimer, startRandomizedPeriodicTimer, scheduleExecuteOnActorContext, send }
          ) =>
            Effect.gen(function* () {
              yield* Effect.orDie(startPeriodicTimer("100 millis", { _tag: "Poll" }))
              yield* Effect.orDie(startRandomizedPeriodicTimer("1 hour", { _tag: "Later" }))
              yield* Effect.orDie(
                scheduleExecuteOnActorContext(
                  "50 millis",
                  Ref.update(log, (l) => [...l, "later"])
                )
              )
              yield* send({ _tag: "Poll" })
              return model
            }),
          Poll: (_cmd, model, { id, model: current }) =>
            Effect.gen(function* () {
              const read = yield* current
              yield* Ref.update(log, (l) => [...l, `${id} poll ${read.polls}`])
              return { polls: model.polls + 1 }
            }),
          Later: (_cmd, model) => Effect.succeed(model)
        }
      })
      const registry = yield* Entity.makeRegistry(Detached)
      yield* registry.tell("e-1", { _tag: "Start" })
      yield* TestClock.adjust("250 millis")
      assert.deepStrictEqual(yield* Ref.get(log), ["e-1 poll 0", "later", "e-1 poll 1", "e-1 poll 2"])
    }).pipe(Effect.scoped, Effect.provide(ActorSystem.layer({ name: "entity" })))
  )

  it.effect("a Spot's context and its timers", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn<number>(
        {
          initialState: 0,
          onStart: ({ timers, update }) =>
            Effect.orDie(timers.start({ name: "count", period: "100 millis", handler: () => update((n) => n + 1) }))
        },
        "counter"
      )
      yield* TestClock.adjust("350 millis")
      assert.strictEqual(yield* spot.run(({ state }) => state), 3)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "spot" })))
  )
})
