/**
 * Workers: run long work outside a Spot's queue.
 *
 * - A **CPU worker** runs a synchronous computation (serialization, compression, pathfinding) on a pool of Node
 *   worker threads, so it never blocks the main thread: Spot timers and every other fiber keep running. The
 *   computation is a `CpuTask`, defined at the top level of a module that the worker threads import by URL; its input
 *   and output are described by Schemas and travel as copies.
 * - An **I/O worker** runs an asynchronous Effect (a database call, a file, HTTP) on a fiber of its own.
 *
 * A worker call is closed by a Spot terminator (`Spot.Yield`, `Spot.Async`, `Spot.Submit`) that says whether the
 * Spot's turn is held while it runs. Workers never touch Spot state: copy what they need into their input.
 *
 * The thread pool is `Workers.layer(options)`, built on `@effect/platform`'s worker pool over Node worker threads;
 * requests and results are `Schema.TaggedRequest`s.
 *
 * | option | default | meaning |
 * | --- | --- | --- |
 * | `minThreads` | 1 | threads kept alive when idle; with 0, no thread starts before the first task |
 * | `maxThreads` | CPU cores | threads at most; each runs one task at a time |
 * | `idleTime` | 30 seconds | how long threads above `minThreads` may stay idle before they exit |
 * | `queueLength` | 1000 | tasks that may wait for a thread; one more fails at once with `WorkerQueueFull` |
 *
 * @since 0.1.0
 */

import { availableParallelism } from "node:os"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import { positiveDuration } from "./internal/duration.js"
import { formatOptionsError } from "./internal/options.js"
import { describeValue } from "./internal/validate.js"
import {
  type Admitted,
  WorkerCallTypeId as CallTypeId,
  reserveKey,
  taskKey,
  taskRegistry,
  WorkerCallImpl
} from "./internal/workerCall.js"

