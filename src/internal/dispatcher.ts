/**
 * Runs the drains of ready actors, many per fiber.
 *
 * Starting a fiber costs more than handling a typical tick (it copies the runtime's FiberRefs and allocates a
 * FiberRuntime), so a fiber per drain caps an actor system near 100k ticks/s. The dispatcher keeps a queue of ready
 * cells and runs their drains back to back on one *batch fiber*, switching the fiber's FiberRefs to each actor's own
 * (its services and its `actor` log annotation) before the first effect of its drain that runs on the fiber, exactly
 * what a fiber of its own would have seen. A drain whose handlers all complete in place (`completeNow`) runs no code
 * that could observe a fiber, and switches nothing.
 *
 * A batch fiber is started with `immediate`, so it runs synchronously until it finishes or suspends. When a handler
 * suspends (it sleeps or awaits a reply, or Effect's run loop yields after 2,048 operations) the batch fiber stays with
 * that actor and the dispatcher starts a new batch fiber for the rest of the queue: a slow handler never holds up
 * another actor. An actor that has handled `throughput` messages in a row goes to the back of the queue. The suspended
 * fiber finishes its actor's drain when it resumes and then ends, because the queue now belongs to the newer batch (an
 * epoch counter says which one owns it).
 *
 * A tick for an idle actor is handled as it fires, without the dispatcher (`ActorCell.handleNow`), when its handler
 * completes at once (a value or an `Effect.sync`); any other handler effect is queued here like a drain. Ticks for busy
 * actors, fired in a driver turn, are run by `flush` at the end of the turn, inside it. Other wake-ups (a tell from a
 * handler or from outside) schedule one flush on Effect's scheduler, so handlers never nest and a burst of tells is
 * handled in one batch. A flush runs at most `FLUSH_BUDGET` drains and then schedules the rest.
 *
 * Scheduled flushes run as microtasks (Effect's scheduler), and so do the resumptions of batch fibers. Effect's
 * scheduler moves to a macrotask only after 2,048 rounds *of one fiber*, and every batch fiber is new, so actors that
 * keep telling each other would keep Node in microtasks forever: no I/O, no timers, and under `TestClock` (where a
 * zero sleep completes at once) not even the test runner. So after `FLUSHES_PER_MACROTASK` scheduled flushes in a
 * row the next one waits for a macrotask (Effect's `Scheduler.timer(0)`); a flush run by the timer driver, which
 * itself sleeps on macrotasks, starts the count again.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRefs from "effect/FiberRefs"
import * as Runtime from "effect/Runtime"
import * as Scheduler from "effect/Scheduler"
import { NOT_NOW, valueNow, withFiberRefs } from "./effectInternals.js"
import { flushMetrics } from "./metrics.js"

/**
 * An actor's drain as the dispatcher runs it: `enter` on the batch fiber, then `next` until it returns undefined,
 * running each effect it returns and reporting the outcome to `succeeded` or `failed` (whose effect never fails).
 */
export interface Drainable {
  /**
   * The drain broke outside any handler (a throw in the machinery itself, which handlers' own failures never reach):
   * stop this drainable as best it can. The dispatcher goes on with the others.
   */
  abandon(cause: Cause.Cause<unknown>): Effect.Effect<void>
  enter(fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean
  /** The FiberRefs the drainable's effects run with: installed before the first effect of a drain run on a fiber. */
  fiberRefsOn(fiber: Fiber.RuntimeFiber<unknown, unknown>): FiberRefs.FiberRefs
  next(): Effect.Effect<unknown, unknown> | undefined
  succeeded(value: unknown): void
  failed(cause: Cause.Cause<unknown>): Effect.Effect<void>
}

/** Drains run per flush before the rest is left to a scheduled flush. */
const FLUSH_BUDGET = 4_096

/** Scheduled flushes in a row (microtasks) before one waits for a macrotask. */
const FLUSHES_PER_MACROTASK = 256

const macrotask = Scheduler.timer(0)

/** Batch fibers start empty: each drain installs its actor's own FiberRefs. */
const batchRuntime = Runtime.make({
  context: Context.empty(),
  fiberRefs: FiberRefs.empty(),
  runtimeFlags: Runtime.defaultRuntimeFlags
})

export class Dispatcher {
  constructor(
    /** Reports a fault of the dispatcher itself (not of one drainable); the effect never fails. */
    private readonly onFault: (cause: Cause.Cause<unknown>) => Effect.Effect<void> = (cause) =>
      Effect.logError("the dispatcher faulted; it goes on with the next drain", cause)
  ) {}

  private ready: Array<Drainable> = []
  private head = 0
  /** Bumped by each batch fiber as it takes the queue; an older batch fiber stops after its current drain. */
  private epoch = 0
  private flushScheduled = false
  private flushing = false
  /** Scheduled flushes since the last macrotask. */
  private microFlushes = 0

