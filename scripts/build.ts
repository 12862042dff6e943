/**
 * `npm run build`: the package's dist/ from src/, by tsconfig.build.json: ESM JavaScript, `.d.ts` and source maps
 * (with their sources inlined, since the package ships no src/), plus the worker threads' bootstrap, which is already
 * JavaScript. `npm pack` and `npm publish` run it first (prepack).
 */
import { spawnSync } from "node:child_process"
import { copyFileSync, cpSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const at = (path: string) => fileURLToPath(new URL(path, new URL("..", import.meta.url)))

rmSync(at("dist"), { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
const compiled = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" })
if (compiled.status !== 0) {
  console.error("build: tsc failed")
  process.exit(compiled.status ?? 1)
}
copyFileSync(at("src/internal/workerBootstrap.mjs"), at("dist/internal/workerBootstrap.mjs"))
// the inspector page's files, which tickwork/admin serves as they are
cpSync(at("src/admin/inspector"), at("dist/admin/inspector"), { recursive: true })
