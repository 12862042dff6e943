import { Clock, Effect, Layer, Logger, LogLevel, Metric } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers, Metrics, Passivation } from "tickwork"

const t0 = Date.now()
/** Prints a line stamped with the milliseconds since the start. */
const log = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now - t0).padStart(5)} ms  ${what}`))
  )

type Msg = { readonly _tag: "Flush" } | { readonly _tag: "Status" }

const Batcher = Grain.make<Msg>()({
  name: "batcher",
  passivation: Passivation.never,
  mailboxCapacity: 2, // a bounded mailbox: a tick that finds it full is dropped, the timer keeps firing
  onActivate: (props) =>
    Effect.as(
      Effect.orDie(props.schedule({ _tag: "Flush" }, "100 millis", GrainTimers.withTimerReference("flush"))),
      0
    ),
  onReceive: (ctx, flushes) =>
    Effect.gen(function* () {
      if (ctx.message._tag === "Status") return flushes
      // a flush takes 250 ms, longer than the interval: ticks queue up, but never run concurrently
      yield* log(`flush ${flushes + 1} (isTick: ${ctx.isTick})`)
      yield* Effect.sleep("250 millis")
      if (flushes + 1 === 3) {
        // the ticks still queued belong to a cancelled timer: they are dropped, never handled
        yield* Effect.orDie(ctx.cancelSchedule("flush"))
        yield* log("flush timer cancelled")
      }
      return flushes + 1
    })
})

const GrainsLive = Grains.layer([Batcher]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "delivery" })))

const dropped = (reason: Metrics.DropReason) => Effect.map(Metric.value(Metrics.ticksDropped(reason)), (s) => s.count)

const main = Effect.gen(function* () {
  yield* Grains.tell(Batcher, "b-1", { _tag: "Status" })
  yield* Effect.sleep("1200 millis")
  yield* log(`ticks dropped: mailbox full ${yield* dropped("mailbox_full")}, stale ${yield* dropped("stale")}`)
}).pipe(
  Effect.provide(GrainsLive),
  // each dropped tick is logged as a warning; this example counts them instead
  Logger.withMinimumLogLevel(LogLevel.Error)
)

// `npx tsx docs/examples/grains-delivery.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