/**
 * The symbol that marks a CPU task.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * const marked = (u: object) => Workers.CpuTaskTypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const CpuTaskTypeId: unique symbol = Symbol.for("tickwork/CpuTask")

/**
 * The type of `CpuTaskTypeId`.
 *
 * @example
 * ```ts
 * import type { Workers } from "tickwork"
 *
 * type Marker = Workers.CpuTaskTypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type CpuTaskTypeId = typeof CpuTaskTypeId

/**
 * The symbol that marks a worker call.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * const marked = (u: object) => Workers.WorkerCallTypeId in u
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const WorkerCallTypeId: typeof CallTypeId = CallTypeId

/**
 * The type of `WorkerCallTypeId`.
 *
 * @example
 * ```ts
 * import type { Workers } from "tickwork"
 *
 * type Marker = Workers.WorkerCallTypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type WorkerCallTypeId = typeof WorkerCallTypeId

// ------------------------------------------------------------------------------------------------------------ errors

/**
 * A CPU task's computation threw, or its input or output did not match the task's Schemas. Sent between threads.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * const error = new Workers.CpuTaskFailed({ task: "countPrimes", reason: "limit must be positive" })
 * console.log(error.message) // cpu task countPrimes failed: limit must be positive
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class CpuTaskFailed extends Schema.TaggedError<CpuTaskFailed>()("CpuTaskFailed", {
  task: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cpu task ${this.task} failed: ${this.reason}`
  }
}

/**
 * A worker thread imported the task's module but found no task of that name in it (tasks must be defined at the top
 * level of their module), or could not import the module. Sent between threads.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * const error = new Workers.CpuTaskNotFound({ task: "fib", module: "file:///app/tasks.ts", reason: "not defined" })
 * console.log(error.message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class CpuTaskNotFound extends Schema.TaggedError<CpuTaskNotFound>()("CpuTaskNotFound", {
  task: Schema.String,
  module: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cpu task ${this.task} not found in ${this.module}: ${this.reason}`
  }
}

/**
 * Every thread is busy and `queueLength` tasks already wait: the call fails at once instead of waiting.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * console.log(new Workers.WorkerQueueFull({ maxThreads: 2, queueLength: 100 }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerQueueFull extends Data.TaggedError("WorkerQueueFull")<{
  readonly maxThreads: number
  readonly queueLength: number
}> {
  override get message(): string {
    return `worker queue full: ${this.maxThreads} threads busy and ${this.queueLength} tasks waiting`
  }
}

/**
 * The pool could not start a worker thread, lost one, or could not exchange a message with it.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * console.log(new Workers.WorkerFailure({ reason: "spawn", detail: "out of memory" }).message)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerFailure extends Data.TaggedError("WorkerFailure")<{
  readonly reason: "spawn" | "send" | "encode" | "decode" | "unknown"
  readonly detail: string
}> {
  override get message(): string {
    return `worker failure (${this.reason}): ${this.detail}`
  }
}

/**
 * The pool options did not validate; `message` says which option and why.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const bad = Workers.decodeOptions({ maxThreads: 0 }).pipe(
 *   Effect.catchTag("InvalidWorkersOptions", (e) => Effect.logError(e.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidWorkersOptions extends Data.TaggedError("InvalidWorkersOptions")<{ readonly details: string }> {
  override get message(): string {
    return `invalid Workers options:\n${this.details}`
  }
}

/**
 * A CPU task cannot run: the value is not a `CpuTask`, or `cpuTask` was given a module that is not a URL, an empty
 * name, an `input`/`output` that is not a Schema, or a `run` that is not a function. `cpuTask` never throws; the call
 * that would run the task fails with this error instead, before anything is sent to a thread.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * // `import.meta.dirname` is a path, not the module's URL: every call fails with InvalidCpuTask
 * const misplaced = Workers.cpuTask(import.meta.dirname, {
 *   name: "double",
 *   input: Schema.Number,
 *   output: Schema.Number,
 *   run: (n) => n * 2
 * })
 * const program = Workers.run(misplaced, 2).pipe(
 *   Effect.catchTag("InvalidCpuTask", (error) => Effect.logError(error.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidCpuTask extends Data.TaggedError("InvalidCpuTask")<{
  /** The task's name, or the value shown as text when it is not a task. */
  readonly task: string
  readonly reason: string
}> {
  override get message(): string {
    return `cpu task ${this.task} cannot run: ${this.reason}`
  }
}

/**
 * Why a CPU worker call failed.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * const parse = Workers.cpuTask(import.meta.url, {
 *   name: "parse",
 *   input: Schema.String,
 *   output: Schema.Unknown,
 *   run: (text) => JSON.parse(text)
 * })
 *
 * const safeParse = (text: string) =>
 *   Workers.run(parse, text).pipe(
 *     Effect.catchAll((error: Workers.CpuTaskError) => Effect.as(Effect.logWarning(error.message), undefined))
 *   )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export type CpuTaskError = CpuTaskFailed | CpuTaskNotFound | WorkerQueueFull | WorkerFailure | InvalidCpuTask

// ------------------------------------------------------------------------------------------------------------ tasks

/**
 * A synchronous computation that worker threads can run. Define it at the top level of a module without other side
 * effects: each worker thread imports that module (by `module`, its URL) to find the task.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * const upper: Workers.CpuTask<string, string> = Workers.cpuTask(import.meta.url, {
 *   name: "upper",
 *   input: Schema.String,
 *   output: Schema.String,
 *   run: (text) => text.toUpperCase()
 * })
 * console.log(upper.name, upper.module)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface CpuTask<in out I, in out O> extends Pipeable {
  readonly [CpuTaskTypeId]: CpuTaskTypeId
  /** Unique within its module. */
  readonly name: string
  /** The URL of the module that defines the task (its `import.meta.url`). */
  readonly module: string
  /** Encodes the input on the calling thread and decodes it in the worker thread. */
  readonly input: Schema.Schema<I, any>
  /** Encodes the result in the worker thread and decodes it on the calling thread. */
  readonly output: Schema.Schema<O, any>
  /** The computation. It runs in a worker thread: it sees only its input, never the caller's variables. */
  readonly run: (input: I) => O
}

