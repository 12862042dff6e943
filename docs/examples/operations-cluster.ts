// Operating a cluster cron through `Schedules` (docs/operations.md#cluster-crons): one test runner over in-memory
// SQLite, in real time. `npx tsx docs/examples/operations-cluster.ts` (about 12 s).
import { DateTime, Effect, Layer, Schedule } from "effect"
import { ActorSystem, Schedules } from "tickwork"
import { ClusterRunner, ClusterScheduler, ClusterSchedules } from "tickwork/cluster"

const stamp = (fire: ClusterScheduler.Fire) => DateTime.formatIso(fire.instant).slice(11, 19)

// The cluster cron, as every runner registers it: its policies are stored, steerable with `Schedules.update`.
const Heartbeat = ClusterScheduler.layer(
  "*/2 * * * * ?",
  (fire) => Effect.logInfo(`heartbeat ${stamp(fire)} (${fire.trigger})`),
  ClusterScheduler.withTimerReference("heartbeat"),
  ClusterScheduler.withPolicies({
    misfire: Schedules.skipMissed, // after an outage longer than the grace, wait for the next instant
    grace: "30 seconds",
    overlap: "skip", // a trigger while a run goes on is dropped (recorded as skipped)
    retry: Schedule.spaced("200 millis").pipe(Schedule.intersect(Schedule.recurs(2))),
    pauseAfterFailures: 3 // three failed instants in a row pause it, with a note
  })
)

// `Schedules` over the system's schedules and the cluster's crons (every runner sees every cluster cron).
const Live = Layer.mergeAll(Schedules.layer, ClusterSchedules.layer, Heartbeat).pipe(
  Layer.provideMerge(ActorSystem.layer({ name: "runner-1" })),
  Layer.provideMerge(ClusterRunner.layerTest())
)

const main = Effect.gen(function* () {
  const schedules = yield* Schedules.Schedules
  yield* Effect.sleep("3 seconds")

  // list: the cluster crons beside the local schedules
  for (const info of yield* schedules.list({ kind: "cluster-cron" })) {
    yield* Effect.logInfo(
      `${info.reference} ${info.expression} (${info.timeZone}): ${info.state}, next ${info.nextFire}`
    )
  }

  // pause with a note (stored: every runner sees it, restarts keep it), then resume from the next instant
  yield* schedules.pause("heartbeat", "the downstream is being migrated", { by: "ada" })
  const paused = yield* schedules.get("heartbeat")
  yield* Effect.logInfo(`heartbeat is ${paused.state}: "${paused.pause?.note}" (by ${paused.pause?.by})`)
  yield* Effect.sleep("3 seconds")
  yield* schedules.resume("heartbeat")

  // trigger: one run now, on whichever runner takes it; the grid does not move
  yield* schedules.trigger("heartbeat")

  // update in place: a new expression takes over from its first instant after the last one run
  yield* schedules.update("heartbeat", { spec: Schedules.cron("*/3 * * * * ?"), policies: { history: 50 } })

  // backfill: each instant of the range, in order, once
  const now = yield* DateTime.now
  const ran = yield* schedules.backfill("heartbeat", DateTime.subtract(now, { seconds: 6 }), now)
  yield* Effect.logInfo(`backfilling ${ran} instants`)
  yield* Effect.sleep("5 seconds")

  // history: the runs, skips and misses, from storage
  for (const run of yield* schedules.history("heartbeat")) {
    yield* Effect.logInfo(`${run.trigger} ${run.instant}: ${run.outcome} after ${run.attempts} attempt(s)`)
  }

  // remove: stops it on every runner (a runner that registers it again brings it back)
  yield* schedules.remove("heartbeat")
  yield* Effect.logInfo(`cluster crons left: ${(yield* schedules.list({ kind: "cluster-cron" })).length}`)
})

Effect.runPromise(main.pipe(Effect.scoped, Effect.provide(Live)))
