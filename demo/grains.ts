/**
 * Grains and grain timers on the real clock, about 6 seconds.
 *
 * A device grain checks its liveness every second and reports on a cron expression (every 2 seconds, UTC). The
 * device pings for a while and then goes silent: the liveness check raises an alert, the grain passivates 3 seconds
 * after its last message although its timers keep ticking (ticks are not activity), its timers are gone with it, and
 * a later ping activates it again with fresh timers.
 *
 * Every line is `elapsed ms since start | who | what happened`. The default logger is replaced by one that prints
 * warnings and errors on the same timeline and drops the rest.
 *
 * `npx tsx demo/grains.ts` runs it; `import { grainsDemo } from "./grains.js"` gives the effect.
 */

import { Clock, Context, Effect, Layer } from "effect"
import { Actor, type ActorRef, ActorSystem, Grain, Grains, GrainTimers, Passivation } from "tickwork"
import { makeTimeline } from "./output.js"

// ------------------------------------------------------------------ the timeline

const timeline = makeTimeline(8)
const { say, scene } = timeline

const clockTime = (millis: number) => `${new Date(millis).toISOString().slice(11, 19)} UTC`

const describeTimers = (timers: ReadonlyArray<GrainTimers.TimerInfo>, now: number) =>
  timers.length === 0
    ? "none"
    : timers
        .map((t) => `${t.reference} (${t.kind}, due in ${t.nextDue === undefined ? "-" : t.nextDue - now} ms)`)
        .join(", ")

// ------------------------------------------------------------------ the device grain

type DeviceMsg = { readonly _tag: "Ping" } | { readonly _tag: "CheckLiveness" } | { readonly _tag: "Report" }

type DeviceOffline = { readonly _tag: "DeviceOffline"; readonly device: string; readonly silentForMillis: number }

class Alerts extends Context.Tag("demo/Alerts")<Alerts, ActorRef.ActorRef<DeviceOffline>>() {}

const OFFLINE_AFTER_MILLIS = 1_500

interface DeviceState {
  readonly activation: number
  readonly lastSeen: number
}

/** A fresh kind per run (activations count from 1), with a count of the ticks it handled. */
const makeDevice = () => {
  let activations = 0
  let ticks = 0
  let ticksAtDeactivation = 0
  const kind = Grain.make<DeviceMsg>()({
    name: "device",
    passivation: Passivation.idle("3 seconds"),
    onActivate: (props) =>
      Effect.gen(function* () {
        const activation = ++activations
        yield* props.schedule({ _tag: "CheckLiveness" }, "1 second", GrainTimers.withTimerReference("liveness"))
        yield* props.scheduleWithCron(
          { _tag: "Report" },
          "*/2 * * * * ?",
          GrainTimers.withTimeZone("UTC"),
          GrainTimers.withTimerReference("report")
        )
        const now = yield* Clock.currentTimeMillis
        yield* say("device", `activation #${activation}; timers: ${describeTimers(yield* props.timers, now)}`)
        return { activation, lastSeen: now }
      }).pipe(Effect.orDie),
    onReceive: (ctx, state: DeviceState) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const silent = now - state.lastSeen
        if (ctx.isTick) ticks++
        switch (ctx.message._tag) {
          case "Ping":
            yield* say("device", "ping: lastSeen is now")
            return { ...state, lastSeen: now }
          case "CheckLiveness":
            if (silent <= OFFLINE_AFTER_MILLIS) {
              yield* say("device", `liveness tick: last seen ${silent} ms ago, ok`)
            } else {
              yield* say("device", `liveness tick: last seen ${silent} ms ago > ${OFFLINE_AFTER_MILLIS} ms, alert`)
              const alerts = yield* Alerts
              yield* ctx.tellActor(alerts, { _tag: "DeviceOffline", device: ctx.identity.key, silentForMillis: silent })
            }
            return state
          case "Report":
            yield* say("device", `cron tick (*/2 * * * * ?) at ${clockTime(now)}`)
            return state
        }
      }),
    onDeactivate: (props, state) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const idle = now - state.lastSeen
        ticksAtDeactivation = ticks
        yield* say(
          "device",
          `activation #${state.activation} deactivated, ${idle} ms after the last message; timers: ` +
            describeTimers(yield* props.timers, now)
        )
      })
  })
  return { kind, ticksSinceDeactivation: Effect.sync(() => ticks - ticksAtDeactivation) }
}

const AlertLog = Actor.make<DeviceOffline>()({
  receive: (alert) => say("alerts", `ALERT: ${alert.device} offline, silent for ${alert.silentForMillis} ms`)
})

// ------------------------------------------------------------------ the scenario

const scenario = ({ kind: Device, ticksSinceDeactivation }: ReturnType<typeof makeDevice>) =>
  Effect.gen(function* () {
    const grains = yield* Grains.Grains
    const inspect = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const active = yield* grains.isActive(Device, "dev-1")
      const timers = yield* grains.timers(Device, "dev-1")
      yield* say("main", `dev-1 active: ${active}; timers: ${describeTimers(timers, now)}`)
    })

    yield* scene("1. the first ping activates dev-1; pings every 400 ms keep lastSeen fresh")
    for (let i = 0; i < 3; i++) {
      if (i > 0) yield* Effect.sleep("400 millis")
      yield* Grains.tell(Device, "dev-1", { _tag: "Ping" })
    }
    yield* Effect.sleep("100 millis")

    yield* scene("2. silence: a liveness alert, then idle passivation 3 s after the last ping (ticks are not activity)")
    yield* Effect.sleep("3300 millis")

    yield* scene("3. passivated: no timer left, and no tick wakes the grain up")
    yield* inspect
    yield* Effect.sleep("300 millis")
    const ticks = yield* ticksSinceDeactivation
    yield* say(
      "main",
      `ticks handled since the passivation: ${ticks} (the 1 s liveness timer would have ticked by now)`
    )

    yield* scene("4. a later ping reactivates dev-1: onActivate registers fresh timers")
    yield* Grains.tell(Device, "dev-1", { _tag: "Ping" })
    yield* Effect.sleep("1050 millis")
    yield* inspect
    yield* say("main", "shutdown (deactivates dev-1)")
  })

/** The whole demo, with its actor system, grains and logger provided. */
export const grainsDemo: Effect.Effect<void> = Effect.gen(function* () {
  yield* timeline.start("tickwork grains demo: grain timers on the real clock (about 6 s)")
  const device = makeDevice()
  const AlertsLive = Layer.effect(
    Alerts,
    Effect.flatMap(ActorSystem.ActorSystem, (system) => system.spawn(AlertLog, "alerts"))
  )
  const GrainsLive = Grains.layer([device.kind]).pipe(
    Layer.provideMerge(AlertsLive),
    Layer.provideMerge(ActorSystem.layer({ name: "grains-demo" }))
  )
  yield* scenario(device).pipe(Effect.provide(GrainsLive))
}).pipe(Effect.orDie, Effect.provide(timeline.logger))

// `npx tsx demo/grains.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) {
  Effect.runPromise(grainsDemo).catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