/**
 * What `cpuTask` takes.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * const options: Workers.CpuTaskOptions<number, number, number, number> = {
 *   name: "double",
 *   input: Schema.Number,
 *   output: Schema.Number,
 *   run: (n) => n * 2
 * }
 * export const double = Workers.cpuTask(import.meta.url, options)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface CpuTaskOptions<I, IE, O, OE> {
  readonly name: string
  readonly input: Schema.Schema<I, IE>
  readonly output: Schema.Schema<O, OE>
  readonly run: (input: I) => O
}

const CpuTaskProto = {
  [CpuTaskTypeId]: CpuTaskTypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  },
  toString(this: CpuTask<unknown, unknown>) {
    return `CpuTask(${this.name})`
  }
}

/**
 * Defines a CPU task in the module whose `import.meta.url` is given. The module must define it at its top level, so
 * that a worker thread importing the module registers it too. Defining the same name again in the same module
 * replaces the task. It never throws: a module that is not a URL, an empty name, an `input` or `output` that is not a
 * Schema or a `run` that is not a function make every call of the task fail with `InvalidCpuTask`.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * export const countPrimes = Workers.cpuTask(import.meta.url, {
 *   name: "countPrimes",
 *   input: Schema.Number,
 *   output: Schema.Number,
 *   run: (limit) => {
 *     let count = 0
 *     for (let n = 2; n <= limit; n++) {
 *       let prime = true
 *       for (let d = 2; d * d <= n; d++) if (n % d === 0) prime = false
 *       if (prime) count++
 *     }
 *     return count
 *   }
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const cpuTask = <I, IE, O, OE>(module: string | URL, options: CpuTaskOptions<I, IE, O, OE>): CpuTask<I, O> => {
  const given: Partial<CpuTaskOptions<I, IE, O, OE>> = options ?? {}
  const url = URL.canParse(String(module)) ? new URL(module).href : undefined
  const task: CpuTask<I, O> = Object.assign(Object.create(CpuTaskProto), {
    name: given.name,
    module: url ?? String(module),
    input: given.input,
    output: given.output,
    run: given.run
  })
  const problem = definitionProblem(url, given)
  // an unusable task is not registered: the call that would run it reports the problem instead
  if (problem === undefined) taskRegistry().set(taskKey(task.module, task.name), task)
  else Object.defineProperty(task, ProblemKey, { value: problem, enumerable: false })
  return task
}

/** Where `cpuTask` leaves why a task cannot run (hidden: not enumerable). */
const ProblemKey: unique symbol = Symbol.for("tickwork/Workers/CpuTask/problem")

const definitionProblem = (url: string | undefined, options: Partial<CpuTaskOptions<any, any, any, any>>) => {
  if (url === undefined) return "the module must be its URL: pass import.meta.url"
  if (typeof options.name !== "string" || options.name.trim() === "") {
    return `the name must be a non-empty string, got ${describeValue(options.name)}`
  }
  if (!Schema.isSchema(options.input)) return `input must be a Schema, got ${describeValue(options.input)}`
  if (!Schema.isSchema(options.output)) return `output must be a Schema, got ${describeValue(options.output)}`
  if (typeof options.run !== "function") return `run must be a function, got ${describeValue(options.run)}`
  return undefined
}

/** Why `task` cannot run, as the error its call fails with, or undefined. */
const taskProblem = (task: unknown): InvalidCpuTask | undefined => {
  if (!isCpuTask(task)) {
    return new InvalidCpuTask({
      task: describeValue(task),
      reason: "it is not a CpuTask: define one with Workers.cpuTask(import.meta.url, { name, input, output, run })"
    })
  }
  const problem = (task as { readonly [ProblemKey]?: string })[ProblemKey]
  return problem === undefined ? undefined : new InvalidCpuTask({ task: String(task.name), reason: problem })
}

