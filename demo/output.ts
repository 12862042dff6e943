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
 * Why the demos log each warning and error they log: every one is part of the script, and the timeline says so under
 * the line, so that a reader does not take it for a fault.
 */
const DELIBERATE: ReadonlyArray<readonly [RegExp, string]> = [
  [/a scheduled task failed/, "the task fails on its second run on purpose: logged, published, its schedule goes on"],
  [/supervisor directive: restart/, "the flaky actor crashes on purpose: its supervisor restarts it, timers cancelled"],
  [/periodic timer .* dropped/, "a 250 ms handler on a 100 ms timer: missed invocations are dropped, one warning"],
  [
    /failed while handling|onReceive failed|timer .* failed/,
    "the grain's handler fails on purpose: logged, it goes on"
  ],
  [/dead letter/, "a message for an actor that stopped, on purpose: counted, published and logged"]
]

/**
 * A timeline: lines stamped with the milliseconds since `start`, the speaker padded to `whoWidth`, and a logger that
 * puts warnings and errors on it (everything else is dropped), each with the reason the demo logs it.
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
    const why = DELIBERATE.find(([pattern]) => pattern.test(text))?.[1]
    printFrom(
      context,
      `${" ".repeat(11 + whoWidth)}^ ${why === undefined ? "not part of the demo's script: please report it" : `deliberate: ${why}`}`
    )
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
