// A CPU task module written in TypeScript, in an app that runs under tsx: worker threads load it with the app's tsx.
import { Schema } from "effect"
import { Workers } from "tickwork"

export const triple = Workers.cpuTask(import.meta.url, {
  name: "triple",
  input: Schema.Number,
  output: Schema.Number,
  run: (n: number): number => n * 3
})
