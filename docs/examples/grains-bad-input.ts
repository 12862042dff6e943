import { Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains, Passivation } from "tickwork"

const Echo = Grain.make<string>()({ name: "echo", onReceive: (ctx) => ctx.reply(ctx.message) })

// Grain.make and the Passivation constructors never throw: the layer reports what it cannot use
const Sloppy = Grain.make<string>()({
  name: "sloppy",
  passivation: Passivation.idle("soon" as never),
  onReceive: (ctx) => ctx.reply(ctx.message)
})

const withSystem = <E>(grains: Layer.Layer<Grains.Grains, E, ActorSystem.ActorSystem>) =>
  grains.pipe(Layer.provideMerge(ActorSystem.layer({ name: "grains-bad-input" })))

const main = Effect.gen(function* () {
  const sloppy = yield* Effect.flip(Effect.provide(Grains.Grains, withSystem(Grains.layer([Echo, Sloppy]))))
  yield* Effect.logInfo(sloppy.message)

  yield* Effect.gen(function* () {
    const users = new Map<string, string>()
    const missing = yield* Effect.flip(Grains.tell(Echo, users.get("bob")!, "hello"))
    yield* Effect.logInfo(missing.message)
    const soon = yield* Effect.flip(Grains.ask(Echo, "e-1", "hello", "soon" as never))
    yield* Effect.logInfo(soon.message)
    yield* Effect.logInfo(`activations: ${yield* (yield* Grains.Grains).activations}`)
  }).pipe(Effect.provide(withSystem(Grains.layer([Echo]))))
})

// `npx tsx docs/examples/grains-bad-input.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
