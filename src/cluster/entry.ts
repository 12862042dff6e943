/**
 * The package's entry for `import "tickwork/cluster"` (its types are `index.ts`'s). It checks that the cluster's peer
 * packages resolve before it loads the modules that import them, so that a missing one fails the import at once with
 * a message naming every missing package, rather than Node's error for the first one it meets. A static import could
 * not do this: Node resolves every static import of a module graph before it runs any of it.
 *
 * @internal
 */
import { missingPeers, missingPeersMessage } from "./internal/peers.js"

// A bundler may have no import.meta.resolve (and has resolved the packages already).
const missing = typeof import.meta.resolve === "function" ? missingPeers((name) => import.meta.resolve(name)) : []
if (missing.length > 0) throw new Error(missingPeersMessage(missing))

export const { ClusterGrain, ClusterRunner, ClusterScheduler, ClusterSchedules, Reminders } = await import("./index.js")
