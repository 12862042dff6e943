/**
 * The ActorSystem implementation: it owns the timer driver, the actor cells, the scheduler's entries and the event
 * stream, and it is the `CellHost` and `SchedulerHost` they call back into.
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as List from "effect/List"
import type * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import type { Actor } from "../Actor.js"
import type { ActorRef } from "../ActorRef.js"
import {
  ActorNameTaken,
  type ActorSystemService,
  ActorSystemTerminated,
  InvalidActorDefinition,
  InvalidActorName,
  type Options,
  type SpawnError,
  type Stats
} from "../ActorSystem.js"
import { DeadLetter, SchedulerError } from "../EventStream.js"
import { activeTimers, engineRestarts, timerFaults } from "../Metrics.js"
import * as QuartzCron from "../QuartzCron.js"
import type { Cancellable, CronOptions, Scheduler } from "../Scheduler.js"
import * as Supervision from "../Supervision.js"
import {
  InvalidCronExpression,
  type InvalidTimerDelay,
  type InvalidTimerInterval,
  type InvalidTimerReference,
  type InvalidTimerTarget
} from "../TimerError.js"
import { ActorCell, type CellHost } from "./actorCell.js"
import { DeadLetterLog } from "./deadLetterLog.js"
import { Dispatcher } from "./dispatcher.js"
import { delayMillis, intervalMillis } from "./duration.js"
import { EventStreamImpl } from "./eventStream.js"
import { FiberRefsCache } from "./fiberRefsCache.js"
import { isolated, withoutParentSpan } from "./logContext.js"
import { type Delivery, FunctionRef } from "./refs.js"
import { alreadyCancelled, cancelNow, ScheduledFunction, ScheduledMessage, type SchedulerHost } from "./scheduler.js"
import { LocalSchedules, type ScheduleHost } from "./schedules.js"
import { Timeline } from "./timeline.js"
import { TimerDriver, TimerEntry, type TimerLabel } from "./timerDriver.js"
import { linkArming, TickTracing } from "./tracing.js"
import { actorProblem, checkRef, checkReference, checkTask, describeValue, firstInstant } from "./validate.js"

const NO_TAGS: ReadonlyArray<MetricLabel.MetricLabel> = []

/** The system behind each service object, for `spawnOwned`. */
const systems = new WeakMap<ActorSystemService, SystemImpl>()

/**
 * Spawns a top-level actor whose cell carries `owner` (`ActorCell.owner`): runtimes built on actors (grains,
 * entities) spawn one actor definition per kind this way, instead of one with closures of its own per activation.
 */
export const spawnOwned = <M, S, E, R>(
  system: ActorSystemService,
  actor: Actor<M, S, E, R>,
  name: string,
  owner: unknown,
  /**
   * The FiberRefs the actor takes its services from, when not the spawning fiber's: a registry that spawns each actor
   * on a fiber of its own passes its runtime's, so that its actors share one base (`spawnerBase`).
   */
  spawner?: FiberRefs.FiberRefs
): Effect.Effect<ActorRef<M>, SpawnError, R> => {
  const impl = systems.get(system)
  return impl === undefined
    ? Effect.dieMessage("spawnOwned: not a tickwork ActorSystem service")
    : impl.spawnCell(actor, name, undefined, owner, spawner)
}

/** The implementation behind a service (for the testkit and tests that must reach the engine itself). */
export const systemOf = (system: ActorSystemService): SystemImpl | undefined => systems.get(system)

/**
 * True when `b` holds the very value stacks of `a`, ref for ref. A fiber's `getFiberRefs` makes a new FiberRefs object
 * at every call (it stores the runtime flags first), so identity of the object itself says nothing.
 */
const sameValues = (a: FiberRefs.FiberRefs, b: FiberRefs.FiberRefs): boolean => {
  if (a === b) return true
  if (a.locals.size !== b.locals.size) return false
  for (const [ref, stack] of b.locals) if (a.locals.get(ref) !== stack) return false
  return true
}

const millisOf = (input: Duration.DurationInput | undefined, fallback: number): number =>
  input === undefined ? fallback : Duration.toMillis(Duration.decode(input))

