/**
 * How a worker thread imports a task's module.
 *
 * Worker threads do not inherit the main thread's loader hooks: a task module written in TypeScript, in an app that
 * runs under tsx, cannot be imported by a thread as it is. So before the first TypeScript module the thread registers
 * tsx, resolved from that module's own folder (the user's project, never tickwork's); where none resolves, the import
 * fails with a reason that says what to do.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"

/** Set on a worker thread's `globalThis` once a TypeScript loader is registered (the bootstrap sets it too). */
export const typescriptLoaderKey: unique symbol = Symbol.for("tickwork/Workers/typescriptLoader")

const TYPESCRIPT = /\.(?:[cm]?ts|tsx)$/

/** What resolves a module specifier from a folder (tests pass their own). */
export type Resolve = (specifier: string, from: string) => string

const resolveFrom: Resolve = (specifier, from) => createRequire(from).resolve(specifier)

/**
 * The URL of tsx's ESM API (`import "tsx/esm/api"`), from its package.json's exports. Node 20 resolves an import only
 * from the module that makes it, and the CommonJS build that createRequire would find cannot register the ESM hooks.
 */
const esmApi = (manifest: string): string => {
  const entry = (JSON.parse(readFileSync(manifest, "utf8")) as { exports?: Record<string, unknown> }).exports?.[
    "./esm/api"
  ] as { import?: string | { default?: string } } | undefined
  const target = typeof entry?.import === "string" ? entry.import : entry?.import?.default
  if (target === undefined) throw new Error(`it is TypeScript, and the tsx at ${manifest} has no ESM API to load it`)
  return new URL(target, pathToFileURL(manifest)).href
}

/** Registers tsx from the task module's project, once per thread. Node caches a failed import, so this comes first. */
const ensureTypeScriptLoader = async (module: string, resolve: Resolve): Promise<void> => {
  const holder = globalThis as { [typescriptLoaderKey]?: boolean }
  // Node 22.6 and later strip types themselves (process.features.typescript).
  if (holder[typescriptLoaderKey] === true || (process.features as { typescript?: unknown }).typescript) return
  let manifest: string
  try {
    manifest = resolve("tsx/package.json", module)
  } catch {
    throw new Error(
      "it is TypeScript, and worker threads load TypeScript with tsx, which does not resolve from its folder: " +
        "install tsx in that project (npm install --save-dev tsx) or compile the module to JavaScript"
    )
  }
  const { register } = (await import(esmApi(manifest))) as { register: () => unknown }
  register()
  holder[typescriptLoaderKey] = true
}

/** Imports a task module by URL, first registering tsx for a TypeScript one. */
export const importTaskModule = async (module: string, resolve: Resolve = resolveFrom): Promise<unknown> => {
  if (TYPESCRIPT.test(new URL(module).pathname)) await ensureTypeScriptLoader(module, resolve)
  return import(module)
}
