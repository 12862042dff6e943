import { Cause, Effect } from "effect"
import { Actor, ActorSystem, EventStream } from "tickwork"

// Subscribed to the event stream: hears about failed function tasks and undeliverable messages.
const Alarm = Actor.make<EventStream.SchedulerError | EventStream.DeadLetter>()({
  receive: (event) =>
    event._tag === "SchedulerError"
      ? Effect.logWarning(`alarm: a scheduled task failed: ${Cause.squash(event.cause)}`)
      : Effect.logWarning(`alarm: ${String(event.message)} to ${event.recipient} is a dead letter (${event.reason})`)
})

const Target = Actor.make<string>()({ receive: (text) => Effect.logInfo(text) })

let runs = 0
const flakyTask = Effect.suspend(() => {
  runs++
  return runs === 2 ? Effect.fail("downstream unavailable") : Effect.logInfo(`task run ${runs}`)
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const alarm = yield* system.spawn(Alarm, "alarm")
  yield* system.eventStream.subscribe(alarm, EventStream.SchedulerError)
  yield* system.eventStream.subscribe(alarm, EventStream.DeadLetter)

  // A failing function task is logged at error level and published as SchedulerError; its schedule goes on.
  yield* system.scheduler.scheduleAtFixedRateFunction("100 millis", "200 millis", flakyTask)

  // A message schedule to a stopped target: the message becomes a DeadLetter (never a SchedulerError).
  const target = yield* system.spawn(Target, "target")
  yield* system.stop(target)
  yield* system.scheduler.scheduleOnce("200 millis", target, "wake up")

  yield* Effect.sleep("800 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "error-routing" })))

// `npx tsx docs/examples/error-routing.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
