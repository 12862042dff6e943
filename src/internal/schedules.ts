/**
 * The system's named schedules (`Schedules`): each one is a record that is also its own engine entry and, for a
 * message schedule, its own tick, so a schedule costs one object however often it fires.
 *
 * A firing computes which instants to run (the one it was armed for, or, when it is later than the grace window, what
 * the misfire policy says), arms the next instant, and runs them: a message is offered to the target's mailbox as a
 * tick (dropped as stale if the schedule is removed before it is handled), a task is forked under the overlap policy
 * and retried under the retry policy. Every run, skip and miss goes to the record's history ring.
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { ActorRef } from "../ActorRef.js"
import { scheduleEvents } from "../Metrics.js"
import * as QuartzCron from "../QuartzCron.js"
import type { Cancellable } from "../Scheduler.js"
import type {
  Action,
  Filter,
  Misfire,
  Overlap,
  Policies,
  Run,
  ScheduleError,
  ScheduleInfo,
  ScheduleSource,
  SchedulesOperations,
  SchedulesService,
  Spec
} from "../Schedules.js"
import {
  InvalidCronExpression,
  InvalidSchedulePolicy,
  InvalidTimerTarget,
  ScheduledReferenceNotFound
} from "../TimerError.js"
import { type ActorCell, CellRef } from "./actorCell.js"
import { delayMillis, intervalMillis } from "./duration.js"
import { isolated, withoutParentSpan } from "./logContext.js"
import { MailboxTick } from "./tick.js"
import type { TimerDriver, TimerLabel } from "./timerDriver.js"
import { linkArming, type TickTracing } from "./tracing.js"
import { checkRef, checkReference, checkTask, describeValue, firstInstant } from "./validate.js"

/** What the schedules need from the system. */
export interface ScheduleHost {
  /** True when `cell` is an actor of this system. */
  owns(cell: ActorCell): boolean
  readonly name: string
  readonly driver: TimerDriver
  readonly tracing: TickTracing
  readonly isTerminating: boolean
  forkTask(task: Effect.Effect<void>): Effect.Effect<Fiber.RuntimeFiber<void>>
  /** A task run failed (after its retries): logged and published as `SchedulerError`. */
  taskFailed(cause: Cause.Cause<unknown>, reference: string): Effect.Effect<void>
}

export type ParsedSpec =
  | { readonly _tag: "interval"; readonly every: number; readonly first: number }
  | {
      readonly _tag: "cron"
      readonly cron: QuartzCron.QuartzCron
      readonly expression: string
      readonly timeZone: string | undefined
    }

type ParsedAction =
  | {
      readonly _tag: "send"
      readonly target: ActorRef<any>
      readonly message: unknown
      readonly sender: ActorRef<any> | undefined
    }
  | { readonly _tag: "run"; readonly task: Effect.Effect<unknown, unknown> }

export interface ParsedPolicies {
  readonly misfire: Misfire
  readonly graceMillis: number
  readonly overlap: Overlap
  readonly retry: Schedule.Schedule<unknown, unknown> | undefined
  readonly pauseAfterFailures: number | undefined
  readonly history: number
}

/**
 * The history's entry for an instant that did not run: `"skipped"` (an overlap, a pause) or `"missed"` (a misfire,
 * `lateness` after its instant).
 */
export const notRun = (
  instant: number,
  trigger: Run["trigger"],
  outcome: "skipped" | "missed",
  detail: string,
  lateness?: number
): Run => ({ instant, trigger, start: undefined, end: undefined, outcome, lateness, attempts: 0, detail })

export const DEFAULTS: ParsedPolicies = {
  misfire: { _tag: "RunOnce" },
  graceMillis: Number.POSITIVE_INFINITY,
  overlap: "bufferAll",
  retry: undefined,
  pauseAfterFailures: undefined,
  history: 100
}

