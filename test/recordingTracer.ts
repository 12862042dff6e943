/** An in-memory tracer for tests of tickwork's spans. */
import type { Exit, Option } from "effect"
import { Tracer } from "effect"

/** A span an in-memory tracer records: what a test checks of the spans tickwork makes. */
export class RecordedSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId: string
  readonly traceId = "trace"
  readonly sampled = true
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink>
  status: Tracer.SpanStatus
  exit: Exit.Exit<unknown, unknown> | undefined = undefined
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context,
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    id: number
  ) {
    this.spanId = `span-${id}`
    this.links = [...links]
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    this.exit = exit
  }
  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }
  event(): void {}
  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
}
type Context = Tracer.Span["context"]

/** A tracer that keeps every span it makes. */
export const recordingTracer = () => {
  const spans: Array<RecordedSpan> = []
  let next = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = new RecordedSpan(name, parent, context, links, startTime, kind, next++)
      for (const [key, value] of Object.entries(options?.attributes ?? {})) span.attributes.set(key, value)
      spans.push(span)
      return span
    },
    context: (f) => f()
  })
  return { spans, tracer, named: (name: string) => spans.filter((span) => span.name === name) }
}
