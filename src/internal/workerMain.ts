/**
 * A CPU worker thread: serves `RunCpuTask` requests until the pool closes it. Started by `workerBootstrap.mjs`.
 */

import * as WorkerRunner from "@effect/platform/WorkerRunner"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { layerRunner } from "./workerPlatform.js"
import { RunCpuTask, runTask } from "./workerProtocol.js"

const Runner = WorkerRunner.layerSerialized(RunCpuTask, { RunCpuTask: runTask }).pipe(Layer.provide(layerRunner))

Effect.runFork(
  WorkerRunner.launch(Runner).pipe(
    Effect.catchAllCause((cause) => Effect.logError("tickwork cpu worker thread failed", cause))
  )
)
