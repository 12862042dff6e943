import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { Actor, ActorSystem, Schedules } from "tickwork"
import { Admin } from "tickwork/admin"

const Reports = Actor.make<string>()({ receive: (report) => Effect.logDebug(`report: ${report}`) })

// An actor with a timer of its own, so the page's "Timers by owner" has a row.
const Heart = Actor.make<"beat">()({
  preStart: (ctx) => Effect.orDie(ctx.timers.startTimerAtFixedRate("beat", "beat", "1 second")),
  receive: () => Effect.void
})

export const setup = Effect.gen(function* () {
  const schedules = yield* Schedules.Schedules
  const reports = yield* ActorSystem.spawn(Reports, "reports")
  yield* ActorSystem.spawn(Heart, "heart")
  yield* schedules.create("report", Schedules.every("2 seconds"), Schedules.send(reports, "numbers"))
  yield* schedules.create("cleanup", Schedules.cron("*/5 * * * * ?"), Schedules.run(Effect.logDebug("cleanup")))
  yield* schedules.create("nightly-export", Schedules.cron("0 0 2 * * ?"), Schedules.run(Effect.void))
  yield* schedules.pause("nightly-export", "export target is being migrated", { by: "ada" })
  const admin = yield* Admin.AdminServer
  yield* Effect.logInfo(`open ${admin.url} (Ctrl-C stops)`)
})

// Reads need nothing; pause, resume and trigger only from this machine (a real deployment checks a secret too).
const authorize = (request: { readonly remoteAddress: Option.Option<string> }) =>
  Option.exists(request.remoteAddress, (address) => ["127.0.0.1", "::1", "::ffff:127.0.0.1"].includes(address))

const System = Schedules.layer.pipe(Layer.provideMerge(ActorSystem.layer({ name: "inspector-demo" })))
export const live = (port: number) => Admin.layer({ port, authorize }).pipe(Layer.provideMerge(System))

const main = Effect.zipRight(setup, Effect.never).pipe(Effect.provide(live(Number(process.env.PORT ?? 9465))))

// `npx tsx docs/examples/inspector.ts` (PORT=0 picks a free port); importing this file runs nothing.
if (import.meta.filename === process.argv[1]) NodeRuntime.runMain(main)