const OVERLAPS: ReadonlyArray<Overlap> = ["skip", "bufferOne", "bufferAll", "allowAll"]
const POLICY_KEYS = new Set(["misfire", "grace", "overlap", "retry", "pauseAfterFailures", "history"])

/** Cron instants a misfire looks at, at most: beyond this many the count says "at least". */
const MAX_MISSED_SCAN = 10_000

const policyError = (policy: string, reason: string) => Either.left(new InvalidSchedulePolicy({ policy, reason }))

const isWhole = (n: unknown, min: number): n is number => typeof n === "number" && Number.isInteger(n) && n >= min

/** `policies` checked and completed with the defaults; `base` supplies what an update leaves out. */
export const parsePolicies = (
  policies: unknown,
  base: ParsedPolicies
): Either.Either<ParsedPolicies, InvalidSchedulePolicy> => {
  if (policies === undefined) return Either.right(base)
  if (policies === null || typeof policies !== "object") {
    return policyError("policies", `must be an object, got ${describeValue(policies)}`)
  }
  const p = policies as Record<string, unknown>
  for (const key of Object.keys(p)) if (!POLICY_KEYS.has(key)) return policyError(key, "is not a schedule policy")
  let misfire = base.misfire
  if (p.misfire !== undefined) {
    const m = p.misfire as { _tag?: unknown; max?: unknown }
    if (m === null || typeof m !== "object" || !["SkipMissed", "RunOnce", "RunAll"].includes(m._tag as string)) {
      return policyError("misfire", "must be Schedules.skipMissed, Schedules.runOnce or Schedules.runAll(max)")
    }
    if (m._tag === "RunAll" && !(m.max === Number.POSITIVE_INFINITY || isWhole(m.max, 1))) {
      return policyError("misfire", `runAll's max must be a whole number >= 1, got ${describeValue(m.max)}`)
    }
    misfire = m as Misfire
  }
  let graceMillis = base.graceMillis
  if (p.grace !== undefined) {
    const grace = delayMillis(p.grace as never)
    if (Either.isLeft(grace)) return policyError("grace", grace.left.reason)
    graceMillis = grace.right
  }
  if (p.overlap !== undefined && !OVERLAPS.includes(p.overlap as Overlap)) {
    return policyError("overlap", `must be ${OVERLAPS.join(", ")}, got ${describeValue(p.overlap)}`)
  }
  if (p.retry !== undefined && !Schedule.isSchedule(p.retry)) {
    return policyError("retry", `must be an Effect Schedule, got ${describeValue(p.retry)}`)
  }
  if (p.pauseAfterFailures !== undefined && !isWhole(p.pauseAfterFailures, 1)) {
    return policyError("pauseAfterFailures", `must be a whole number >= 1, got ${describeValue(p.pauseAfterFailures)}`)
  }
  if (p.history !== undefined && !isWhole(p.history, 1)) {
    return policyError("history", `must be a whole number >= 1, got ${describeValue(p.history)}`)
  }
  return Either.right({
    misfire,
    graceMillis,
    overlap: (p.overlap as Overlap | undefined) ?? base.overlap,
    retry: (p.retry as Schedule.Schedule<unknown, unknown> | undefined) ?? base.retry,
    pauseAfterFailures: (p.pauseAfterFailures as number | undefined) ?? base.pauseAfterFailures,
    history: (p.history as number | undefined) ?? base.history
  })
}

