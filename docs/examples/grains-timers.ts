import { Clock, Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers, Passivation } from "tickwork"

const t0 = Date.now()
/** Prints a line stamped with the milliseconds since the start. */
const log = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now - t0).padStart(5)} ms  ${what}`))
  )

type FeedMsg =
  | { readonly _tag: "Poll" }
  | { readonly _tag: "Flush" }
  | { readonly _tag: "SlowDown" }
  | { readonly _tag: "Stop" }
  | { readonly _tag: "ListTimers" }

const showTimers = (timers: ReadonlyArray<GrainTimers.TimerInfo>, now: number) =>
  timers.map((t) => `${t.reference} (${t.kind}, next in ${t.nextDue === undefined ? "-" : t.nextDue - now} ms)`)

const Feed = Grain.make<FeedMsg>()({
  name: "feed",
  passivation: Passivation.never,
  onActivate: (props) =>
    Effect.gen(function* () {
      // every 200 ms, under the reference "poll"
      yield* props.schedule({ _tag: "Poll" }, "200 millis", GrainTimers.withTimerReference("poll"))
      // once after 500 ms; without a reference the grain makes one up ("$timer-1", "$timer-2", ...)
      const flush = yield* props.scheduleOnce({ _tag: "Flush" }, "500 millis")
      yield* log(`activated: timers "poll" and "${flush}"`)
    }).pipe(Effect.orDie), // constant durations: a failure here would be a bug
  onReceive: (ctx) =>
    Effect.gen(function* () {
      switch (ctx.message._tag) {
        case "Poll":
        case "Flush":
          return yield* log(`${ctx.message._tag} (isTick: ${ctx.isTick})`)
        case "SlowDown":
          // the same reference: the 200 ms timer is cancelled and replaced, never both
          yield* ctx.schedule({ _tag: "Poll" }, "400 millis", { reference: "poll" })
          return yield* log("poll every 400 ms now")
        case "Stop":
          yield* ctx.cancelSchedule("poll")
          return yield* log("poll cancelled")
        case "ListTimers":
          // ctx.timers inside the grain, grains.timers(kind, key) outside: the same list
          return yield* ctx.reply(yield* ctx.timers)
      }
    })
})

const GrainsLive = Grains.layer([Feed]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "feeds" })))

const main = Effect.gen(function* () {
  const grains = yield* Grains.Grains
  yield* Grains.tell(Feed, "f-1", { _tag: "ListTimers" }) // any message activates the grain
  yield* Effect.sleep("550 millis")
  yield* log(`grains.timers: ${showTimers(yield* grains.timers(Feed, "f-1"), yield* Clock.currentTimeMillis)}`)
  yield* Grains.tell(Feed, "f-1", { _tag: "SlowDown" })
  yield* Effect.sleep("900 millis")
  yield* Grains.tell(Feed, "f-1", { _tag: "Stop" })
  const listed = yield* Grains.ask<ReadonlyArray<GrainTimers.TimerInfo>, FeedMsg>(Feed, "f-1", { _tag: "ListTimers" })
  yield* log(`ctx.timers after the cancel: ${listed?.length ?? 0} timers`)
}).pipe(Effect.provide(GrainsLive))

// `npx tsx docs/examples/grains-timers.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
