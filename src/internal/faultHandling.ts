/**
 * A cell's life and death (Akka's `FaultHandling`): start, supervision of a failure (resume, restart, stop, escalate,
 * with the restart limits), the stop sequence (graceful or forced) and what a stopped actor leaves behind. Lifetimes
 * follow docs/design-choices.md: stop and restart cancel the incarnation's timers and stop its children before
 * anything new starts.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Runtime from "effect/Runtime"
import type { ActorRef } from "../ActorRef.js"
import type { Directive, SupervisorStrategy } from "../Supervision.js"
import type { ActorCell } from "./actorCell.js"
import { ChildFailed, Envelope, Flag, Status } from "./cellProtocol.js"
import { EMPTY } from "./mailbox.js"
import { recordDropped } from "./metrics.js"
import { MailboxTick } from "./tick.js"

/**
 * Calls a user handler. A handler that throws instead of returning an effect fails like a defect, so supervision
 * sees it; the common path costs a try block, no allocation.
 */
export const attempt = (handler: () => Effect.Effect<unknown, unknown, any>): Effect.Effect<unknown, unknown> => {
  try {
    const effect = handler() as Effect.Effect<unknown, unknown>
    return effect == null ? notAnEffect("a lifecycle hook", effect) : effect
  } catch (defect) {
    return Effect.die(defect)
  }
}

/** A handler returned nothing (a JavaScript caller's `return` forgotten): a defect, so supervision sees it. */
export const notAnEffect = (handler: string, value: unknown): Effect.Effect<never> =>
  Effect.die(new TypeError(`${handler} returned ${value} instead of an Effect`))

/** Runs a lifecycle hook; its failure is logged, never propagated (interruption excepted). */
const guard = (hook: () => Effect.Effect<void, never, any>, name: string): Effect.Effect<void> =>
  Effect.catchAllCause(Effect.asVoid(attempt(hook)), (cause) =>
    Cause.isInterruptedOnly(cause)
      ? (Effect.failCause(cause) as Effect.Effect<never>)
      : Effect.logError(`${name} failed`, cause)
  )

const DIRECTIVES: ReadonlySet<string> = new Set<Directive>(["resume", "restart", "stop", "escalate"])

// ------------------------------------------------------------------ start and supervision

/** The first step of an actor's first drain: `preStart` builds the state; a failure stops the actor. */
export const start = (cell: ActorCell): Effect.Effect<void> =>
  Effect.matchCauseEffect(
    attempt(() => cell.actor.preStart(cell.context)),
    {
      onSuccess: (state) => {
        cell.state = state
        if (cell.status === Status.Starting) cell.status = Status.Running
        return Effect.void
      },
      onFailure: (cause) =>
        Effect.zipRight(Effect.logError("preStart failed; the actor is stopped", cause), terminate(cell, false, false))
    }
  )

/** A handler failed: the parent's strategy (the guardian's for a top-level actor) decides. */
export const onFailure = (cell: ActorCell, cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  const strategy = cell.parent?.actor.supervisorStrategy ?? cell.host.guardianStrategy
  let directive: Directive
  let decided: Cause.Cause<unknown> = cause
  try {
    directive = strategy.decide(cause)
    if (!DIRECTIVES.has(directive)) throw new TypeError(`decide returned ${String(directive)}, not a directive`)
  } catch (defect) {
    // a decider that throws (or answers nonsense) cannot be obeyed: the safe answer is to stop the actor
    directive = "stop"
    decided = Cause.sequential(cause, Cause.die(defect))
  }
  if (directive === "restart" && !mayRestart(cell, strategy)) directive = "stop"
  const logged = Effect.logError(`actor failed; supervisor directive: ${directive}`, decided)
  switch (directive) {
    case "resume":
      return logged
    case "restart":
      return Effect.zipRight(logged, restart(cell, cause))
    case "stop":
      return Effect.zipRight(logged, stop(cell))
    case "escalate": {
      const parent = cell.parent
      return Effect.zipRight(
        logged,
        Effect.zipRight(
          stop(cell),
          Effect.sync(() => parent?.offerSystem(new ChildFailed(cell, cause)))
        )
      )
    }
  }
}

const mayRestart = (cell: ActorCell, strategy: SupervisorStrategy): boolean => {
  if (strategy.maxRestarts === Number.POSITIVE_INFINITY) return true
  const now = cell.host.driver.now()
  const restarts = (cell.restarts = (cell.restarts ?? []).filter((t) => now - t < strategy.withinMillis))
  if (restarts.length >= strategy.maxRestarts) return false
  restarts.push(now)
  return true
}

