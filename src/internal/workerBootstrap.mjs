// The first module of a CPU worker thread.
//
// From the build (an installed tickwork) the entry is JavaScript and this only imports it. From the repository's
// TypeScript sources (tsx, vitest) the entry is a .ts file, and worker threads do not inherit the parent's module
// loader hooks, so the thread registers tsx's loader itself, first importing the heavy JavaScript dependencies
// natively: modules already loaded skip the hooks, which halves the thread's start-up time. A task module written in
// TypeScript is handled when a task needs it (workerImport.ts).
import { workerData } from "node:worker_threads"

const entry = workerData.entry
if (entry.endsWith(".ts")) {
  await import("effect")
  await import("@effect/platform/WorkerRunner")
  const { register } = await import("tsx/esm/api")
  register()
  globalThis[Symbol.for("tickwork/Workers/typescriptLoader")] = true
}
await import(entry)
