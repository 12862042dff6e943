import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { importTaskModule } from "../src/internal/workerImport.js"
import { make } from "../src/internal/workerPool.js"
import * as Workers from "../src/Workers.js"
import { busyFor, spin } from "./fixtures/spotCpuTasks.js"
import { captureLogs } from "./utils.js"

const bootstrap = new URL("./fixtures/breakableWorkerBootstrap.mjs", import.meta.url)

/** Runs `effect` while worker threads that start cannot load. */
const whileBroken = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      process.env.TICKWORK_TEST_WORKERS = "broken"
    }),
    () => effect,
    () =>
      Effect.sync(() => {
        delete process.env.TICKWORK_TEST_WORKERS
      })
  )

/** Polls `check` in real time (threads run in real time, whatever the test clock says) until it holds. */
const eventually = (check: Effect.Effect<boolean>): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    for (let waited = 0; waited < 10_000; waited += 20) {
      if (yield* check) return true
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
    }
    return false
  })
/** The platform logs each failed start as a warning. */
const quiet = captureLogs()

describe("Worker threads that cannot start", () => {
  it.scoped("a task fails with WorkerFailure naming the cause, and so does every later one, with no new thread", () =>
    Effect.gen(function* () {
      const options = yield* Workers.decodeOptions({ minThreads: 0, maxThreads: 2 })
      const pool = yield* make(options, bootstrap)
      const error = yield* whileBroken(Effect.flip(pool.run(spin, 10)))
      assert.strictEqual(error._tag, "WorkerFailure")
      assert.strictEqual((error as Workers.WorkerFailure).reason, "spawn")
      assert.include(error.message, "a worker thread could not start")
      assert.include(error.message, "tickwork-test-package-that-is-not-installed")
      // The platform tries again after a second: the pool starts no thread for it, nor for the next task.
      yield* TestClock.adjust("5 seconds")
      const again = yield* Effect.flip(pool.run(spin, 10))
      assert.strictEqual(again._tag, "WorkerFailure")
      assert.strictEqual((yield* pool.stats).threads, 0)
    }).pipe(Effect.provide(quiet.layer))
  )

  it.scoped("with minThreads >= 1 the pool itself fails to start, with the same error", () =>
    Effect.gen(function* () {
      const options = yield* Workers.decodeOptions({ minThreads: 1, maxThreads: 1 })
      const error = yield* whileBroken(Effect.flip(make(options, bootstrap)))
      assert.strictEqual(error.reason, "spawn")
      assert.include(error.message, "tickwork-test-package-that-is-not-installed")
    }).pipe(Effect.provide(quiet.layer))
  )

  it.scoped("a thread that cannot start while the pool runs fails the task waiting for it, and every later one", () =>
    Effect.gen(function* () {
      const options = yield* Workers.decodeOptions({ minThreads: 1, maxThreads: 2 })
      const pool = yield* make(options, bootstrap)
      // The first thread started; the first task keeps it busy, so the second needs a thread that cannot start.
      const first = yield* Effect.fork(pool.run(busyFor, 1_500))
      assert.isTrue(yield* eventually(Effect.map(pool.stats, (stats) => stats.running === 1)))
      const second = yield* whileBroken(Effect.flip(pool.run(spin, 10)))
      assert.strictEqual(second._tag, "WorkerFailure")
      assert.include(second.message, "tickwork-test-package-that-is-not-installed")
      assert.isAbove(yield* Fiber.join(first), 0)
      // The first thread is free again, but the pool is broken: it says so rather than run on what is left.
      const third = yield* Effect.flip(pool.run(spin, 10))
      assert.strictEqual(third._tag, "WorkerFailure")
    }).pipe(Effect.provide(quiet.layer))
  )
})

describe("Task modules in TypeScript", () => {
  const noTsx = (specifier: string, from: string): string => {
    throw new Error(`cannot resolve ${specifier} from ${from}`)
  }

  it.effect("without tsx in the module's project the import fails saying what to install", () =>
    Effect.gen(function* () {
      const module = new URL("./fixtures/spotCpuTasks.ts", import.meta.url).href
      const error = yield* Effect.flip(Effect.tryPromise(() => importTaskModule(module, noTsx)))
      assert.include(String(error.error), "worker threads load TypeScript with tsx, which does not resolve")
      assert.include(String(error.error), "npm install --save-dev tsx")
    })
  )

  it.effect("a JavaScript module is imported as it is, without looking for tsx", () =>
    Effect.gen(function* () {
      const namespace = yield* Effect.promise(() => importTaskModule("data:text/javascript,export const a = 1", noTsx))
      assert.deepStrictEqual({ ...(namespace as object) }, { a: 1 })
    })
  )
})
