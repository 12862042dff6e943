/**
 * `npm run check:consumer` (the last step of `npm test`): tickwork as a new user gets it. It packs the package (which
 * builds it), installs the tarball into two fresh projects in the system's temp folder, away from this repository's
 * node_modules, and checks:
 *
 * - the tarball: only dist/, README.md, LICENSE, CHANGELOG.md and package.json; its size is printed;
 * - publint (strict) and @arethetypeswrong/cli (ESM-only profile) report nothing;
 * - a project with only `effect` (our caret range): plain `node` runs test/consumer/single/main.mjs (an actor timer, a
 *   grain with a cron timer, a Spot with a CPU worker task, an entity timer, and tickwork/cluster and
 *   tickwork/cluster/testkit failing at import with the names of their missing peers); core.ts type-checks with nodenext, strict and no skipLibCheck, without
 *   @types/node; one copy of effect in the tree and no better-sqlite3, pg or @effect/cluster;
 * - a project that also has the cluster's peers: test/consumer/cluster/cluster.mjs runs a one-runner SQLite cluster
 *   with a cron and a reminder, typescript.ts runs a TypeScript CPU task module under the project's tsx, and types.ts
 *   (all four entry points) type-checks.
 *
 * Installs come from npm's cache where they can (--prefer-offline). The second project installs with --ignore-scripts
 * and takes better-sqlite3's native module from this repository's node_modules (same version), and links this
 * repository's tsx, so the check compiles nothing. KEEP_CONSUMERS=1 keeps the projects for a look.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const started = performance.now()

interface Manifest {
  readonly name: string
  readonly version: string
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
  readonly devDependencies: Record<string, string>
}
const manifest: Manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const installedVersion = (name: string): string =>
  JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version

const elapsed = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`

/** The commands still running: when one check fails, the others' are ended with it. */
const running = new Set<ChildProcess>()
let stopping = false

/** Runs a command; resolves with its output, or rejects with it (and the command) when it fails or times out. */
const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly timeoutMillis?: number }
): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, NO_COLOR: "1" } })
    running.add(child)
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk
    })
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk
    })
    const timer = setTimeout(() => {
      output += `\n(killed after ${options.timeoutMillis} ms)`
      child.kill("SIGKILL")
    }, options.timeoutMillis ?? 120_000)
    child.once("error", (error) => {
      clearTimeout(timer)
      reject(new Error(`${command} ${args.join(" ")}: ${error.message}`))
    })
    child.once("close", (code) => {
      running.delete(child)
      clearTimeout(timer)
      if (code === 0) resolve(output)
      else reject(new Error(`${command} ${args.join(" ")} (in ${options.cwd}) exited with ${code}:\n${output}`))
    })
  })

const node = (args: ReadonlyArray<string>, cwd: string) => run(process.execPath, args, { cwd, timeoutMillis: 60_000 })
const npm = (args: ReadonlyArray<string>, cwd: string) => run("npm", args, { cwd, timeoutMillis: 180_000 })
const bin = (path: string) => join(root, "node_modules", path)

let passed = 0
/** Runs one named check and prints its outcome line; a failure ends the whole check. */
const check = async <A>(name: string, body: () => Promise<A>): Promise<A> => {
  const since = performance.now()
  try {
    const result = await body()
    passed++
    console.log(`  ok   ${name} (${elapsed(since)})`)
    return result
  } catch (error) {
    console.log(`  ${stopping ? "stop" : "FAIL"} ${name} (${elapsed(since)})`)
    throw error
  }
}

const lines = (output: string) =>
  output
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")

/** npm warnings about peer dependencies: a consumer on our ranges must get none. */
const peerWarnings = (output: string) => lines(output).filter((line) => /ERESOLVE|peer dep/i.test(line))

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject()))
    })
  })

const consumerTsconfig = (file: string, types: ReadonlyArray<string>) =>
  JSON.stringify(
    {
      compilerOptions: {
        target: "ES2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        strict: true,
        skipLibCheck: false,
        types,
        noEmit: true
      },
      files: [file]
    },
    null,
    2
  )

