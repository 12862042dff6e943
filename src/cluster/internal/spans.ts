/**
 * Spans for what a cluster delivers: each cron instant and each reminder occurrence runs in a root span of its own
 * (`rootSpan`, as the single-process ticks do in src/internal/tracing.ts), so the request that registered a schedule or
 * a reminder never becomes the parent of its runs, on this runner or any other. Whether to trace is decided once,
 * where a schedule is registered or grains are hosted: with no tracer installed, nothing is wrapped.
 */
import * as Entity from "@effect/cluster/Entity"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { rootSpan, type TickTracing } from "../../internal/tracing.js"
import type { ReminderDelivery } from "./grainProtocol.js"

/** The runner handling the current message, as "host:port" ("unknown" outside an entity). */
export const runnerAddress: Effect.Effect<string> = Effect.map(
  Effect.serviceOption(Entity.CurrentRunnerAddress),
  Option.match({ onNone: () => "unknown", onSome: (address) => `${address.host}:${address.port}` })
)

/** The runs of a cron instant's `execute` in one delivery (a storage failure rolls back and runs it again). */
class CronAttempts extends Context.Tag("tickwork/cluster/CronAttempts")<
  CronAttempts,
  { count: number; lateness: number | undefined }
>() {}

/**
 * Counts one run of `execute`, started `lateMillis` after its instant, on the span of its instant (the first run's
 * lateness is the span's); nothing when the instant is not traced.
 */
export const countAttempt = (lateMillis: number): Effect.Effect<void> =>
  Effect.map(Effect.serviceOption(CronAttempts), (attempts) => {
    if (Option.isNone(attempts)) return
    attempts.value.count++
    attempts.value.lateness ??= lateMillis
  })

/**
 * `handle`, the handling of the message for cron instant `instant` of `reference`, in a root span
 * `tickwork.cluster_cron`. `tickwork.cron.attempts` counts the runs of `execute` (0: the message was stale and
 * dropped, the instant had already run).
 */
export const cronInstantSpan = <A, E, R>(
  reference: string,
  instant: number,
  handle: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const attempts: Context.Tag.Service<CronAttempts> = { count: 0, lateness: undefined }
    return yield* rootSpan(
      handle.pipe(
        Effect.provideService(CronAttempts, attempts),
        // The span may start before the instant (its transaction begun ahead): its lateness is its first run's.
        Effect.ensuring(
          Effect.suspend(() =>
            Effect.annotateCurrentSpan({
              "tickwork.cron.attempts": attempts.count,
              "tickwork.timer.lateness_ms": attempts.lateness ?? Math.max(0, now - instant)
            })
          )
        )
      ),
      "tickwork.cluster_cron",
      {
        "tickwork.runner": yield* runnerAddress,
        "tickwork.timer.kind": "cluster_cron",
        "tickwork.timer.key": reference,
        "tickwork.timer.scheduled": instant
      }
    )
  })

/**
 * `handle`, the delivery of one reminder occurrence to grain (kind, key), in a root span `tickwork.reminder` of the
 * runner's actor system: the grain's identity is the owner, the reminder's name the key.
 */
export const reminderSpan = <A, E, R>(
  tracing: TickTracing,
  grain: string,
  delivery: ReminderDelivery,
  handle: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    return yield* tracing.wrap(
      delivery,
      { kind: "reminder", owner: grain, key: delivery.name, scheduled: delivery.due },
      now,
      handle,
      undefined,
      { "tickwork.runner": yield* runnerAddress, "tickwork.reminder.generation": delivery.generation }
    )
  })
