import { Clock, Effect, Schedule } from "effect"
import { Actor, ActorSystem } from "tickwork"

type Msg = { readonly _tag: "Tick"; readonly mode: string } | { readonly _tag: "Stall"; readonly millis: number }

const tick = (mode: string): Msg => ({ _tag: "Tick", mode })

// Blocks the whole process, like a long GC pause or a synchronous CPU burst: no timer can fire meanwhile.
const blockEventLoop = (millis: number) =>
  Effect.sync(() => {
    const until = Date.now() + millis
    while (Date.now() < until) {}
  })

const Modes = Actor.make<Msg>()({
  preStart: (ctx) =>
    Effect.gen(function* () {
      // next tick 250 ms after the previous one was sent
      yield* ctx.timers.startTimerWithFixedDelay("delay", tick("fixed delay"), "250 millis")
      // ticks on the grid 250, 500, 750, ... ms after the start
      yield* ctx.timers.startTimerAtFixedRate("rate", tick("fixed rate"), "250 millis")
      // ticks 100, 300, 700 and 1500 ms after the start (delays 100, 200, 400, 800), then the timer ends
      const backoff = Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(4)))
      yield* ctx.timers.startTimerWithSchedule("backoff", tick("backoff"), backoff)
      return yield* Clock.currentTimeMillis
    }).pipe(Effect.orDie),
  receive: (msg, _ctx, start) =>
    msg._tag === "Stall"
      ? Effect.as(blockEventLoop(msg.millis), start)
      : Clock.currentTimeMillis.pipe(
          Effect.flatMap((now) => Effect.logInfo(`${msg.mode.padEnd(11)} tick at ${now - start} ms`)),
          Effect.as(start)
        )
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const modes = yield* system.spawn(Modes, "modes")
  yield* Effect.sleep("600 millis")
  yield* modes.tell({ _tag: "Stall", millis: 800 }) // from about 600 to 1400 ms
  yield* Effect.sleep("1800 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "timer-modes" })))

// `npx tsx docs/examples/timer-modes.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
