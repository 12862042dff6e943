import { Effect } from "effect"
import { ActorSystem, Spot } from "tickwork"

interface Room {
  readonly players: ReadonlyArray<string>
  readonly round: number
}

const main = Effect.gen(function* () {
  const room = yield* Spot.spawn<Room>(
    {
      initialState: { players: [], round: 0 },
      // the Spot's first item: register a timer; its ticks enter the Spot's queue like any other work
      onStart: (ctx) =>
        Effect.orDie(
          ctx.timers.start({
            name: "round",
            period: "300 millis",
            handler: (tick) =>
              Effect.gen(function* () {
                yield* ctx.update((s) => ({ ...s, round: s.round + 1 }))
                const { players, round } = yield* ctx.state
                yield* Effect.logInfo(`round ${round} for ${players.join(", ")} (tick #${tick.scheduledIndex})`)
              })
          })
        ),
      onStop: (state) => Effect.logInfo(`room closed after ${state.round} rounds`)
    },
    "room-1"
  )
  // work from outside enters the same queue, one item at a time: no locks around the state
  yield* room.submit((ctx) => ctx.update((s) => ({ ...s, players: [...s.players, "ada"] })))
  yield* room.submit((ctx) => ctx.update((s) => ({ ...s, players: [...s.players, "linus"] })))
  yield* Effect.sleep("1 second")
  const players = yield* room.run((ctx) => Effect.map(ctx.state, (s) => s.players.length))
  yield* Effect.logInfo(`${players} players`)
  yield* room.stop // cancels the timer, runs onStop
}).pipe(Effect.provide(ActorSystem.layer({ name: "spots-quickstart" })))

// `npx tsx docs/examples/spots-quickstart.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