export const parseSpec = (spec: unknown, now: number): Either.Either<ParsedSpec, ScheduleError> => {
  const s = spec as { _tag?: unknown; every?: unknown; first?: unknown; expression?: unknown; timeZone?: unknown }
  if (s !== null && typeof s === "object" && s._tag === "Interval") {
    return Either.flatMap(intervalMillis(s.every as never), (every) =>
      Either.map(s.first === undefined ? Either.right(every) : delayMillis(s.first as never), (first) => ({
        _tag: "interval" as const,
        every,
        first
      }))
    )
  }
  if (s !== null && typeof s === "object" && s._tag === "Cron") {
    if (typeof s.expression !== "string") {
      return Either.left(
        new InvalidCronExpression({ expression: describeValue(s.expression), reason: "must be a string" })
      )
    }
    const expression = s.expression
    const timeZone = s.timeZone as string | undefined
    return Either.flatMap(
      QuartzCron.parse(expression, timeZone === undefined ? undefined : { timeZone }),
      (cron): Either.Either<ParsedSpec, InvalidCronExpression> =>
        Either.map(firstInstant(cron, expression, now), () => ({ _tag: "cron" as const, cron, expression, timeZone }))
    )
  }
  return Either.left(
    new InvalidSchedulePolicy({
      policy: "spec",
      reason: `must be Schedules.every(...) or Schedules.cron(...), got ${describeValue(spec)}`
    })
  )
}

const parseAction = (action: unknown, context: Context.Context<never>): Either.Either<ParsedAction, ScheduleError> => {
  const a = action as { _tag?: unknown; target?: unknown; message?: unknown; sender?: unknown; task?: unknown }
  if (a !== null && typeof a === "object" && a._tag === "Send") {
    const bad = checkRef(a.target, "target") ?? (a.sender === undefined ? undefined : checkRef(a.sender, "sender"))
    if (bad !== undefined) return Either.left(bad)
    return Either.right({
      _tag: "send",
      target: a.target as ActorRef<any>,
      message: a.message,
      sender: a.sender as ActorRef<any> | undefined
    })
  }
  if (a !== null && typeof a === "object" && a._tag === "Run") {
    const bad = checkTask(a.task)
    if (bad !== undefined) return Either.left(bad)
    // the creator's services, without its tracing parent or log context: a run is a root of its own
    const task = isolated(a.task as Effect.Effect<unknown, unknown>).pipe(Effect.provide(withoutParentSpan(context)))
    return Either.right({ _tag: "run", task })
  }
  return Either.left(
    new InvalidSchedulePolicy({
      policy: "action",
      reason: `must be Schedules.send(...) or Schedules.run(...), got ${describeValue(action)}`
    })
  )
}

/** One named schedule: its record, its engine entry and, for a message, its tick. */
export class ScheduleRecord extends MailboxTick implements Cancellable {
  get kind() {
    return this.action._tag === "send" ? ("scheduler_message" as const) : ("scheduler_function" as const)
  }

  pause: { readonly note: string; readonly by: string; readonly at: number } | undefined = undefined
  removed = false
  /** The last instant the schedule ran for (or decided not to): an update never runs it again. */
  lastInstant: number | undefined = undefined
  private readonly runs: Array<Run> = []
  private running = 0
  private readonly buffered: Array<{ readonly instant: number; readonly trigger: Run["trigger"] }> = []
  private failuresInRow = 0

  constructor(
    readonly registry: LocalSchedules,
    readonly reference: string,
    public spec: ParsedSpec,
    public action: ParsedAction,
    public policies: ParsedPolicies,
    /** The origin of an interval's grid. */
    public anchor: number
  ) {
    super()
  }

  get host(): ScheduleHost {
    return this.registry.host
  }

  get message(): unknown {
    return this.action._tag === "send" ? this.action.message : undefined
  }

  override get sender(): ActorRef<any> | undefined {
    return this.action._tag === "send" ? this.action.sender : undefined
  }

  override label(): TimerLabel {
    return { kind: this.kind, key: this.reference, owner: this.owner }
  }

  get owner(): string {
    return this.action._tag === "send" ? this.action.target.path : "task"
  }

  // ---------------------------------------------------------------- instants

  /** The first instant strictly after `after`. */
  nextAfter(after: number): number | undefined {
    const spec = this.spec
    if (spec._tag === "cron") return Option.getOrUndefined(QuartzCron.next(spec.cron, after))
    const first = this.anchor + spec.first
    if (after < first) return first
    return first + (Math.floor((after - first) / spec.every) + 1) * spec.every
  }

