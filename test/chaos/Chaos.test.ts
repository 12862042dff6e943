import { describe, it } from "@effect/vitest"
import { runChaos } from "./chaos.js"

// A small run on every `npm test`; `npm run chaos` runs 10,000 sequences (CHAOS_RUNS and CHAOS_SEED override).
const runs = Number(process.env.CHAOS_RUNS ?? 25)
const seed = process.env.CHAOS_SEED === undefined ? undefined : Number(process.env.CHAOS_SEED)

// A sequence takes well under a second on a quiet machine; the bound only stops a hung run, even on a loaded one.
const timeout = Math.max(600_000, runs * 5_000)

describe("chaos", () => {
  it(`${runs} random sequences of API calls keep every guarantee of docs/reliability.md`, { timeout }, () =>
    runChaos(runs, seed)
  )
})
