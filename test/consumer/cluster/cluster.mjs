// The cluster with its peer packages installed, run with plain `node`: one runner over a SQLite file on a free
// loopback port, a cluster-wide cron every second and a durable reminder that wakes a grain. Exits non-zero unless
// both fire within 20 seconds. argv: the SQLite file, the port.
import assert from "node:assert/strict"
import { Effect, Layer, Logger, LogLevel, Schema } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"

const [db, port] = process.argv.slice(2)
const seen = { cron: 0, reminders: 0 }

const Wake = Schema.TaggedStruct("Wake", {})
const Alarm = Grain.make()({
  name: "alarm",
  onReceive: () =>
    Effect.sync(() => {
      seen.reminders++
    })
})
const AlarmGrain = ClusterGrain.make(Alarm, { message: Wake })

const Cron = ClusterScheduler.layer(
  "* * * * * ?",
  Effect.sync(() => {
    seen.cron++
  }),
  ClusterScheduler.withTimerReference("every-second")
)

const Runner = Layer.mergeAll(ClusterGrain.layer([AlarmGrain]), Cron).pipe(
  Layer.provideMerge(Reminders.layer()),
  Layer.provideMerge(ClusterRunner.layer({ port: Number(port), storage: ClusterRunner.sqlite(db) })),
  Layer.provideMerge(ActorSystem.layer({ name: "consumer-runner" }))
)

const main = Effect.gen(function* () {
  const info = yield* Reminders.registerFor(AlarmGrain, "alarm-1", "wake", { _tag: "Wake" }, Reminders.after(500))
  assert.equal(info.name, "wake")
  for (let waited = 0; waited < 20_000 && (seen.cron < 1 || seen.reminders < 1); waited += 50) {
    yield* Effect.sleep("50 millis")
  }
  assert.ok(seen.cron >= 1, `the cluster cron never fired: ${JSON.stringify(seen)}`)
  assert.equal(seen.reminders, 1, `the reminder fired ${seen.reminders} times`)
  console.log(`one-runner SQLite cluster: cron fired ${seen.cron} times, reminder fired ${seen.reminders} time`)
})

await Effect.runPromise(main.pipe(Effect.provide(Runner), Logger.withMinimumLogLevel(LogLevel.Warning)))