  /** Arms the next instant strictly after `after` (unless paused, removed or out of instants). */
  armAfter(after: number): void {
    if (this.pause !== undefined || this.removed) return
    const next = this.nextAfter(after)
    if (next !== undefined) this.host.driver.schedule(this, next)
  }

  fire(now: number, driver: TimerDriver): Effect.Effect<void> | undefined {
    const nominal = driver.dueOf(this)
    let instants: ReadonlyArray<number>
    if (now - nominal <= this.policies.graceMillis) {
      instants = [nominal]
      // on time: the next instant after this one (an interval catches up what it missed, as any fixed-rate timer)
      const next = this.spec._tag === "interval" ? this.nextAfter(nominal) : this.nextAfter(Math.max(nominal, now))
      if (next !== undefined) driver.schedule(this, next)
    } else {
      instants = this.misfired(nominal, now)
      const next = this.nextAfter(now)
      if (next !== undefined) driver.schedule(this, next)
    }
    let more: Effect.Effect<void> | undefined
    for (const instant of instants) {
      const run = this.runAt(instant, now, "schedule")
      if (run !== undefined) more = more === undefined ? run : Effect.zipRight(more, run)
    }
    return more
  }

  /** The instants missed by more than the grace window, from `nominal` to `now`, and what the policy runs of them. */
  private misfired(nominal: number, now: number): ReadonlyArray<number> {
    const missed: Array<number> = []
    let count = 0
    const keep = this.policies.misfire._tag === "RunAll" ? this.policies.misfire.max : 1
    for (let at: number | undefined = nominal; at !== undefined && at <= now; at = this.nextAfter(at)) {
      count++
      missed.push(at)
      if (missed.length > keep) missed.shift()
      if (count >= MAX_MISSED_SCAN) break
    }
    const run = this.policies.misfire._tag === "SkipMissed" ? [] : missed
    const skipped = count - run.length
    this.lastInstant = missed[missed.length - 1]
    if (skipped > 0) {
      scheduleEvents("missed").unsafeUpdate(skipped, [])
      const detail = `${count >= MAX_MISSED_SCAN ? "at least " : ""}${skipped} instants missed by more than the grace window (${this.policies.graceMillis} ms)${run.length > 0 ? `; ${run.length} run now` : ""}`
      this.record(notRun(nominal, "schedule", "missed", detail, now - nominal))
    }
    return run
  }

  // ---------------------------------------------------------------- runs

  /** Runs the action for `instant` now; for a task, under the overlap policy. */
  runAt(instant: number, now: number, trigger: Run["trigger"]): Effect.Effect<void> | undefined {
    if (trigger === "schedule") this.lastInstant = Math.max(this.lastInstant ?? instant, instant)
    const action = this.action
    if (action._tag === "send") {
      this.record({ instant, trigger, start: now, end: now, outcome: "sent", lateness: now - instant, attempts: 1 })
      if (action.target instanceof CellRef) return action.target.cell.offerTick(this, instant, now)
      // a ref without a mailbox takes the message directly; a throw is this schedule's fault (the driver reports it)
      action.target.unsafeTell(action.message, action.sender)
      return undefined
    }
    if (this.running > 0 && this.policies.overlap !== "allowAll") {
      scheduleEvents("overlap").unsafeUpdate(1, [])
      switch (this.policies.overlap) {
        case "skip":
          this.record(notRun(instant, trigger, "skipped", "a run was still going (overlap: skip)"))
          return undefined
        case "bufferOne":
          this.buffered.length = 0
          this.buffered.push({ instant, trigger })
          return undefined
        case "bufferAll":
          this.buffered.push({ instant, trigger })
          return undefined
      }
    }
    this.running++
    return Effect.asVoid(this.host.forkTask(this.execute(action.task, instant, trigger)))
  }

