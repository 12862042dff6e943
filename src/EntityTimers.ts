/**
 * Entity timers: declarative periodic timers, programmatic periodic timers that send a command, and one-shots that
 * run an effect on the entity's context.
 *
 * Every entity timer belongs to one incarnation of the entity's actor and runs on its fiber, serialized with
 * commands, under its supervision. They are all cancelled when the actor stops (sleep, shutdown, failure, restart);
 * a timer never wakes a sleeping entity — only a message routed to the entity does.
 *
 * - **Randomized first run.** A declarative timer without `initialDelay`, and `startRandomizedPeriodicTimer`, run first
 *   after a delay drawn uniformly from [interval/2, 3·interval/2) (whole milliseconds), so that entities started
 *   together (a wave of logins, a restart) spread their invocations over one interval. The draw comes from Effect's
 *   `Random`, read by the effect that arms the timer: provide `Random.make(seed)` for reproducible runs.
 * - **Then a fixed grid.** Later invocations follow `first + k·interval`, so the spread is kept.
 * - **No bursts.** At most one invocation of a timer is queued or running. An invocation whose time comes while the
 *   previous one is still queued or running (a slow handler), or that passed while the process was paused, is
 *   dropped; the next invocation that runs first logs one warning that says how many were dropped.
 * - **Real time.** Periodic timers and relative one-shots run on the system `Clock`; a game-clock skip does not make
 *   them fire or drop anything. Absolute one-shots follow the game clock (`GameClock`): a skip past their deadline
 *   fires them at once.
 *
 * @since 0.1.0
 */
import type * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { type Deadline, type Input as DeadlineInput, type InvalidDeadline, make as makeDeadline } from "./Deadline.js"
import type { EntityContext, InvalidCommand } from "./Entity.js"
import type { Cancellable } from "./Scheduler.js"
import type { InvalidTimerDelay, InvalidTimerInterval, InvalidTimerTarget } from "./TimerError.js"

/**
 * The timer methods of an entity's context (`ctx`). Call them from the entity's handlers; once the incarnation is
 * stopping they arm nothing and return an already-cancelled handle.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 *
 * type Cmd = { readonly _tag: "CheckExpiredItems" }
 *
 * const Inventory = Entity.make<{ readonly items: ReadonlyArray<string> }, Cmd>()({
 *   name: "Inventory",
 *   initialize: (_id, ctx) =>
 *     Effect.gen(function*() {
 *       // a non-constant interval, e.g. read from runtime options
 *       yield* ctx.startRandomizedPeriodicTimer("1 minute", { _tag: "CheckExpiredItems" })
 *       yield* ctx.scheduleExecuteOnActorContext("30 seconds", Effect.logInfo("30 seconds after initialize"))
 *       return { items: [] }
 *     }).pipe(Effect.orDie),
 *   commands: {
 *     CheckExpiredItems: (_cmd, model) => Effect.succeed(model)
 *   }
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface EntityTimers<in Cmd> {
  /**
   * Sends `command` to the entity itself periodically: the first time after `initialDelay` (default: `interval`),
   * then every `interval`. Use it when the first invocation must happen at a predictable time; otherwise prefer
   * `startRandomizedPeriodicTimer`. The interval must be a finite duration of at least 1 ms (`InvalidTimerInterval`),
   * the initial delay finite and >= 0 (`InvalidTimerDelay`), and the command one the kind handles (`InvalidCommand`).
   */
  readonly startPeriodicTimer: {
    (interval: Duration.DurationInput, command: Cmd): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidCommand>
    (
      initialDelay: Duration.DurationInput,
      interval: Duration.DurationInput,
      command: Cmd
    ): Effect.Effect<Cancellable, InvalidTimerInterval | InvalidTimerDelay | InvalidCommand>
  }
  /** Like `startPeriodicTimer`, with the first invocation after interval × U[0.5, 1.5): the one to prefer. */
  readonly startRandomizedPeriodicTimer: (
    interval: Duration.DurationInput,
    command: Cmd
  ) => Effect.Effect<Cancellable, InvalidTimerInterval | InvalidCommand>
  /**
   * Runs `effect` once on the entity's context (its fiber, serialized with commands): after a delay (real time), or
   * at an absolute time (a `DateTime` or `Deadline`, on the game clock). A number is a delay in milliseconds, as
   * everywhere in tickwork; use `scheduleExecuteOnActorContextAt` for epoch millis. A time already past runs at
   * once (queued behind the messages already in the mailbox). The handle cancels it until it starts. A failure goes
   * through the entity's supervision like a failing command. An `effect` that is not an `Effect` (a function, a
   * promise) fails with `TimerError.InvalidTimerTarget` and arms nothing.
   */
  readonly scheduleExecuteOnActorContext: <E, R>(
    at: Duration.DurationInput | DateTime.DateTime | Deadline,
    effect: Effect.Effect<unknown, E, R>
  ) => Effect.Effect<Cancellable, InvalidTimerDelay | InvalidDeadline | InvalidTimerTarget, R>
  /** Runs `effect` once on the entity's context at an absolute game time: `DateTime`, `Deadline` or epoch millis. */
  readonly scheduleExecuteOnActorContextAt: <E, R>(
    time: DeadlineInput,
    effect: Effect.Effect<unknown, E, R>
  ) => Effect.Effect<Cancellable, InvalidDeadline | InvalidTimerTarget, R>
}