const restart = (cell: ActorCell, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.gen(function* () {
    cell.status = Status.Starting
    cell.cancelTimers()
    yield* stopChildren(cell)
    yield* guard(() => cell.actor.preRestart(cell.context, cell.state, cause), "preRestart")
    const started = yield* Effect.exit(attempt(() => cell.actor.preStart(cell.context)))
    if (started._tag === "Failure") {
      yield* Effect.logError("preStart failed on restart; the actor is stopped", started.cause)
      return yield* terminate(cell, false, false)
    }
    cell.state = started.value
    cell.status = Status.Running
    yield* guard(() => cell.actor.postRestart(cell.context, cell.state, cause), "postRestart")
  })

/** The actor's own machinery failed (start, stop, an escalation): it is stopped, its stop forced. */
export const internalDefect = (cell: ActorCell, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.zipRight(Effect.logError("actor drain failed; stopping the actor", cause), terminate(cell, true, true))

/**
 * The dispatcher caught a throw that escaped the cell's drain machinery: stop the actor as an internal defect, and when
 * even that fails, take it out of the system without its hooks, so that nothing waits for it forever.
 */
export const abandon = (cell: ActorCell, cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  cell.fiber = undefined
  return Effect.catchAllCause(internalDefect(cell, cause), (again) =>
    Cause.isInterruptedOnly(again)
      ? Effect.failCause(again)
      : Effect.zipRight(
          Effect.logError("the actor's stop sequence failed too; it is removed without its hooks", again),
          Effect.sync(() => removeNow(cell))
        )
  )
}

/** The last resort of `abandon`: terminated, its timers cancelled, gone from its parent and the system. */
const removeNow = (cell: ActorCell): void => {
  cell.status = Status.Terminated
  cell.cancelTimers()
  cell.parent?.children?.delete(cell.name)
  cell.host.terminated(cell)
  cell.released()
}

// ------------------------------------------------------------------ stopping

/** Stops the actor now, from its own drain: timers, then children, then `postStop`, then dead letters. */
export const stop = (cell: ActorCell): Effect.Effect<void> =>
  cell.status >= Status.Stopping ? Effect.void : terminate(cell, true, false)

/**
 * The stop sequence. `forced` interrupts the children instead of asking them to stop after their current message;
 * it runs when this actor's own fiber is interrupted (system shutdown), and it completes a graceful stop that the
 * interruption cut short: `postStop` runs once either way.
 */
export const terminate = (cell: ActorCell, runPostStop: boolean, forced: boolean): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (cell.status === Status.Terminated) return
    if (cell.status !== Status.Stopping) {
      cell.setFlag(Flag.PostStopPending, runPostStop && cell.status === Status.Running)
      cell.status = Status.Stopping
    }
    // A graceful stop that hangs (in a child, in `postStop`) is forced when the system's stop timeout passes.
    if (!forced) cell.host.armStopDeadline(cell)
    cell.cancelTimers()
    yield* forced ? interruptChildren(cell) : stopChildren(cell)
    if (cell.hasFlag(Flag.PostStopPending)) {
      cell.setFlag(Flag.PostStopPending, false)
      const postStop = guard(() => cell.actor.postStop(cell.context, cell.state), "postStop")
      // Forced, nothing else bounds it: a `postStop` that never returns is interrupted after the stop timeout.
      yield* forced ? cell.host.bounded(postStop, cell, "postStop") : postStop
    }
    cell.status = Status.Terminated
    if (cell.pending !== undefined) {
      // A tick handler left by `handleNow` whose drain never ran (a forced stop took over): counted, not lost.
      cell.pending = undefined
      recordDropped("owner_stopped")
    }
    drainToDeadLetters(cell)
    cell.parent?.children?.delete(cell.name)
    cell.host.terminated(cell)
    cell.released()
    cell.hooks?.terminated?.(cell.owner)
  })

/**
 * Stops the actor now, from outside its drain: interrupts the drain (a handler in flight), then runs the forced stop
 * sequence on a fiber with the actor's own context. Used by system shutdown, a parent's forced stop and the stop
 * timeout.
 */
export const forceStop = (cell: ActorCell): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (cell.status === Status.Terminated || cell.baseRefs === undefined) return Effect.void
    const fiberRefs = cell.fiberRefs(FiberId.none)
    const running = cell.fiber
    cell.setFlag(Flag.Draining, true) // no new drain may start
    cell.setFlag(Flag.Forced, true) // and a queued one must not run
    cell.fiber = undefined
    const interrupted = running === undefined ? Effect.void : Fiber.interrupt(running)
    const runtime = Runtime.make({
      context: FiberRefs.getOrDefault(fiberRefs, FiberRef.currentContext),
      fiberRefs,
      runtimeFlags: Runtime.defaultRuntimeFlags
    })
    return Effect.zipRight(
      interrupted,
      // awaited, not joined: a join would copy the actor's FiberRefs (its `actor` annotation) into the caller
      Effect.suspend(() => Effect.flatten(Fiber.await(Runtime.runFork(runtime)(terminate(cell, true, true)))))
    )
  })

const stopChildren = (cell: ActorCell): Effect.Effect<void> => {
  if (cell.children === undefined || cell.children.size === 0) return Effect.void
  const children = Array.from(cell.children.values())
  for (const child of children) child.requestStop()
  return Effect.forEach(children, (child) => child.awaitDone, { discard: true })
}

/** Stops the children now: a handler in flight is interrupted; each runs its own forced stop sequence. */
const interruptChildren = (cell: ActorCell): Effect.Effect<void> => {
  if (cell.children === undefined || cell.children.size === 0) return Effect.void
  return Effect.forEach(Array.from(cell.children.values()), forceStop, { discard: true })
}

/** What was still queued for a stopped actor: user messages become dead letters (or go to its runtime's hook). */
const drainToDeadLetters = (cell: ActorCell): void => {
  const deadLetter = (message: unknown, sender: ActorRef<any> | undefined) =>
    cell.host.deadLetter(message, sender, cell.path, "stopped")
  for (;;) {
    const entry = cell.mailbox.pollUser()
    if (entry === EMPTY) break
    if (entry instanceof MailboxTick) {
      entry.queued--
      entry.lost(deadLetter)
    } else if (entry instanceof Envelope) {
      undelivered(cell, entry.message, entry.sender)
    } else {
      undelivered(cell, entry, undefined)
    }
  }
}

const undelivered = (cell: ActorCell, message: unknown, sender: ActorRef<any> | undefined): void => {
  const sink = cell.hooks?.undelivered
  if (sink !== undefined) sink(cell.owner, message, sender)
  else cell.host.deadLetter(message, sender, cell.path, "stopped")
}
