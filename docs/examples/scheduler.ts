import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

const Printer = Actor.make<string>()({ receive: (text) => Effect.logInfo(text) })

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const printer = yield* system.spawn(Printer, "printer")
  const { scheduler } = system

  // The four methods: a message or a function, once or on a fixed grid.
  yield* scheduler.scheduleOnce("200 millis", printer, "wake up")
  yield* scheduler.scheduleOnceFunction("300 millis", Effect.logInfo("one-shot task"))
  const reminders = yield* scheduler.scheduleAtFixedRate("100 millis", "400 millis", printer, "reminder")
  const alive = yield* scheduler.scheduleAtFixedRateFunction("0 millis", "500 millis", Effect.logInfo("still alive"))

  yield* Effect.sleep("1100 millis")
  yield* Effect.logInfo(`cancel reminders: ${yield* reminders.cancel}`) // true: it was active
  yield* Effect.logInfo(`cancel reminders again: ${yield* reminders.cancel}`) // false: already cancelled
  yield* Effect.logInfo(`isCancelled: ${yield* reminders.isCancelled}`) // true
  yield* alive.cancel

  // A one-shot function task is done once it has started: cancel returns false afterwards.
  const once = yield* scheduler.scheduleOnceFunction(0, Effect.void)
  yield* Effect.sleep("50 millis")
  yield* Effect.logInfo(`cancel a one-shot that already ran: ${yield* once.cancel}`) // false

  // After shutdown nothing is scheduled: the handle comes back already cancelled.
  yield* system.shutdown
  const late = yield* scheduler.scheduleOnce("1 second", printer, "too late")
  yield* Effect.logInfo(`scheduled after shutdown, isCancelled: ${yield* late.isCancelled}`) // true
}).pipe(Effect.provide(ActorSystem.layer({ name: "scheduler" })))

// `npx tsx docs/examples/scheduler.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
