/**
 * Type-checks every `@example` of the JSDoc in `src`, so that no example can rot: each ```ts block after an
 * `@example` tag becomes a module of its own under `build/examples/` (git-ignored), and `tsc` checks them with the
 * project's settings (unused names allowed: an example may show a value without using it). An error is reported at
 * the example's line in its source file. `npm test` runs it (`npm run check:examples`).
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

export interface Example {
  /** The source file, relative to the repository. */
  readonly file: string
  /** The 1-based line of the example's first code line in that file. */
  readonly line: number
  readonly code: string
}

/** The examples of one source file's text: the ```ts blocks that follow an `@example` tag in a JSDoc comment. */
export const examplesOf = (file: string, text: string): ReadonlyArray<Example> => {
  const lines = text.split("\n")
  const found: Array<Example> = []
  let inExample = false
  let code: Array<string> | undefined
  let start = 0
  for (let i = 0; i < lines.length; i++) {
    const stripped = lines[i]!.replace(/^\s*\*\s?/, "")
    if (/^\s*\/\*\*/.test(lines[i]!)) inExample = false
    if (stripped.startsWith("@example")) inExample = true
    else if (stripped.startsWith("@") && code === undefined) inExample = false
    if (!inExample) continue
    if (code === undefined && /^```(ts|typescript)\s*$/.test(stripped)) {
      code = []
      start = i + 2
    } else if (code !== undefined && stripped.startsWith("```")) {
      found.push({ file, line: start, code: code.join("\n") })
      code = undefined
    } else if (code !== undefined) {
      code.push(stripped)
    }
  }
  return found
}

const walk = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

if (import.meta.filename === process.argv[1]) {
  const root = resolve(import.meta.dirname, "..")
  const out = join(root, "build", "examples")
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  const examples = walk(join(root, "src")).flatMap((file) =>
    examplesOf(relative(root, file), readFileSync(file, "utf8"))
  )
  const origin = new Map<string, Example>()
  examples.forEach((example, i) => {
    const name = `${example.file.replace(/[/.]/g, "_")}_${i}.ts`
    origin.set(name, example)
    // a module of its own, so that examples never see each other's names
    writeFileSync(join(out, name), `${example.code}\nexport {}\n`)
  })
  writeFileSync(
    join(out, "tsconfig.json"),
    JSON.stringify({
      extends: "../../tsconfig.json",
      compilerOptions: { noUnusedLocals: false, noUnusedParameters: false },
      include: ["./*.ts"]
    })
  )
  try {
    execFileSync(join(root, "node_modules", ".bin", "tsc"), ["--noEmit", "-p", join(out, "tsconfig.json")], {
      cwd: root,
      encoding: "utf8",
      stdio: "pipe"
    })
    console.log(`examples: ${examples.length} @example blocks in src type-check`)
  } catch (error) {
    const output = String((error as { stdout?: string }).stdout ?? error)
    for (const line of output.split("\n")) {
      const match = /^(?:.*\/)?([^/(]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line)
      const example = match === null ? undefined : origin.get(match[1]!)
      if (match !== null && example !== undefined) {
        console.error(`${example.file}:${example.line + Number(match[2]) - 1}: ${match[4]}`)
      } else if (line.trim() !== "") {
        console.error(line)
      }
    }
    console.error(`examples: the @example blocks above do not type-check (written to ${relative(root, dirname(out))})`)
    process.exit(1)
  }
}
