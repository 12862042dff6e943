/**
 * The package's entry for `import "tickwork/cluster/testkit"` (its types are `index.ts`'s). As `tickwork/cluster`'s
 * entry does, it checks that the cluster's peer packages resolve before it loads the modules that import them, so a
 * missing one fails the import at once with a message naming every missing package.
 *
 * @internal
 */
import { missingPeers, missingPeersMessage } from "../internal/peers.js"

// A bundler may have no import.meta.resolve (and has resolved the packages already).
const missing = typeof import.meta.resolve === "function" ? missingPeers((name) => import.meta.resolve(name)) : []
if (missing.length > 0) throw new Error(missingPeersMessage(missing))

export const { TestCluster } = await import("./index.js")