/**
 * True for a CPU task.
 *
 * @example
 * ```ts
 * import { Workers } from "tickwork"
 *
 * console.log(Workers.isCpuTask({})) // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isCpuTask = (u: unknown): u is CpuTask<unknown, unknown> => Predicate.hasProperty(u, CpuTaskTypeId)

// ------------------------------------------------------------------------------------------------------ worker calls

/**
 * A worker call that has not run yet. Close it with a Spot terminator: `Spot.Yield`, `Spot.Async` or `Spot.Submit`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot, Workers } from "tickwork"
 *
 * const call: Workers.WorkerCall<number> = Workers.io(Effect.succeed(1))
 * // inside a Spot's work:
 * const value = call.pipe(Spot.Yield)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerCall<out A, out E = never, out R = never> extends Pipeable {
  readonly [WorkerCallTypeId]: {
    readonly _A: Types.Covariant<A>
    readonly _E: Types.Covariant<E>
    readonly _R: Types.Covariant<R>
  }
  /** `"cpu"` for a computation on a worker thread, `"io"` for an Effect on a fiber of its own. */
  readonly kind: "cpu" | "io"
  /** The task's name, or `"io"`: used in logs. */
  readonly label: string
}

/**
 * A CPU worker call: `task` runs on a worker thread with a copy of `input`. Needs the `Workers` pool.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Spot, Workers } from "tickwork"
 *
 * const hash = Workers.cpuTask(import.meta.url, {
 *   name: "hash",
 *   input: Schema.String,
 *   output: Schema.Number,
 *   run: (text) => [...text].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7)
 * })
 *
 * // inside a Spot's work: the Spot runs other work while the thread computes
 * const digest = (text: string) => Workers.cpu(hash, text).pipe(Spot.Yield)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const cpu = <I, O>(task: CpuTask<I, O>, input: I): WorkerCall<O, CpuTaskError, Workers> =>
  new WorkerCallImpl<O, CpuTaskError, Workers>(
    "cpu",
    isCpuTask(task) ? String(task.name) : "not a CpuTask",
    Effect.flatMap(Workers, (service): Effect.Effect<Admitted<O, CpuTaskError>, CpuTaskError> => {
      const invalid = taskProblem(task)
      if (invalid !== undefined) return Effect.fail(invalid)
      const reserve = (service as { [reserveKey]?: Reserve })[reserveKey]
      if (reserve === undefined) return Effect.succeed({ work: service.run(task, input), release: () => {} })
      return Effect.suspend(() => {
        const admitted = reserve(task, input)
        return admitted instanceof WorkerQueueFull ? Effect.fail(admitted) : Effect.succeed(admitted)
      })
    })
  ) as unknown as WorkerCall<O, CpuTaskError, Workers>

type Reserve = <I, O>(task: CpuTask<I, O>, input: I) => Admitted<O, CpuTaskError> | WorkerQueueFull

/**
 * An I/O worker call: `effect` runs on a fiber of its own, outside the Spot's queue. It must not touch Spot state
 * (it dies if it tries): copy what it needs before the call.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Spot, Workers } from "tickwork"
 *
 * const fetchPrice = (symbol: string) => Effect.succeed(symbol.length * 10).pipe(Effect.delay("50 millis"))
 *
 * // inside a Spot's work: hold the turn, nothing else in the Spot runs until the price is there
 * const price = Workers.io(fetchPrice("ACME")).pipe(Spot.Async)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const io = <A, E, R>(effect: Effect.Effect<A, E, R>): WorkerCall<A, E, R> =>
  new WorkerCallImpl<A, E, R>(
    "io",
    "io",
    Effect.map(Effect.context<R>(), (context) => ({ work: Effect.provide(effect, context), release: () => {} }))
  ) as unknown as WorkerCall<A, E, R>

/**
 * True for a worker call.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * console.log(Workers.isWorkerCall(Workers.io(Effect.void))) // true
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isWorkerCall = (u: unknown): u is WorkerCall<unknown, unknown, unknown> =>
  Predicate.hasProperty(u, WorkerCallTypeId)

// ---------------------------------------------------------------------------------------------------------- service

/**
 * Live counts of the pool.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const report = Effect.flatMap(Workers.Workers, (workers) => workers.stats).pipe(
 *   Effect.flatMap((stats: Workers.Stats) => Effect.logInfo(`${stats.running} running, ${stats.queued} queued`))
 * )
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Stats {
  /** Worker threads alive (starting, idle or busy). */
  readonly threads: number
  /** Tasks running on a thread. */
  readonly running: number
  /** Tasks waiting for a thread. */
  readonly queued: number
}

