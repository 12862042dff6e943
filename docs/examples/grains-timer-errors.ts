import { Effect, Layer } from "effect"
import { ActorSystem, Grain, Grains, GrainTimers, type TimerError } from "tickwork"

type Msg = { readonly _tag: "Try" } | { readonly _tag: "CancelFired" } | { readonly _tag: "Noop" }

const Noop: Msg = { _tag: "Noop" }
const zone = GrainTimers.withTimeZone

const describe = (error: TimerError.TimerError): string =>
  error._tag === "InvalidCronExpression"
    ? `${error._tag} (field ${error.field ?? "-"}): ${error.reason}`
    : `${error._tag}: ${error.message}`

const attempt = (label: string, effect: Effect.Effect<unknown, TimerError.TimerError>) =>
  Effect.flatMap(Effect.either(effect), (result) =>
    Effect.logInfo(`${label.padEnd(28)} -> ${result._tag === "Right" ? "ok" : describe(result.left)}`)
  )

const Checker = Grain.make<Msg>()({
  name: "checker",
  onReceive: (ctx) =>
    Effect.gen(function* () {
      switch (ctx.message._tag) {
        case "Try":
          yield* attempt("schedule every 0 ms", ctx.schedule(Noop, 0))
          yield* attempt("schedule every 0.5 ms", ctx.schedule(Noop, 0.5))
          yield* attempt("scheduleOnce after -1 ms", ctx.scheduleOnce(Noop, -1))
          yield* attempt("cron with an hour of 25", ctx.scheduleWithCron(Noop, "0 0 25 * * ?"))
          yield* attempt("cron without '?'", ctx.scheduleWithCron(Noop, "0 0 12 * * *"))
          yield* attempt("cron in 1999", ctx.scheduleWithCron(Noop, "0 0 0 1 1 ? 1999"))
          yield* attempt("cron in an unknown zone", ctx.scheduleWithCron(Noop, "0 0 * * * ?", zone("Mars/Base")))
          yield* attempt("a zone on a non-cron timer", ctx.schedule(Noop, "1 minute", zone("Europe/Berlin")))
          yield* attempt("an empty reference", ctx.scheduleOnce(Noop, 10, GrainTimers.withTimerReference("")))
          yield* attempt("cancel an unknown reference", ctx.cancelSchedule("nope"))
          // fires as soon as this handler is done
          return yield* attempt(
            "scheduleOnce 'soon'",
            ctx.scheduleOnce(Noop, 0, GrainTimers.withTimerReference("soon"))
          )
        case "CancelFired":
          return yield* attempt("cancel 'soon' after it fired", ctx.cancelSchedule("soon"))
        case "Noop":
          return
      }
    })
})

const GrainsLive = Grains.layer([Checker]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "errors" })))

const main = Effect.gen(function* () {
  yield* Grains.ask(Checker, "c-1", { _tag: "Try" })
  yield* Effect.sleep("50 millis")
  yield* Grains.ask(Checker, "c-1", { _tag: "CancelFired" })
}).pipe(Effect.provide(GrainsLive))

// `npx tsx docs/examples/grains-timer-errors.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
