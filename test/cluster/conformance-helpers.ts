/**
 * Helpers shared by the cluster tests that run runners in this process under TestClock: move the clock the way the
 * runners' storage polls need, start runners over one storage, read a schedule's history.
 */
import type { SqlClient } from "@effect/sql"
import { Context, DateTime, Effect, Layer, Scope, TestClock } from "effect"
import { ClusterRunner, ClusterScheduler } from "tickwork/cluster"

export const iso = (millis: number): string => DateTime.formatIso(DateTime.unsafeMake(millis))

/** Moves the test clock one second at a time, so every storage poll on the way runs. */
export const advance = (seconds: number): Effect.Effect<void> =>
  Effect.gen(function* () {
    for (let i = 0; i < seconds; i++) yield* TestClock.adjust("1 second")
  })

/** A runner without sockets over `storage`, in a scope of its own (close it to take the runner away). */
export const startRunner = (
  storage: Context.Context<SqlClient.SqlClient>,
  port: number,
  options?: { readonly tablePrefix?: string }
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(ClusterRunner.layerTestRunner({ ...options, port }), scope).pipe(
      Effect.provide(storage)
    )
    return { port, scope, context: Context.merge(storage, context) }
  })

export type TestRunner = Effect.Effect.Success<ReturnType<typeof startRunner>>

/** The instants a schedule fired, as ISO strings, oldest first. */
export const historyOf = (reference: string) =>
  Effect.map(ClusterScheduler.history(reference, { limit: 1000 }), (entries) =>
    entries.map((entry) => DateTime.formatIso(entry.instant))
  )
