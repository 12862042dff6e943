// The first module of a CPU worker thread.
//
// Worker threads do not inherit the parent's module loader hooks, so when the entry (and the task modules it will
// import) are TypeScript sources, the thread registers tsx's loader itself. It first imports the heavy JavaScript
// dependencies natively: modules already loaded skip the hooks, which halves the thread's start-up time. This works
// the same under `tsx`, vitest and plain Node.
import { workerData } from "node:worker_threads"

const entry = workerData.entry
await import("effect")
await import("@effect/platform/WorkerRunner")
await import("@effect/platform-node/NodeWorkerRunner")
if (entry.endsWith(".ts")) {
  const { register } = await import("tsx/esm/api")
  register()
}
await import(entry)
