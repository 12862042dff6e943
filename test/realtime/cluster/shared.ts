/**
 * What the runner processes of the real-clock cluster tests share: sharding settings for a fast fail-over, and a
 * guard that ends the process if graceful shutdown hangs.
 */
import type { ShardingConfig } from "@effect/cluster"

/**
 * A SIGKILLed runner's shards move after its lock rows and heartbeat expire (shardLockExpiration; SQLite counts
 * whole seconds), when the others next refresh assignments and take the locks.
 */
export const fastFailover: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  shardsPerGroup: 30,
  shardLockExpiration: "3 seconds",
  shardLockRefreshInterval: "1 second",
  refreshAssignmentsInterval: "500 millis",
  runnerHealthCheckInterval: "1 second",
  entityMessagePollInterval: "250 millis",
  entityTerminationTimeout: "2 seconds"
}

/**
 * Graceful shutdown gets 5 seconds after SIGTERM/SIGINT; then the process exits anyway (a busy SQLite file once hung
 * it). And the process never outlives the test that started it: the harness holds its stdin open, so when the test
 * process goes away without stopping it (a test timeout, a killed vitest worker), stdin ends and the runner exits.
 */
export const exitAfterSignal = (): void => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      setTimeout(() => {
        process.stderr.write(`shutdown took over 5 s after ${signal}: exiting\n`)
        process.exit(3)
      }, 5000).unref()
    })
  }
  process.stdin.on("end", () => {
    process.stderr.write("the test process is gone: exiting\n")
    process.exit(4)
  })
  process.stdin.resume()
}
