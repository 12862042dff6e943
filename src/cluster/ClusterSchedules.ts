/**
 * The cluster's crons in the `Schedules` service: with this layer on a runner, `Schedules` (and the admin API over
 * it) lists the cluster crons beside the local schedules (kind `"cluster-cron"`, owner `"cluster"`) and steers them
 * cluster-wide: pause with a note, resume, trigger, update the expression or policies, backfill, remove, history.
 * Their state is in the runners' storage, so every runner sees what one runner did, and it survives restarts.
 *
 * - `pause(reference, note)`: no runner runs its instants until `resume`; instants that pass meanwhile are not run.
 * - `trigger(reference)`: one run now, on whichever runner takes the message, without moving the grid; it obeys the
 *   overlap policy against a run in progress (`skip`, `bufferOne`, `bufferAll`, `allowAll`).
 * - `update(reference, { spec, policies })`: a new expression takes over from its first instant at or after now and
 *   after the last instant run (none twice, none lost); it holds across restarts until the code registers another
 *   expression or other policies. `retry` cannot be updated (it is code); an interval spec is refused.
 * - `backfill(reference, from, to)`: each instant of the range, in order, once, recorded as `"backfill"`.
 * - `remove(reference)`: stops it on every runner and deletes its state and history; a runner that registers it
 *   again (a restart with it in its layers) brings it back, so remove it from the code too.
 * - `history(reference)`: its runs, skips and misses, from a stored table that keeps the newest `Policies.history`.
 *
 * With `Reminders.layer` provided below it, the durable reminders are listed and steered too (kind `"reminder"`,
 * owner `<grain kind>/<key>`, reference `<grain kind>/<key>/<name>`): pause (the occurrences that pass while paused
 * do not reach the grain and are recorded as `"skipped"`), resume (from the next occurrence after now), trigger (one
 * delivery now, the grid unmoved; from a runner that hosts the grain kind), remove (unregisters it), history (each
 * delivery's instant, start, end, outcome and lateness), update of its misfire policies (misfire, grace, history). A
 * reminder's message and schedule are changed by registering it again: a spec update and `backfill` are
 * `InvalidSchedulePolicy`.
 *
 * Storage failures are `ScheduleStorageError`.
 *
 * @since 0.1.0
 */
import type { Sharding } from "@effect/cluster/Sharding"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ActorSystem } from "../ActorSystem.js"
import * as Schedules from "../Schedules.js"
import type { ScheduleStorageError } from "../TimerError.js"
import * as internal from "./internal/clusterSchedules.js"
import { Reminders } from "./Reminders.js"

/**
 * The cluster crons of the runner's storage as a schedule source (creates the tables when missing).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ClusterSchedules } from "tickwork/cluster"
 *
 * const names = Effect.flatMap(ClusterSchedules.make, (source) => source.list())
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Schedules.ScheduleSource, ScheduleStorageError, Sharding | SqlClient.SqlClient> =
  internal.make

/**
 * Adds the cluster crons to the `Schedules` of the runner's `ActorSystem`. Provide it on every runner an operator
 * may steer from (any runner sees every cluster cron, registered there or not).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ActorSystem, Schedules } from "tickwork"
 * import { ClusterRunner, ClusterSchedules } from "tickwork/cluster"
 *
 * const Live = Layer.mergeAll(Schedules.layer, ClusterSchedules.layer).pipe(
 *   Layer.provideMerge(ActorSystem.layer({ name: "runner-1" })),
 *   Layer.provideMerge(ClusterRunner.layerTest())
 * )
 * const program = Effect.gen(function* () {
 *   const schedules = yield* Schedules.Schedules
 *   yield* schedules.pause("nightly-report", "the warehouse is being migrated", { by: "ada" })
 * }).pipe(Effect.provide(Live))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never, ScheduleStorageError, ActorSystem | Sharding | SqlClient.SqlClient> =
  Layer.scopedDiscard(
    Effect.gen(function* () {
      yield* Schedules.addSource(yield* internal.make)
      // The durable reminders, when the runner has the service (provided below this layer).
      const reminders = yield* Effect.serviceOption(Reminders)
      if (Option.isSome(reminders)) yield* Schedules.addSource(reminders.value.schedules)
    })
  )
