// Operating durable reminders through `Schedules` (docs/operations.md#reminders): one test runner over in-memory
// SQLite, in real time. `npx tsx docs/examples/operations-reminders.ts` (about 10 s).
import { Clock, Effect, Layer, Schedule, Schema } from "effect"
import { ActorSystem, Grain, Schedules } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterSchedules, Reminders } from "tickwork/cluster"

const InvoiceMsg = Schema.TaggedStruct("Dun", {})
const Invoice = ClusterGrain.make(
  Grain.make<typeof InvoiceMsg.Type>()({
    name: "invoice",
    onReceive: (ctx) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.logInfo(`dunning ${ctx.identity.key} at ${now}`))
  }),
  { message: InvoiceMsg }
)

// `Schedules` over the system's schedules, the cluster crons and, with `Reminders.layer` below it, the reminders.
// The failure policies are code, the same on every runner: a failed dunning is retried twice, 100 ms apart, and
// the reminder is paused after 3 failed occurrences in a row.
const Live = Layer.mergeAll(Schedules.layer, ClusterSchedules.layer, ClusterGrain.layer([Invoice])).pipe(
  Layer.provideMerge(
    Reminders.layer({
      policies: (reminder) =>
        reminder.name === "dunning"
          ? { retry: Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(2))), pauseAfterFailures: 3 }
          : undefined
    })
  ),
  Layer.provideMerge(ActorSystem.layer({ name: "runner-1" })),
  Layer.provideMerge(ClusterRunner.layerTest())
)

const main = Effect.gen(function* () {
  yield* Reminders.registerFor(
    Invoice,
    "inv-7",
    "dunning",
    { _tag: "Dun" },
    Reminders.after("1 second", { period: "2 seconds" })
  )
  const schedules = yield* Schedules.Schedules

  // list: kind "reminder", owner "<grain kind>/<key>", reference "<grain kind>/<key>/<name>"
  for (const info of yield* schedules.list({ kind: "reminder" })) {
    yield* Effect.logInfo(`${info.reference} (${info.owner}) every ${info.intervalMillis} ms, next ${info.nextFire}`)
  }

  // pause with a note (stored: every runner sees it, restarts keep it): occurrences pass without reaching the grain
  yield* schedules.pause("invoice/inv-7/dunning", "the customer disputes the invoice", { by: "ada" })
  yield* Effect.sleep("4 seconds")
  // resume: from the next occurrence after now
  yield* schedules.resume("invoice/inv-7/dunning")

  // update the misfire policies (stored): after an outage longer than the grace, deliver none of the missed ones
  yield* schedules.update("invoice/inv-7/dunning", { policies: { misfire: Schedules.skipMissed, grace: "1 minute" } })

  // update the spec in place: every 3 seconds from now, the same message; the old schedule's next occurrence is dropped
  const updated = yield* schedules.update("invoice/inv-7/dunning", { spec: Schedules.every("3 seconds") })
  yield* Effect.logInfo(
    `now every ${updated.intervalMillis} ms, next ${updated.nextFire}, retry: ${updated.policies.retry}`
  )

  // trigger: one delivery now; the grid does not move
  yield* schedules.trigger("invoice/inv-7/dunning")
  yield* Effect.sleep("3 seconds")

  // history: each occurrence's instant, start, end, outcome ("sent", or "skipped" while paused) and lateness
  for (const run of yield* schedules.history("invoice/inv-7/dunning")) {
    yield* Effect.logInfo(`${run.trigger} ${run.instant}: ${run.outcome} ${run.detail ?? ""} late ${run.lateness}`)
  }

  // remove: unregisters it, its state and history with it
  yield* schedules.remove("invoice/inv-7/dunning")
  yield* Effect.logInfo(`reminders left: ${(yield* schedules.list({ kind: "reminder" })).length}`)
})

Effect.runPromise(main.pipe(Effect.scoped, Effect.provide(Live)))
