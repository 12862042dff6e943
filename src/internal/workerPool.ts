/**
 * The CPU worker pool: `@effect/platform`'s serialized worker pool over Node worker threads, plus a bounded queue.
 *
 * The platform pool (an Effect `Pool` with a time-to-live) grows from `minThreads` to `maxThreads` on demand and
 * retires threads above the minimum that stay unused for `idleTime`; each thread runs one task at a time. The pool
 * itself lets any number of callers wait for a thread, so admission is counted here: at most
 * `maxThreads + queueLength` tasks are in the pool, and one more fails at once with `WorkerQueueFull`.
 *
 * A thread that ends before it is ready (its first module, or one it imports, cannot be loaded) fails the pool: every
 * task waiting for a thread, and every later one, fails with `WorkerFailure` (reason "spawn") saying why. The platform
 * alone would start another thread every second, forever, while the tasks wait.
 */

import * as WorkerThreads from "node:worker_threads"
import * as Worker from "@effect/platform/Worker"
import type { WorkerError } from "@effect/platform/WorkerError"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import {
  type CpuTask,
  type CpuTaskError,
  CpuTaskFailed,
  type ResolvedOptions,
  type Stats,
  WorkerFailure,
  WorkerQueueFull,
  type WorkersService
} from "../Workers.js"
import { type Admitted, reserveKey } from "./workerCall.js"
import { layerWorker } from "./workerPlatform.js"
import { RunCpuTask } from "./workerProtocol.js"

// Run from TypeScript sources (tsx, vitest) the entry is a .ts file, which the bootstrap loads through tsx; run from
// the build (a user's install) it is plain JavaScript.
const extension = import.meta.url.endsWith(".ts") ? ".ts" : ".js"
const defaultBootstrap = new URL("./workerBootstrap.mjs", import.meta.url)
const entry = new URL(`./workerMain${extension}`, import.meta.url).href

const toFailure = (error: WorkerError | ParseResult.ParseError): WorkerFailure =>
  error._tag === "ParseError"
    ? new WorkerFailure({ reason: "decode", detail: error.message })
    : new WorkerFailure({ reason: error.reason, detail: error.message })

/**
 * Whether a thread of the pool ended before it was ready. From then on every wait for a thread fails: the install
 * is broken (a thread that cannot load its modules will not load them a second later), and the platform pool would
 * wait for the thread forever.
 */
class StartFailure {
  private failure: WorkerFailure | undefined
  private readonly deferred = Deferred.unsafeMake<never, WorkerFailure>(FiberId.none)

  get failed(): boolean {
    return this.failure !== undefined
  }

  fail(detail: string): void {
    if (this.failure !== undefined) return
    this.failure = new WorkerFailure({ reason: "spawn", detail: `a worker thread could not start: ${detail}` })
    Deferred.unsafeDone(this.deferred, Exit.fail(this.failure))
  }

  /** Runs `wait` (for the pool or a thread) unless, or until, a thread failed to start. */
  guard<A, E, R>(wait: Effect.Effect<A, E, R>): Effect.Effect<A, E | WorkerFailure, R> {
    return Effect.suspend(() =>
      this.failure !== undefined
        ? Effect.fail(this.failure)
        : // disconnected: the platform pool's wait for a thread does not end on interruption (it ends when it closes)
          Effect.raceFirst(Effect.disconnect(wait), Deferred.await(this.deferred))
    )
  }
}

class PoolImpl implements WorkersService {
  /** Tasks admitted and not finished: running or waiting for a thread. */
  private pending = 0
  private running = 0

  constructor(
    readonly options: ResolvedOptions,
    /** The platform pool: built with the layer, or on first use when `minThreads` is 0. */
    private readonly pool: Effect.Effect<Worker.SerializedWorkerPool<RunCpuTask>, WorkerFailure>,
    private readonly threads: { count: number },
    private readonly startFailure: StartFailure
  ) {}

