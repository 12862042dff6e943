/**
 * The Spot runtime: an actor whose mailbox is the Spot's execution queue.
 *
 * Every piece of Spot work is a `Job`: submitted work, a timer tick, the `onStart` hook. The actor's fiber takes one
 * queue entry at a time and gives the job **the turn**: it forks the job's fiber (in the Spot's scope) and waits
 * until the job gives the turn back, by ending or by `Spot.Yield`. While a job holds the turn nothing else of the
 * Spot runs, so Spot state needs no lock. A job that yields forks its worker call off the turn; when the call ends, a
 * `ResumeJob` entry enters the queue behind whatever is already there, and handling it hands the turn back to the
 * waiting job. The job runs on a fiber of its own (not on the actor's) precisely so that it can wait off the turn.
 *
 * Queue entries:
 * - `RunJob`: a job from `run`, `submit` or `onStart`, delivered as a plain message;
 * - `ResumeJob`: the continuation of a job after `Spot.Yield`;
 * - `SpotTimer`: a timer's tick, a `MailboxTick` whose `handler()` computes the tick's fields when it starts.
 *
 * The state guard: `currentJob` (a FiberRef) names the job a fiber works for. State access and timer registration
 * check that this job holds the turn; worker calls run with `currentJob` cleared, so a worker that touches Spot
 * state dies instead of racing the Spot.
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import { pipeArguments } from "effect/Pipeable"
import * as Scope from "effect/Scope"
import * as Actor from "../Actor.js"
import type { ActorSystemService, SpawnError } from "../ActorSystem.js"
import * as OverrunPolicy from "../OverrunPolicy.js"
import { type Options, type Spot, type SpotContext, SpotStopped } from "../Spot.js"
import {
  DuplicateTimerName,
  InvalidOverrunPolicy,
  type SpotTimerError,
  type SpotTimers,
  type TimerHandle,
  TypeId as TimerHandleTypeId,
  type TimerOptions
} from "../SpotTimers.js"
import type { Tick } from "../Tick.js"
import { InvalidTimerOptions } from "../TimerError.js"
import type { TimerInfo } from "../Timers.js"
import type { WorkerCall } from "../Workers.js"
import type { ActorCell, CellRef, TimerTable } from "./actorCell.js"
import { intervalMillis } from "./duration.js"
import { captureFrom, withoutParentSpan } from "./logContext.js"
import { EMPTY } from "./mailbox.js"
import { recordDropped } from "./metrics.js"
import { SpotTimer, type SpotTimerHost } from "./spotTimer.js"
import { MailboxTick } from "./tick.js"
import type { TimerDriver } from "./timerDriver.js"
import { describeValue } from "./validate.js"
import type { WorkerCallImpl } from "./workerCall.js"

export const SpotTypeId: unique symbol = Symbol.for("tickwork/Spot")

/** The job a fiber works for; undefined outside Spot work and inside worker calls. */
export const currentJob: FiberRef.FiberRef<Job | undefined> = FiberRef.unsafeMake<Job | undefined>(undefined)

/** One piece of Spot work, from its first turn to its end. */
class Job {
  /** Completed when the job gives the turn back; undefined while it waits off the turn. */
  gate: Deferred.Deferred<void> | undefined = undefined
  done = false

  constructor(
    readonly runtime: SpotRuntime<any>,
    /** The work, its context already provided. */
    readonly body: () => Effect.Effect<unknown, unknown>,
    /** Runs when the body ends (uninterruptibly, still holding the turn unless the Spot is stopping). */
    readonly finish: (exit: Exit.Exit<unknown, unknown>) => Effect.Effect<void>,
    /** Called when the Spot stops before the job started. */
    readonly abandon: () => void = () => {}
  ) {}
}

class RunJob {
  constructor(readonly job: Job) {}
}

class ResumeJob {
  constructor(
    readonly job: Job,
    readonly resume: () => void
  ) {}
}

/** The job a worker call runs for: a worker that waits for its own Spot while that job holds the turn would hang. */
const workerFor: FiberRef.FiberRef<Job | undefined> = FiberRef.unsafeMake<Job | undefined>(undefined)

/**
 * A worker call's effect: no Spot job (so no state access), interruptible even when forked from a masked region.
 */
