import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"

const root = join(import.meta.dirname, "..", "..")

/**
 * Every code block a document introduces as one of docs/examples (`[docs/examples/x.ts](examples/x.ts):`): the
 * block, and the file it names.
 */
const shownExamples = (file: string) => {
  const text = readFileSync(join(root, file), "utf8")
  const found: Array<{ readonly doc: string; readonly example: string; readonly code: string }> = []
  const pattern =
    /\[docs\/examples\/([\w.-]+)\]\((?:docs\/)?examples\/\1\)[^\n]*\n(?:[^\n]*\n){0,3}?\s*```ts\n([\s\S]*?)\n```/g
  for (const match of text.matchAll(pattern)) found.push({ doc: file, example: match[1]!, code: match[2]! })
  return found
}

const documents = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`)
]

describe("the examples shown in the docs", () => {
  it("are the files in docs/examples (or their beginning, without the line that runs them), so they never drift", () => {
    const shown = documents.flatMap(shownExamples)
    assert.isAtLeast(shown.length, 30)
    assert.includeDeepMembers(
      shown.map((s) => s.example),
      ["testkit.test-example.ts", "testing.test-example.ts", "cluster-testkit.test-example.ts"]
    )
    for (const { doc, example, code } of shown) {
      const file = readFileSync(join(root, "docs", "examples", example), "utf8")
      assert.isTrue(file.startsWith(`${code}\n`), `${doc} shows docs/examples/${example} other than it is`)
    }
  })
})
