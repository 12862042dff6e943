import * as Effect from "effect/Effect"
import type { ActorRef } from "../ActorRef.js"
import type { Classifier, EventStream } from "../EventStream.js"

interface Subscription {
  readonly subscriber: ActorRef<any>
  readonly classifier: Classifier<unknown>
  readonly test: (u: unknown) => boolean
}

const toTest = (classifier: Classifier<unknown>): ((u: unknown) => boolean) =>
  typeof classifier === "function" ? (u) => u instanceof classifier : (u) => classifier.is(u)

export class EventStreamImpl implements EventStream {
  private subscriptions: Array<Subscription> = []

  get size(): number {
    return this.subscriptions.length
  }

  readonly subscribe = <A>(subscriber: ActorRef<A>, classifier: Classifier<A>): Effect.Effect<void> =>
    Effect.sync(() => {
      const known = this.subscriptions.some((s) => s.subscriber === subscriber && s.classifier === classifier)
      if (!known) this.subscriptions.push({ subscriber, classifier, test: toTest(classifier) })
    })

  readonly unsubscribe = (subscriber: ActorRef<any>, classifier?: Classifier<unknown>): Effect.Effect<void> =>
    Effect.sync(() => this.unsafeUnsubscribe(subscriber, classifier))

  readonly publish = (event: unknown): Effect.Effect<void> => Effect.sync(() => this.unsafePublish(event))

  unsafeUnsubscribe(subscriber: ActorRef<any>, classifier?: Classifier<unknown>): void {
    this.subscriptions = this.subscriptions.filter(
      (s) => s.subscriber !== subscriber || (classifier !== undefined && s.classifier !== classifier)
    )
  }

  unsafePublish(event: unknown): void {
    for (const s of this.subscriptions) if (s.test(event)) s.subscriber.unsafeTell(event)
  }
}
