import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

const Reporter = Actor.make<string>()({ receive: (text) => Effect.logInfo(text) })

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const reporter = yield* system.spawn(Reporter, "reporter")

  // Quartz format: sec min hour day-of-month month day-of-week [year]. Every second, named "report".
  yield* system.scheduler.scheduleWithCron(reporter, "every second", "* * * * * ?", { reference: "report" })
  yield* Effect.sleep("2100 millis")
  // Reusing a reference replaces the schedule that had it: from now on, every other second.
  yield* system.scheduler.scheduleWithCron(reporter, "every other second", "*/2 * * * * ?", { reference: "report" })
  yield* Effect.sleep("2100 millis")
  yield* system.scheduler.cancelSchedule("report")

  // Cancelling an unknown reference is a typed error; so is an expression that does not parse.
  const unknown = yield* Effect.flip(system.scheduler.cancelSchedule("report"))
  yield* Effect.logInfo(`${unknown._tag}: ${unknown.message}`)
  const invalid = yield* Effect.flip(system.scheduler.scheduleWithCron(reporter, "never", "0 0 25 * * ?"))
  yield* Effect.logInfo(`${invalid._tag}: ${invalid.message}`)
}).pipe(Effect.provide(ActorSystem.layer({ name: "cron" })))

// `npx tsx docs/examples/cron.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