/**
 * A declarative periodic timer, listed in the entity definition's `timers`. It starts with every incarnation (after
 * `initialize`), cannot be stopped or reconfigured, and runs until the entity stops. `run` gets the current model and
 * returns the next one, like a command handler.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Entity } from "tickwork"
 *
 * const Shop = Entity.make<{ readonly restocks: number }, never>()({
 *   name: "Shop",
 *   initialize: () => Effect.succeed({ restocks: 0 }),
 *   commands: {},
 *   timers: [{ name: "restock", interval: "1 minute", run: (model) => Effect.succeed({ restocks: model.restocks + 1 }) }]
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface PeriodicTimer<Model, Cmd, E, R> {
  /** Shown in logs; defaults to `periodic-<index>`. */
  readonly name?: string | undefined
  readonly interval: Duration.DurationInput
  /** A fixed first delay instead of the randomized one. */
  readonly initialDelay?: Duration.DurationInput | undefined
  readonly run: (model: Model, context: EntityContext<Model, Cmd>) => Effect.Effect<Model, E, R>
}

/**
 * A declarative periodic timer that polls a deadline stored in the model (rule 3: spread the load). Each run reads the
 * deadline from the current model and calls `onDue` when it has passed on the game clock; `onDue` typically sends the
 * command that acts on it, which must be idempotent because a poll and a one-shot may both see the deadline pass.
 * The first poll is randomized, so entities that share a deadline handle it spread over one interval. A deadline that
 * is not a usable time (`Deadline.make` accepts a `Deadline`, a `DateTime` or epoch millis) fails the run with
 * `InvalidDeadline`, which reaches the entity's supervision.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { type Deadline, Entity, EntityTimers } from "tickwork"
 *
 * interface Model {
 *   readonly nextLevel: number
 *   readonly nextLevelAvailableAt: Deadline.Deadline
 * }
 * type Cmd = { readonly _tag: "UnlockLevel"; readonly level: number }
 *
 * const poll = EntityTimers.pollDeadline<Model, Cmd>({
 *   name: "next-level",
 *   interval: "1 minute",
 *   deadline: (model) => model.nextLevelAvailableAt,
 *   onDue: (model, ctx) => ctx.send({ _tag: "UnlockLevel", level: model.nextLevel })
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const pollDeadline = <Model, Cmd, E = never, R = never>(options: {
  readonly name?: string | undefined
  readonly interval: Duration.DurationInput
  readonly initialDelay?: Duration.DurationInput | undefined
  /** The deadline to poll, read from the current model; undefined when there is nothing to wait for. */
  readonly deadline: (model: Model) => Deadline | undefined
  readonly onDue: (model: Model, context: EntityContext<Model, Cmd>) => Effect.Effect<unknown, E, R>
}): PeriodicTimer<Model, Cmd, E | InvalidDeadline, R> => ({
  name: options.name,
  interval: options.interval,
  initialDelay: options.initialDelay,
  run: (model, context) =>
    Effect.flatMap(context.currentTimeMillis, (now): Effect.Effect<Model, E | InvalidDeadline, R> => {
      const given = options.deadline(model)
      if (given === undefined) return Effect.succeed(model)
      // epoch millis are a time too; anything else fails the run (and reaches supervision), never "not due yet"
      const deadline = makeDeadline(given)
      if (Either.isLeft(deadline)) return Effect.fail(deadline.left)
      return now >= deadline.right.epochMillis ? Effect.as(options.onDue(model, context), model) : Effect.succeed(model)
    })
})
