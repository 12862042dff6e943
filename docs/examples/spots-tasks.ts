// CPU tasks for docs/examples/spots-workers.ts. Worker threads import this module to find them, so it does nothing
// else when imported: define CPU tasks at the top level of a module without side effects.
import { Schema } from "effect"
import { Workers } from "tickwork"

export const countPrimes = Workers.cpuTask(import.meta.url, {
  name: "countPrimes",
  input: Schema.Struct({ below: Schema.Number }),
  output: Schema.Number,
  run: ({ below }) => {
    let count = 0
    for (let n = 2; n < below; n++) {
      let prime = true
      for (let d = 2; d * d <= n; d++) {
        if (n % d === 0) {
          prime = false
          break
        }
      }
      if (prime) count++
    }
    return count
  }
})