  private execute(
    task: Effect.Effect<unknown, unknown>,
    instant: number,
    trigger: Run["trigger"]
  ): Effect.Effect<void> {
    return Effect.gen(this, function* () {
      const start = this.host.driver.now()
      let attempts = 0
      const attempt = Effect.suspend(() => {
        if (attempts++ > 0) scheduleEvents("retry").unsafeUpdate(1, [])
        return task
      })
      const retry = this.policies.retry
      const attempted = retry === undefined ? attempt : Effect.retry(attempt, retry)
      const tracing = this.host.tracing
      // a span per run of an instant, its attempts inside it; the span ends as the run does
      const traced = tracing.enabled
        ? tracing.wrap(
            this,
            { kind: "schedule", owner: "task", key: this.reference, scheduled: instant },
            start,
            Effect.ensuring(
              attempted,
              Effect.suspend(() => Effect.annotateCurrentSpan("tickwork.schedule.attempts", attempts))
            ),
            undefined,
            { "tickwork.schedule.trigger": trigger }
          )
        : attempted
      const exit = yield* Effect.exit(traced)
      const end = this.host.driver.now()
      const failed = exit._tag === "Failure"
      this.record({
        instant,
        trigger,
        start,
        end,
        outcome: failed ? "failed" : "succeeded",
        lateness: start - instant,
        attempts,
        detail: failed ? String(Cause.squash(exit.cause)) : undefined
      })
      if (failed) {
        this.failuresInRow++
        yield* this.host.taskFailed(exit.cause, this.reference)
        const limit = this.policies.pauseAfterFailures
        if (limit !== undefined && this.failuresInRow >= limit && this.pause === undefined && !this.removed) {
          scheduleEvents("paused_on_failure").unsafeUpdate(1, [])
          this.pauseNow(
            `paused after ${this.failuresInRow} failed runs in a row; the last: ${String(Cause.squash(exit.cause))}`,
            "tickwork",
            end
          )
        }
      } else {
        this.failuresInRow = 0
      }
    }).pipe(
      Effect.ensuring(
        Effect.suspend(() => {
          this.running--
          const next = this.buffered.shift()
          if (next === undefined || this.removed) return Effect.void
          return this.runAt(next.instant, this.host.driver.now(), next.trigger) ?? Effect.void
        })
      )
    )
  }

  private record(run: Run): void {
    this.runs.push(run)
    if (this.runs.length > this.policies.history) this.runs.splice(0, this.runs.length - this.policies.history)
  }

  get history(): ReadonlyArray<Run> {
    return this.runs.slice()
  }

  // ---------------------------------------------------------------- steering

  pauseNow(note: string, by: string, at: number): void {
    this.pause = { note, by, at }
    this.host.driver.cancel(this)
  }

  resumeNow(now: number): void {
    if (this.pause === undefined) return
    this.pause = undefined
    this.armAfter(now)
  }

  removeNow(): boolean {
    if (this.removed) return false
    this.removed = true
    this.buffered.length = 0
    this.host.driver.cancel(this)
    return true
  }

  // ---------------------------------------------------------------- the tick

  /** A queued copy of a removed schedule's message is stale; a paused one's is still handled. */
  accept(): boolean {
    return !this.removed
  }

  undeliverable(): void {}

  override lost(deadLetter: (message: unknown, sender: ActorRef<any> | undefined) => void): void {
    if (!this.removed) deadLetter(this.message, this.sender)
    else super.lost(deadLetter)
  }

  // ---------------------------------------------------------------- Cancellable (system.scheduler.scheduleWithCron)

  get cancel(): Effect.Effect<boolean> {
    return Effect.sync(() => this.unsafeCancel())
  }

  get isCancelled(): Effect.Effect<boolean> {
    return Effect.sync(() => this.removed)
  }

  unsafeCancel(): boolean {
    return this.removeNow() && this.registry.forget(this)
  }

