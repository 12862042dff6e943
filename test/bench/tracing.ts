/**
 * Spans: what a span per handled tick costs, and that it costs nothing when no tracer is installed.
 *
 * The same drain is run three times in one process: N one-shot schedules, all overdue, into 16 actors whose handler is
 * an `Effect.sync`; the time from the first firing to the last handled tick gives ticks/s.
 * - no tracer: Effect's default tracer, so the system makes no span (`tracing.spans: "auto"`);
 * - a tracer installed, spans off (`tracing.spans: "never"`): the path with tracing decided off, as a control;
 * - a tracer installed, spans on: a root span per handled tick, into a tracer that keeps nothing (the cost of the
 *   spans themselves, not of an exporter).
 * Target: no tracer within noise of the control (ratio >= 0.95): the tracing code adds nothing measurable when off.
 */
import { Effect, Layer, ManagedRuntime, Tracer } from "effect"
import { Actor, type ActorRef, ActorSystem } from "tickwork"
import { fmtCount, fmtInt, fmtRate, fmtRatio, median, type TargetRow, table } from "./stats.js"

const SINKS = 16

/** A tracer whose spans record nothing: what spans cost without an exporter. */
const discardingTracer: Tracer.Tracer = Tracer.make({
  span: (name, parent, context, links, startTime, kind) => ({
    _tag: "Span",
    name,
    spanId: "s",
    traceId: "t",
    parent,
    context,
    status: { _tag: "Started", startTime },
    attributes: new Map(),
    links,
    sampled: true,
    kind,
    end: () => {},
    attribute: () => {},
    event: () => {},
    addLinks: () => {}
  }),
  context: (f) => f()
})

type Variant = "no tracer" | "tracer, spans never" | "tracer, spans on"

const layerOf = (variant: Variant) => {
  const system = ActorSystem.layer({
    name: "bench-tracing",
    tracing: { spans: variant === "tracer, spans never" ? "never" : "auto" }
  })
  return variant === "no tracer" ? system : system.pipe(Layer.provide(Layer.setTracer(discardingTracer)))
}

/** One drain: returns handled ticks per second. */
const drainOnce = async (variant: Variant, ticks: number): Promise<number> => {
  let handled = 0
  let last = 0
  let done: () => void = () => {}
  const finished = new Promise<void>((resolve) => {
    done = resolve
  })
  const Sink = Actor.make<number>()({
    receive: () =>
      Effect.sync(() => {
        if (++handled === ticks) {
          last = performance.now()
          done()
        }
      })
  })
  const runtime = ManagedRuntime.make(layerOf(variant))
  try {
    const start = await runtime.runPromise(
      Effect.gen(function* () {
        const system = yield* ActorSystem.ActorSystem
        const sinks: Array<ActorRef.ActorRef<number>> = []
        for (let i = 0; i < SINKS; i++) sinks.push(yield* system.spawn(Sink, `sink-${i}`))
        // all due in 20 ms: armed now, fired together
        for (let i = 0; i < ticks; i++) system.scheduler.unsafeScheduleOnce(20, sinks[i % SINKS]!, i)
        return performance.now() + 20
      })
    )
    await finished
    return (ticks / (last - start)) * 1000
  } finally {
    await runtime.dispose()
  }
}

export interface TracingResult {
  readonly scenario: "tracing"
  readonly ticks: number
  readonly rounds: number
  /** Median ticks/s per variant over the rounds, the variants interleaved. */
  readonly ticksPerSec: Record<Variant, number>
  readonly targets: ReadonlyArray<TargetRow>
}

export const runTracing = async (
  options: { readonly ticks: number; readonly rounds: number },
  log: (line: string) => void
): Promise<TracingResult> => {
  const variants: ReadonlyArray<Variant> = ["no tracer", "tracer, spans never", "tracer, spans on"]
  const samples: Record<Variant, Array<number>> = {
    "no tracer": [],
    "tracer, spans never": [],
    "tracer, spans on": []
  }
  await drainOnce("no tracer", Math.min(options.ticks, 50_000)) // warm-up, not counted
  for (let round = 0; round < options.rounds; round++) {
    // each round starts with another variant, so that none always runs after the same one
    for (const variant of [...variants.slice(round % 3), ...variants.slice(0, round % 3)]) {
      const rate = await drainOnce(variant, options.ticks)
      samples[variant].push(rate)
      log(`tracing: round ${round + 1}, ${variant}: ${fmtRate(rate)} ticks/s`)
    }
  }
  const ticksPerSec = {
    "no tracer": median(samples["no tracer"]),
    "tracer, spans never": median(samples["tracer, spans never"]),
    "tracer, spans on": median(samples["tracer, spans on"])
  }
  return {
    scenario: "tracing",
    ticks: options.ticks,
    rounds: options.rounds,
    ticksPerSec,
    targets: [
      {
        target: `spans: no tracer costs nothing measurable (${fmtCount(options.ticks)} ticks, ≥ 0.95x spans off)`,
        measured: `${fmtRate(ticksPerSec["no tracer"])}/s`,
        baseline: `spans off ${fmtRate(ticksPerSec["tracer, spans never"])}/s`,
        pass: ticksPerSec["no tracer"] >= 0.95 * ticksPerSec["tracer, spans never"],
        note: `spans on: ${fmtRate(ticksPerSec["tracer, spans on"])}/s (${fmtRatio(ticksPerSec["tracer, spans on"], ticksPerSec["no tracer"])} of no tracer)`
      }
    ]
  }
}

export const formatTracing = (result: TracingResult): string =>
  [
    `Tracing: ${fmtInt(result.ticks)} overdue one-shots drained into ${SINKS} actors (Effect.sync handlers), median ` +
      `of ${result.rounds} interleaved rounds per variant`,
    table(
      ["variant", "ticks/s", "vs no tracer"],
      (Object.entries(result.ticksPerSec) as Array<[Variant, number]>).map(([variant, rate]) => [
        variant,
        fmtRate(rate),
        fmtRatio(rate, result.ticksPerSec["no tracer"])
      ])
    ),
    "spans on: a root span per handled tick into a tracer that keeps nothing (no exporter)."
  ].join("\n")