const offTurn = <A, E>(effect: Effect.Effect<A, E>, job: Job): Effect.Effect<A, E> =>
  Effect.interruptible(effect.pipe(Effect.locally(currentJob, undefined), Effect.locally(workerFor, job)))

const logUnlessInterrupted = (message: string, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError(message, cause)

/** The services of the calling fiber, for work it queues (without its tracing parent, like a tell). */
const callerContext = <R>(fiber: Fiber.RuntimeFiber<unknown, unknown>): Context.Context<R> =>
  withoutParentSpan(fiber.getFiberRef(FiberRef.currentContext) as Context.Context<R>)

/** Spot mailboxes are unbounded whatever the system's default: a continuation must never be refused. */
const UNBOUNDED = Number.POSITIVE_INFINITY

const HandleProto = {
  [SpotTypeId]: SpotTypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  },
  toString(this: { path: string }) {
    return `Spot(${this.path})`
  }
}

const TimerHandleProto = {
  [TimerHandleTypeId]: TimerHandleTypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: the Pipeable protocol
    return pipeArguments(this, arguments)
  },
  toString(this: { name: string }) {
    return `TimerHandle(${this.name})`
  }
}

const TIMER_OPTIONS = ["name", "period", "overrun", "handler"]

/** The option of `start` that is not usable and why (the period and policy are checked on their own). */
const timerOptionsProblem = (options: unknown): readonly [string, string] | undefined => {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return ["options", `must be an object with name, period and handler, got ${describeValue(options)}`]
  }
  for (const key of Object.keys(options)) {
    if (!TIMER_OPTIONS.includes(key)) return [key, `is not a Spot timer option (${TIMER_OPTIONS.join(", ")})`]
  }
  const { handler, name } = options as TimerOptions<unknown, unknown>
  if (typeof name !== "string" || name.trim() === "") {
    return ["name", `must be a non-empty string, got ${describeValue(name)}`]
  }
  if (typeof handler !== "function") {
    const given = Effect.isEffect(handler) ? "an Effect" : describeValue(handler)
    return ["handler", `must be a function (tick, context) => Effect, got ${given}`]
  }
  return undefined
}

/** Why `policy` is not usable: not an `OverrunPolicy` at all (a string, `{}`), or a `CatchUpBounded` limit < 1. */
const overrunProblem = (policy: unknown): InvalidOverrunPolicy | undefined => {
  if (!OverrunPolicy.isOverrunPolicy(policy)) {
    return new InvalidOverrunPolicy({
      policy: describeValue(policy),
      reason:
        "it is not an OverrunPolicy: use OverrunPolicy.SkipLateTicks, OverrunPolicy.CatchUpBounded(limit) or " +
        "OverrunPolicy.DelayNextTick"
    })
  }
  if (policy._tag === "CatchUpBounded" && !(Number.isSafeInteger(policy.limit) && policy.limit >= 1)) {
    return new InvalidOverrunPolicy({
      policy: String(policy),
      reason: `the limit must be an integer >= 1, got ${describeValue(policy.limit)}`
    })
  }
  return undefined
}

export class SpotRuntime<S> implements SpotTimerHost, TimerTable {
  cell: ActorCell = undefined as unknown as ActorCell
  /** The job holding the turn. */
  holder: Job | undefined = undefined
  stopped = false
  state: S
  readonly timers = new Map<string, SpotTimer>()
  /** Jobs whose `RunJob` is queued: their callers learn of a stop. */
  private readonly queued = new Set<Job>()
  readonly context: SpotContext<S>
  readonly handle: Spot<S>

  constructor(
    readonly options: Options<S, any>,
    readonly system: ActorSystemService,
    readonly scope: Scope.CloseableScope,
    /** The context `spawn` ran in: `onStart` and `onStop` run with it. */
    private readonly services: Context.Context<any>
  ) {
    this.state = options.initialState
    this.context = this.makeContext()
    this.handle = this.makeHandle()
  }

  get path(): string {
    return this.cell.path
  }

  get driver(): TimerDriver {
    return this.cell.host.driver
  }

