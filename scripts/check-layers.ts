/**
 * The layering check that `npm test` runs (docs/architecture.md, "Layers"): the engine imports nothing of tickwork
 * but itself, the actor runtime imports no model, the models (grains, Spots, entities) never import each other, only
 * `src/cluster` imports the cluster stack or the cluster modules, nothing in `src` but the testkits imports the
 * testkit, nothing imports the cluster's testkit (`src/cluster/testkit`, which may import the cluster and the testkit),
 * and nothing but `src/admin` imports the admin modules (which import only the runtime).
 * `npx tsx scripts/check-layers.ts` prints each import that breaks a rule and exits with 1.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

export type Layer =
  | "engine"
  | "runtime"
  | "grains"
  | "spots"
  | "entities"
  | "cluster"
  | "clusterTestkit"
  | "testkit"
  | "admin"
  | "entry"

const MODELS: Record<"grains" | "spots" | "entities", ReadonlyArray<string>> = {
  grains: ["Grain", "Grains", "GrainTimers", "Passivation", "internal/grain", "internal/grainTimer"],
  spots: ["Spot", "SpotTimers", "OverrunPolicy", "Tick", "internal/spot", "internal/spotTimer"],
  entities: [
    "Entity",
    "EntityTimers",
    "GameClock",
    "Deadline",
    "internal/entity",
    "internal/entityTimers",
    "internal/entityGameClock"
  ]
}

const ENGINE = ["internal/timerDriver", "internal/timerQueue", "internal/timerHeap"]

/**
 * Packages that only `src/cluster` may import: the cluster stack, an optional peer of tickwork. `@effect/platform-node`
 * is one: it declares the rest of the stack as its own required peers.
 */
const CLUSTER_PACKAGES =
  /^@effect\/(cluster|sql|sql-[a-z-]+|rpc|workflow|experimental|platform-node)(\/|$)|^(pg|better-sqlite3)$/

/** The layer of a module, from its path inside `src` without extension (`internal/grain`, `cluster/Reminders`). */
export const layerOf = (module: string): Layer => {
  if (module === "index") return "entry"
  if (module.startsWith("cluster/testkit/")) return "clusterTestkit"
  if (module.startsWith("cluster/")) return "cluster"
  if (module.startsWith("testkit/")) return "testkit"
  if (module.startsWith("admin/")) return "admin"
  if (ENGINE.includes(module)) return "engine"
  for (const [model, modules] of Object.entries(MODELS)) if (modules.includes(module)) return model as Layer
  return "runtime"
}

/** What a layer may import, by layer. */
const allowed: Record<Layer, ReadonlyArray<Layer>> = {
  engine: ["engine"],
  runtime: ["runtime", "engine"],
  grains: ["grains", "runtime", "engine"],
  spots: ["spots", "runtime", "engine"],
  entities: ["entities", "runtime", "engine"],
  cluster: ["cluster", "grains", "spots", "entities", "runtime", "engine"],
  clusterTestkit: ["clusterTestkit", "cluster", "testkit", "grains", "spots", "entities", "runtime", "engine"],
  testkit: ["testkit", "grains", "spots", "entities", "runtime", "engine"],
  admin: ["admin", "runtime", "engine"],
  entry: ["grains", "spots", "entities", "runtime", "engine"]
}

export interface Violation {
  readonly from: string
  readonly imports: string
  readonly rule: string
}

/** The rules broken by `from` (a module path inside `src`) importing `specifier`. */
export const check = (from: string, specifier: string): Violation | undefined => {
  const source = layerOf(from)
  if (!specifier.startsWith(".")) {
    // the admin API's server is @effect/platform-node's, as the cluster's runners are
    const allowedHere =
      source === "cluster" ||
      source === "clusterTestkit" ||
      (source === "admin" && /^@effect\/platform-node(\/|$)/.test(specifier))
    if (CLUSTER_PACKAGES.test(specifier) && !allowedHere) {
      return { from, imports: specifier, rule: "only src/cluster imports the cluster stack" }
    }
    return undefined
  }
  const target = relative(".", join(dirname(from), specifier)).replace(/\.(js|ts|mjs)$/, "")
  const layer = layerOf(target)
  if (allowed[source].includes(layer)) return undefined
  const rule =
    source === "engine"
      ? "the engine imports nothing of tickwork but itself"
      : layer === "clusterTestkit"
        ? "nothing imports the cluster's testkit"
        : layer === "cluster"
          ? "only src/cluster imports the cluster modules"
          : layer === "testkit"
            ? "nothing in src but the testkit imports the testkit"
            : layer === "admin"
              ? "only src/admin imports the admin modules"
              : source === "admin"
                ? "the admin modules import the runtime, not the models or the cluster"
                : source === "runtime"
                  ? "the actor runtime imports no model"
                  : "models never import each other"
  return { from, imports: target, rule }
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm

/** The import specifiers of a source file's text (static, re-exports, dynamic with a literal, side-effect imports). */
export const importsOf = (text: string): ReadonlyArray<string> =>
  Array.from(text.matchAll(IMPORT), (match) => match[1] ?? match[2] ?? match[3]!).filter((s) => s !== undefined)

const walk = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : /\.(ts|mjs)$/.test(entry.name) ? [join(dir, entry.name)] : []
  )

/** Every violation in the source tree under `root`. */
export const violationsIn = (root: string): ReadonlyArray<Violation> =>
  walk(root).flatMap((file) => {
    const module = relative(root, file).replace(/\.(ts|mjs)$/, "")
    return importsOf(readFileSync(file, "utf8")).flatMap((specifier) => check(module, specifier) ?? [])
  })

if (import.meta.filename === process.argv[1]) {
  const found = violationsIn(resolve(import.meta.dirname, "../src"))
  for (const v of found) console.error(`src/${v.from} imports ${v.imports}: ${v.rule}`)
  if (found.length > 0) process.exit(1)
  console.log("layers: every import keeps the layering (docs/architecture.md)")
}
