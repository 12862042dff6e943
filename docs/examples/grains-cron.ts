import { Clock, Effect, Layer } from "effect"
import { Actor, ActorSystem, Grain, Grains, GrainTimers, Passivation, QuartzCron } from "tickwork"

const t0 = Date.now()
/** Prints a line stamped with the milliseconds since the start. */
const log = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now - t0).padStart(5)} ms  ${what}`))
  )

type Msg = { readonly _tag: "Report"; readonly label: string }

const Reports = Grain.make<Msg>()({
  name: "reports",
  passivation: Passivation.never,
  onActivate: (props) =>
    Effect.gen(function* () {
      // every second, evaluated in UTC
      yield* props.scheduleWithCron(
        { _tag: "Report", label: "every second" },
        "* * * * * ?",
        GrainTimers.withTimeZone("UTC")
      )
      // 09:00 on weekdays, Berlin time (the process's local zone if no zone is given)
      yield* props.scheduleWithCron(
        { _tag: "Report", label: "morning" },
        "0 0 9 ? * MON-FRI",
        GrainTimers.withTimeZone("Europe/Berlin"),
        GrainTimers.withTimerReference("morning")
      )
      for (const timer of yield* props.timers) {
        yield* log(
          `${timer.reference}: next at ${timer.nextDue === undefined ? "-" : new Date(timer.nextDue).toISOString()}`
        )
      }
    }).pipe(Effect.orDie),
  onReceive: (ctx) => log(`grain cron: ${ctx.message.label}`)
})

const Printer = Actor.make<string>()({ receive: (text) => log(`actor: ${text}`) })

const GrainsLive = Grains.layer([Reports]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "cron" })))

const main = Effect.gen(function* () {
  // QuartzCron computes fire instants from a time you pass in: handy to check an expression
  const lastFriday = yield* QuartzCron.make("0 0 18 ? * 6L", { timeZone: "UTC" }) // 18:00 on the month's last Friday
  const next = QuartzCron.nextN(lastFriday, Date.parse("2026-01-01T00:00:00Z"), 3)
  yield* log(`last Fridays: ${next.map((millis) => new Date(millis).toISOString().slice(0, 10)).join(", ")}`)

  yield* Grains.tell(Reports, "daily", { _tag: "Report", label: "told" })

  // The system scheduler sends to any actor on a cron expression; a reference names the schedule.
  const system = yield* ActorSystem.ActorSystem
  const printer = yield* system.spawn(Printer, "printer")
  yield* system.scheduler.scheduleWithCron(printer, "every 2 seconds", "*/2 * * * * ?", {
    reference: "printer-cron",
    timeZone: "UTC"
  })
  yield* Effect.sleep("2500 millis")
  yield* system.scheduler.cancelSchedule("printer-cron")
}).pipe(Effect.provide(GrainsLive))

// `npx tsx docs/examples/grains-cron.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
