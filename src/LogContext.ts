/**
 * The diagnostic context of a fiber: its log annotations and log spans.
 *
 * Ticks carry none of it. Whatever armed a timer does not own the schedule, so a tick runs with the actor's own
 * annotation (`actor` = its path) only, on every timer kind and every system-scheduler entry point. A plain `tell`
 * does carry the sender's context to the receiver. When a tick really needs the context it was armed under, take a
 * `snapshot` when arming and `run` under it in the handler.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as List from "effect/List"
import type * as LogSpan from "effect/LogSpan"

/**
 * A captured diagnostic context.
 *
 * @since 0.1.0
 * @category models
 */
export interface LogContext {
  readonly annotations: HashMap.HashMap<string, unknown>
  readonly spans: List.List<LogSpan.LogSpan>
}

/**
 * The empty context a tick starts from.
 *
 * @example
 * ```ts
 * import { LogContext } from "tickwork"
 *
 * console.log(LogContext.isEmpty(LogContext.empty))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: LogContext = { annotations: HashMap.empty(), spans: List.empty() }

/**
 * True when the context holds no annotation and no span.
 *
 * @example
 * ```ts
 * import { LogContext } from "tickwork"
 *
 * console.log(LogContext.isEmpty(LogContext.empty)) // true
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isEmpty = (self: LogContext): boolean => HashMap.isEmpty(self.annotations) && List.isNil(self.spans)

/**
 * Captures the current fiber's annotations and log spans, e.g. when arming a timer.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { LogContext } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const armedUnder = yield* LogContext.snapshot
 *   // later, in the tick handler:
 *   yield* LogContext.run(armedUnder, Effect.logInfo("sweeping"))
 * }).pipe(Effect.annotateLogs("tenant", "acme"))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const snapshot: Effect.Effect<LogContext> = Effect.withFiberRuntime((fiber) =>
  Effect.succeed({
    annotations: fiber.getFiberRef(FiberRef.currentLogAnnotations),
    spans: fiber.getFiberRef(FiberRef.currentLogSpan)
  })
)

/**
 * Runs `effect` with `context` added to the current annotations and spans (the snapshot wins on equal keys).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { LogContext } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const armedUnder = yield* LogContext.snapshot.pipe(Effect.annotateLogs("tenant", "acme"))
 *   yield* LogContext.run(armedUnder, Effect.logInfo("has tenant=acme"))
 * })
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const run = <A, E, R>(context: LogContext, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  isEmpty(context)
    ? effect
    : Effect.flatMap(FiberRef.get(FiberRef.currentLogAnnotations), (current) =>
        effect.pipe(
          Effect.locally(FiberRef.currentLogAnnotations, HashMap.union(current, context.annotations)),
          Effect.locally(FiberRef.currentLogSpan, context.spans)
        )
      )