/** An actor's stop timeout, armed in the engine while it stops (`SystemImpl.armStopDeadline`). */
class StopDeadline extends TimerEntry {
  constructor(
    readonly system: SystemImpl,
    readonly cell: ActorCell
  ) {
    super()
  }

  fire(): Effect.Effect<void> | undefined {
    return this.system.stopOverdue(this.cell)
  }

  override label(): TimerLabel {
    return { kind: "stop_timeout", key: undefined, owner: this.cell.path }
  }
}

export class SystemImpl implements CellHost, SchedulerHost, ScheduleHost {
  readonly driver: TimerDriver
  readonly dispatcher = new Dispatcher()
  readonly fiberRefsCache = new FiberRefsCache()
  readonly service: ActorSystemService
  readonly throughput: number
  readonly askTimeoutMillis: number
  /** How long a stop (an actor's, a grain's deactivation, an entity's sleep) may take before it is forced. */
  readonly stopTimeoutMillis: number
  readonly defaultMailboxCapacity: number
  readonly guardianStrategy: Supervision.SupervisorStrategy
  readonly eventStream = new EventStreamImpl((subscriber, event, defect) => {
    if (this.runtime === undefined) return
    Runtime.runFork(this.runtime)(
      Effect.logError(
        `an event stream subscriber threw while ${describeValue(event)} was published to it; it misses that event`,
        Cause.die(defect)
      ).pipe(Effect.annotateLogs({ system: this.name, subscriber: String(subscriber) }))
    )
  })
  private readonly cells = new Set<ActorCell>()
  private readonly topLevel = new Map<string, ActorCell>()
  /** Schedules armed and not yet done or cancelled (the entries themselves live in the engine and in mailboxes). */
  private pendingSchedules = 0
  /** The named schedules (`Schedules`, and the scheduler's crons made with a reference). */
  readonly schedules: LocalSchedules = new LocalSchedules(this)
  private readonly fibers = new Set<Fiber.RuntimeFiber<unknown, unknown>>()
  private readonly shutdownDone = Deferred.unsafeMake<void>(FiberId.none)
  /** The timer driver's fiber while it runs. */
  driverFiber: Fiber.RuntimeFiber<never> | undefined = undefined
  private anonymous = 0
  private deadLetterCount = 0
  private readonly deadLetterLog: DeadLetterLog
  private terminating = false

  readonly tracing: TickTracing
  /** The testkit's timeline (`recordTimeline`), when one records this system. */
  timeline: Timeline | undefined = undefined

  /** Starts recording a timeline of this system's timers, the last `capacity` lines kept (the testkit's). */
  recordTimeline(capacity: number): Timeline {
    const timeline = new Timeline(() => this.driver.now(), capacity)
    this.timeline = timeline
    this.driver.observer = timeline
    return timeline
  }

  constructor(
    readonly name: string,
    options: Options,
    clock: Clock.Clock,
    private readonly scope: Scope.Scope,
    tracer: Tracer.Tracer
  ) {
    this.tracing = new TickTracing(
      name,
      tracer,
      options.tracing?.spans ?? "auto",
      options.tracing?.linkToArming ?? false
    )
    const gauge = activeTimers(name)
    this.driver = new TimerDriver(
      clock,
      (size) => gauge.unsafeUpdate(size, NO_TAGS),
      () => this.dispatcher.flushTurn(),
      (entry, cause) => this.timerFaulted(entry, cause)
    )
    this.throughput = options.throughput ?? 64
    this.askTimeoutMillis = millisOf(options.askTimeout, 5_000)
    this.stopTimeoutMillis = millisOf(options.stopTimeout, 10_000)
    this.deadLetterLog = new DeadLetterLog(
      this.driver,
      options.logDeadLetters ?? 10,
      millisOf(options.logDeadLettersInterval, 300_000),
      (line) => {
        if (this.runtime !== undefined) Runtime.runFork(this.runtime)(Effect.annotateLogs(line, "system", name))
      }
    )
    this.defaultMailboxCapacity = options.mailboxCapacity ?? Number.POSITIVE_INFINITY
    this.guardianStrategy =
      options.guardian === "stop"
        ? Supervision.stop
        : options.guardian === "resume"
          ? Supervision.resume
          : Supervision.restart()
    const deadLetters = new FunctionRef<unknown>(`/deadLetters`, (message, sender) => {
      this.deadLetter(message, sender, "/deadLetters", "stopped")
      return "delivered"
    })
    this.service = {
      name,
      spawn: (actor, actorName) => this.spawnCell(actor, actorName, undefined),
      stop: (ref) => this.stopRef(ref),
      scheduler: this.makeScheduler(),
      eventStream: this.eventStream,
      deadLetters,
      shutdown: Effect.suspend(() => this.shutdown()),
      stats: Effect.sync(() => this.stats())
    }
    systems.set(this.service, this)
  }

