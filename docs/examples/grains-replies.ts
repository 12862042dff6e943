import { Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains } from "tickwork"

type Msg = "price" | "ok" | "silent" | "sold-out" | "unknown" | "twice" | "crash" | "slow" | "arm"

const Shop = Grain.make<Msg>()({
  name: "shop",
  onReceive: (ctx) => {
    switch (ctx.message) {
      case "price":
        return ctx.reply(42) // ask succeeds with 42
      case "ok":
        return ctx.noErr // ask succeeds with undefined
      case "silent":
        return Effect.void // no signal counts as noErr
      case "sold-out":
        return ctx.err("sold out") // ask fails with GrainReplyError; on a tell or a tick: a warning in the log
      case "twice":
        return Effect.zipRight(ctx.noErr, ctx.noErr) // a second signal is a defect: the grain fails (not on a tick)
      case "crash":
        return Effect.die("bug") // ask fails with GrainFailed; the grain is deactivated (not on a tick)
      case "arm":
        // "twice" and "crash" as timer ticks: each failure is a warning in the log, the grain and its timers go on
        return Effect.asVoid(Effect.orDie(Effect.zipRight(ctx.scheduleOnce("twice", 0), ctx.scheduleOnce("crash", 0))))
      case "slow":
        // the ask times out after 100 ms, but the handler is not interrupted: it runs to its end
        return Effect.zipRight(Effect.sleep("300 millis"), Effect.logInfo("slow handler done anyway"))
      default:
        return ctx.unhandled // ask fails with GrainMessageUnhandled
    }
  }
})

const Broken = Grain.make<string>()({
  name: "broken",
  onActivate: () => Effect.fail("no database"), // every ask fails with GrainActivationFailed
  onReceive: () => Effect.void
})

const NotRegistered = Grain.make<string>()({ name: "not-registered", onReceive: () => Effect.void })

const GrainsLive = Grains.layer([Shop, Broken]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "replies" })))

const show = <R>(label: string, ask: Effect.Effect<unknown, Grains.AskError, R>) =>
  Effect.either(ask).pipe(
    Effect.map((result) =>
      result._tag === "Right" ? `succeeds with ${result.right}` : `fails with ${result.left._tag}`
    ),
    Effect.flatMap((outcome) => Effect.logInfo(`${label.padEnd(12)} -> ${outcome}`))
  )

const main = Effect.gen(function* () {
  for (const message of ["price", "ok", "silent", "sold-out", "unknown", "twice", "crash"] as const) {
    yield* show(message, Grains.ask(Shop, "s-1", message))
  }
  yield* show("slow", Grains.ask(Shop, "s-1", "slow", "100 millis"))
  yield* show("broken", Grains.ask(Broken, "b-1", "hello"))
  yield* show("unknown kind", Grains.ask(NotRegistered, "x", "hello"))
  yield* Grains.tell(Shop, "s-1", "sold-out") // logged as a warning: nobody asked
  yield* Grains.tell(Shop, "s-1", "arm")
  yield* Effect.sleep("300 millis")
  const grains = yield* Grains.Grains
  yield* Effect.logInfo(`after the failing ticks, shop/s-1 active: ${yield* grains.isActive(Shop, "s-1")}`)
}).pipe(Effect.provide(GrainsLive))

// `npx tsx docs/examples/grains-replies.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
