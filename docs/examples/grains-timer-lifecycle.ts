import { Clock, Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers, Passivation } from "tickwork"

const t0 = Date.now()
/** Prints a line stamped with the milliseconds since the start. */
const log = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now - t0).padStart(5)} ms  ${what}`))
  )

type Msg = { readonly _tag: "Sample" } | { readonly _tag: "Remind" } | { readonly _tag: "Arm" }

const references = (timers: ReadonlyArray<GrainTimers.TimerInfo>) => `[${timers.map((t) => t.reference).join(", ")}]`

const Sensor = Grain.make<Msg>()({
  name: "sensor",
  passivation: Passivation.idle("600 millis"),
  onActivate: (props) =>
    Effect.gen(function* () {
      // dormant until onActivate returns: the tick due at 200 ms comes once, right after the activation
      yield* props.schedule({ _tag: "Sample" }, "200 millis", GrainTimers.withTimerReference("sample"))
      yield* log("activating (a 300 ms warm-up)")
      yield* Effect.sleep("300 millis")
      yield* log("activated")
    }).pipe(Effect.orDie),
  onReceive: (ctx) =>
    Effect.gen(function* () {
      switch (ctx.message._tag) {
        case "Sample":
          return yield* log(ctx.isTick ? "sample (tick)" : "sample (told)")
        case "Arm":
          // a one-shot far in the future: lost when the grain passivates
          yield* ctx.scheduleOnce({ _tag: "Remind" }, "5 seconds", GrainTimers.withTimerReference("reminder"))
          return yield* log(`armed; timers ${references(yield* ctx.timers)}`)
        case "Remind":
          return yield* log("never printed: the grain passivated first")
      }
    }),
  onDeactivate: (props) =>
    Effect.gen(function* () {
      // every timer is already stopped here, and scheduling fails
      const scheduled = yield* Effect.either(props.scheduleOnce({ _tag: "Sample" }, "1 second"))
      const outcome = scheduled._tag === "Left" ? scheduled.left._tag : "scheduled"
      yield* log(`deactivating; timers ${references(yield* props.timers)}; scheduleOnce -> ${outcome}`)
    })
})

const GrainsLive = Grains.layer([Sensor]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "timer-lifecycle" })))

const main = Effect.gen(function* () {
  const grains = yield* Grains.Grains
  // activates the grain; ticks do not keep it alive: it passivates 600 ms later
  yield* Grains.tell(Sensor, "s-1", { _tag: "Arm" })
  yield* Effect.sleep("1400 millis")
  // no tick reactivated the grain, and no timer is left
  yield* log(
    `active: ${yield* grains.isActive(Sensor, "s-1")}; timers ${references(yield* grains.timers(Sensor, "s-1"))}`
  )
  // a message reactivates it, with only the timers that onActivate registers again
  yield* Grains.tell(Sensor, "s-1", { _tag: "Sample" })
  yield* Effect.sleep("400 millis")
  yield* log(`reactivated; timers ${references(yield* grains.timers(Sensor, "s-1"))}`)
}).pipe(Effect.provide(GrainsLive))

// `npx tsx docs/examples/grains-timer-lifecycle.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