  start(): Effect.Effect<void> {
    return Effect.flatMap(Effect.runtime<never>(), (runtime) => {
      this.runtime = runtime
      return this.startDriver
    })
  }

  /** The runtime the system was built in: what a restart of the driver, and a dead-letter log line, run with. */
  private runtime: Runtime.Runtime<never> | undefined = undefined
  private driverRestarts = 0

  private readonly startDriver: Effect.Effect<void> = Effect.suspend(() =>
    Effect.map(Effect.forkIn(isolated(this.driver.run), this.scope), (fiber) => {
      this.driverFiber = fiber
      fiber.addObserver((exit) => this.driverEnded(fiber, exit))
    })
  )

  /**
   * The driver fiber ended, which it never does on its own: unless the system is shutting down, that is loud (an
   * error log line, a metric) and the driver starts again from the queue as it is, so every pending timer is kept.
   */
  private driverEnded(fiber: Fiber.RuntimeFiber<never>, exit: Exit.Exit<never>): void {
    if (this.terminating || this.driverFiber !== fiber || this.runtime === undefined) return
    this.driverFiber = undefined
    this.driverRestarts++
    engineRestarts(this.name).unsafeUpdate(1, NO_TAGS)
    const pending = this.driver.size
    const cause = Exit.isFailure(exit) ? exit.cause : Cause.empty
    Runtime.runFork(this.runtime)(
      Effect.logError(
        `the timer engine of system ${this.name} stopped unexpectedly; restarting it with its ${pending} pending timers`,
        cause
      ).pipe(
        Effect.annotateLogs({ system: this.name, engine_restarts: this.driverRestarts }),
        Effect.zipRight(this.startDriver)
      )
    )
  }

  /**
   * One timer's firing threw or failed: logged with its kind and key, counted, and published as `SchedulerError` for a
   * system-scheduler entry. The driver has abandoned it if it was not re-armed; everything else goes on.
   */
  private timerFaulted(entry: TimerEntry, cause: Cause.Cause<unknown>): Effect.Effect<void> {
    let label: TimerLabel
    try {
      label = entry.label()
    } catch {
      label = { kind: "timer", key: undefined, owner: undefined }
    }
    timerFaults(label.kind).unsafeUpdate(1, NO_TAGS)
    const scheduled = entry instanceof ScheduledMessage || entry instanceof ScheduledFunction
    const after = entry.isPending ? "it keeps its schedule" : "it will not fire again"
    const annotations: Record<string, unknown> = { system: this.name, timer_kind: label.kind }
    if (label.key !== undefined) annotations.timer_key = label.key
    if (label.owner !== undefined) annotations.owner = label.owner
    const logged = Effect.logError(`a ${label.kind} timer faulted while firing; ${after}`, cause).pipe(
      Effect.annotateLogs(annotations)
    )
    if (!scheduled) return logged
    return Effect.zipRight(
      logged,
      Effect.sync(() =>
        this.eventStream.unsafePublish(new SchedulerError({ cause, reference: label.key, target: label.owner }))
      )
    )
  }

  // ---------------------------------------------------------------- actors

