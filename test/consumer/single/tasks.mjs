// A CPU task module of the consumer: worker threads import it (by its URL) to find the task.
import { threadId } from "node:worker_threads"
import { Schema } from "effect"
import { Workers } from "tickwork"

export const sumOfSquares = Workers.cpuTask(import.meta.url, {
  name: "sumOfSquares",
  input: Schema.Number,
  output: Schema.Struct({ sum: Schema.Number, thread: Schema.Number }),
  run: (n) => {
    let sum = 0
    for (let i = 1; i <= n; i++) sum += i * i
    return { sum, thread: threadId }
  }
})
