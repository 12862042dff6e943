import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// Inside the repository `tickwork` means the TypeScript sources (tsconfig.json's `paths` say the same to tsc and tsx);
// the package's exports point at the build in dist/, which tests never need.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  resolve: {
    alias: [
      { find: /^tickwork$/, replacement: source("./src/index.ts") },
      { find: /^tickwork\/cluster$/, replacement: source("./src/cluster/index.ts") },
      { find: /^tickwork\/cluster\/testkit$/, replacement: source("./src/cluster/testkit/index.ts") },
      { find: /^tickwork\/testkit$/, replacement: source("./src/testkit/index.ts") },
      { find: /^tickwork\/admin$/, replacement: source("./src/admin/index.ts") }
    ]
  },
  test: {
    // the runnable examples of docs/ run with the tests, so that none can rot
    include: ["test/**/*.test.ts", "docs/examples/*.test-example.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