  spawnCell<M, S, E, R>(
    actor: Actor<M, S, E, R>,
    name: string | undefined,
    parent: ActorCell | undefined,
    owner: unknown = undefined,
    spawner: FiberRefs.FiberRefs | undefined = undefined
  ): Effect.Effect<ActorRef<M>, SpawnError, R> {
    return Effect.suspend((): Effect.Effect<ActorRef<M>, SpawnError, R> => {
      if (this.terminating || parent?.isTerminated === true) {
        return Effect.fail(new ActorSystemTerminated({ system: this.name }))
      }
      if (name !== undefined) {
        const reason =
          typeof name !== "string"
            ? "must be a string"
            : name.length === 0
              ? "must not be empty"
              : name.includes("/")
                ? "must not contain '/'"
                : name.startsWith("$")
                  ? "names starting with '$' are reserved for generated names"
                  : undefined
        if (reason !== undefined) return Effect.fail(new InvalidActorName({ name: describeValue(name), reason }))
      }
      const problem = actorProblem(actor)
      if (problem !== undefined) return Effect.fail(new InvalidActorDefinition({ name, reason: problem }))
      const siblings = parent === undefined ? this.topLevel : parent.childMap()
      const actualName = name ?? (parent === undefined ? `$${(this.anonymous++).toString(36)}` : parent.nextChildName())
      const path = `${parent === undefined ? "/user" : parent.path}/${actualName}`
      if (siblings.has(actualName)) return Effect.fail(new ActorNameTaken({ path }))
      const cell = new ActorCell(this, actor, path, parent, owner)
      siblings.set(actualName, cell)
      this.cells.add(cell)
      // The actor's drains run on the dispatcher's fibers (no fiber while idle), each with the actor's FiberRefs: the
      // spawner's services without its tracing parent, and no diagnostic context but the actor's path.
      return Effect.withFiberRuntime<ActorRef<M>, never, R>((fiber) => {
        cell.baseRefs = this.spawnerBase(spawner ?? fiber.getFiberRefs(), fiber.id())
        cell.wake(false)
        return Effect.succeed(cell.ref as ActorRef<M>)
      })
    })
  }

  /** The FiberRefs the last actor was spawned from, and the base made from them (`spawnerBase`). */
  private lastSpawner: FiberRefs.FiberRefs | undefined = undefined
  private lastBase: FiberRefs.FiberRefs = FiberRefs.empty()

  /**
   * The spawner's FiberRefs with its services but not its tracing parent, and no log span: the actors it spawns start
   * from these and set their diagnostic context to their `actor` annotation alone (`ActorCell.fiberRefs`, per drain).
   * Kept for the next spawn from the same FiberRefs (a fiber spawning in a loop, a registry's runtime), whose actors
   * then share one base instead of each holding its own.
   */
  private spawnerBase(refs: FiberRefs.FiberRefs, fiberId: FiberId.Runtime): FiberRefs.FiberRefs {
    if (this.lastSpawner !== undefined && sameValues(this.lastSpawner, refs)) return this.lastBase
    const context = withoutParentSpan(FiberRefs.getOrDefault(refs, FiberRef.currentContext))
    this.lastBase = FiberRefs.updateManyAs(refs, {
      entries: [
        [FiberRef.currentContext, [[fiberId, context as Context.Context<never>]]],
        [FiberRef.currentLogSpan, [[fiberId, List.empty()]]]
      ]
    })
    this.lastSpawner = refs
    return this.lastBase
  }

  /** The live actors, read only (the admin API lists their timers). */
  get actorCells(): ReadonlySet<ActorCell> {
    return this.cells
  }

  private track(fiber: Fiber.RuntimeFiber<unknown, unknown>): void {
    this.fibers.add(fiber)
    fiber.addObserver(() => this.fibers.delete(fiber))
  }

  private stopRef(ref: ActorRef<never>): Effect.Effect<void> {
    return Effect.suspend(() => {
      const cell = (ref as { cell?: unknown }).cell
      if (!(cell instanceof ActorCell)) return Effect.void
      cell.requestStop()
      return cell.awaitDone
    })
  }

  // ---------------------------------------------------------------- bounded stops

  /** Stop timeouts armed for actors that are stopping (few at a time, so no field on every cell). */
  private readonly stopDeadlines = new Map<ActorCell, StopDeadline>()

