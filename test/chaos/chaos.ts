/**
 * The chaos suite: random sequences of API calls across actors, the system scheduler, grains, Spots and entities, with
 * valid and invalid inputs mixed in, run under TestClock. After every step and at the end of every sequence it checks
 * the engine's guarantees (docs/reliability.md):
 *
 * - the canaries (an actor, a Spot, a grain and an entity, each ticking every 100 ms) tick exactly on time;
 * - no tick is handled after its timer was cancelled or replaced, or after its owner was stopped;
 * - every call whose input the model knows to be bad fails with a typed error (never a defect, never a success), and
 *   every call with good input succeeds;
 * - the engine never died (`stats.engineRestarts` 0) and, after shutdown, `stats` reads zero.
 *
 * `runChaos(runs, seed)` is what `test/chaos/Chaos.test.ts` (a small run, part of `npm test`) and `npm run chaos` (a
 * long run) call.
 */
import {
  Cause,
  Context,
  Duration,
  Effect,
  Exit,
  FastCheck,
  Fiber,
  Layer,
  Logger,
  Option,
  Schedule,
  Scope,
  TestClock,
  TestContext
} from "effect"
import { Actor, ActorRef, ActorSystem, Entity, Grain, Grains, OverrunPolicy, Passivation, Spot } from "tickwork"

// ------------------------------------------------------------------ inputs

/** Durations a user might pass: good ones, and the bad ones the issue found (each must be a typed error). */
const goodDelays = [0, 1, 5, 50, 99, 100, 250, "10 millis", "1 second"] as const
const goodIntervals = [7, 50, 100, 333, "20 millis"] as const
const badDurations = [-1, Number.NaN, Number.POSITIVE_INFINITY, "soon", "-5 millis", undefined, null, {}, [1, 2, 3]]
const subMillisecond = [0.001, 0.5, "500 micros"]

interface Input<A> {
  readonly value: A
  readonly ok: boolean
}

const input = <A>(good: ReadonlyArray<A>, bad: ReadonlyArray<unknown>): FastCheck.Arbitrary<Input<unknown>> =>
  FastCheck.oneof(
    { weight: 4, arbitrary: FastCheck.constantFrom(...good).map((value) => ({ value: value as unknown, ok: true })) },
    { weight: 1, arbitrary: FastCheck.constantFrom(...bad).map((value) => ({ value, ok: false })) }
  )

const delayInput = input<unknown>(goodDelays, badDurations)
const intervalInput = input<unknown>(goodIntervals, [...badDurations, 0, ...subMillisecond])

// ------------------------------------------------------------------ operations

export type Op =
  | { readonly _tag: "Advance"; readonly millis: number }
  | { readonly _tag: "Spawn"; readonly slot: number; readonly name: Input<unknown>; readonly definition: Input<string> }
  | {
      readonly _tag: "StartTimer"
      readonly slot: number
      readonly key: string
      readonly mode: "single" | "delay" | "rate" | "schedule"
      readonly interval: Input<unknown>
    }
  | { readonly _tag: "CancelTimer"; readonly slot: number; readonly key: string }
  | { readonly _tag: "Stop"; readonly slot: number }
  | { readonly _tag: "Tell"; readonly slot: number }
  | {
      readonly _tag: "ScheduleMessage"
      readonly target: Input<"slot" | "dead">
      readonly slot: number
      readonly delay: Input<unknown>
      readonly every: Input<unknown> | undefined
    }
  | { readonly _tag: "ScheduleCron"; readonly slot: number; readonly expression: Input<string> }
  | { readonly _tag: "ScheduleTask"; readonly outcome: "succeed" | "fail" | "die"; readonly delay: Input<unknown> }
  | { readonly _tag: "CancelSchedule"; readonly index: number }
  | { readonly _tag: "GrainTimer"; readonly key: Input<string>; readonly interval: Input<unknown> }
  | { readonly _tag: "SpotTimer"; readonly period: Input<unknown>; readonly overrun: Input<unknown> }
  | { readonly _tag: "EntityTimer"; readonly id: Input<string>; readonly interval: Input<unknown> }

const SLOTS = 3
const slot = FastCheck.integer({ min: 0, max: SLOTS - 1 })
const key = FastCheck.constantFrom("a", "b", "c")

