/**
 * The message between the main thread and a CPU worker thread, and what the worker thread does with it.
 *
 * A request names the task by its module URL and name and carries the input encoded by the task's input Schema; the
 * worker thread imports the module (once), finds the task in the per-thread registry, decodes the input, runs the
 * computation and encodes the result with the task's output Schema. The outer message is a `Schema.TaggedRequest`,
 * so its failures arrive as the tagged errors of `Workers`.
 */
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { CpuTaskFailed, CpuTaskNotFound } from "../Workers.js"
import { type RegisteredTask, taskKey, taskRegistry } from "./workerCall.js"
import { importTaskModule } from "./workerImport.js"

export class RunCpuTask extends Schema.TaggedRequest<RunCpuTask>("tickwork/Workers/RunCpuTask")("RunCpuTask", {
  failure: Schema.Union(CpuTaskFailed, CpuTaskNotFound),
  success: Schema.Unknown,
  payload: {
    /** The URL of the module that defines the task. */
    module: Schema.String,
    task: Schema.String,
    /** The input, encoded by the task's input Schema. */
    input: Schema.Unknown
  }
}) {}

const describe = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : String(cause)

/** Finds the task, importing its module on first use in this thread. */
const lookup = (module: string, name: string): Effect.Effect<RegisteredTask, CpuTaskNotFound> =>
  Effect.suspend(() => {
    const key = taskKey(module, name)
    const known = taskRegistry().get(key)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.tryPromise({
      try: () => importTaskModule(module),
      catch: (cause) =>
        new CpuTaskNotFound({ task: name, module, reason: `the module could not be imported: ${describe(cause)}` })
    }).pipe(
      Effect.flatMap(() => {
        const loaded = taskRegistry().get(key)
        return loaded !== undefined
          ? Effect.succeed(loaded)
          : Effect.fail(
              new CpuTaskNotFound({
                task: name,
                module,
                reason: "the module does not define it at its top level (Workers.cpuTask(import.meta.url, ...))"
              })
            )
      })
    )
  })

/** Runs one request inside a worker thread. */
export const runTask = (request: RunCpuTask): Effect.Effect<unknown, CpuTaskFailed | CpuTaskNotFound> =>
  Effect.flatMap(lookup(request.module, request.task), (task) => {
    const input = task.input as Schema.Schema<unknown, unknown>
    const output = task.output as Schema.Schema<unknown, unknown>
    return checked(task.name, "input", Schema.decodeUnknown(input)(request.input)).pipe(
      Effect.flatMap((decoded) =>
        Effect.try({
          try: () => task.run(decoded),
          catch: (cause) => new CpuTaskFailed({ task: task.name, reason: describe(cause) })
        })
      ),
      Effect.flatMap((result) => checked(task.name, "result", Schema.encode(output)(result)))
    )
  })

/** A Schema step whose failure (or throw: transformations may throw) is the task's `CpuTaskFailed`. */
const checked = <A>(
  task: string,
  what: "input" | "result",
  step: Effect.Effect<A, ParseResult.ParseError>
): Effect.Effect<A, CpuTaskFailed> =>
  step.pipe(
    Effect.mapError((error) => error.message),
    Effect.catchAllDefect((defect) => Effect.fail(describe(defect))),
    Effect.mapError((reason) => new CpuTaskFailed({ task, reason: `${what} does not match its Schema: ${reason}` }))
  )