  armStopDeadline(cell: ActorCell): void {
    if (this.terminating || this.stopDeadlines.has(cell)) return
    const deadline = new StopDeadline(this, cell)
    this.stopDeadlines.set(cell, deadline)
    this.driver.schedule(deadline, this.driver.now() + this.stopTimeoutMillis)
  }

  /** A stop outlasted the stop timeout: say which actor, then force it on a fiber of its own (never the driver's). */
  stopOverdue(cell: ActorCell): Effect.Effect<void> | undefined {
    this.stopDeadlines.delete(cell)
    if (cell.isTerminated) return undefined
    return Effect.logWarning(
      `actor ${cell.path} did not stop within the stop timeout (${this.stopTimeoutMillis} ms): its stop is forced, interrupting the handler in flight`
    ).pipe(Effect.annotateLogs({ actor: cell.path }), Effect.zipRight(Effect.asVoid(this.forkTask(cell.forceStop()))))
  }

  bounded(effect: Effect.Effect<void>, cell: ActorCell, what: string): Effect.Effect<void> {
    return Effect.flatMap(Effect.timeoutOption(effect, Duration.millis(this.stopTimeoutMillis)), (done) =>
      Option.isSome(done)
        ? Effect.void
        : Effect.logWarning(
            `actor ${cell.path}: ${what} did not finish within the stop timeout (${this.stopTimeoutMillis} ms) and was interrupted`
          ).pipe(Effect.annotateLogs({ actor: cell.path }))
    )
  }

  terminated(cell: ActorCell): void {
    const deadline = this.stopDeadlines.get(cell)
    if (deadline !== undefined) {
      this.stopDeadlines.delete(cell)
      this.driver.cancel(deadline)
    }
    this.cells.delete(cell)
    if (cell.parent === undefined && this.topLevel.get(cell.name) === cell) this.topLevel.delete(cell.name)
    this.eventStream.unsafeUnsubscribe(cell.ref)
  }

  deadLetter(message: unknown, sender: ActorRef<any> | undefined, recipient: string, reason: Delivery): void {
    this.deadLetterCount++
    // A dead letter about a dead letter would loop; it is counted only.
    if (message instanceof DeadLetter || reason === "delivered") return
    this.deadLetterLog.record(message, sender, recipient, reason)
    this.eventStream.unsafePublish(new DeadLetter({ message, sender, recipient, reason }))
  }

  // ---------------------------------------------------------------- scheduler

