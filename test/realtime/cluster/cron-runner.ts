/**
 * A runner process for test/realtime/cluster.test.ts: joins the cluster on 127.0.0.1:$PORT over the SQLite file
 * $DB and runs the every-second cron "every-second" (each fire is recorded in storage by ClusterScheduler).
 * Prints "ready" once the runner is up. Run with `node --import tsx`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"
import { exitAfterSignal, fastFailover } from "./shared.js"

const port = Number(process.env.PORT)
const db = process.env.DB ?? "cluster.db"

const Runner = ClusterRunner.layer({ port, storage: ClusterRunner.sqlite(db), shardingConfig: fastFailover })

const EverySecond = ClusterScheduler.layer(
  "* * * * * ?",
  Effect.void,
  ClusterScheduler.withTimerReference("every-second")
)

const Ready = Layer.effectDiscard(Effect.sync(() => process.stdout.write("ready\n")))

exitAfterSignal()
NodeRuntime.runMain(
  Layer.launch(Ready.pipe(Layer.provide(EverySecond), Layer.provide(Runner))).pipe(
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
)