  /** Wires the actor in; queues `onStart` as the first job. */
  attach(cell: ActorCell): void {
    this.cell = cell
    // the cell stops the timer table with the actor's own timers, and counts it in the system's stats
    cell.addTimerTable(this)
    const onStart = this.options.onStart
    if (onStart === undefined) return
    this.enqueue(
      new Job(
        this,
        () => Effect.provide(onStart(this.context), this.services),
        (exit) =>
          Exit.isSuccess(exit)
            ? Effect.void
            : Effect.zipRight(
                logUnlessInterrupted("Spot onStart failed; the Spot stops", exit.cause),
                Effect.sync(() => this.cell.requestStop())
              )
      ),
      undefined
    )
  }

  // ------------------------------------------------------------------------------------------------------ the turn

  /** Handles one queue entry on the actor's fiber. */
  receive(message: unknown): Effect.Effect<void> {
    if (message instanceof RunJob) {
      this.queued.delete(message.job)
      return this.start(message.job)
    }
    if (message instanceof ResumeJob) return this.resume(message)
    return Effect.void
  }

  /** Gives `job` its first turn and waits until it gives the turn back. */
  private start(job: Job): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.stopped) return Effect.void
      const gate = Deferred.unsafeMake<void>(FiberId.none)
      job.gate = gate
      this.holder = job
      const program = Effect.suspend(job.body).pipe(
        Effect.locally(currentJob, job),
        Effect.onExit(job.finish),
        Effect.exit,
        Effect.ensuring(
          Effect.sync(() => {
            job.done = true
            this.release(job)
          })
        )
      )
      return Effect.zipRight(Effect.forkIn(Effect.interruptible(program), this.scope), Deferred.await(gate))
    })
  }

  /** Gives a yielded job the turn again and waits until it gives it back. */
  private resume(message: ResumeJob): Effect.Effect<void> {
    return Effect.suspend(() => {
      const job = message.job
      if (job.done || this.stopped) return Effect.void
      const gate = Deferred.unsafeMake<void>(FiberId.none)
      job.gate = gate
      this.holder = job
      message.resume()
      return Deferred.await(gate)
    })
  }

  release(job: Job): void {
    if (this.holder === job) this.holder = undefined
    const gate = job.gate
    job.gate = undefined
    if (gate !== undefined) Deferred.unsafeDone(gate, Exit.void)
  }

  /** Queues a yielded job's continuation behind what is already queued. */
  continueWith(job: Job, resume: () => void): void {
    if (this.stopped || job.done) return
    this.cell.ref.deliver(new ResumeJob(job, resume), undefined, undefined)
  }

  private enqueue(job: Job, logContext: ReturnType<typeof captureFrom>): boolean {
    if (this.stopped) return false
    if (this.cell.ref.deliver(new RunJob(job), undefined, logContext) !== "delivered") return false
    this.queued.add(job)
    return true
  }

  /** The job the calling fiber works for, when it is one of this Spot's and holds the turn. */
  private holding(job: Job | undefined): job is Job {
    return job !== undefined && job.runtime === this && this.holder === job
  }

  /** Waiting for this Spot from `fiber` would never end: it is the turn holder, or a worker the holder awaits. */
  private waitsForItself(fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean {
    return this.holding(fiber.getFiberRef(currentJob)) || this.holding(fiber.getFiberRef(workerFor))
  }

  private onTurn<A>(what: string, f: () => A): Effect.Effect<A> {
    return Effect.withFiberRuntime((fiber) =>
      this.holding(fiber.getFiberRef(currentJob))
        ? Effect.sync(f)
        : Effect.dieMessage(
            `Spot ${this.path}: ${what} is only available to the Spot's own work while it holds the turn ` +
              `(not to a worker call or another fiber)`
          )
    )
  }

  // ------------------------------------------------------------------------------------------------------- timers

  offerTick(timer: SpotTimer, due: number, now: number): Effect.Effect<void> | undefined {
    return this.cell.offerTick(timer, due, now)
  }

  startTick(timer: SpotTimer): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (!timer.active || this.stopped) return Effect.void
      const tick = timer.begin(this.driver.now())
      if (tick.skippedTicks > 0) this.noteSkipped(timer, tick.skippedTicks)
      return this.start(
        new Job(
          this,
          () => timer.onTick(tick),
          (exit) =>
            Effect.zipRight(
              Exit.isSuccess(exit)
                ? Effect.void
                : logUnlessInterrupted(
                    `Spot timer "${timer.name}" handler failed; the timer keeps its schedule`,
                    exit.cause
                  ).pipe(Effect.annotateLogs("timer", timer.name)),
              Effect.sync(() => timer.ended(this.driver.now()))
            )
        )
      )
    })
  }

  /** Ticks the overrun policy dropped before this one: counted as `missed`, as an entity's missed invocations. */
  private noteSkipped(timer: SpotTimer, skipped: number): void {
    recordDropped("missed", skipped)
    this.cell.host.timeline?.dropped(timer, "missed", skipped)
  }

  private startTimer<R>(
    options: TimerOptions<S, R>,
    services: Context.Context<R>
  ): Either.Either<TimerHandle, SpotTimerError> {
    const invalid = timerOptionsProblem(options)
    if (invalid !== undefined) {
      return Either.left(
        new InvalidTimerOptions({ owner: `Spot ${this.path}`, option: invalid[0], reason: invalid[1] })
      )
    }
    const period = intervalMillis(options.period)
    if (Either.isLeft(period)) return Either.left(period.left)
    // `undefined` is the default; `null` is not (a JavaScript caller's null is a mistake, not "the default")
    const policy = options.overrun === undefined ? OverrunPolicy.SkipLateTicks : options.overrun
    const policyProblem = overrunProblem(policy)
    if (policyProblem !== undefined) return Either.left(policyProblem)
    if (this.timers.has(options.name)) {
      return Either.left(new DuplicateTimerName({ spot: this.path, name: options.name }))
    }
    const handler = options.handler
    const timer = new SpotTimer(
      this,
      options.name,
      period.right,
      policy,
      (tick: Tick) => Effect.provide(handler(tick, this.context), services),
      this.driver.now()
    )
    this.timers.set(options.name, timer)
    return Either.right(this.timerHandle(timer))
  }

  private timerHandle(timer: SpotTimer): TimerHandle {
    const handle = Object.create(TimerHandleProto)
    handle.name = timer.name
    handle.cancel = Effect.sync(() => this.cancelTimer(timer))
    handle.isActive = Effect.sync(() => timer.active)
    return handle
  }

  private cancelTimer(timer: SpotTimer): boolean {
    if (!timer.cancel()) return false
    if (this.timers.get(timer.name) === timer) this.timers.delete(timer.name)
    return true
  }

  private makeTimers(): SpotTimers<S> {
    return {
      start: <R>(options: TimerOptions<S, R>) =>
        Effect.flatMap(Effect.context<R>(), (services) =>
          Effect.flatten(this.onTurn("timers.start", () => this.startTimer(options, withoutParentSpan(services))))
        ),
      cancel: (name) =>
        Effect.sync(() => {
          const timer = this.timers.get(name)
          return timer === undefined ? false : this.cancelTimer(timer)
        }),
      isActive: (name) => Effect.sync(() => this.timers.has(name)),
      names: Effect.sync(() => Array.from(this.timers.keys()))
    }
  }

  // ----------------------------------------------------------------------------------------------- context, handle

  private makeContext(): SpotContext<S> {
    const runtime = this
    return {
      get self() {
        return runtime.handle
      },
      get path() {
        return runtime.path
      },
      state: this.onTurn("state", () => this.state),
      set: (state) =>
        this.onTurn("set", () => {
          this.state = state
        }),
      update: (f) =>
        this.onTurn("update", () => {
          this.state = f(this.state)
        }),
      modify: (f) =>
        this.onTurn("modify", () => {
          const [a, next] = f(this.state)
          this.state = next
          return a
        }),
      timers: this.makeTimers(),
      stop: Effect.sync(() => this.cell.requestStop())
    }
  }

  private makeHandle(): Spot<S> {
    const handle = Object.create(HandleProto)
    Object.defineProperty(handle, "path", { get: () => this.path, enumerable: true })
    handle.run = <A, E, R>(work: (ctx: SpotContext<S>) => Effect.Effect<A, E, R>) =>
      Effect.withFiberRuntime<A, E | SpotStopped, R>((fiber) => {
        if (this.waitsForItself(fiber)) {
          return Effect.dieMessage(
            `Spot ${this.path}: run() from the Spot's own work (or a worker it awaits) would wait for itself; ` +
              `use submit()`
          )
        }
        const reply = Deferred.unsafeMake<A, E | SpotStopped>(fiber.id())
        const stopped = Exit.fail(new SpotStopped({ path: this.path }))
        const services = callerContext<R>(fiber)
        const job = new Job(
          this,
          () => Effect.provide(work(this.context), services),
          (exit) =>
            Effect.sync(() => {
              const interrupted = Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) && this.stopped
              Deferred.unsafeDone(reply, interrupted ? stopped : (exit as Exit.Exit<A, E>))
            }),
          () => Deferred.unsafeDone(reply, stopped)
        )
        return this.enqueue(job, captureFrom(fiber)) ? Deferred.await(reply) : stopped
      })
    handle.submit = <R>(work: (ctx: SpotContext<S>) => Effect.Effect<unknown, unknown, R>) =>
      Effect.withFiberRuntime<void, SpotStopped, R>((fiber) => {
        const services = callerContext<R>(fiber)
        const job = new Job(
          this,
          () => Effect.provide(work(this.context), services),
          (exit) =>
            Exit.isSuccess(exit) ? Effect.void : logUnlessInterrupted("work submitted to a Spot failed", exit.cause)
        )
        return this.enqueue(job, captureFrom(fiber)) ? Effect.void : Effect.fail(new SpotStopped({ path: this.path }))
      })
    handle.stop = Effect.withFiberRuntime<void>((fiber) => {
      // from the Spot's own work, waiting for the stop would wait for itself: stop after the current item instead
      if (!this.waitsForItself(fiber)) return this.system.stop(this.cell.ref)
      this.cell.requestStop()
      return Effect.void
    })
    return handle
  }

  // ----------------------------------------------------------------------------------------------------- stopping

  get size(): number {
    return this.timers.size
  }

  infos(): ReadonlyArray<TimerInfo> {
    return Array.from(this.timers.values(), (timer) => ({
      key: timer.name,
      kind: timer.kind,
      mode: timer.policy._tag,
      nextDue: timer.isPending ? this.driver.dueOf(timer) : undefined,
      intervalMillis: timer.period,
      expression: undefined
    }))
  }

  stopTimers(): void {
    for (const timer of this.timers.values()) timer.cancel()
    this.timers.clear()
  }

  /** The Spot's Scope finalizer for its timer table: closing the scope cancels every timer. */
  readonly cancelTimers: Effect.Effect<void> = Effect.sync(() => this.stopTimers())

  /**
   * The actor's `postStop`. Closes the Spot's scope, which cancels the timers and interrupts the jobs waiting off the
   * turn and every worker call; drops the queued ticks and tells queued callers; then runs `onStop` with the final
   * state.
   */
  readonly shutdown: Effect.Effect<void> = Effect.suspend(() => {
    this.stopped = true
    return Effect.zipRight(
      Scope.close(this.scope, Exit.void),
      Effect.suspend(() => {
        for (;;) {
          const entry = this.cell.mailbox.pollUser()
          if (entry === EMPTY) break
          if (entry instanceof MailboxTick) {
            entry.queued--
            recordDropped("owner_stopped")
            this.cell.host.timeline?.dropped(entry, "owner_stopped")
          }
        }
        for (const job of this.queued) job.abandon()
        this.queued.clear()
        const onStop = this.options.onStop
        return onStop === undefined
          ? Effect.void
          : Effect.catchAllCause(Effect.provide(onStop(this.state), this.services), (cause) =>
              Effect.logError("Spot onStop failed", cause)
            )
      })
    )
  })
}