  info(): ScheduleInfo {
    const spec = this.spec
    const p = this.policies
    return {
      reference: this.reference,
      kind: spec._tag,
      owner: this.owner,
      expression: spec._tag === "cron" ? spec.expression : undefined,
      intervalMillis: spec._tag === "interval" ? spec.every : undefined,
      timeZone: spec._tag === "cron" ? spec.timeZone : undefined,
      state: this.pause === undefined ? "active" : "paused",
      pause: this.pause,
      nextFire: this.isPending ? this.host.driver.dueOf(this) : undefined,
      lastRun: this.runs[this.runs.length - 1],
      policies: {
        misfire: p.misfire,
        graceMillis: p.graceMillis,
        overlap: p.overlap,
        retry: p.retry !== undefined,
        pauseAfterFailures: p.pauseAfterFailures
      }
    }
  }
}

/** The system's named schedules, by reference. */
export class LocalSchedules {
  private readonly byReference = new Map<string, ScheduleRecord>()

  constructor(readonly host: ScheduleHost) {}

  get size(): number {
    return this.byReference.size
  }

  forget(record: ScheduleRecord): boolean {
    if (this.byReference.get(record.reference) !== record) return false
    this.byReference.delete(record.reference)
    return true
  }

  /** Cancels every schedule (system shutdown). */
  clear(): void {
    for (const record of this.byReference.values()) record.removeNow()
    this.byReference.clear()
  }

  /**
   * Creates `reference` or updates it in place. `context` is the creator's, for a task's services. Synchronous: the
   * record, or the typed error to fail with.
   */
  upsert(
    reference: unknown,
    spec: unknown,
    action: unknown,
    policies: unknown,
    context: Context.Context<never>
  ): Either.Either<ScheduleRecord, ScheduleError> {
    const badReference = checkReference(reference)
    if (badReference !== undefined) return Either.left(badReference)
    const ref = reference as string
    const now = this.host.driver.now()
    const existing = this.byReference.get(ref)
    const parsedSpec = parseSpec(spec, now)
    if (Either.isLeft(parsedSpec)) return Either.left(parsedSpec.left)
    const parsedAction = parseAction(action, context)
    if (Either.isLeft(parsedAction)) return Either.left(parsedAction.left)
    const parsedPolicies = parsePolicies(policies, existing?.policies ?? DEFAULTS)
    if (Either.isLeft(parsedPolicies)) return Either.left(parsedPolicies.left)
    if (existing !== undefined) {
      existing.action = parsedAction.right
      this.updateNow(existing, parsedSpec.right, parsedPolicies.right, now)
      return Either.right(existing)
    }
    const record = new ScheduleRecord(this, ref, parsedSpec.right, parsedAction.right, parsedPolicies.right, now)
    if (this.host.isTerminating) {
      record.removed = true
      return Either.right(record)
    }
    this.byReference.set(ref, record)
    record.armAfter(now)
    return Either.right(record)
  }

  /**
   * Replaces the spec and policies of `record` in place. With a new spec the next instant is the first of the new one
   * at or after now, and after the last instant already run: none is run twice, none between now and it is lost.
   */
  private updateNow(record: ScheduleRecord, spec: ParsedSpec, policies: ParsedPolicies, now: number): void {
    record.policies = policies
    if (sameSpec(record.spec, spec)) return
    record.spec = spec
    if (spec._tag === "interval") record.anchor = Math.max(record.lastInstant ?? now, now) - spec.first + spec.every
    this.host.driver.cancel(record)
    record.armAfter(Math.max(now - 1, record.lastInstant ?? Number.NEGATIVE_INFINITY))
  }

  private find(reference: string): Either.Either<ScheduleRecord, ScheduledReferenceNotFound> {
    const record = this.byReference.get(reference)
    return record === undefined ? Either.left(new ScheduledReferenceNotFound({ reference })) : Either.right(record)
  }

  private readonly sources: Array<ScheduleSource> = []

  addSource(source: ScheduleSource): void {
    this.sources.push(source)
  }

  removeSource(source: ScheduleSource): void {
    const at = this.sources.indexOf(source)
    if (at >= 0) this.sources.splice(at, 1)
  }

