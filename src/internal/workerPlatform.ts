/**
 * `@effect/platform`'s Worker and WorkerRunner on Node worker threads: both ends of the CPU pool's channel.
 *
 * This is the part of `@effect/platform-node`'s `NodeWorker` and `NodeWorkerRunner` that the pool uses, for worker
 * threads only. The single-process library needs nothing else from `@effect/platform-node`, whose peer dependencies
 * are the whole cluster stack (`@effect/cluster`, `@effect/sql`, `@effect/rpc`): an install of tickwork without
 * the cluster would pull all of it for these few lines.
 *
 * The protocol is the platform's: the thread says `[0]` once it is ready, messages travel as `[0, message]` and
 * `[1, message]`, and `[1]` to the thread asks it to close.
 */
import * as WorkerThreads from "node:worker_threads"
import * as Worker from "@effect/platform/Worker"
import { WorkerError } from "@effect/platform/WorkerError"
import * as Runner from "@effect/platform/WorkerRunner"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"

/** A thread asked to close that has not exited by then is terminated. */
const CLOSE_TIMEOUT_MILLIS = 5_000

const platformWorker = Worker.makePlatform<WorkerThreads.Worker>()({
  setup: ({ scope, worker }) =>
    Effect.flatMap(Deferred.make<void>(), (exited) => {
      worker.once("exit", () => {
        Deferred.unsafeDone(exited, Exit.void)
      })
      const port = {
        worker,
        postMessage: (message: unknown, transfers?: ReadonlyArray<WorkerThreads.TransferListItem>) => {
          worker.postMessage(message, transfers)
        }
      }
      const close = Effect.suspend(() => {
        worker.postMessage([1])
        return Deferred.await(exited)
      }).pipe(
        Effect.interruptible,
        Effect.timeout(CLOSE_TIMEOUT_MILLIS),
        Effect.catchAllCause(() =>
          Effect.sync(() => {
            void worker.terminate()
          })
        )
      )
      return Effect.as(Scope.addFinalizer(scope, close), port)
    }),
  listen: ({ deferred, emit, port }) => {
    const fail = (reason: "decode" | "unknown", cause: unknown) => {
      Deferred.unsafeDone(deferred, Exit.fail(new WorkerError({ reason, cause })))
    }
    port.worker.on("message", emit)
    port.worker.on("messageerror", (cause) => fail("decode", cause))
    port.worker.on("error", (cause) => fail("unknown", cause))
    port.worker.on("exit", (code) => fail("unknown", new Error(`exited with code ${code}`)))
    return Effect.void
  }
})

/** The main thread's end: a worker manager that starts threads with `spawn`. */
export const layerWorker = (
  spawn: (id: number) => WorkerThreads.Worker
): Layer.Layer<Worker.WorkerManager | Worker.Spawner> =>
  Layer.merge(
    Layer.provide(Worker.layerManager, Layer.succeed(Worker.PlatformWorker, platformWorker)),
    Worker.layerSpawner(spawn)
  )

const platformRunner = Runner.PlatformRunner.of({
  [Runner.PlatformRunnerTypeId]: Runner.PlatformRunnerTypeId,
  start: <I, O>(closeLatch: Deferred.Deferred<void, WorkerError>) =>
    Effect.suspend(() => {
      const parent = WorkerThreads.parentPort
      if (parent === null) {
        return Effect.fail(new WorkerError({ reason: "spawn", cause: new Error("not in a worker thread") }))
      }
      const send = (_portId: number, message: O, transfers?: ReadonlyArray<unknown>) =>
        Effect.sync(() => parent.postMessage([1, message], transfers as ReadonlyArray<WorkerThreads.TransferListItem>))
      // biome-ignore lint/suspicious/noConfusingVoidType: the platform's BackingRunner signature
      const run = <A, E, R>(handler: (portId: number, message: I) => Effect.Effect<A, E, R> | void) =>
        Effect.gen(function* () {
          const runtime = (yield* Effect.interruptible(Effect.runtime<R | Scope.Scope>())).pipe(
            Runtime.updateContext(Context.omit(Scope.Scope))
          ) as Runtime.Runtime<R>
          const fibers = yield* FiberSet.make<unknown, WorkerError | E>()
          const runFork = Runtime.runFork(runtime)
          // A handler that fails (rather than replying with a failure) ends the thread, as in the platform's runners.
          const onExit = (exit: Exit.Exit<unknown, E>) => {
            if (exit._tag === "Failure" && !Cause.isInterruptedOnly(exit.cause)) {
              Deferred.unsafeDone(closeLatch, Exit.die(Cause.squash(exit.cause)))
            }
          }
          parent.on("message", (message: Runner.BackingRunner.Message<I>) => {
            if (message[0] === 0) {
              const result = handler(0, message[1])
              if (Effect.isEffect(result)) {
                const fiber = runFork(result)
                fiber.addObserver(onExit)
                FiberSet.unsafeAdd(fibers, fiber)
              }
            } else {
              parent.close()
              Deferred.unsafeDone(closeLatch, Exit.void)
            }
          })
          parent.on("messageerror", (cause) => {
            Deferred.unsafeDone(closeLatch, Exit.fail(new WorkerError({ reason: "decode", cause })))
          })
          parent.on("error", (cause) => {
            Deferred.unsafeDone(closeLatch, Exit.fail(new WorkerError({ reason: "unknown", cause })))
          })
          parent.postMessage([0])
        })
      return Effect.succeed<Runner.BackingRunner<I, O>>({ run, send })
    })
})

/** The worker thread's end: serves the main thread's requests over `parentPort`. */
export const layerRunner: Layer.Layer<Runner.PlatformRunner> = Layer.succeed(Runner.PlatformRunner, platformRunner)
