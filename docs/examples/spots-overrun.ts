import { Duration, Effect } from "effect"
import { ActorSystem, OverrunPolicy, Spot, type Tick } from "tickwork"

// The same slow handler (450 ms for a 200 ms period) under each overrun policy, on the real clock.
const describe = (tick: Tick.Tick) =>
  `#${tick.scheduledIndex} (delivery ${tick.deliveryIndex}), delay ${Duration.toMillis(tick.delay)} ms, ` +
  `skipped ${tick.skippedTicks}, dropped so far ${tick.scheduledIndex - tick.deliveryIndex}`

const slowTimer = (overrun: OverrunPolicy.OverrunPolicy) =>
  Spot.spawn(
    {
      initialState: 0,
      onStart: (ctx) =>
        Effect.orDie(
          ctx.timers.start({
            name: "slow",
            period: "200 millis",
            overrun,
            handler: (tick) => Effect.zipRight(Effect.logInfo(describe(tick)), Effect.sleep("450 millis"))
          })
        )
    },
    String(overrun).replace(/[()]/g, "")
  )

const main = Effect.gen(function* () {
  yield* slowTimer(OverrunPolicy.SkipLateTicks)
  yield* slowTimer(OverrunPolicy.CatchUpBounded(2))
  yield* slowTimer(OverrunPolicy.DelayNextTick)
  // registration errors are typed: nothing is registered
  const spot = yield* Spot.spawn({ initialState: 0 }, "config")
  const error = yield* Effect.flip(
    spot.run((ctx) =>
      ctx.timers.start({ name: "bad", period: 0, overrun: OverrunPolicy.CatchUpBounded(0), handler: () => Effect.void })
    )
  )
  yield* Effect.logInfo(`registration failed: ${error.message}`)
  yield* Effect.sleep("2 seconds")
}).pipe(Effect.provide(ActorSystem.layer({ name: "spots-overrun" })))

// `npx tsx docs/examples/spots-overrun.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
