// `npm run bench:build` loads this first (NODE_OPTIONS=--import=..., which the bench's re-spawn with --expose-gc
// inherits). Every import of the repository's src/*.ts is answered with the build's dist/*.js, so the bench measures
// the JavaScript a user runs (tsc's output) rather than tsx's (esbuild, whose keepNames wraps every named function);
// tsx leaves plain .js files as they are. Only the bench's own files still go through tsx.
import { existsSync } from "node:fs"
import { register } from "node:module"
import { fileURLToPath } from "node:url"
import { isMainThread } from "node:worker_threads"

const src = new URL("../src/", import.meta.url).href
const dist = new URL("../dist/", import.meta.url).href

/** The file URL a specifier names, when it names a file (relative, absolute or file:). */
const fileUrl = (specifier, parentURL) => {
  if (specifier.startsWith("file:")) return specifier
  if (specifier.startsWith("/")) return new URL(`file://${specifier}`).href
  if ((specifier.startsWith("./") || specifier.startsWith("../")) && parentURL?.startsWith("file:")) {
    return new URL(specifier, parentURL).href
  }
  return undefined
}

export const resolve = (specifier, context, next) => {
  const target = fileUrl(specifier, context.parentURL)
  if (target?.startsWith(src)) {
    const built = dist + target.slice(src.length).replace(/\.[jt]s$/, ".js")
    if (!existsSync(fileURLToPath(built))) throw new Error(`${built} is missing: run npm run build`)
    return { url: built, format: "module", shortCircuit: true }
  }
  return next(specifier, context)
}

// The hooks run on a thread of their own, where this module is loaded again: register from the main thread only.
if (isMainThread) {
  register(import.meta.url)
  process.stderr.write("bench: tickwork from dist/ (the build), not from the TypeScript sources\n")
}