  /** `operation` on the local schedules, then on each source in turn while the reference is not found. */
  private dispatch<A, E>(
    operation: (ops: SchedulesOperations) => Effect.Effect<A, E>
  ): Effect.Effect<A, E | ScheduledReferenceNotFound> {
    return Effect.suspend(() =>
      this.sources.reduce(
        (tried: Effect.Effect<A, E | ScheduledReferenceNotFound>, source) =>
          Effect.catchIf(
            tried,
            (error): error is ScheduledReferenceNotFound => error instanceof ScheduledReferenceNotFound,
            () => operation(source)
          ),
        operation(this.local)
      )
    )
  }

  /** Every named schedule: the local ones, and those of the sources. */
  readonly service: SchedulesService = {
    create: (reference, spec, action, policies) => this.local.create(reference, spec, action, policies),
    list: (filter) =>
      Effect.map(Effect.all([this.local.list(filter), ...this.sources.map((source) => source.list(filter))]), (lists) =>
        lists.flat()
      ),
    get: (reference) => this.dispatch((ops) => ops.get(reference)),
    pause: (reference, note, options) => this.dispatch((ops) => ops.pause(reference, note, options)),
    resume: (reference) => this.dispatch((ops) => ops.resume(reference)),
    trigger: (reference) => this.dispatch((ops) => ops.trigger(reference)),
    update: (reference, changes) => this.dispatch((ops) => ops.update(reference, changes)),
    remove: (reference) => this.dispatch((ops) => ops.remove(reference)),
    history: (reference) => this.dispatch((ops) => ops.history(reference)),
    backfill: (reference, from, to) => this.dispatch((ops) => ops.backfill(reference, from, to)),
    timersOf: (owner) => this.local.timersOf(owner)
  }

  /** The local schedules only (never a source's: no storage to fail). */
  listLocal(filter?: Filter): Effect.Effect<ReadonlyArray<ScheduleInfo>> {
    return Effect.sync(() =>
      Array.from(this.byReference.values(), (record) => record.info()).filter(
        (info) =>
          (filter?.kind === undefined || info.kind === filter.kind) &&
          (filter?.owner === undefined || info.owner === filter.owner) &&
          (filter?.state === undefined || info.state === filter.state)
      )
    )
  }

  /** Removes a local schedule (`system.scheduler.cancelSchedule`). */
  removeLocal(reference: string): Effect.Effect<void, ScheduledReferenceNotFound> {
    return Effect.suspend(() =>
      Either.map(this.find(reference), (record) => {
        record.unsafeCancel()
      })
    )
  }

