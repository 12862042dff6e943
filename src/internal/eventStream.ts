import * as Effect from "effect/Effect"
import { type ActorRef, isActorRef } from "../ActorRef.js"
import { type Classifier, type EventStream, InvalidSubscription } from "../EventStream.js"
import { describeValue } from "./validate.js"

interface Subscription {
  readonly subscriber: ActorRef<any>
  readonly classifier: Classifier<unknown>
  readonly test: (u: unknown) => boolean
}

const toTest = (classifier: Classifier<unknown>): ((u: unknown) => boolean) =>
  typeof classifier === "function" ? (u) => u instanceof classifier : (u) => classifier.is(u)

/** Why `subscriber` and `classifier` cannot subscribe, or undefined. */
const problemOf = (subscriber: unknown, classifier: unknown): string | undefined => {
  if (!isActorRef(subscriber)) return `the subscriber must be an ActorRef, got ${describeValue(subscriber)}`
  if (typeof classifier === "function") return undefined
  if (
    classifier !== null &&
    typeof classifier === "object" &&
    typeof (classifier as { is?: unknown }).is === "function"
  ) {
    return undefined
  }
  return `the classifier must be a class or an object with an is function, got ${describeValue(classifier)}`
}

export class EventStreamImpl implements EventStream {
  private subscriptions: Array<Subscription> = []

  constructor(
    /** Told when a subscriber's classifier or `unsafeTell` threw while an event was published. */
    private readonly onFault: (subscriber: ActorRef<any>, event: unknown, defect: unknown) => void = () => {}
  ) {}

  get size(): number {
    return this.subscriptions.length
  }

  readonly subscribe = <A>(
    subscriber: ActorRef<A>,
    classifier: Classifier<A>
  ): Effect.Effect<void, InvalidSubscription> =>
    Effect.suspend(() => {
      const problem = problemOf(subscriber, classifier)
      if (problem !== undefined) return Effect.fail(new InvalidSubscription({ reason: problem }))
      const known = this.subscriptions.some((s) => s.subscriber === subscriber && s.classifier === classifier)
      if (!known) this.subscriptions.push({ subscriber, classifier, test: toTest(classifier) })
      return Effect.void
    })

  readonly unsubscribe = (subscriber: ActorRef<any>, classifier?: Classifier<unknown>): Effect.Effect<void> =>
    Effect.sync(() => this.unsafeUnsubscribe(subscriber, classifier))

  readonly publish = (event: unknown): Effect.Effect<void> => Effect.sync(() => this.unsafePublish(event))

  unsafeUnsubscribe(subscriber: ActorRef<any>, classifier?: Classifier<unknown>): void {
    this.subscriptions = this.subscriptions.filter(
      (s) => s.subscriber !== subscriber || (classifier !== undefined && s.classifier !== classifier)
    )
  }

  /** Publishes to each matching subscriber; one that throws (its classifier or a custom ref) misses this event. */
  unsafePublish(event: unknown): void {
    for (const s of this.subscriptions) {
      try {
        if (s.test(event)) s.subscriber.unsafeTell(event)
      } catch (defect) {
        this.onFault(s.subscriber, event, defect)
      }
    }
  }
}
