import { describe, it } from "@effect/vitest"
import { runChaos } from "./chaos.js"

// A small run on every `npm test`; `npm run chaos` runs 10,000 sequences (CHAOS_RUNS and CHAOS_SEED override).
const runs = Number(process.env.CHAOS_RUNS ?? 25)
const seed = process.env.CHAOS_SEED === undefined ? undefined : Number(process.env.CHAOS_SEED)

describe("chaos", () => {
  it(`${runs} random sequences of API calls keep every guarantee of docs/reliability.md`, { timeout: 600_000 }, () =>
    runChaos(runs, seed)
  )
})
