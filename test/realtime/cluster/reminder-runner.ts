/**
 * A runner process for test/realtime/cluster.test.ts: joins the cluster on 127.0.0.1:$PORT over the SQLite file
 * $DB and hosts the grain kind "alarm", which prints "fired <key> <epoch millis>" when its reminder is delivered.
 * With REGISTER=<millis>, it registers reminder "wake" of grain alarm-1, due that many milliseconds later, and
 * prints "registered <due>". Prints "ready" once the runner is up. Run with `node --import tsx`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Clock, Effect, Layer, Logger, LogLevel, Schema } from "effect"
import { ActorSystem, Grain } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"
import { exitAfterSignal, fastFailover } from "./shared.js"

const port = Number(process.env.PORT)
const db = process.env.DB ?? "cluster.db"
const register = process.env.REGISTER === undefined ? undefined : Number(process.env.REGISTER)

const AlarmMsg = Schema.TaggedStruct("Wake", {})

const Alarm = Grain.make<typeof AlarmMsg.Type>()({
  name: "alarm",
  onReceive: (ctx) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.sync(() => process.stdout.write(`fired ${ctx.identity.key} ${now}\n`))
    )
})

const AlarmGrain = ClusterGrain.make(Alarm, { message: AlarmMsg })

const Runner = ClusterGrain.layer([AlarmGrain]).pipe(
  Layer.provideMerge(Reminders.layer()),
  Layer.provideMerge(ClusterRunner.layer({ port, storage: ClusterRunner.sqlite(db), shardingConfig: fastFailover })),
  Layer.provideMerge(ActorSystem.layer({ name: `runner-${port}` }))
)

const main = Effect.gen(function* () {
  process.stdout.write("ready\n")
  if (register !== undefined) {
    const info = yield* Reminders.registerFor(
      AlarmGrain,
      "alarm-1",
      "wake",
      { _tag: "Wake" },
      Reminders.after(register)
    )
    process.stdout.write(`registered ${info.nextDue}\n`)
  }
  return yield* Effect.never
})

exitAfterSignal()
NodeRuntime.runMain(main.pipe(Effect.provide(Runner), Logger.withMinimumLogLevel(LogLevel.Warning)))
