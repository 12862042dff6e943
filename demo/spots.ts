/**
 * Spots demo: one Spot timer whose handler is slower than its period, under each overrun policy, on the real clock.
 * Each line is a tick as the handler saw it: which scheduled tick it is, when it was due and started (relative to the
 * timer's start), its delay, the ticks skipped just before it and the ticks dropped so far. About 4 seconds.
 *
 * `npx tsx demo/spots.ts` runs it; `import { spotsDemo } from "./spots.js"` gives the effect.
 */
import { Duration, Effect } from "effect"
import { ActorSystem, OverrunPolicy, Spot, type Tick } from "tickwork"
import { print } from "./output.js"

const PERIOD = 150
const HANDLER = 350
const RUN = 1300

const seconds = (millis: number) => `+${(millis / 1000).toFixed(3)}s`
const pad = (s: string | number, width: number) => String(s).padStart(width)

const line = (origin: number, tick: Tick.Tick) =>
  [
    pad(`#${tick.scheduledIndex}`, 6),
    pad(tick.deliveryIndex, 9),
    pad(seconds(tick.scheduledTime - origin), 11),
    pad(seconds(tick.startTime - origin), 10),
    pad(`${Duration.toMillis(tick.delay)} ms`, 8),
    pad(tick.skippedTicks, 8),
    pad(tick.scheduledIndex - tick.deliveryIndex, 15)
  ].join("")

const runPolicy = (overrun: OverrunPolicy.OverrunPolicy, explanation: string) =>
  Effect.gen(function* () {
    yield* print(`\n${overrun}: ${explanation}`)
    yield* print("  tick delivery  scheduled   started   delay skipped dropped so far")
    // the timer's start: its first tick is due one period later
    let origin: number | undefined
    const spot = yield* Spot.spawn({
      initialState: 0,
      onStart: (ctx) =>
        Effect.orDie(
          ctx.timers.start({
            name: "physics",
            period: PERIOD,
            overrun,
            handler: (tick) =>
              Effect.gen(function* () {
                yield* ctx.update((n) => n + 1)
                origin ??= tick.scheduledTime - PERIOD
                yield* print(line(origin, tick))
                yield* Effect.sleep(HANDLER) // the slow part, on the Spot's turn
              })
          })
        )
    })
    yield* Effect.sleep(RUN)
    const handled = yield* spot.run((ctx) => ctx.state)
    yield* spot.stop
    yield* print(`  ${handled} ticks handled in ${RUN} ms; the Spot stopped, its timer with it`)
  })

/**
 * The demo: the same slow handler under `SkipLateTicks`, `CatchUpBounded(2)` and `DelayNextTick`.
 */
export const spotsDemo: Effect.Effect<void> = Effect.gen(function* () {
  yield* print(
    `Spot timers: period ${PERIOD} ms, the handler takes ${HANDLER} ms, so ticks go by while it runs. ` +
      "Times are relative to the timer's start."
  )
  yield* runPolicy(OverrunPolicy.SkipLateTicks, "the ticks that went by are skipped; one runs for the latest time")
  yield* runPolicy(OverrunPolicy.CatchUpBounded(2), "up to 2 ticks that went by still run; older ones are dropped")
  yield* runPolicy(OverrunPolicy.DelayNextTick, "no fixed rate: the next tick is due a period after the handler ended")
}).pipe(Effect.provide(ActorSystem.layer({ name: "spots-demo" })), Effect.orDie)

if (import.meta.filename === process.argv[1]) {
  Effect.runPromise(spotsDemo).catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