  private makeScheduler(): Scheduler {
    /** The delay and the refs of a message schedule, checked: the millis, or the typed error to fail with. */
    const checkMessage = (
      delay: Duration.DurationInput,
      target: unknown,
      sender: unknown
    ): Either.Either<number, InvalidTimerDelay | InvalidTimerTarget> => {
      const bad = checkRef(target, "target") ?? (sender === undefined ? undefined : checkRef(sender, "sender"))
      return bad === undefined ? delayMillis(delay) : Either.left(bad)
    }
    const message = (
      delay: Duration.DurationInput,
      interval: number,
      target: ActorRef<any>,
      msg: unknown,
      sender: ActorRef<any> | undefined
    ): Effect.Effect<Cancellable, InvalidTimerDelay | InvalidTimerTarget> => {
      // The input is a value: it is checked when the effect is made, and the effect itself is one `sync`.
      const millis = checkMessage(delay, target, sender)
      if (Either.isLeft(millis)) return Effect.fail(millis.left)
      return this.tracing.linkToArming
        ? Effect.suspend(() => {
            const armed = armMessage(millis.right, interval, target, msg, sender)
            return Effect.as(linkArming(this.tracing, armed), armed)
          })
        : Effect.sync(() => armMessage(millis.right, interval, target, msg, sender))
    }
    const armMessage = (
      millis: number,
      interval: number,
      target: ActorRef<any>,
      msg: unknown,
      sender: ActorRef<any> | undefined
    ): Cancellable =>
      this.terminating
        ? alreadyCancelled
        : this.arm(
            new ScheduledMessage(this, target, msg, sender, interval > 0 ? (due) => due + interval : undefined),
            millis
          )
    const task = <E, R>(
      delay: Duration.DurationInput,
      interval: number,
      effect: Effect.Effect<unknown, E, R>
    ): Effect.Effect<Cancellable, InvalidTimerDelay | InvalidTimerTarget, R> =>
      Effect.tap(
        Effect.flatMap(
          Effect.context<R>(),
          (context): Either.Either<Cancellable, InvalidTimerDelay | InvalidTimerTarget> => {
            const bad = checkTask(effect)
            if (bad !== undefined) return Either.left(bad)
            return Either.map(delayMillis(delay), (millis) =>
              this.terminating
                ? alreadyCancelled
                : this.arm(
                    new ScheduledFunction(
                      this,
                      isolated(effect).pipe(Effect.provide(withoutParentSpan(context))) as Effect.Effect<
                        unknown,
                        unknown
                      >,
                      interval
                    ),
                    millis
                  )
            )
          }
        ),
        (armed) => linkArming(this.tracing, armed)
      )
    const cron = (
      target: ActorRef<any>,
      msg: unknown,
      expression: string,
      options: CronOptions = {}
    ): Effect.Effect<Cancellable, InvalidCronExpression | InvalidTimerTarget | InvalidTimerReference> =>
      Effect.suspend(
        (): Either.Either<Cancellable, InvalidCronExpression | InvalidTimerTarget | InvalidTimerReference> => {
          const bad =
            checkRef(target, "target") ??
            (options.sender === undefined ? undefined : checkRef(options.sender, "sender")) ??
            (options.reference === undefined ? undefined : checkReference(options.reference))
          if (bad !== undefined) return Either.left(bad)
          if (typeof expression !== "string") {
            return Either.left(
              new InvalidCronExpression({ expression: describeValue(expression), reason: "must be a string" })
            )
          }
          const parsed = QuartzCron.parse(
            expression,
            options.timeZone === undefined ? undefined : { timeZone: options.timeZone }
          )
          if (Either.isLeft(parsed)) return Either.left(parsed.left)
          const first = firstInstant(parsed.right, expression, this.driver.now())
          if (Either.isLeft(first)) return Either.left(first.left)
          if (this.terminating) return Either.right(alreadyCancelled)
          if (options.reference !== undefined) {
            // a named cron is a schedule an operator can steer (`Schedules`); the same reference updates it in place
            return this.schedules.upsert(
              options.reference,
              { _tag: "Cron", expression, timeZone: options.timeZone },
              { _tag: "Send", target, message: msg, sender: options.sender },
              undefined,
              Context.empty()
            ) as Either.Either<Cancellable, InvalidCronExpression | InvalidTimerTarget | InvalidTimerReference>
          }
          const entry = new ScheduledMessage(this, target, msg, options.sender, (due, now) =>
            Option.getOrUndefined(QuartzCron.next(parsed.right, Math.max(due, now)))
          )
          this.pendingSchedules++
          this.driver.schedule(entry, first.right)
          return Either.right(entry)
        }
      )
    return {
      scheduleWithCron: cron,
      cancelSchedule: (reference) => this.schedules.removeLocal(reference),
      scheduleOnce: (delay, target, msg, sender) => message(delay, 0, target, msg, sender),
      unsafeScheduleOnce: (delay, target, msg, sender) => {
        const millis = checkMessage(delay, target, sender)
        if (Either.isLeft(millis)) throw millis.left
        return armMessage(millis.right, 0, target, msg, sender)
      },
      scheduleOnceFunction: (delay, effect) => task(delay, 0, effect),
      scheduleAtFixedRate: (initialDelay, interval, target, msg, sender) =>
        Either.match(intervalMillis(interval), {
          onLeft: (error): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidTimerDelay | InvalidTimerTarget> =>
            Effect.fail(error),
          onRight: (every) => message(initialDelay, every, target, msg, sender)
        }),
      scheduleAtFixedRateFunction: (initialDelay, interval, effect) =>
        Effect.flatMap(
          Effect.suspend(() => intervalMillis(interval)),
          (every) => task(initialDelay, every, effect)
        )
    }
  }

  private arm(entry: ScheduledMessage | ScheduledFunction, delay: number): Cancellable {
    this.pendingSchedules++
    this.driver.schedule(entry, this.driver.now() + delay)
    return entry
  }

