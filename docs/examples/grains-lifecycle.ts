import { Clock, Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains, Passivation } from "tickwork"

const t0 = Date.now()
/** Prints a line stamped with the milliseconds since the start. */
const log = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now - t0).padStart(5)} ms  ${what}`))
  )

type Msg = "hello" | "crash"

/** A kind that logs its lifecycle; the state counts the messages of the activation. */
const make = (name: string, passivation?: Passivation.Passivation) =>
  Grain.make<Msg>()({
    name,
    ...(passivation === undefined ? {} : { passivation }),
    onActivate: (props) => Effect.as(log(`${name}/${props.identity.key} activated`), 0),
    onReceive: (ctx, count) =>
      ctx.message === "crash" ? Effect.die("bug") : Effect.as(log(`${name} handles hello`), count + 1),
    onDeactivate: (props, count) => log(`${name}/${props.identity.key} deactivated after ${count} messages`)
  })

const Idle = make("idle", Passivation.idle("500 millis")) // deactivates after 500 ms without messages
const Counted = make("counted", Passivation.messageCount(2)) // deactivates after handling 2 messages
const Pinned = make("pinned", Passivation.never) // stays until a failure or the shutdown
const Default = make("default") // the layer's default below (15 minutes if the layer sets none)

const Failing = Grain.make<Msg>()({
  name: "failing",
  onActivate: () => Effect.fail("no database"), // no activation, no timer; asks fail with GrainActivationFailed
  onReceive: () => Effect.void
})

const GrainsLive = Grains.layer([Idle, Counted, Pinned, Default, Failing], {
  passivation: Passivation.idle("1 minute")
}).pipe(Layer.provideMerge(ActorSystem.layer({ name: "lifecycle" })))

const main = Effect.gen(function* () {
  const grains = yield* Grains.Grains
  yield* Grains.tell(Idle, "i", "hello")
  yield* Grains.tell(Default, "d", "hello")
  yield* Effect.sleep("300 millis")
  yield* Grains.tell(Idle, "i", "hello") // activity: the idle clock restarts

  // the third message arrives while the first activation deactivates: it waits for the next activation
  yield* Effect.forEach([1, 2, 3], () => Grains.tell(Counted, "c", "hello"))

  yield* Grains.tell(Pinned, "p", "hello")
  yield* Grains.tell(Pinned, "p", "crash") // a failure deactivates the grain (onDeactivate runs)
  yield* Grains.tell(Pinned, "p", "hello") // ... and the next message activates it again

  const failed = yield* Effect.flip(Grains.ask(Failing, "f", "hello"))
  yield* log(`failing: ${failed._tag}, active: ${yield* grains.isActive(Failing, "f")}`)

  yield* Effect.sleep("700 millis")
  yield* log(`idle active: ${yield* grains.isActive(Idle, "i")}; activations: ${yield* grains.activations}`)
  yield* log("shutdown")
}).pipe(Effect.provide(GrainsLive)) // the shutdown deactivates the grains that are still active

// `npx tsx docs/examples/grains-lifecycle.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