  /** Queues `cell`'s drain. `inTurn` wake-ups are flushed by the caller (the timer driver, at the end of its turn). */
  enqueue(cell: Drainable, inTurn: boolean): void {
    this.ready.push(cell)
    if (!inTurn && !this.flushing) this.scheduleFlush()
  }

  /** The timer driver's flush, at the end of its turn: the driver wakes on macrotasks, so the count starts again. */
  flushTurn(): void {
    this.microFlushes = 0
    this.flush()
  }

  /** Runs the queued drains now, on as few batch fibers as their handlers allow. */
  flush(): void {
    if (this.flushing) return
    this.flushing = true
    try {
      let budget = FLUSH_BUDGET
      while (this.head < this.ready.length) {
        if (budget <= 0) {
          this.scheduleFlush()
          return
        }
        const before = this.head
        Runtime.runFork(batchRuntime)(this.batch(), { immediate: true })
        budget -= Math.max(1, this.head - before)
      }
      this.ready = []
      this.head = 0
    } finally {
      this.flushing = false
      flushMetrics()
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    if (++this.microFlushes < FLUSHES_PER_MACROTASK) {
      Scheduler.defaultScheduler.scheduleTask(this.scheduledFlush, 0)
    } else {
      this.microFlushes = 0
      macrotask.scheduleTask(this.scheduledFlush, 0)
    }
  }

  private readonly scheduledFlush = (): void => {
    this.flushScheduled = false
    this.flush()
  }

  /**
   * One batch fiber's loop: drain the current actor step by step, then take the next ready one while this batch owns
   * the queue, which it does only inside the flush that started it. Resumed later (after a handler suspended), it
   * finishes that drain and ends: whatever was queued meanwhile has a flush of its own. The continuations are made
   * once per batch, so a step allocates nothing but what the handler itself does.
   */
  private batch(): Effect.Effect<void> {
    const epoch = ++this.epoch
    let current: Drainable | undefined
    /** Whose FiberRefs the fiber has had since `current` was taken (a drain that completes all in place needs none). */
    let installed: Drainable | undefined
    const step: Effect.Effect<void> = Effect.withFiberRuntime((fiber) => {
      for (;;) {
        if (current === undefined) {
          if (!this.flushing || this.epoch !== epoch || this.head >= this.ready.length) {
            // A batch fiber resumed outside a flush has handled ticks no flush will count.
            if (!this.flushing) flushMetrics()
            return Effect.void
          }
          current = this.ready[this.head]!
          this.ready[this.head++] = undefined as never
          installed = undefined
          if (!current.enter(fiber)) {
            current = undefined
            continue
          }
        }
        const effect = current.next()
        if (effect === undefined) {
          current = undefined
          continue
        }
        let rest = completeNow(effect, current)
        if (rest !== undefined) {
          if (installed !== current) {
            rest = withFiberRefs(fiber, current.fiberRefsOn(fiber), rest)
            installed = current
          }
          return Effect.matchCauseEffect(rest, continuation)
        }
      }
    })
    const continuation = {
      onSuccess: (value: unknown) => {
        current!.succeeded(value)
        return step
      },
      onFailure: (cause: Cause.Cause<unknown>) => Effect.zipRight(current!.failed(cause), step)
    }
    // A throw that escapes a drain's own machinery (never a handler's failure: that goes to `failed` above) stops that
    // drainable, and the batch goes on with the rest; an interruption (a forced stop) ends the fiber as before.
    const guarded: Effect.Effect<void> = Effect.catchAllCause(step, (cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      const broken = current
      current = undefined
      return Effect.zipRight(broken === undefined ? this.onFault(cause) : broken.abandon(cause), guarded)
    })
    return guarded
  }
}

/**
 * Completes `effect` for `drainable` right here when it is a value or a plain `Effect.sync` (`valueNow`, behind the
 * seam of effect's internals), reporting the value to `succeeded`; undefined then. Otherwise returns what must still
 * run on a fiber: the effect itself, or the defect of a thunk that threw. Handlers mostly return one of these two, and
 * the run loop is a large share of a tick, so this is the dispatcher's fast path (docs/performance.md).
 */
export const completeNow = (
  effect: Effect.Effect<unknown, unknown>,
  drainable: Drainable
): Effect.Effect<unknown, unknown> | undefined => {
  let value: unknown
  try {
    value = valueNow(effect)
  } catch (defect) {
    // `Effect.sync(thunk)` whose thunk threw: a defect, as the run loop would make it
    return Effect.die(defect)
  }
  if (value === NOT_NOW) return effect
  drainable.succeeded(value)
  return undefined
}
