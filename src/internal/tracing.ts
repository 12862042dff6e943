/**
 * A span per handled tick, task run and schedule instant, through Effect's `Tracer` (so `@effect/opentelemetry`
 * exports them). Each is a root span: a tick carries no context of the code that armed it (docs/design-choices.md);
 * with `linkToArming` the span that armed the timer is linked instead, never a parent.
 *
 * With no tracer installed (Effect's own, which records nothing anywhere) the system makes no span at all, and the
 * only cost left on the tick's path is one boolean read: `enabled` is decided once, when the system starts.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

/** Effect's default tracer: spans it makes go nowhere, so a system with it makes none. */
const nativeTracer: Tracer.Tracer = Effect.runSync(Effect.tracer)

/** True when `tracer` records spans somewhere: anything but Effect's default, whose spans go nowhere. */
export const recordsSpans = (tracer: Tracer.Tracer): boolean => tracer !== nativeTracer

/**
 * `effect` in a root span `name`: no parent, whatever span the caller runs in, so work that fires later never joins
 * the trace of the code that armed it. No stack trace per span: it would cost more than a tick, and the attributes
 * say where the span comes from.
 */
export const rootSpan = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  name: string,
  attributes: Record<string, unknown>,
  links: ReadonlyArray<Tracer.SpanLink> = []
): Effect.Effect<A, E, R> =>
  Effect.withSpan(effect, name, { root: true, kind: "internal", captureStackTrace: false, attributes, links })

/** `"auto"` (the default): spans when a tracer other than Effect's default is installed around the system. */
export type SpansOption = "auto" | "always" | "never"

/** What a span is about. */
export interface SpanSubject {
  /** The timer kind (`actor_timer`, `scheduler_function`, ...): the span is named `tickwork.<kind>`. */
  readonly kind: string
  readonly owner: string | undefined
  readonly key: string | undefined
  /** The instant the tick was for. */
  readonly scheduled: number | undefined
}

export class TickTracing {
  readonly enabled: boolean
  /** Per timer, while tracing: the instants of its copies waiting in a mailbox, oldest first. */
  private readonly instants = new WeakMap<object, Array<number>>()
  /** Per timer, while tracing: its ticks dropped since its last handled one. */
  private readonly dropped = new WeakMap<object, number>()
  /** Per timer, with `linkToArming`: the span of the code that armed it. */
  private readonly armedBy = new WeakMap<object, Tracer.AnySpan>()

  constructor(
    readonly system: string,
    tracer: Tracer.Tracer,
    spans: SpansOption,
    readonly linkToArming: boolean
  ) {
    this.enabled = spans === "always" || (spans === "auto" && recordsSpans(tracer))
  }

  /** A copy of `tick` due at `instant` was queued (or is handled now). */
  offered(tick: object, instant: number): void {
    const queue = this.instants.get(tick)
    if (queue === undefined) this.instants.set(tick, [instant])
    else queue.push(instant)
  }

  /** A copy of `tick` was dropped (stale, full mailbox, stopped owner): counted on its next span. */
  droppedOne(tick: object): void {
    this.instants.get(tick)?.shift()
    this.dropped.set(tick, (this.dropped.get(tick) ?? 0) + 1)
  }

  /** Remembers the span that armed `timer` (with `linkToArming`). */
  armed(timer: object, span: Option.Option<Tracer.AnySpan>): void {
    if (Option.isSome(span)) this.armedBy.set(timer, span.value)
  }

  /** The span of the code running `context`, to link a timer armed there. */
  static armingSpan(context: Context.Context<never>): Option.Option<Tracer.AnySpan> {
    return Context.getOption(context, Tracer.ParentSpan)
  }

  /** `effect` (the handling of one copy of `tick`, now) in a root span of its own. */
  wrapTick<A, E, R>(
    tick: object,
    subject: Omit<SpanSubject, "scheduled">,
    now: number,
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> {
    const scheduled = this.instants.get(tick)?.shift()
    const dropped = this.dropped.get(tick)
    if (dropped !== undefined) this.dropped.delete(tick)
    return this.wrap(tick, { ...subject, scheduled }, now, effect, dropped)
  }

  /** `effect` in a root span named after `subject.kind`, with tickwork's attributes. */
  wrap<A, E, R>(
    timer: object,
    subject: SpanSubject,
    now: number,
    effect: Effect.Effect<A, E, R>,
    dropped?: number,
    extra?: Record<string, unknown>
  ): Effect.Effect<A, E, R> {
    const attributes: Record<string, unknown> = { "tickwork.system": this.system, "tickwork.timer.kind": subject.kind }
    if (subject.owner !== undefined) attributes["tickwork.owner"] = subject.owner
    if (subject.key !== undefined) attributes["tickwork.timer.key"] = subject.key
    if (subject.scheduled !== undefined) {
      attributes["tickwork.timer.scheduled"] = subject.scheduled
      attributes["tickwork.timer.lateness_ms"] = now - subject.scheduled
    }
    if (dropped !== undefined) attributes["tickwork.timer.dropped"] = dropped
    if (extra !== undefined) Object.assign(attributes, extra)
    const link = this.linkToArming ? this.armedBy.get(timer) : undefined
    return rootSpan(
      effect,
      `tickwork.${subject.kind}`,
      attributes,
      link === undefined ? [] : [{ _tag: "SpanLink", span: link, attributes: { "tickwork.link": "armed by" } }]
    )
  }
}

/** Remembers, for `linkToArming`, the span of the fiber that armed `timer` (nothing when links are off). */
export const linkArming = (tracing: TickTracing, timer: object | undefined): Effect.Effect<void> =>
  !tracing.linkToArming || timer === undefined
    ? Effect.void
    : Effect.withFiberRuntime((fiber) => {
        tracing.armed(timer, TickTracing.armingSpan(fiber.getFiberRef(FiberRef.currentContext)))
        return Effect.void
      })

/** The tracing of a system that traces nothing (the default in unit tests without a tracer). */
export const noTracing = (system: string): TickTracing => new TickTracing(system, nativeTracer, "never", false)