  private readonly local: SchedulesService = {
    create: <R>(reference: string, spec: Spec, action: Action<R>, policies?: Policies) =>
      Effect.flatMap(Effect.context<R>(), (context) => {
        const created = this.upsert(reference, spec, action, policies, context as Context.Context<never>)
        if (Either.isLeft(created)) return Effect.fail(created.left)
        return Effect.as(linkArming(this.host.tracing, created.right), created.right.info())
      }),
    list: (filter) => this.listLocal(filter),
    get: (reference) => Effect.suspend(() => Either.map(this.find(reference), (record) => record.info())),
    pause: (reference, note, options) =>
      Effect.suspend(() =>
        Either.map(this.find(reference), (record) => {
          if (record.pause === undefined) {
            scheduleEvents("paused").unsafeUpdate(1, [])
            record.pauseNow(String(note), options?.by ?? "operator", this.host.driver.now())
          }
          return record.info()
        })
      ),
    resume: (reference) =>
      Effect.suspend(() =>
        Either.map(this.find(reference), (record) => {
          if (record.pause !== undefined) scheduleEvents("resumed").unsafeUpdate(1, [])
          record.resumeNow(this.host.driver.now())
          return record.info()
        })
      ),
    trigger: (reference) =>
      Effect.suspend(() => {
        const found = this.find(reference)
        if (Either.isLeft(found)) return Effect.fail(found.left)
        scheduleEvents("triggered").unsafeUpdate(1, [])
        const now = this.host.driver.now()
        return found.right.runAt(now, now, "manual") ?? Effect.void
      }),
    update: (reference, changes) =>
      Effect.suspend((): Effect.Effect<ScheduleInfo, ScheduledReferenceNotFound | ScheduleError> => {
        const found = this.find(reference)
        if (Either.isLeft(found)) return Effect.fail(found.left)
        const record = found.right
        const now = this.host.driver.now()
        const spec = changes.spec === undefined ? Either.right(record.spec) : parseSpec(changes.spec, now)
        if (Either.isLeft(spec)) return Effect.fail(spec.left)
        const policies = parsePolicies(changes.policies, record.policies)
        if (Either.isLeft(policies)) return Effect.fail(policies.left)
        this.updateNow(record, spec.right, policies.right, now)
        return Effect.succeed(record.info())
      }),
    remove: (reference) => this.removeLocal(reference),
    history: (reference) => Effect.suspend(() => Either.map(this.find(reference), (record) => record.history)),
    backfill: (reference, from, to) =>
      Effect.suspend((): Effect.Effect<number, ScheduledReferenceNotFound | InvalidSchedulePolicy> => {
        const found = this.find(reference)
        if (Either.isLeft(found)) return Effect.fail(found.left)
        const instants = backfillInstants(from, to, (after) => found.right.nextAfter(after))
        if (Either.isLeft(instants)) return Effect.fail(instants.left)
        const now = this.host.driver.now()
        let runs: Effect.Effect<void> = Effect.void
        for (const instant of instants.right) {
          const run = found.right.runAt(instant, now, "backfill")
          if (run !== undefined) runs = Effect.zipRight(runs, run)
        }
        return Effect.as(runs, instants.right.length)
      }),
    timersOf: (owner) =>
      Effect.suspend(() =>
        owner instanceof CellRef && this.host.owns(owner.cell)
          ? Effect.succeed(owner.cell.isTerminated ? [] : owner.cell.timerInfos())
          : Effect.fail(
              new InvalidTimerTarget({
                target: describeValue(owner),
                reason: "the owner must be an actor of this system (a grain's, an entity's and a Spot's refs are)"
              })
            )
      )
  }
}

const sameSpec = (a: ParsedSpec, b: ParsedSpec): boolean =>
  a._tag === "interval"
    ? b._tag === "interval" && a.every === b.every && a.first === b.first
    : b._tag === "cron" && a.expression === b.expression && a.timeZone === b.timeZone

/**
 * The instants of a backfill from `from` to `to` (both included), by `nextAfter`; at most `MAX_BACKFILL` of them.
 */
export const backfillInstants = (
  from: DateTime.DateTime | number,
  to: DateTime.DateTime | number,
  nextAfter: (after: number) => number | undefined
): Either.Either<ReadonlyArray<number>, InvalidSchedulePolicy> => {
  const millis = (at: unknown) =>
    typeof at === "number" ? at : DateTime.isDateTime(at) ? DateTime.toEpochMillis(at) : Number.NaN
  const start = millis(from)
  const end = millis(to)
  if (!Number.isFinite(start) || !Number.isFinite(end)) {
    return policyError(
      "backfill",
      `from and to must be DateTimes or epoch millis, got ${describeValue(from)} and ${describeValue(to)}`
    )
  }
  if (start > end) return policyError("backfill", `from (${start}) is after to (${end})`)
  const instants: Array<number> = []
  for (let at = nextAfter(start - 1); at !== undefined && at <= end; at = nextAfter(at)) {
    if (instants.length >= MAX_BACKFILL) {
      return policyError("backfill", `the range holds more than ${MAX_BACKFILL} instants`)
    }
    instants.push(at)
  }
  return Either.right(instants)
}

/** Instants one backfill runs, at most. */
export const MAX_BACKFILL = 10_000
