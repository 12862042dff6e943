import { Effect, Layer, Schedule } from "effect"
import { Actor, ActorSystem, Schedules } from "tickwork"

const Reports = Actor.make<string>()({ receive: (report) => Effect.logInfo(`report: ${report}`) })

let calls = 0
/** A sync with a downstream that is down from the third call on. */
const sync = Effect.suspend(() =>
  ++calls >= 3 ? Effect.fail("downstream unavailable") : Effect.logInfo(`sync ${calls} done`)
)

const main = Effect.gen(function* () {
  const schedules = yield* Schedules.Schedules
  const reports = yield* ActorSystem.spawn(Reports, "reports")

  // create: a message every 300 ms, and a task on a Quartz cron (every second) with its policies
  yield* schedules.create("report", Schedules.every("300 millis"), Schedules.send(reports, "hourly numbers"))
  yield* schedules.create("sync", Schedules.cron("* * * * * ?"), Schedules.run(sync), {
    overlap: "skip", // an instant that comes while a sync still runs is dropped (recorded as skipped)
    misfire: Schedules.runOnce, // after an outage, one sync for all the missed instants
    grace: "500 millis",
    retry: Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(2))),
    pauseAfterFailures: 2 // two failed instants in a row (after retries) pause it, with a note
  })

  yield* Effect.sleep("700 millis")
  // pause with a note, look at it, resume: the instants that passed while paused are not replayed
  yield* schedules.pause("report", "numbers are being recomputed", { by: "ada" })
  const paused = yield* schedules.get("report")
  yield* Effect.logInfo(`report is ${paused.state}: "${paused.pause?.note}" (by ${paused.pause?.by})`)
  yield* Effect.sleep("700 millis")
  yield* schedules.resume("report")

  // trigger: once now, the grid does not move; update: a new interval in place, no duplicate, no lost instant
  yield* schedules.trigger("report")
  yield* schedules.update("report", { spec: Schedules.every("500 millis") })

  yield* Effect.sleep("3500 millis")
  for (const info of yield* schedules.list()) {
    const last = info.lastRun
    yield* Effect.logInfo(
      `${info.reference}: ${info.state}${info.pause === undefined ? "" : ` (${info.pause.note})`}, last run ` +
        `${last === undefined ? "none" : `${last.outcome} after ${last.attempts} attempt(s)`}`
    )
  }
  const history = yield* schedules.history("sync")
  yield* Effect.logInfo(`sync history: ${history.map((run) => `${run.trigger} ${run.outcome}`).join(", ")}`)
  yield* schedules.remove("report")
}).pipe(Effect.provide(Schedules.layer.pipe(Layer.provideMerge(ActorSystem.layer({ name: "operations" })))))

// `npx tsx docs/examples/operations.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