const project = (dir: string, name: string, dependencies: Record<string, string>, fixtures?: string) => {
  mkdirSync(dir)
  if (fixtures !== undefined) cpSync(join(root, "test/consumer", fixtures), dir, { recursive: true })
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name, private: true, type: "module", dependencies }, null, 2)
  )
}

const main = async () => {
  const work = mkdtempSync(join(tmpdir(), "tickwork-consumer-"))
  console.log(`consumer check in ${work}`)
  try {
    const packed = await check("npm pack (builds dist/)", async () => {
      const output = await npm(["pack", "--json", "--pack-destination", work], root)
      const json = output.slice(output.indexOf("[\n"))
      const [info] = JSON.parse(json) as ReadonlyArray<{
        readonly filename: string
        readonly size: number
        readonly unpackedSize: number
        readonly entryCount: number
        readonly files: ReadonlyArray<{ readonly path: string }>
      }>
      if (info === undefined) throw new Error(`npm pack printed no result:\n${output}`)
      const allowed = /^(dist\/.+|README\.md|LICENSE|CHANGELOG\.md|package\.json)$/
      const stray = info.files.map((file) => file.path).filter((path) => !allowed.test(path))
      if (stray.length > 0) throw new Error(`the tarball ships files it should not: ${stray.join(", ")}`)
      for (const needed of ["LICENSE", "CHANGELOG.md", "README.md", "dist/internal/workerBootstrap.mjs"]) {
        if (!info.files.some((file) => file.path === needed)) throw new Error(`the tarball lacks ${needed}`)
      }
      return info
    })
    const tarball = join(work, packed.filename)
    console.log(
      `  tarball ${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(0)} kB packed, ` +
        `${(packed.unpackedSize / 1024).toFixed(0)} kB unpacked`
    )

    const single = join(work, "single")
    const cluster = join(work, "cluster")
    const effectRange = manifest.peerDependencies.effect!
    project(single, "consumer-single", { effect: effectRange }, "single")
    writeFileSync(join(single, "tsconfig.json"), consumerTsconfig("core.ts", []))
    const clusterPeers = Object.fromEntries(
      Object.entries(manifest.peerDependencies).filter(([name]) => manifest.peerDependenciesMeta[name]?.optional)
    )
    project(
      cluster,
      "consumer-cluster",
      {
        effect: effectRange,
        ...clusterPeers,
        // the version whose native module this repository built, which the project reuses
        "better-sqlite3": installedVersion("better-sqlite3"),
        "@types/node": manifest.devDependencies["@types/node"]!
      },
      "cluster"
    )
    writeFileSync(join(cluster, "tsconfig.json"), consumerTsconfig("types.ts", ["node"]))

    const install = ["install", "--prefer-offline", "--no-audit", "--no-fund"]
    await Promise.all([
      check("install into a project with only effect", async () => {
        const output = await npm([...install, tarball], single)
        const warnings = peerWarnings(output)
        if (warnings.length > 0) throw new Error(`npm warned about peer dependencies:\n${warnings.join("\n")}`)
      }),
      check("install into a project with the cluster's peers", async () => {
        const output = await npm([...install, "--ignore-scripts", tarball], cluster)
        const warnings = peerWarnings(output)
        if (warnings.length > 0) throw new Error(`npm warned about peer dependencies:\n${warnings.join("\n")}`)
        const release = "node_modules/better-sqlite3/build/Release"
        mkdirSync(join(cluster, release), { recursive: true })
        copyFileSync(join(root, release, "better_sqlite3.node"), join(cluster, release, "better_sqlite3.node"))
        symlinkSync(bin("tsx"), join(cluster, "node_modules/tsx"), "dir")
      }),
      check("publint --strict", () => node([bin("publint/src/cli.js"), "run", tarball, "--strict"], work)),
      check("attw --profile esm-only", () =>
        node([bin("@arethetypeswrong/cli/dist/index.js"), tarball, "--profile", "esm-only", "--format", "ascii"], work)
      )
    ])

    const typecheck = (dir: string) => node([bin("typescript/bin/tsc"), "-p", "."], dir)
    const port = await freePort()
    /** What the consumer programs printed, shown after the check lines. */
    const report: Array<string> = []
    const reported = (output: string) => {
      report.push(...lines(output))
    }
    await Promise.all([
      check("single: node main.mjs", () => node(["main.mjs"], single).then(reported)),
      check("single: tsc core.ts (nodenext, strict, no skipLibCheck, no @types/node)", () => typecheck(single)),
      check("single: one effect, no better-sqlite3, pg or @effect/cluster", async () => {
        // npm's record of the tree it installed: "node_modules/a", "node_modules/a/node_modules/b", ...
        const installed = Object.keys(
          JSON.parse(readFileSync(join(single, "node_modules/.package-lock.json"), "utf8")).packages
        )
        const named = (name: string) => installed.filter((path) => path.endsWith(`node_modules/${name}`))
        const effects = named("effect")
        if (effects.length !== 1) throw new Error(`effect is installed ${effects.length} times: ${effects.join(", ")}`)
        const unwanted = ["better-sqlite3", "pg", "@effect/cluster", "@effect/platform-node"].flatMap(named)
        if (unwanted.length > 0) throw new Error(`a single-process install has ${unwanted.join(", ")}`)
        report.push(`single-process install: ${installed.length} packages`)
      }),
      check("single: node first-program.mjs (the README's)", async () => {
        const program = readFileSync(join(single, "first-program.mjs"), "utf8").split("\n").slice(1).join("\n")
        if (!readFileSync(join(root, "README.md"), "utf8").includes(`\`\`\`js\n${program}\`\`\``)) {
          throw new Error(
            "README.md's first program is not test/consumer/single/first-program.mjs (less its first line)"
          )
        }
        const output = await node(["first-program.mjs"], single)
        if (!/tick 1[\s\S]*tick 2/.test(output)) throw new Error(`the README's program printed:\n${output}`)
      }),
      check("single: require() from CommonJS (Node's require of ESM)", () =>
        node(
          [
            "-e",
            "const t = require('tickwork'); if (!t.ActorSystem || !require('tickwork/testkit').TestProbe) process.exit(1)"
          ],
          single
        )
      ),
      check("single: a project on effect 3.19.0 gets npm's ERESOLVE at install", async () => {
        const old = join(work, "old-effect")
        project(old, "consumer-old-effect", { effect: "3.19.0" })
        const output = await npm([...install, "--dry-run", tarball], old).then(
          (printed) => {
            throw new Error(`npm installed tickwork beside effect 3.19.0:\n${printed}`)
          },
          (error: Error) => error.message
        )
        if (!/ERESOLVE[\s\S]*peer effect@"\^/.test(output)) throw new Error(`npm failed otherwise:\n${output}`)
      }),
      check("cluster: require('tickwork/cluster') and tickwork/cluster/testkit from CommonJS", () =>
        node(
          [
            "-e",
            "if (!require('tickwork/cluster').ClusterRunner || !require('tickwork/cluster/testkit').TestCluster) process.exit(1)"
          ],
          cluster
        )
      ),
      check("cluster: node cluster.mjs (one runner, SQLite, cron and reminder)", () =>
        node(["cluster.mjs", join(cluster, "cluster.db"), String(port)], cluster).then(reported)
      ),
      check("cluster: node --import tsx typescript.ts (a TypeScript task module)", () =>
        node(["--import", "tsx", "typescript.ts"], cluster).then(reported)
      ),
      check("cluster: tsc types.ts (all four entry points)", () => typecheck(cluster))
    ])
    for (const line of report) console.log(`  | ${line}`)
    console.log(`consumer check: all ${passed} checks passed in ${elapsed(started)}`)
  } finally {
    stopping = true
    for (const child of running) child.kill("SIGKILL")
    if (process.env.KEEP_CONSUMERS === "1") console.log(`kept ${work}`)
    else {
      const since = performance.now()
      // rm -rf takes half the time of rmSync over the projects' ~20,000 files; rmSync where there is no rm
      await run("rm", ["-rf", work], { cwd: tmpdir() }).catch(() => rmSync(work, { recursive: true, force: true }))
      console.log(`consumer check: removed the projects in ${elapsed(since)}`)
    }
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  console.error(`consumer check failed after ${elapsed(started)}`)
  process.exit(1)
})
