import { Effect } from "effect"
import { ActorSystem, OverrunPolicy, Spot, type SpotTimers } from "tickwork"

// Options as a JavaScript caller or a config file might give them: each comes back as a typed error naming the
// problem, and nothing is registered.
const attempts: ReadonlyArray<readonly [string, SpotTimers.TimerOptions<number>]> = [
  ["policy as a string", { name: "a", period: 100, overrun: "SkipLateTicks" as never, handler: () => Effect.void }],
  [
    "CatchUpBounded(0)",
    { name: "b", period: 100, overrun: OverrunPolicy.CatchUpBounded(0), handler: () => Effect.void }
  ],
  ["a 0.5 ms period", { name: "c", period: 0.5, handler: () => Effect.void }],
  ["an empty name", { name: "", period: 100, handler: () => Effect.void }],
  ["an Effect as the handler", { name: "d", period: 100, handler: Effect.void as never }]
]

const main = Effect.gen(function* () {
  const spot = yield* Spot.spawn({ initialState: 0 }, "config")
  for (const [label, options] of attempts) {
    const result = yield* Effect.either(spot.run((ctx) => ctx.timers.start(options)))
    yield* Effect.logInfo(`${label.padEnd(24)} -> ${result._tag === "Right" ? "ok" : result.left.message}`)
  }
  yield* Effect.logInfo(`timers registered: ${(yield* spot.run((ctx) => ctx.timers.names)).length}`)
  // spawn checks its options too: `onstart` is a typo, which would otherwise be ignored
  const typo = yield* Effect.flip(Spot.spawn({ initialState: 0, onstart: () => Effect.void } as Spot.Options<number>))
  yield* Effect.logInfo(typo.message)
}).pipe(Effect.provide(ActorSystem.layer({ name: "spots-bad-input" })))

// `npx tsx docs/examples/spots-bad-input.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
