import { assert, describe, it } from "@effect/vitest"
import { examplesOf } from "../../scripts/check-examples.js"

describe("the @example check", () => {
  it("takes the ts blocks after @example, with their source lines, and nothing else", () => {
    const text = [
      "/**", // 1
      " * Not an example:", // 2
      " * ```ts", // 3
      " * const notChecked = 1", // 4
      " * ```", // 5
      " *", // 6
      " * @example", // 7
      " * ```ts", // 8
      ' * import { Effect } from "effect"', // 9
      " *", // 10
      " * const program = Effect.void", // 11
      " * ```", // 12
      " *", // 13
      " * @since 0.1.0", // 14
      " */", // 15
      "export const a = 1", // 16
      "/**", // 17
      " * @example", // 18
      " * ```typescript", // 19
      " * const second = 2", // 20
      " * ```", // 21
      " */" // 22
    ].join("\n")
    assert.deepStrictEqual(examplesOf("src/A.ts", text), [
      { file: "src/A.ts", line: 9, code: 'import { Effect } from "effect"\n\nconst program = Effect.void' },
      { file: "src/A.ts", line: 20, code: "const second = 2" }
    ])
  })
})
