import { NodeSdk } from "@effect/opentelemetry"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import { Actor, ActorSystem, Schedules } from "tickwork"

// In production the span processor sends to a collector (an OTLP exporter); an in-memory one shows what arrives.
const exporter = new InMemorySpanExporter()
const TracingLive = NodeSdk.layer(() => ({
  resource: { serviceName: "tickwork-example" },
  spanProcessor: new SimpleSpanProcessor(exporter)
}))

const Heart = Actor.make<"beat">()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "beat", "200 millis")),
  // a child span of the tick's span: the handler's own work shows up inside it
  receive: () => Effect.withSpan(Effect.sleep("5 millis"), "check vital signs")
})

const main = Effect.gen(function* () {
  const schedules = yield* Schedules.Schedules
  // armed inside a span of ours: with linkToArming, each tick's span links to it (never a parent)
  yield* Effect.withSpan(
    Effect.zipRight(
      ActorSystem.spawn(Heart, "heart"),
      schedules.create("report", Schedules.every("300 millis"), Schedules.run(Effect.log("report")))
    ),
    "start-up"
  )
  yield* Effect.sleep("700 millis")
  // read before the layer closes: shutting the SDK down empties an in-memory exporter
  yield* Effect.sync(() => {
    for (const span of exporter.getFinishedSpans()) {
      const attributes = Object.entries(span.attributes)
        .filter(([key]) => key.startsWith("tickwork."))
        .map(([key, value]) => `${key.slice("tickwork.".length)}=${String(value)}`)
      const parent = span.parentSpanContext === undefined ? "root" : "child"
      console.log(`${span.name.padEnd(24)} ${parent.padEnd(5)} links=${span.links.length} ${attributes.join(" ")}`)
    }
  })
}).pipe(
  Effect.provide(
    Schedules.layer.pipe(
      Layer.provideMerge(ActorSystem.layer({ name: "traced", tracing: { linkToArming: true } })),
      Layer.provide(TracingLive)
    )
  )
)

// `npx tsx docs/examples/tracing-otel.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