// --------------------------------------------------------------------------------------------------- terminators

const asImpl = <A, E, R>(call: WorkerCall<A, E, R>): WorkerCallImpl<A, E, R> =>
  call as unknown as WorkerCallImpl<A, E, R>

const outside = (terminator: string): Effect.Effect<never> =>
  Effect.dieMessage(`Spot.${terminator} may only close a worker call inside a Spot's own work, while it holds the turn`)

export const yieldCall = <A, E, R>(call: WorkerCall<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const job = fiber.getFiberRef(currentJob)
    if (job === undefined || job.runtime.holder !== job) return outside("Yield")
    const runtime = job.runtime
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(asImpl(call).admit), (admitted) =>
        Effect.flatMap(Effect.forkIn(offTurn(admitted.work, job), runtime.scope), (worker) => {
          const result = Deferred.unsafeMake<A, E>(fiber.id())
          worker.addObserver((exit) => {
            admitted.release()
            runtime.continueWith(job, () => Deferred.unsafeDone(result, exit))
          })
          // The turn goes back: other work of the Spot runs while the call is in flight.
          runtime.release(job)
          return restore(Deferred.await(result))
        })
      )
    )
  })

export const asyncCall = <A, E, R>(call: WorkerCall<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const job = fiber.getFiberRef(currentJob)
    if (job === undefined || job.runtime.holder !== job) return outside("Async")
    // The job keeps the turn: the call runs (off the turn, for the state guard) and the job waits for it.
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(asImpl(call).admit), (admitted) =>
        Effect.ensuring(
          restore(offTurn(admitted.work, job)),
          Effect.sync(() => admitted.release())
        )
      )
    )
  })