  release(): void {
    this.pendingSchedules--
  }

  get isTerminating(): boolean {
    return this.terminating
  }

  owns(cell: ActorCell): boolean {
    return cell.host === this
  }

  forkTask(task: Effect.Effect<void>): Effect.Effect<Fiber.RuntimeFiber<void>> {
    return Effect.tap(Effect.forkIn(task, this.scope), (fiber) => this.track(fiber))
  }

  taskFailed(cause: Cause.Cause<unknown>, reference?: string): Effect.Effect<void> {
    return Effect.zipRight(
      Effect.logError("a scheduled task failed; its schedule goes on", cause).pipe(
        Effect.annotateLogs(reference === undefined ? {} : { schedule: reference })
      ),
      Effect.sync(() => this.eventStream.unsafePublish(new SchedulerError({ cause, reference })))
    )
  }

  // ---------------------------------------------------------------- lifecycle

  private stats(): Stats {
    let timers = this.pendingSchedules + this.schedules.size
    let drains = 0
    for (const cell of this.cells) {
      if (cell.fiber !== undefined) drains++
      timers += cell.timerCount
    }
    const engineRunning = this.driverFiber !== undefined && this.driverFiber.unsafePoll() === null
    return {
      actors: this.cells.size,
      fibers: drains + this.fibers.size + (engineRunning ? 1 : 0),
      timers,
      engineEntries: this.driver.size,
      engineRunning,
      engineRestarts: this.driverRestarts,
      deadLetters: this.deadLetterCount
    }
  }

  /**
   * Stops everything now. Each top-level actor is force-stopped: a handler in flight is interrupted and the actor's
   * stop sequence runs (children first, then `postStop`, then dead letters). Then scheduled entries are cancelled,
   * the engine is emptied and the remaining fibers (scheduler tasks, the driver and its early fibers) are interrupted.
   */
  shutdown(): Effect.Effect<void> {
    if (this.terminating) return Deferred.await(this.shutdownDone)
    this.terminating = true
    const top = Array.from(this.topLevel.values())
    return Effect.forEach(top, (cell) => cell.forceStop(), { discard: true }).pipe(
      // a cell whose parent was gone already (none expected): stopped the same way
      Effect.zipRight(
        Effect.suspend(() => Effect.forEach(Array.from(this.cells), (cell) => cell.forceStop(), { discard: true }))
      ),
      // what the dead-letter log counted and did not log yet, said before the engine that would have said it stops
      Effect.zipRight(Effect.suspend(() => Effect.annotateLogs(this.deadLetterLog.flush(), "system", this.name))),
      Effect.zipRight(
        Effect.suspend(() => {
          // The actors are stopped, so a one-shot message still queued has settled; what is left is in the engine.
          for (const entry of this.driver.queue.toArray()) {
            if (entry instanceof ScheduledMessage || entry instanceof ScheduledFunction) cancelNow(entry)
          }
          this.schedules.clear()
          for (const cell of this.cells) cell.cancelTimers()
          const fibers: Array<Fiber.RuntimeFiber<unknown, unknown>> = [...this.driver.close(), ...this.fibers]
          if (this.driverFiber !== undefined) fibers.push(this.driverFiber)
          return Fiber.interruptAll(fibers)
        })
      ),
      Effect.ensuring(
        Effect.sync(() => {
          this.cells.clear()
          this.topLevel.clear()
          Deferred.unsafeDone(this.shutdownDone, Effect.void)
        })
      )
    )
  }
}

export const make = (options: Options): Effect.Effect<ActorSystemService, never, Scope.Scope> =>
  Effect.gen(function* () {
    // The driver and scheduler-task fibers live in a child scope that closes after the shutdown below has run
    // (finalizers run in reverse order), so actors are stopped properly before anything else is interrupted.
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    yield* Effect.addFinalizer((exit) => Scope.close(scope, exit))
    const clock = yield* Effect.clock
    const system = new SystemImpl(options.name, options, clock, scope, yield* Effect.tracer)
    yield* system.start()
    yield* Effect.addFinalizer(() => system.service.shutdown)
    return system.service
  })
