import { Effect, Metric } from "effect"
import { Actor, ActorRef, ActorSystem, EventStream, Metrics } from "tickwork"

type Job = { readonly _tag: "Job"; readonly id: string } | { readonly _tag: "Poll" }
type Question = { readonly _tag: "Question"; readonly replyTo: ActorRef.ActorRef<string> }

// Room for one waiting message; every message takes 200 ms.
const Worker = Actor.make<Job | Question>()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("poll", { _tag: "Poll" }, "100 millis")),
  receive: (msg) =>
    (msg._tag === "Job" ? Effect.logInfo(`job ${msg.id}`) : Effect.void).pipe(Effect.delay("200 millis"))
}).pipe(Actor.withMailboxCapacity(1))

const DeadLetters = Actor.make<EventStream.DeadLetter>()({
  receive: (letter) => Effect.logInfo(`dead letter (${letter.reason}): ${JSON.stringify(letter.message)}`)
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const dropped = Metric.value(Metrics.ticksDropped("mailbox_full"))
  const droppedBefore = (yield* dropped).count
  const deadLetters = yield* system.spawn(DeadLetters, "dead-letters")
  yield* system.eventStream.subscribe(deadLetters, EventStream.DeadLetter)
  const worker = yield* system.spawn(Worker, "worker")
  yield* worker.tell({ _tag: "Job", id: "a" }) // takes the one slot
  yield* worker.tell({ _tag: "Job", id: "b" }) // mailbox full: a DeadLetter, the sender never blocks
  const question = (replyTo: ActorRef.ActorRef<string>): Question => ({ _tag: "Question", replyTo })
  const answer = yield* ActorRef.ask(worker, question).pipe(
    Effect.catchTag("AskUndeliverable", (e) => Effect.succeed(`ask failed at once: ${e.message}`))
  )
  yield* Effect.logInfo(answer)
  yield* Effect.sleep("400 millis")
  // Poll ticks that found the mailbox full were dropped (each logged at warning); the timer kept firing.
  yield* Effect.logInfo(`ticks dropped on a full mailbox: ${(yield* dropped).count - droppedBefore}`)
}).pipe(Effect.provide(ActorSystem.layer({ name: "mailbox" })))

// `npx tsx docs/examples/mailbox.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
