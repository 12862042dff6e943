import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, TestClock } from "effect"
import { Actor, ActorRef, ActorSystem } from "tickwork"

type Msg = { readonly _tag: "Get"; readonly replyTo: ActorRef.ActorRef<number> }

/** Counts the questions it received and answers with the count. */
const makeCounter = () => {
  let questions = 0
  const actor = Actor.make<Msg>()({
    receive: (msg) => {
      questions++
      return msg.replyTo.tell(questions)
    }
  })
  return {
    actor,
    get questions() {
      return questions
    }
  }
}

const question = (replyTo: ActorRef.ActorRef<number>): Msg => ({ _tag: "Get", replyTo })

describe("ActorRef.ask timeout", () => {
  const bad: ReadonlyArray<readonly [label: string, timeout: unknown, reason: string]> = [
    ["a string that is not a duration", "soon", '"soon" is not a duration'],
    ["a negative number", -1, "must not be negative"],
    ["a negative duration", "-1 seconds", "must not be negative"],
    ["NaN", Number.NaN, "NaN is not a duration"],
    ["Infinity", Number.POSITIVE_INFINITY, "must be finite"],
    ["zero", 0, "must be more than 0"],
    ["an object", {}, "is not a duration"]
  ]
  for (const [label, timeout, reason] of bad) {
    it.effect(`${label} is InvalidTimerDelay, and the question is not sent`, () =>
      Effect.gen(function* () {
        const counter = makeCounter()
        const ref = yield* ActorSystem.spawn(counter.actor, "counter")
        const error = yield* Effect.flip(ActorRef.ask(ref, question, timeout as Duration.DurationInput))
        assert.strictEqual(error._tag, "InvalidTimerDelay")
        assert.include(error.message, reason)
        yield* TestClock.adjust("1 second")
        assert.strictEqual(counter.questions, 0, "nothing was delivered")
        // a good timeout still works
        assert.strictEqual(yield* ActorRef.ask(ref, question, "1 second"), 1)
      }).pipe(Effect.provide(ActorSystem.layer({ name: "ask" })))
    )
  }

  it.effect("a fractional millisecond is a timeout like any other", () =>
    Effect.gen(function* () {
      const counter = makeCounter()
      const ref = yield* ActorSystem.spawn(counter.actor, "counter")
      assert.strictEqual(yield* ActorRef.ask(ref, question, 0.5), 1)
    }).pipe(Effect.provide(ActorSystem.layer({ name: "ask" })))
  )
})
