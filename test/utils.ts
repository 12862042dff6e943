import { Clock, Effect, HashMap, List, Logger, type LogLevel } from "effect"

export interface CapturedLog {
  readonly level: LogLevel.LogLevel["label"]
  readonly message: string
  readonly annotations: Record<string, unknown>
  readonly spans: ReadonlyArray<string>
}

/** Replaces the default logger with one that records every line; returns the records and the layer. */
export const captureLogs = () => {
  const logs: Array<CapturedLog> = []
  const logger = Logger.make(({ annotations, logLevel, message, spans }) => {
    logs.push({
      level: logLevel.label,
      message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
      annotations: Object.fromEntries(HashMap.toEntries(annotations)),
      spans: List.toArray(spans).map((s) => s.label)
    })
  })
  return { logs, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/** Runs `f` and records how many times it was called; handy as a handler side effect. */
export const counter = () => {
  let n = 0
  return {
    get value() {
      return n
    },
    increment: Effect.sync(() => {
      n++
    })
  }
}

/**
 * A Clock that reads TestClock time plus an offset that `stall` moves forward at once, modelling a paused process:
 * the timer driver, asleep on the test clock, wakes late by exactly the stalled time.
 */
export const makeStallClock = Effect.map(Effect.clock, (testClock) => {
  let offset = 0
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => testClock.unsafeCurrentTimeMillis() + offset,
    unsafeCurrentTimeNanos: () => testClock.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => testClock.unsafeCurrentTimeMillis() + offset),
    currentTimeNanos: Effect.sync(() => testClock.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n),
    sleep: (duration) => testClock.sleep(duration)
  }
  return {
    clock,
    stall: (millis: number) =>
      Effect.sync(() => {
        offset += millis
      })
  }
})