export const submitCall = <A, E, R>(call: WorkerCall<A, E, R>): Effect.Effect<void, never, R> =>
  Effect.withFiberRuntime((fiber) => {
    const job = fiber.getFiberRef(currentJob)
    if (job === undefined || job.runtime.holder !== job) return outside("Submit")
    const runtime = job.runtime
    const impl = asImpl(call)
    return Effect.uninterruptibleMask((restore) =>
      Effect.matchCauseEffect(restore(impl.admit), {
        onFailure: (cause) => Effect.logError(`Spot.Submit: worker call ${impl.label} could not start`, cause),
        onSuccess: (admitted) =>
          Effect.map(
            Effect.forkIn(
              Effect.catchAllCause(offTurn(admitted.work, job), (cause) =>
                logUnlessInterrupted(`Spot.Submit: worker call ${impl.label} failed`, cause)
              ),
              runtime.scope
            ),
            (worker) => {
              worker.addObserver(() => admitted.release())
            }
          )
      })
    )
  })

// ---------------------------------------------------------------------------------------------------------- spawn

const SPOT_OPTIONS = ["initialState", "onStart", "onStop"]

/** The option of `spawn` that is not usable and why, or undefined. */
export const optionsProblem = (options: unknown): readonly [string, string] | undefined => {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return ["options", `must be an object such as { initialState: 0 }, got ${describeValue(options)}`]
  }
  for (const key of Object.keys(options)) {
    if (!SPOT_OPTIONS.includes(key)) return [key, `is not a Spot option (${SPOT_OPTIONS.join(", ")})`]
  }
  if (!("initialState" in options)) return ["initialState", "is required (it may be undefined, but say so)"]
  for (const hook of ["onStart", "onStop"] as const) {
    const value = (options as Options<unknown, unknown>)[hook]
    if (value !== undefined && typeof value !== "function") {
      return [
        hook,
        `must be a function returning an Effect, got ${Effect.isEffect(value) ? "an Effect" : describeValue(value)}`
      ]
    }
  }
  return undefined
}

export const spawn = <S, R>(
  options: Options<S, R>,
  system: ActorSystemService,
  name: string | undefined
): Effect.Effect<Spot<S>, SpawnError, R> =>
  Effect.gen(function* () {
    const services = withoutParentSpan(yield* Effect.context<R>())
    const scope = yield* Scope.make()
    const runtime = new SpotRuntime<S>(options, system, scope, services)
    yield* Scope.addFinalizer(scope, runtime.cancelTimers)
    const actor = Actor.make<unknown>()({
      receive: (message) => runtime.receive(message),
      postStop: () => runtime.shutdown,
      // A Spot keeps its state and timers: nothing to undo if its actor were ever restarted.
      preRestart: () => Effect.void
    }).pipe(Actor.withMailboxCapacity(UNBOUNDED))
    const ref = yield* system.spawn(actor, name).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
    runtime.attach((ref as CellRef<unknown>).cell)
    return runtime.handle
  })
