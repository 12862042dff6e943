/**
 * The packages `tickwork/cluster` needs beyond the single-process library. They are optional peer dependencies of
 * tickwork, so an install without the cluster pulls none of them (nor a database driver); a test keeps this list
 * equal to package.json's.
 *
 * @internal
 */

/** Each optional peer with the range tickwork declares for it. */
export const clusterPeers: ReadonlyArray<readonly [name: string, range: string]> = [
  ["@effect/cluster", "^0.60.2"],
  ["@effect/experimental", "^0.61.1"],
  ["@effect/platform-node", "^0.108.2"],
  ["@effect/rpc", "^0.76.2"],
  ["@effect/sql", "^0.52.1"],
  ["@effect/sql-pg", "^0.53.0"],
  ["@effect/sql-sqlite-node", "^0.53.0"],
  ["@effect/workflow", "^0.19.1"]
]

/** The peers that `resolve` (the importing module's `import.meta.resolve`) cannot find. */
export const missingPeers = (
  resolve: (specifier: string) => string
): ReadonlyArray<readonly [name: string, range: string]> =>
  clusterPeers.filter(([name]) => {
    try {
      resolve(name)
      return false
    } catch {
      return true
    }
  })

/** What importing `tickwork/cluster` without them says: every missing package, and the command that installs them. */
export const missingPeersMessage = (missing: ReadonlyArray<readonly [name: string, range: string]>): string =>
  `tickwork/cluster needs packages that are not installed: ${missing.map(([name]) => name).join(", ")}. ` +
  `Install them with: npm install ${missing.map(([name, range]) => `${name}@${range}`).join(" ")}`
