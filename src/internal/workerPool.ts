/**
 * The CPU worker pool: `@effect/platform`'s serialized worker pool over Node worker threads, plus a bounded queue.
 *
 * The platform pool (an Effect `Pool` with a time-to-live) grows from `minThreads` to `maxThreads` on demand and
 * retires threads above the minimum that stay unused for `idleTime`; each thread runs one task at a time. The pool
 * itself lets any number of callers wait for a thread, so admission is counted here: at most
 * `maxThreads + queueLength` tasks are in the pool, and one more fails at once with `WorkerQueueFull`.
 */

import * as WorkerThreads from "node:worker_threads"
import * as Worker from "@effect/platform/Worker"
import type { WorkerError } from "@effect/platform/WorkerError"
import * as NodeWorker from "@effect/platform-node/NodeWorker"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
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
import { RunCpuTask } from "./workerProtocol.js"

// Run from TypeScript sources (tsx, vitest) the entry is a .ts file, which the bootstrap loads through tsx.
const extension = import.meta.url.endsWith(".ts") ? ".ts" : ".js"
const bootstrap = new URL("./workerBootstrap.mjs", import.meta.url)
const entry = new URL(`./workerMain${extension}`, import.meta.url).href

const toFailure = (error: WorkerError | ParseResult.ParseError): WorkerFailure =>
  error._tag === "ParseError"
    ? new WorkerFailure({ reason: "decode", detail: error.message })
    : new WorkerFailure({ reason: error.reason, detail: error.message })

class PoolImpl implements WorkersService {
  /** Tasks admitted and not finished: running or waiting for a thread. */
  private pending = 0
  private running = 0

  constructor(
    readonly options: ResolvedOptions,
    /** The platform pool: built with the layer, or on first use when `minThreads` is 0. */
    private readonly pool: Effect.Effect<Worker.SerializedWorkerPool<RunCpuTask>, WorkerFailure>,
    private readonly threads: { count: number }
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
          Effect.flatMap(
            Effect.flatMap(this.pool, (pool) => pool.backing.get),
            (worker) => {
              this.running++
              return Effect.ensuring(
                worker.executeEffect(new RunCpuTask({ module: task.module, task: task.name, input: encoded })),
                Effect.sync(() => {
                  this.running--
                })
              )
            }
          )
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

export const make = (options: ResolvedOptions): Effect.Effect<WorkersService, WorkerFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const threads = { count: 0 }
    const spawn = (_id: number) => {
      // execArgv: [] so that the parent's flags (a test runner's, tsx's) do not leak into the thread; the bootstrap
      // registers what the thread needs.
      const worker = new WorkerThreads.Worker(bootstrap, { workerData: { entry }, execArgv: [] })
      threads.count++
      worker.once("exit", () => {
        threads.count--
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
      Effect.provide(NodeWorker.layer(spawn)),
      Effect.mapError((error) => new WorkerFailure({ reason: error.reason, detail: error.message })),
      Scope.extend(scope)
    )
    // The platform pool starts a thread as it is built (to report a thread that cannot start). With minThreads 0 no
    // thread is wanted until a task comes, so the pool is built on first use (again after a failed start).
    const pool = options.minThreads > 0 ? Effect.succeed(yield* build) : memoizeSuccess(build, scope)
    return new PoolImpl(options, pool, threads)
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