/**
 * The pool service.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const limits = Effect.map(Workers.Workers, (workers: Workers.WorkersService) => workers.options.maxThreads)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkersService {
  /** The options in force, defaults filled in. */
  readonly options: ResolvedOptions
  /** Runs `task` on a worker thread with a copy of `input`; usable anywhere, not only in a Spot. */
  readonly run: <I, O>(task: CpuTask<I, O>, input: I) => Effect.Effect<O, CpuTaskError>
  readonly stats: Effect.Effect<Stats>
}

/**
 * The worker pool service tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const busy = Effect.flatMap(Workers.Workers, (workers) => workers.stats)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export class Workers extends Context.Tag("tickwork/Workers")<Workers, WorkersService>() {}

/**
 * Runs `task` on a worker thread of the pool in context, outside any Spot.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * const square = Workers.cpuTask(import.meta.url, {
 *   name: "square",
 *   input: Schema.Number,
 *   output: Schema.Number,
 *   run: (n) => n * n
 * })
 *
 * const program = Workers.run(square, 12).pipe(Effect.provide(Workers.layer({ maxThreads: 1 })))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const run = <I, O>(task: CpuTask<I, O>, input: I): Effect.Effect<O, CpuTaskError, Workers> =>
  Effect.flatMap(Workers, (workers) => workers.run(task, input))

/** The pool's `run`, refusing a task that cannot run before it reaches a thread. */
const checkedRun = (service: WorkersService): WorkersService =>
  Object.assign(Object.create(service), {
    run: <I, O>(task: CpuTask<I, O>, input: I): Effect.Effect<O, CpuTaskError> =>
      Effect.suspend(() => {
        const invalid = taskProblem(task)
        return invalid === undefined ? service.run(task, input) : Effect.fail(invalid)
      })
  })

// ---------------------------------------------------------------------------------------------------------- options

const count = (option: string, min: 0 | 1) =>
  Schema.Number.pipe(
    Schema.filter((n) => (Number.isInteger(n) && n >= min) || `${option} must be an integer >= ${min}, got ${n}`)
  )

const idleTime = positiveDuration("idleTime", '"30 seconds" or 30000 (millis)').pipe(
  Schema.filter((input) => {
    // the pool checks for idle threads every idleTime: below the engine's resolution it would spin
    const millis = Duration.toMillis(Duration.decode(input))
    return millis >= 1 || `idleTime must be at least 1 ms, the timer engine's resolution, got ${millis} ms`
  })
)

const defaultMaxThreads = (): number => Math.max(1, availableParallelism())