  readonly [reserveKey] = <I, O>(task: CpuTask<I, O>, input: I): Admitted<O, CpuTaskError> | WorkerQueueFull => {
    const { maxThreads, queueLength } = this.options
    if (this.pending >= maxThreads + queueLength) return new WorkerQueueFull({ maxThreads, queueLength })
    this.pending++
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.pending--
    }
    return { work: Effect.ensuring(this.execute(task, input), Effect.sync(release)), release }
  }

  run<I, O>(task: CpuTask<I, O>, input: I): Effect.Effect<O, CpuTaskError> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const admitted = this[reserveKey](task, input)
        return admitted instanceof WorkerQueueFull ? Effect.fail(admitted) : restore(admitted.work)
      })
    )
  }

  readonly stats: Effect.Effect<Stats> = Effect.sync(() => ({
    threads: this.threads.count,
    running: this.running,
    queued: this.pending - this.running
  }))

  private execute<I, O>(task: CpuTask<I, O>, input: I): Effect.Effect<O, CpuTaskError> {
    return Schema.encode(task.input)(input).pipe(
      Effect.mapError((error) => error.message),
      // a Schema's transformation may throw on a value it does not expect (an invalid Date's toISOString)
      Effect.catchAllDefect((defect) => Effect.fail(defect instanceof Error ? defect.message : String(defect))),
      Effect.mapError(
        (reason) => new CpuTaskFailed({ task: task.name, reason: `input does not match its Schema: ${reason}` })
      ),
      Effect.flatMap((encoded) =>
        Effect.scoped(
          Effect.flatMap(this.startFailure.guard(Effect.flatMap(this.pool, (pool) => pool.backing.get)), (worker) => {
            this.running++
            return Effect.ensuring(
              worker.executeEffect(new RunCpuTask({ module: task.module, task: task.name, input: encoded })),
              Effect.sync(() => {
                this.running--
              })
            )
          })
        ).pipe(Effect.catchTags({ WorkerError: toFailure, ParseError: toFailure }))
      ),
      Effect.flatMap((result) =>
        Schema.decodeUnknown(task.output)(result).pipe(
          Effect.mapError((error) => error.message),
          Effect.catchAllDefect((defect) => Effect.fail(defect instanceof Error ? defect.message : String(defect))),
          Effect.mapError(
            (reason) => new CpuTaskFailed({ task: task.name, reason: `result does not match its Schema: ${reason}` })
          )
        )
      )
    )
  }
}

/**
 * Starts the pool for the current scope. `bootstrap` is the first module of each thread (tests pass one that cannot
 * load).
 */
export const make = (
  options: ResolvedOptions,
  bootstrap: URL = defaultBootstrap
): Effect.Effect<WorkersService, WorkerFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const threads = { count: 0 }
    const startFailure = new StartFailure()
    const spawn = (_id: number) => {
      // Thrown, this ends the platform's attempts to start the thread again (it retries failures, not defects).
      if (startFailure.failed) throw new Error("no new worker thread: one could not start")
      // execArgv: [] so that the parent's flags (a test runner's, tsx's) do not leak into the thread; the bootstrap
      // registers what the thread needs.
      const worker = new WorkerThreads.Worker(bootstrap, { workerData: { entry }, execArgv: [] })
      threads.count++
      // The thread's first message says it is ready; an error or exit before it means it never will be.
      let ready = false
      let error: unknown
      worker.once("message", () => {
        ready = true
      })
      worker.once("error", (cause) => {
        error = cause
      })
      worker.once("exit", (code) => {
        threads.count--
        if (!ready) startFailure.fail(error instanceof Error ? error.message : `it exited with code ${code}`)
      })
      return worker
    }
    const scope = yield* Effect.scope
    const build = Worker.makePoolSerialized<RunCpuTask>({
      minSize: options.minThreads,
      maxSize: options.maxThreads,
      concurrency: 1,
      timeToLive: Duration.toMillis(options.idleTime)
    }).pipe(
      Effect.provide(layerWorker(spawn)),
      Effect.mapError((error) => new WorkerFailure({ reason: error.reason, detail: error.message })),
      Scope.extend(scope),
      // The platform pool waits for its first thread to be ready, however many times it fails to start.
      (build) => startFailure.guard(build)
    )
    // The platform pool starts a thread as it is built (to report a thread that cannot start). With minThreads 0 no
    // thread is wanted until a task comes, so the pool is built on first use (again after a failed build, unless a
    // thread could not start: StartFailure).
    const pool = options.minThreads > 0 ? Effect.succeed(yield* build) : memoizeSuccess(build, scope)
    return new PoolImpl(options, pool, threads, startFailure)
  })

/**
 * Runs `effect` once, on a fiber of `scope` (a caller's interruption does not cancel it), and replays its success;
 * a failure is not kept, so the next caller tries again. The fiber is interruptible, as the pool's own background
 * fibers (forked from it) must be for the scope to close.
 */
const memoizeSuccess = <A, E>(effect: Effect.Effect<A, E>, scope: Scope.Scope): Effect.Effect<A, E> => {
  let current: Deferred.Deferred<A, E> | undefined
  return Effect.suspend(() => {
    if (current !== undefined) return Deferred.await(current)
    const deferred = Deferred.unsafeMake<A, E>(FiberId.none)
    current = deferred
    const build = Effect.onExit(Effect.interruptible(effect), (exit) =>
      Effect.sync(() => {
        if (exit._tag === "Failure") current = undefined
        Deferred.unsafeDone(deferred, exit)
      })
    )
    return Effect.zipRight(Effect.forkIn(build, scope), Deferred.await(deferred))
  })
}
