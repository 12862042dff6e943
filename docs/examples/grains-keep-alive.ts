import { Clock, Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers, Passivation } from "tickwork"

const t0 = Date.now()
/** Prints a line stamped with the milliseconds since the start. */
const log = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now - t0).padStart(5)} ms  ${what}`))
  )

type Msg = "start" | "beat" | "remind"

/** Beats every 200 ms and passivates after 500 ms without messages, unless the beat keeps it alive. */
const beating = (name: string, ...options: ReadonlyArray<GrainTimers.TimerOptions>) =>
  Grain.make<Msg>()({
    name,
    passivation: Passivation.idle("500 millis"),
    onActivate: (props) => Effect.asVoid(Effect.orDie(props.schedule("beat", "200 millis", ...options))),
    onReceive: () => Effect.void,
    onDeactivate: () => log(`${name} deactivated`)
  })

/** A one-shot of 1 second, twice the idle timeout of 500 ms. */
const reminding = (name: string, ...options: ReadonlyArray<GrainTimers.TimerOptions>) =>
  Grain.make<Msg>()({
    name,
    passivation: Passivation.idle("500 millis"),
    onActivate: (props) => Effect.asVoid(Effect.orDie(props.scheduleOnce("remind", "1 second", ...options))),
    onReceive: (ctx) =>
      ctx.message === "remind" ? log(`${name}: reminder delivered (${ctx.isTick ? "tick" : "told"})`) : Effect.void,
    onDeactivate: () => log(`${name} deactivated`)
  })

const Plain = beating("plain") // ticks are not activity: passivates at 500 ms, the beat stops with it
const KeptAlive = beating("kept-alive", GrainTimers.withTimerKeepAlive()) // active for as long as the beat runs
// a keep-alive one-shot holds the grain until it has fired; the grain passivates one idle period later
const Holding = reminding("holding", GrainTimers.withTimerKeepAlive())
const Forgetful = reminding("forgetful") // passivates at 500 ms: its one-shot is lost
const kinds = [Plain, KeptAlive, Holding, Forgetful]

const GrainsLive = Grains.layer(kinds).pipe(Layer.provideMerge(ActorSystem.layer({ name: "keep-alive" })))

const main = Effect.gen(function* () {
  yield* Effect.forEach(kinds, (kind) => Grains.tell(kind, "k", "start"))
  // Waking a grain from outside: a system-scheduler task that tells it reactivates it (not durable either).
  const system = yield* ActorSystem.ActorSystem
  yield* system.scheduler.scheduleOnceFunction("1300 millis", Grains.tell(Forgetful, "k", "remind"))
  yield* Effect.sleep("1650 millis")
  const grains = yield* Grains.Grains
  const active = yield* Effect.forEach(kinds, (kind) =>
    Effect.map(grains.isActive(kind, "k"), (yes) => `${kind.name} ${yes}`)
  )
  yield* log(`active: ${active.join(", ")}`)
}).pipe(Effect.provide(GrainsLive))

// `npx tsx docs/examples/grains-keep-alive.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