const opArb: FastCheck.Arbitrary<Op> = FastCheck.oneof(
  {
    weight: 5,
    arbitrary: FastCheck.oneof(
      { weight: 4, arbitrary: FastCheck.integer({ min: 0, max: 60 }) },
      { weight: 1, arbitrary: FastCheck.integer({ min: 60, max: 600 }) }
    ).map((millis) => ({ _tag: "Advance" as const, millis }))
  },
  {
    weight: 2,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("Spawn" as const),
      slot,
      name: input<unknown>(["w"], [42, "", "a/b", "$reserved", {}]),
      definition: input<string>(["plain"], ["not-an-actor", "bad-capacity", "bad-strategy"]) as FastCheck.Arbitrary<
        Input<string>
      >
    })
  },
  {
    weight: 4,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("StartTimer" as const),
      slot,
      key,
      mode: FastCheck.constantFrom("single" as const, "delay" as const, "rate" as const, "schedule" as const),
      interval: intervalInput
    })
  },
  { weight: 3, arbitrary: FastCheck.record({ _tag: FastCheck.constant("CancelTimer" as const), slot, key }) },
  { weight: 1, arbitrary: FastCheck.record({ _tag: FastCheck.constant("Stop" as const), slot }) },
  { weight: 3, arbitrary: FastCheck.record({ _tag: FastCheck.constant("Tell" as const), slot }) },
  {
    weight: 3,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("ScheduleMessage" as const),
      target: input<"slot" | "dead">(["slot"], [undefined, {}, "a-path", null]) as FastCheck.Arbitrary<
        Input<"slot" | "dead">
      >,
      slot,
      delay: delayInput,
      every: FastCheck.option(intervalInput, { nil: undefined })
    })
  },
  {
    weight: 1,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("ScheduleCron" as const),
      slot,
      expression: input<string>(
        ["* * * * * ?", "*/2 * * * * ?"],
        ["0 0 0 1 1 ? 1970", "30 2", "", undefined]
      ) as FastCheck.Arbitrary<Input<string>>
    })
  },
  {
    weight: 2,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("ScheduleTask" as const),
      outcome: FastCheck.constantFrom("succeed" as const, "fail" as const, "die" as const),
      delay: delayInput
    })
  },
  { weight: 2, arbitrary: FastCheck.record({ _tag: FastCheck.constant("CancelSchedule" as const), index: slot }) },
  {
    weight: 2,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("GrainTimer" as const),
      key: input<string>(["g-1", "g-2"], ["", 42, undefined]) as FastCheck.Arbitrary<Input<string>>,
      interval: intervalInput
    })
  },
  {
    weight: 2,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("SpotTimer" as const),
      period: intervalInput,
      overrun: input<unknown>(
        [OverrunPolicy.SkipLateTicks, OverrunPolicy.DelayNextTick, OverrunPolicy.CatchUpBounded(2)],
        ["skip", {}, null, OverrunPolicy.CatchUpBounded(0)]
      )
    })
  },
  {
    weight: 2,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("EntityTimer" as const),
      id: input<string>(["e-1", "e-2"], ["", 7, null]) as FastCheck.Arbitrary<Input<string>>,
      interval: intervalInput
    })
  }
)

export const sequenceArb = FastCheck.array(opArb, { minLength: 10, maxLength: 30, size: "max" })

// ------------------------------------------------------------------ the world

/** What the actors under test tell the world: a tick of `key` with the generation it was started under. */
interface Subject {
  readonly ref: ActorRef.ActorRef<SubjectMsg>
  /** Per key, the generation of the timer started last; absent once cancelled. */
  readonly generations: Map<string, number>
  stopped: boolean
  /** Calls sent into it (`inside`) that have not run yet. */
  unanswered: number
}

type SubjectMsg =
  | { readonly _tag: "Tick"; readonly key: string; readonly generation: number }
  | { readonly _tag: "Ping" }
  | { readonly _tag: "Nudge" }
  | {
      readonly _tag: "Do"
      readonly f: (ctx: Actor.ActorContext<SubjectMsg>) => Effect.Effect<unknown, unknown>
      readonly reply: (exit: Exit.Exit<unknown, unknown>) => void
    }

/** The tags of the typed errors a bad input may come back as. */
const TYPED = new Set([
  "InvalidTimerDelay",
  "InvalidTimerInterval",
  "InvalidTimerTarget",
  "InvalidTimerReference",
  "InvalidCronExpression",
  "InvalidActorName",
  "InvalidActorDefinition",
  "ActorNameTaken",
  "InvalidGrainKey",
  "InvalidEntityId",
  "InvalidOverrunPolicy"
])

