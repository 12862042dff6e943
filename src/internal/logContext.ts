import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as List from "effect/List"
import * as Tracer from "effect/Tracer"
import type { LogContext } from "../LogContext.js"

/** The sender's diagnostic context, or undefined when it has none (the common case costs no allocation). */
export const captureFrom = (fiber: Fiber.RuntimeFiber<unknown, unknown>): LogContext | undefined => {
  const annotations = fiber.getFiberRef(FiberRef.currentLogAnnotations)
  const spans = fiber.getFiberRef(FiberRef.currentLogSpan)
  if (!List.isNil(spans)) return { annotations, spans }
  const size = HashMap.size(annotations)
  // An actor's own `actor` annotation is not context to carry: the receiver replaces it with its own path. So a tell
  // between actors with nothing else in context costs no envelope.
  return size === 0 || (size === 1 && HashMap.has(annotations, "actor")) ? undefined : { annotations, spans }
}

export const currentLogContext: Effect.Effect<LogContext | undefined> = Effect.withFiberRuntime((fiber) =>
  Effect.succeed(captureFrom(fiber))
)

/**
 * Runs `effect` with no diagnostic context from the fiber that started it: no annotations but `base`, no log spans,
 * no parent span. Actor loops, the timer driver and scheduler tasks all start this way.
 */
export const isolated = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  base: HashMap.HashMap<string, unknown> = HashMap.empty()
): Effect.Effect<A, E, R> =>
  effect.pipe(
    Effect.locally(FiberRef.currentLogAnnotations, base),
    Effect.locally(FiberRef.currentLogSpan, List.empty()),
    Effect.mapInputContext(
      (context: Context.Context<R>) => Context.omit(Tracer.ParentSpan)(context) as Context.Context<R>
    )
  )

/** `context` without the tracing parent span, so that work started later does not join the caller's trace. */
export const withoutParentSpan = <R>(context: Context.Context<R>): Context.Context<R> =>
  Context.omit(Tracer.ParentSpan)(context) as Context.Context<R>
