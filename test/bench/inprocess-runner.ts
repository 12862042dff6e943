/**
 * One runner in this process for the in-process cluster benches (`delivery-inprocess.ts`, `register-inprocess.ts`):
 * no runner processes, no network but the storage's.
 */
import { Layer } from "effect"
import { ActorSystem } from "tickwork"
import { ClusterGrain, ClusterRunner, Reminders } from "tickwork/cluster"

/** The storage `spec` names (the benches' `STORAGE`): `pg:<url>`, else SQLite in memory. */
export const storageOf = (spec: string): ClusterRunner.Storage =>
  spec.startsWith("pg:") ? ClusterRunner.postgres({ url: spec.slice(3) }) : ClusterRunner.sqlite(":memory:")

/** A runner hosting `kind` with the reminders service, its tables under `tablePrefix`, over `storage` (kept in). */
export const layer = <Msg, A, E>(
  kind: ClusterGrain.ClusterGrain<Msg, A, E, never>,
  options: { readonly name: string; readonly tablePrefix: string; readonly storage: ClusterRunner.Storage }
) =>
  ClusterGrain.layer([kind]).pipe(
    Layer.provideMerge(Reminders.layer()),
    Layer.provideMerge(ActorSystem.layer({ name: options.name })),
    Layer.provideMerge(ClusterRunner.layerTestRunner({ port: 1, tablePrefix: options.tablePrefix })),
    Layer.provideMerge(ClusterRunner.layerStorage(options.storage))
  )
