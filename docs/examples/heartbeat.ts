import { Effect } from "effect"
import { Actor, ActorSystem } from "tickwork"

type Msg =
  | { readonly _tag: "Beat" }
  | { readonly _tag: "SetInterval"; readonly millis: number }
  | { readonly _tag: "Status" }
  | { readonly _tag: "Stop" }

const Beat: Msg = { _tag: "Beat" }

const Heartbeat = Actor.make<Msg>()({
  preStart: (ctx) =>
    Effect.gen(function* () {
      // first beat after 400 ms, then one every 400 ms; pass 0 as fourth argument to beat at once
      yield* ctx.timers.startTimerWithFixedDelay("hb", Beat, "400 millis")
      yield* ctx.timers.startSingleTimer("stop", { _tag: "Stop" }, "2 seconds")
    }).pipe(Effect.orDie),
  receive: (msg, ctx) => {
    switch (msg._tag) {
      case "Beat":
        return Effect.logInfo("heartbeat")
      case "SetInterval":
        // same key: the old "hb" timer is cancelled, no double firing
        return Effect.orDie(ctx.timers.startTimerWithFixedDelay("hb", Beat, msg.millis))
      case "Status":
        return Effect.gen(function* () {
          const keys = yield* ctx.timers.activeKeys
          const stopPending = yield* ctx.timers.isTimerActive("stop")
          yield* Effect.logInfo(`active timers: ${keys.join(", ")}; stop pending: ${stopPending}`)
        })
      case "Stop":
        return Effect.gen(function* () {
          yield* ctx.timers.cancelAll // not needed before a stop (stop cancels every timer), shown for the API
          yield* Effect.logInfo(`"hb" still active: ${yield* ctx.timers.isTimerActive("hb")}`)
          yield* ctx.stop(ctx.self)
        })
    }
  }
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const heartbeat = yield* system.spawn(Heartbeat, "heartbeat")
  yield* Effect.sleep("1 second")
  yield* heartbeat.tell({ _tag: "SetInterval", millis: 200 })
  yield* heartbeat.tell({ _tag: "Status" })
  yield* Effect.sleep("1500 millis")
}).pipe(Effect.provide(ActorSystem.layer({ name: "heartbeat" })))

// `npx tsx docs/examples/heartbeat.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