class Violation extends Error {}

const check = (condition: boolean, message: string): void => {
  if (!condition) throw new Violation(message)
}

/** Violations seen inside handlers, where a throw would only be the actor's own failure (supervised, then lost). */
let handlerViolations: Array<string> = []

const note = (condition: boolean, message: string): void => {
  if (!condition) handlerViolations.push(message)
}

/** An exit as the model sees it: success, a typed failure (its tag), or anything else (a defect: a violation). */
const outcome = (exit: Exit.Exit<unknown, unknown>, what: string): "ok" | string => {
  if (Exit.isSuccess(exit)) return "ok"
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const tag = (failure.value as { _tag?: unknown })._tag
    check(typeof tag === "string" && TYPED.has(tag), `${what}: failed with an untyped error ${String(failure.value)}`)
    return tag as string
  }
  throw new Violation(`${what}: not a typed error: ${Cause.pretty(exit.cause)}`)
}

const expectOutcome = (exit: Exit.Exit<unknown, unknown>, ok: boolean, what: string, allowed: Array<string> = []) => {
  const result = outcome(exit, what)
  if (ok) check(result === "ok" || allowed.includes(result), `${what}: good input failed with ${result}`)
  else check(result !== "ok", `${what}: bad input was accepted`)
}

/** The model canaries' tick counts of the sequence that runs (one sequence runs at a time). */
let modelTicks = { grain: 0, spot: 0, entity: 0 }

type BeaconMsg = "start" | "tick" | "arm-tick" | { readonly _tag: "Arm"; readonly interval: unknown }

/** The grain canary ("canary" key): a 100 ms interval timer from its activation; `Arm` schedules one more. */
const Beacon = Grain.make<BeaconMsg>()({
  name: "beacon",
  passivation: Passivation.never,
  onActivate: (props) =>
    props.identity.key === "canary" ? Effect.asVoid(Effect.orDie(props.schedule("tick", "100 millis"))) : Effect.void,
  onReceive: (ctx) => {
    const message = ctx.message
    if (message === "tick")
      return Effect.sync(() => {
        modelTicks.grain++
      })
    if (typeof message === "object") {
      return Effect.flatMap(
        Effect.exit(ctx.schedule("arm-tick", message.interval as Duration.DurationInput)),
        ctx.reply
      )
    }
    return Effect.void
  }
})

type WalkerCmd =
  | { readonly _tag: "Tick" }
  | { readonly _tag: "Step" }
  | {
      readonly _tag: "Arm"
      readonly interval: unknown
      readonly replyTo: ActorRef.ActorRef<Exit.Exit<unknown, unknown>>
    }

/** The entity canary ("canary" id): a 100 ms periodic timer from its start; `Arm` starts one more. */
const Walker = Entity.make<number, WalkerCmd>()({
  name: "Walker",
  initialize: (id, ctx) =>
    id === "canary"
      ? Effect.as(Effect.orDie(ctx.startPeriodicTimer("100 millis", "100 millis", { _tag: "Step" })), 0)
      : Effect.succeed(0),
  commands: {
    Tick: (_cmd, n) => Effect.succeed(n),
    Step: (_cmd, n) =>
      Effect.sync(() => {
        modelTicks.entity++
        return n + 1
      }),
    Arm: (cmd, n, ctx) =>
      Effect.as(
        Effect.flatMap(
          Effect.exit(ctx.startPeriodicTimer(cmd.interval as Duration.DurationInput, { _tag: "Tick" })),
          (exit) => cmd.replyTo.tell(exit)
        ),
        n
      )
  }
})

