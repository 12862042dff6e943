import { Clock, Effect, Layer, TestClock, TestContext } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers } from "tickwork"

/** Prints a line stamped with the Clock's time in seconds. */
const at = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now / 1000).padStart(4)} s  ${what}`))
  )

type EscalationMsg = { readonly _tag: "EscalatePayment"; readonly order: string }

// A typed helper: `ctx.tellGrain` infers the message type from the kind and the message (see the note in grains.md).
const EscalatePayment = (order: string): EscalationMsg => ({ _tag: "EscalatePayment", order })

const Escalations = Grain.make<EscalationMsg>()({
  name: "escalations",
  onReceive: (ctx) => at(`escalation: payment of order ${ctx.message.order} timed out`)
})

type OrderMsg =
  | { readonly _tag: "PaymentStarted" }
  | { readonly _tag: "PaymentConfirmed" }
  | { readonly _tag: "PaymentTimeout" }

const Order = Grain.make<OrderMsg>()({
  name: "order",
  onReceive: (ctx) => {
    switch (ctx.message._tag) {
      case "PaymentStarted":
        // escalate unless the confirmation arrives within 30 seconds
        return ctx
          .scheduleOnce({ _tag: "PaymentTimeout" }, "30 seconds", GrainTimers.withTimerReference("payment-timeout"))
          .pipe(
            Effect.zipRight(ctx.noErr),
            Effect.catchAll((error) => ctx.err(error))
          )
      case "PaymentConfirmed":
        // cancelling also drops a timeout tick that already waits in the mailbox; a fired one-shot is not found
        return Effect.zipRight(
          Effect.ignore(ctx.cancelSchedule("payment-timeout")),
          at(`order ${ctx.identity.key} paid`)
        )
      case "PaymentTimeout":
        return ctx.tellGrain(Escalations, "payments", EscalatePayment(ctx.identity.key))
    }
  }
})

const GrainsLive = Grains.layer([Order, Escalations]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "orders" })))

const main = Effect.gen(function* () {
  yield* at("orders 1 and 2 start their payments")
  yield* Grains.ask(Order, "order-1", { _tag: "PaymentStarted" })
  yield* Grains.ask(Order, "order-2", { _tag: "PaymentStarted" })
  yield* TestClock.adjust("10 seconds")
  yield* Grains.tell(Order, "order-1", { _tag: "PaymentConfirmed" }) // in time: its timeout is cancelled
  yield* TestClock.adjust("1 minute") // order-2 escalates at 30 s
}).pipe(
  Effect.provide(GrainsLive),
  // The real 30 s timeout on simulated time (a TestClock moved by hand), so this file runs at once.
  Effect.provide(TestContext.TestContext)
)

// `npx tsx docs/examples/grains-order.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
