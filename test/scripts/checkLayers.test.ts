import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { check, importsOf, layerOf, violationsIn } from "../../scripts/check-layers.js"

describe("the layering check", () => {
  it("reads every kind of import", () => {
    const text = [
      'import * as Effect from "effect/Effect"',
      'import type { A } from "./a.js"',
      'import { b,\n  c } from "../b.js"',
      'export * as D from "./d.js"',
      'export { e } from "./e.js"',
      'const f = await import("./f.js")',
      'import "./g.js"'
    ].join("\n")
    assert.deepStrictEqual(importsOf(text), [
      "effect/Effect",
      "./a.js",
      "../b.js",
      "./d.js",
      "./e.js",
      "./f.js",
      "./g.js"
    ])
  })

  it("places modules in their layers", () => {
    assert.strictEqual(layerOf("internal/timerQueue"), "engine")
    assert.strictEqual(layerOf("internal/actorCell"), "runtime")
    assert.strictEqual(layerOf("Grains"), "grains")
    assert.strictEqual(layerOf("internal/spotTimer"), "spots")
    assert.strictEqual(layerOf("GameClock"), "entities")
    assert.strictEqual(layerOf("cluster/internal/cron"), "cluster")
    assert.strictEqual(layerOf("testkit/TestProbe"), "testkit")
    assert.strictEqual(layerOf("cluster/testkit/TestCluster"), "clusterTestkit")
    assert.strictEqual(layerOf("admin/internal/handlers"), "admin")
  })

  it("refuses each broken rule, and allows what the layering allows", () => {
    const rule = (from: string, specifier: string) => check(from, specifier)?.rule
    assert.strictEqual(rule("internal/timerDriver", "./tick.js"), "the engine imports nothing of tickwork but itself")
    assert.strictEqual(rule("internal/grain", "./spot.js"), "models never import each other")
    assert.strictEqual(rule("Spot", "./Entity.js"), "models never import each other")
    assert.strictEqual(rule("internal/actorCell", "./grain.js"), "the actor runtime imports no model")
    assert.strictEqual(rule("Grains", "@effect/cluster/Sharding"), "only src/cluster imports the cluster stack")
    assert.strictEqual(rule("internal/spot", "@effect/sql-pg"), "only src/cluster imports the cluster stack")
    assert.strictEqual(
      rule("internal/workerPool", "@effect/platform-node/NodeWorker"),
      "only src/cluster imports the cluster stack"
    )
    assert.strictEqual(rule("Grains", "./cluster/ClusterGrain.js"), "only src/cluster imports the cluster modules")
    assert.strictEqual(
      rule("Scheduler", "./testkit/TestProbe.js"),
      "nothing in src but the testkit imports the testkit"
    )
    assert.isUndefined(check("admin/Admin", "@effect/platform-node/NodeHttpServer"), "the admin API's server")
    assert.strictEqual(rule("admin/Admin", "@effect/sql"), "only src/cluster imports the cluster stack")
    assert.strictEqual(rule("index", "./admin/Admin.js"), "only src/admin imports the admin modules")
    assert.strictEqual(rule("cluster/ClusterRunner", "../admin/Admin.js"), "only src/admin imports the admin modules")
    assert.strictEqual(
      rule("admin/Admin", "../cluster/ClusterRunner.js"),
      "only src/cluster imports the cluster modules"
    )
    assert.strictEqual(
      rule("admin/internal/views", "../../Grains.js"),
      "the admin modules import the runtime, not the models or the cluster"
    )
    assert.isUndefined(check("admin/internal/views", "../../internal/actorSystem.js"))
    assert.isUndefined(check("admin/Admin", "./internal/handlers.js"))
    assert.isUndefined(check("internal/grain", "./actorCell.js"))
    assert.isUndefined(check("internal/actorCell", "./tick.js"))
    assert.isUndefined(check("cluster/Reminders", "../Grain.js"))
    assert.isUndefined(check("cluster/internal/cron", "@effect/cluster/Sharding"))
    assert.isUndefined(check("testkit/TestTimers", "../ActorSystem.js"))
    assert.isUndefined(check("cluster/testkit/TestCluster", "../../testkit/TestSystem.js"))
    assert.isUndefined(check("cluster/testkit/TestCluster", "../ClusterRunner.js"))
    assert.isUndefined(check("cluster/testkit/TestCluster", "@effect/cluster/Sharding"))
    assert.strictEqual(
      rule("cluster/ClusterRunner", "./testkit/TestCluster.js"),
      "nothing imports the cluster's testkit"
    )
    assert.strictEqual(
      rule("testkit/TestSystem", "../cluster/testkit/TestCluster.js"),
      "nothing imports the cluster's testkit"
    )
    assert.strictEqual(
      rule("cluster/Reminders", "../testkit/TestSystem.js"),
      "nothing in src but the testkit imports the testkit"
    )
    assert.strictEqual(
      rule("testkit/TestSystem", "@effect/cluster/Sharding"),
      "only src/cluster imports the cluster stack"
    )
    assert.isUndefined(check("internal/timerDriver", "./timerQueue.js"))
  })

  it("finds a violation in a source tree, and none in tickwork's own", () => {
    const root = mkdtempSync(join(tmpdir(), "layers-"))
    mkdirSync(join(root, "internal"))
    writeFileSync(join(root, "internal", "grain.ts"), 'import { SpotTimer } from "./spotTimer.js"\n')
    writeFileSync(join(root, "internal", "spotTimer.ts"), "export class SpotTimer {}\n")
    assert.deepStrictEqual(violationsIn(root), [
      { from: "internal/grain", imports: "internal/spotTimer", rule: "models never import each other" }
    ])
    assert.deepStrictEqual(violationsIn(join(import.meta.dirname, "../../src")), [])
  })
})
