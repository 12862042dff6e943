/**
 * The parts of a worker call that Spot terminators and the pool share: the call record, the admission protocol and
 * the per-thread registry of CPU tasks.
 */
import type * as Effect from "effect/Effect"
import { pipeArguments } from "effect/Pipeable"

export const WorkerCallTypeId: unique symbol = Symbol.for("tickwork/WorkerCall")
export type WorkerCallTypeId = typeof WorkerCallTypeId

/**
 * A call that got its place: `work` runs it, `release` gives the place back. `work` releases when it ends; `release`
 * is idempotent, so whoever forks `work` also calls it when the fiber ends (a fiber interrupted before it started
 * never runs `work`'s finalizer).
 */
export interface Admitted<A, E> {
  readonly work: Effect.Effect<A, E>
  readonly release: () => void
}

const variance = { _A: (_: never) => _, _E: (_: never) => _, _R: (_: never) => _ }

export class WorkerCallImpl<A, E, R> {
  readonly [WorkerCallTypeId] = variance
  constructor(
    readonly kind: "cpu" | "io",
    readonly label: string,
    /** Takes the call's place (a CPU call fails at once when the pool's queue is full), without running it. */
    readonly admit: Effect.Effect<Admitted<A, E>, E, R>
  ) {}

  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  }

  toString(): string {
    return `WorkerCall(${this.kind}: ${this.label})`
  }
}

/** The pool's synchronous admission, found on the pool service under this key. */
export const reserveKey: unique symbol = Symbol.for("tickwork/Workers/reserve")

/** A CPU task as the registry holds it (the public `CpuTask` without its type parameters). */
export interface RegisteredTask {
  readonly name: string
  readonly module: string
  readonly input: unknown
  readonly output: unknown
  readonly run: (input: any) => unknown
}

/**
 * CPU tasks by `module#name`, per thread. A task module registers its tasks when it is evaluated, on the main thread
 * and again inside each worker thread that imports it. Kept on `globalThis` so that two copies of this module (a
 * bundler, a test runner's module graph) still share one registry.
 */
export const taskRegistry = (): Map<string, RegisteredTask> => {
  const key = Symbol.for("tickwork/Workers/tasks")
  const holder = globalThis as { [key]?: Map<string, RegisteredTask> }
  let registry = holder[key]
  if (registry === undefined) {
    registry = new Map()
    holder[key] = registry
  }
  return registry
}

export const taskKey = (module: string, name: string): string => `${module}#${name}`
