/**
 * Where a demo's timeline lines go: the console by default, or a buffer when the main demo runs several sections at
 * once and prints each section's timeline whole, one after the other. A FiberRef, so every fiber a section starts
 * (actors, grains, timers, loggers) writes to that section's output.
 */
import { Effect, FiberRef, FiberRefs } from "effect"

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