/** Runs one sequence on a fresh system and TestClock; throws a `Violation` when a guarantee does not hold. */
export const runSequence = (ops: ReadonlyArray<Op>): Effect.Effect<void> =>
  Effect.gen(function* () {
    handlerViolations = []
    const scope = yield* Scope.make()
    const context = yield* Effect.orDie(
      Layer.buildWithScope(
        Grains.layer([Beacon]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "chaos", stopTimeout: "1 second" }))),
        scope
      )
    )
    const system = Context.get(context, ActorSystem.ActorSystem)
    const start = yield* TestClock.currentTimeMillis
    // the model canaries: a grain, a Spot and an entity, each ticking every 100 ms from the start
    const models = { grain: 0, spot: 0, entity: 0 }
    modelTicks = models
    yield* Effect.provide(Effect.orDie(Grains.tell(Beacon, "canary", "start")), context)
    const spot = yield* Effect.orDie(
      Spot.spawn<number>(
        {
          initialState: 0,
          onStart: (ctx) =>
            Effect.orDie(
              ctx.timers.start({
                name: "canary",
                period: "100 millis",
                handler: () =>
                  Effect.sync(() => {
                    models.spot++
                  })
              })
            )
        },
        "spot-canary"
      ).pipe(Effect.provide(context))
    )
    const entities = yield* Effect.orDie(Effect.provide(Entity.makeRegistry(Walker), context)).pipe(Scope.extend(scope))
    yield* Effect.orDie(entities.tell("canary", { _tag: "Tick" }))
    yield* TestClock.adjust(0)
    // the canary: a fixed-rate timer from the start, every 100 ms
    let canaryTicks = 0
    const Canary = Actor.make<"tick">()({
      preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("canary", "tick", "100 millis")),
      receive: () =>
        Effect.sync(() => {
          canaryTicks++
        })
    })
    yield* Effect.orDie(system.spawn(Canary, "canary"))

    const subjects: Array<Subject | undefined> = new Array(SLOTS).fill(undefined)
    // every slot starts with a subject; `Spawn` replaces a stopped one (or tries bad names and definitions)
    const initial: ReadonlyArray<Op> = subjects.map((_, i) => ({
      _tag: "Spawn",
      slot: i,
      name: { value: "w", ok: true },
      definition: { value: "plain", ok: true }
    }))
    const schedules: Array<{ readonly cancel: Effect.Effect<boolean> }> = []
    let generation = 0

    const Subject = (subject: { current: Subject | undefined }) =>
      Actor.make<SubjectMsg>()({
        receive: (msg, ctx) =>
          Effect.suspend(() => {
            const me = subject.current!
            note(!me.stopped, `a handler of ${ctx.path} ran after its stop completed`)
            switch (msg._tag) {
              case "Tick":
                note(
                  me.generations.get(msg.key) === msg.generation,
                  `${ctx.path}: a tick of timer ${msg.key} (generation ${msg.generation}) was handled after it was cancelled or replaced`
                )
                return Effect.void
              case "Ping":
                // a slow handler, so that ticks queue behind it and can go stale there
                return Effect.sleep("40 millis")
              case "Nudge":
                return Effect.void
              case "Do":
                return Effect.map(Effect.exit(msg.f(ctx)), msg.reply)
            }
          })
      })

    /**
     * Runs `f` inside `subject`, in its mailbox order, and checks its exit there: the test does not wait for it, since
     * the subject may be in a handler that sleeps on the test clock. A subject that is not stopped must have run every
     * one by the end.
     */
    const inside = (
      subject: Subject,
      f: (ctx: Actor.ActorContext<SubjectMsg>) => Effect.Effect<unknown, unknown>,
      expect: (exit: Exit.Exit<unknown, unknown>) => void
    ) =>
      Effect.sync(() => {
        subject.unanswered++
        subject.ref.unsafeTell({
          _tag: "Do",
          f,
          reply: (exit) => {
            subject.unanswered--
            try {
              expect(exit)
            } catch (error) {
              handlerViolations.push(String(error))
            }
          }
        })
      })

    const canaryOnTime = Effect.gen(function* () {
      const now = yield* TestClock.currentTimeMillis
      const expected = Math.floor((now - start) / 100)
      check(canaryTicks === expected, `the canary ticked ${canaryTicks} times by +${now - start} ms, not ${expected}`)
      for (const [model, ticks] of Object.entries(models)) {
        check(ticks === expected, `the ${model} canary ticked ${ticks} times by +${now - start} ms, not ${expected}`)
      }
    })

    for (const op of [...initial, ...ops]) {
      switch (op._tag) {
        case "Advance":
          yield* TestClock.adjust(Duration.millis(op.millis))
          yield* canaryOnTime
          break
        case "Spawn": {
          if (subjects[op.slot] !== undefined && !subjects[op.slot]!.stopped && op.name.ok && op.definition.ok) break
          const holder: { current: Subject | undefined } = { current: undefined }
          const definition =
            op.definition.value === "plain"
              ? Subject(holder)
              : op.definition.value === "bad-capacity"
                ? Actor.withMailboxCapacity(Subject(holder), -1)
                : op.definition.value === "bad-strategy"
                  ? Actor.withSupervisorStrategy(Subject(holder), {
                      decide: () => "restart",
                      maxRestarts: Number.NaN,
                      withinMillis: 1
                    })
                  : ({} as Actor.Actor<SubjectMsg>)
          const name = op.name.ok ? `s${op.slot}-${generation++}` : op.name.value
          const exit = yield* Effect.exit(system.spawn(definition, name as string))
          expectOutcome(exit, op.name.ok && op.definition.ok, `spawn(${String(name)}, ${op.definition.value})`)
          if (Exit.isSuccess(exit)) {
            holder.current = { ref: exit.value, generations: new Map(), stopped: false, unanswered: 0 }
            subjects[op.slot] = holder.current
          }
          break
        }
        case "StartTimer": {
          const subject = subjects[op.slot]
          if (subject === undefined || subject.stopped) break
          const gen = generation++
          const message: SubjectMsg = { _tag: "Tick", key: op.key, generation: gen }
          const interval = op.interval.value as Duration.DurationInput
          // a single timer takes a delay, so 0 and sub-millisecond values are good; the periodic kinds take an interval
          const ok = op.mode === "single" ? !badDurations.includes(op.interval.value) : op.interval.ok
          yield* inside(
            subject,
            (ctx) => {
              const started =
                op.mode === "single"
                  ? ctx.timers.startSingleTimer(op.key, message, interval)
                  : op.mode === "delay"
                    ? ctx.timers.startTimerWithFixedDelay(op.key, message, interval)
                    : op.mode === "rate"
                      ? ctx.timers.startTimerAtFixedRate(op.key, message, interval)
                      : op.interval.ok
                        ? ctx.timers.startTimerWithSchedule(
                            op.key,
                            message,
                            Schedule.spaced(interval).pipe(Schedule.intersect(Schedule.recurs(3)))
                          )
                        : ctx.timers.startTimerWithSchedule(op.key, message, interval as never)
              // the generation changes only when the start succeeded (a failed start leaves the old timer as it was)
              return Effect.tap(started, () => Effect.sync(() => subject.generations.set(op.key, gen)))
            },
            (exit) => expectOutcome(exit, ok, `startTimer ${op.mode} ${String(op.interval.value)}`)
          )
          break
        }
        case "CancelTimer": {
          const subject = subjects[op.slot]
          if (subject === undefined || subject.stopped) break
          yield* inside(
            subject,
            (ctx) => Effect.tap(ctx.timers.cancel(op.key), () => Effect.sync(() => subject.generations.delete(op.key))),
            (exit) => expectOutcome(exit, true, "cancel")
          )
          break
        }
        case "Stop": {
          const subject = subjects[op.slot]
          if (subject === undefined || subject.stopped) break
          // stopping waits for the handler in flight (a Ping sleeps 40 ms): it runs beside the clock
          const stopping = yield* Effect.fork(system.stop(subject.ref))
          yield* TestClock.adjust("40 millis")
          yield* Fiber.join(stopping)
          subject.stopped = true
          yield* canaryOnTime
          break
        }
        case "Tell": {
          const subject = subjects[op.slot]
          if (subject !== undefined) yield* subject.ref.tell({ _tag: "Ping" })
          break
        }
        case "ScheduleMessage": {
          const subject = subjects[op.slot]
          const target = op.target.ok ? subject?.ref : op.target.value
          if (op.target.ok && (subject === undefined || subject.stopped)) break
          // a message schedule sends a Nudge, handled at once (the subject's timers are its own keys)
          const delay = op.delay.value as Duration.DurationInput
          const exit = yield* Effect.exit(
            op.every === undefined
              ? system.scheduler.scheduleOnce(delay, target as ActorRef.ActorRef<SubjectMsg>, { _tag: "Nudge" })
              : system.scheduler.scheduleAtFixedRate(
                  delay,
                  op.every.value as Duration.DurationInput,
                  target as ActorRef.ActorRef<SubjectMsg>,
                  { _tag: "Nudge" }
                )
          )
          expectOutcome(exit, op.target.ok && op.delay.ok && (op.every?.ok ?? true), "schedule message")
          if (Exit.isSuccess(exit)) schedules.push(exit.value)
          break
        }
        case "ScheduleCron": {
          const subject = subjects[op.slot]
          if (subject === undefined || subject.stopped) break
          const exit = yield* Effect.exit(
            system.scheduler.scheduleWithCron(subject.ref, { _tag: "Nudge" }, op.expression.value as string, {
              timeZone: "UTC"
            })
          )
          expectOutcome(exit, op.expression.ok, `cron ${String(op.expression.value)}`)
          if (Exit.isSuccess(exit)) schedules.push(exit.value)
          break
        }
        case "ScheduleTask": {
          const task =
            op.outcome === "succeed"
              ? Effect.void
              : op.outcome === "fail"
                ? Effect.fail("task failed on purpose")
                : Effect.die("task died on purpose")
          const exit = yield* Effect.exit(
            system.scheduler.scheduleOnceFunction(op.delay.value as Duration.DurationInput, task)
          )
          expectOutcome(exit, op.delay.ok, "schedule task")
          if (Exit.isSuccess(exit)) schedules.push(exit.value)
          break
        }
        case "GrainTimer": {
          // a grain schedules a timer in its handler; the outcome comes back with its reply
          const exit = yield* Effect.exit(
            Grains.ask<Exit.Exit<unknown, unknown>, BeaconMsg>(
              Beacon,
              op.key.value as string,
              { _tag: "Arm", interval: op.interval.value },
              "1 hour"
            ).pipe(Effect.provide(context))
          )
          if (!op.key.ok) {
            expectOutcome(exit, false, `grain key ${String(op.key.value)}`)
            break
          }
          const armed = Exit.isSuccess(exit) ? (exit.value as Exit.Exit<unknown, unknown>) : exit
          expectOutcome(armed, op.interval.ok, `grain timer every ${String(op.interval.value)}`)
          break
        }
        case "SpotTimer": {
          const exit = yield* Effect.exit(
            spot.run((ctx) =>
              ctx.timers.start({
                name: `t-${generation++}`,
                period: op.period.value as Duration.DurationInput,
                overrun: op.overrun.value as OverrunPolicy.OverrunPolicy,
                handler: () => Effect.void
              })
            )
          )
          expectOutcome(exit, op.period.ok && op.overrun.ok, `Spot timer every ${String(op.period.value)}`)
          break
        }
        case "EntityTimer": {
          if (!op.id.ok) {
            const exit = yield* Effect.exit(entities.tell(op.id.value as string, { _tag: "Tick" }))
            expectOutcome(exit, false, `entity id ${String(op.id.value)}`)
            break
          }
          const exit = yield* Effect.exit(
            ActorRef.ask(
              entities.ref(op.id.value as string),
              (replyTo: ActorRef.ActorRef<Exit.Exit<unknown, unknown>>) =>
                ({ _tag: "Arm", interval: op.interval.value, replyTo }) as WalkerCmd,
              "1 hour"
            )
          )
          const armed = Exit.isSuccess(exit) ? exit.value : exit
          expectOutcome(armed, op.interval.ok, `entity timer every ${String(op.interval.value)}`)
          break
        }
        case "CancelSchedule": {
          const handle = schedules[op.index]
          if (handle !== undefined) yield* handle.cancel
          break
        }
      }
    }
    yield* TestClock.adjust("1 second")
    yield* canaryOnTime
    check(handlerViolations.length === 0, handlerViolations.join("\n"))
    for (const subject of subjects) {
      // calls left in a stopped subject's mailbox went to dead letters with it
      if (subject !== undefined && !subject.stopped) check(subject.unanswered === 0, "a call into a subject never ran")
    }
    const stats = yield* system.stats
    check(stats.engineRunning, "the engine is not running")
    check(stats.engineRestarts === 0, `the engine restarted ${stats.engineRestarts} times`)
    yield* Scope.close(scope, Exit.void)
    const after = yield* system.stats
    check(
      after.actors === 0 &&
        after.fibers === 0 &&
        after.timers === 0 &&
        after.engineEntries === 0 &&
        !after.engineRunning,
      `stats after shutdown: ${JSON.stringify(after)}`
    )
  }).pipe(Effect.provide(Layer.merge(TestContext.TestContext, Logger.remove(Logger.defaultLogger))))

/** Runs `runs` random sequences; a failure throws with fast-check's shrunk counterexample and the seed. */
export const runChaos = async (runs: number, seed?: number): Promise<void> => {
  await FastCheck.assert(
    FastCheck.asyncProperty(sequenceArb, (ops) => Effect.runPromise(runSequence(ops))),
    seed === undefined ? { numRuns: runs } : { numRuns: runs, seed }
  )
}
