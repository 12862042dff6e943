import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import * as Entry from "../../src/cluster/entry.js"
import * as Cluster from "../../src/cluster/index.js"
import { clusterPeers, missingPeers, missingPeersMessage } from "../../src/cluster/internal/peers.js"

interface Manifest {
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
  readonly devDependencies: Record<string, string>
}

const manifest: Manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))

describe("tickwork/cluster's peer packages", () => {
  it("the guard's list is package.json's optional peers, with the same ranges", () => {
    const optional = Object.entries(manifest.peerDependencies).filter(
      ([name]) => manifest.peerDependenciesMeta[name]?.optional === true
    )
    assert.deepStrictEqual(
      clusterPeers.map(([name, range]) => `${name}@${range}`),
      optional.map(([name, range]) => `${name}@${range}`)
    )
  })

  it("every peer range starts at the version the repository pins and tests", () => {
    for (const [name, range] of Object.entries(manifest.peerDependencies)) {
      assert.strictEqual(range, `^${manifest.devDependencies[name]}`, name)
    }
  })

  it("a missing peer is named, with every other missing one, in a command that installs them", () => {
    const absent = new Set(["@effect/cluster", "@effect/sql-pg"])
    const missing = missingPeers((name) => {
      if (absent.has(name)) throw new Error(`Cannot find package '${name}'`)
      return `file:///node_modules/${name}/index.js`
    })
    assert.deepStrictEqual(
      missing.map(([name]) => name),
      ["@effect/cluster", "@effect/sql-pg"]
    )
    assert.strictEqual(
      missingPeersMessage(missing),
      "tickwork/cluster needs packages that are not installed: @effect/cluster, @effect/sql-pg. " +
        "Install them with: npm install @effect/cluster@^0.60.2 @effect/sql-pg@^0.53.0"
    )
    assert.deepStrictEqual(
      missingPeers((name) => name),
      []
    )
  })

  it("with every peer installed the entry exports the cluster modules themselves", () => {
    assert.strictEqual(Entry.ClusterGrain, Cluster.ClusterGrain)
    assert.strictEqual(Entry.ClusterRunner, Cluster.ClusterRunner)
    assert.strictEqual(Entry.ClusterScheduler, Cluster.ClusterScheduler)
    assert.strictEqual(Entry.ClusterSchedules, Cluster.ClusterSchedules)
    assert.strictEqual(Entry.Reminders, Cluster.Reminders)
    assert.deepStrictEqual(Object.keys(Entry).sort(), Object.keys(Cluster).sort())
  })
})
