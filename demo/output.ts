/**
 * Where a demo's timeline lines go: the console by default, or a buffer when the main demo runs several sections at
 * once and prints each section's timeline whole, one after the other. A FiberRef, so every fiber a section starts
 * (actors, grains, timers, loggers) writes to that section's output.
 */
import { Cause, Clock, Effect, FiberRef, FiberRefs, HashMap, Logger, LogLevel, Option } from "effect"

export const Lines: FiberRef.FiberRef<(line: string) => void> = FiberRef.unsafeMake<(line: string) => void>((line) =>
  console.log(line)
)

/** Prints a line to the current fiber's output. */
export const print = (line: string): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(Lines), (write) => Effect.sync(() => write(line)))

/** Prints from a logger, which sees the logging fiber's FiberRefs. */
export const printFrom = (fiberRefs: FiberRefs.FiberRefs, line: string): void =>
  FiberRefs.getOrDefault(fiberRefs, Lines)(line)

/** Runs `effect` with its lines collected; returns them. */
export const collect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<ReadonlyArray<string>, E, R> =>
  Effect.suspend(() => {
    const lines: Array<string> = []
    return Effect.as(
      Effect.locally(effect, Lines, (line) => {
        lines.push(line)
      }),
      lines
    )
  })

/**
 * A timeline: lines stamped with the milliseconds since `start`, the speaker padded to `whoWidth`, and a logger that
 * puts warnings and errors on it (everything else is dropped).
 */
export const makeTimeline = (whoWidth: number) => {
  let startedAt = 0
  const format = (now: number, who: string, what: string) =>
    `${String(now - startedAt).padStart(6)} ms  ${who.padEnd(whoWidth)} ${what}`
  const logger = Logger.make(({ annotations, cause, context, date, logLevel, message }) => {
    if (LogLevel.lessThan(logLevel, LogLevel.Warning)) return
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    const reason = Cause.isEmpty(cause) ? "" : `: ${String(Cause.squash(cause))}`
    const who = Option.getOrElse(HashMap.get(annotations, "actor"), () => "system")
    printFrom(context, format(date.getTime(), `[${logLevel.label}]`, `${text}${reason} (${String(who)})`))
  })
  return {
    /** Marks time zero and prints the header. */
    start: (title: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        startedAt = now
        return Effect.zipRight(print(title), print(`${"elapsed".padStart(9)}  ${"who".padEnd(whoWidth)} what`))
      }),
    /** Milliseconds since `start`. */
    elapsed: (now: number) => now - startedAt,
    /** Prints one line, stamped with Effect's Clock. */
    say: (who: string, what: string): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => print(format(now, who, what))),
    scene: (title: string): Effect.Effect<void> => print(`\n-- ${title}`),
    /** The logger, as a layer replacing the default one. */
    logger: Logger.replace(Logger.defaultLogger, logger)
  }
}