/**
 * The options `Workers.layer` validates. Durations are anything `Duration.decode` accepts.
 *
 * | option | default | meaning |
 * | --- | --- | --- |
 * | `minThreads` | 1 | threads kept alive when idle; with 0, no thread starts before the first task |
 * | `maxThreads` | CPU cores | threads at most; each runs one task at a time |
 * | `idleTime` | 30 seconds | how long threads above `minThreads` may stay idle before they exit |
 * | `queueLength` | 1000 | tasks that may wait for a thread (0 allowed) |
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Workers } from "tickwork"
 *
 * const fromConfig = Schema.decodeUnknownSync(Workers.Options)({ maxThreads: 4, idleTime: "1 minute" })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export const Options = Schema.Struct({
  minThreads: Schema.optional(count("minThreads", 0)),
  maxThreads: Schema.optional(count("maxThreads", 1)),
  idleTime: Schema.optional(idleTime),
  queueLength: Schema.optional(count("queueLength", 0))
}).pipe(
  Schema.filter((o) => {
    const min = o.minThreads ?? 1
    const max = o.maxThreads ?? defaultMaxThreads()
    if (min <= max) return true
    const which = o.maxThreads === undefined ? `maxThreads (${max}, the number of CPU cores)` : `maxThreads (${max})`
    return { path: ["minThreads"], message: `minThreads must not exceed ${which}, got ${min}` }
  })
)

/**
 * The options `Workers.layer` takes, as a type.
 *
 * @example
 * ```ts
 * import type { Workers } from "tickwork"
 *
 * const options: Workers.Options = { minThreads: 0, maxThreads: 2, queueLength: 50 }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type Options = Schema.Schema.Type<typeof Options>

/**
 * Options with every default filled in.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const resolved = Workers.decodeOptions({ maxThreads: 2 }).pipe(
 *   Effect.map((options: Workers.ResolvedOptions) => options.queueLength) // 1000, the default
 * )
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolvedOptions {
  readonly minThreads: number
  readonly maxThreads: number
  readonly idleTime: Duration.Duration
  readonly queueLength: number
}

/**
 * Validates options as `layer` does and fills in the defaults (useful for options read from configuration).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const checked = Workers.decodeOptions({ minThreads: 4, maxThreads: 2 })
 * // fails with InvalidWorkersOptions: "- minThreads: must not exceed maxThreads (2), got 4"
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const decodeOptions = (options: unknown): Effect.Effect<ResolvedOptions, InvalidWorkersOptions> =>
  // undefined is "the defaults", as for `layer()`
  Schema.decodeUnknown(Options, { errors: "all", onExcessProperty: "error" })(
    options === undefined ? {} : options
  ).pipe(
    Effect.mapError(
      (error) => new InvalidWorkersOptions({ details: formatOptionsError(error, options, "{ maxThreads: 2 }") })
    ),
    Effect.map(
      (o): ResolvedOptions => ({
        minThreads: o.minThreads ?? 1,
        maxThreads: o.maxThreads ?? defaultMaxThreads(),
        idleTime: Duration.decode(o.idleTime ?? "30 seconds"),
        queueLength: o.queueLength ?? 1000
      })
    )
  )

// The pool module imports this one, so it is loaded after it (a dynamic import), but right away: by the time a layer
// is built the import has settled, and building a layer waits for no real time (it stays deterministic under
// TestClock).
const poolModule = import("./internal/workerPool.js")

/**
 * Validates `options` and starts a pool of worker threads for the layer's scope; closing the scope ends every thread.
 * With `minThreads` >= 1 the threads start with the layer (which waits for one, so that a thread that cannot start
 * fails the layer); with 0 none starts before the first task. The pool grows on demand up to `maxThreads`.
 * The pool's module is loaded only when this layer is built. A thread that cannot start (a module it imports is
 * missing) fails the pool: the task waiting for it and every later one fail with `WorkerFailure` (reason `spawn`).
 *
 * A task module written in TypeScript (an app run with tsx) is loaded through tsx, which each thread registers from
 * the task module's own project; without one there the task fails with `CpuTaskNotFound` saying what to install.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Workers } from "tickwork"
 *
 * const WorkersLive = Workers.layer({ minThreads: 1, maxThreads: 4, idleTime: "1 minute", queueLength: 100 })
 * const program = Effect.flatMap(Workers.Workers, (w) => w.stats).pipe(Effect.provide(WorkersLive))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Workers, InvalidWorkersOptions | WorkerFailure> =>
  Layer.scoped(
    Workers,
    Effect.gen(function* () {
      const resolved = yield* decodeOptions(options)
      const pool = yield* Effect.promise(() => poolModule)
      return checkedRun(yield* pool.make(resolved))
    })
  )
