import { Clock, Context, Effect, Layer, TestClock, TestContext } from "effect"
import { Actor, type ActorRef, ActorSystem, Grain, Grains } from "tickwork"

type DeviceMsg = { readonly _tag: "DevicePing" } | { readonly _tag: "CheckLiveness" }

type DeviceOffline = { readonly _tag: "DeviceOffline"; readonly device: string; readonly silentForMillis: number }

/** Where devices send their alerts: an actor, found through the grain's requirements. */
class Alerts extends Context.Tag("Alerts")<Alerts, ActorRef.ActorRef<DeviceOffline>>() {}

/** Prints a line stamped with the Clock's time in seconds. */
const at = (what: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => console.log(`${String(now / 1000).padStart(5)} s  ${what}`))
  )

const Device = Grain.make<DeviceMsg>()({
  name: "device",
  // Check liveness every 30 seconds for as long as this grain is active. The timer stays dormant until onActivate
  // has returned; if scheduling failed, the activation would fail and no timer would run.
  onActivate: (props) =>
    Effect.zipRight(props.schedule({ _tag: "CheckLiveness" }, "30 seconds"), Clock.currentTimeMillis),
  // The state is the time the device was last seen.
  onReceive: (ctx, lastSeen) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      switch (ctx.message._tag) {
        case "DevicePing":
          return now
        case "CheckLiveness": {
          yield* at(`check liveness: last seen ${(now - lastSeen) / 1000} s ago`)
          if (now - lastSeen > 60_000) {
            const alerts = yield* Alerts
            yield* ctx.tellActor(alerts, {
              _tag: "DeviceOffline",
              device: ctx.identity.key,
              silentForMillis: now - lastSeen
            })
          }
          return lastSeen
        }
      }
    })
  // No onDeactivate needed: every timer is stopped automatically when the grain deactivates.
})

const AlertLog = Actor.make<DeviceOffline>()({
  receive: (alert) => at(`ALERT: ${alert.device} silent for ${alert.silentForMillis / 1000} s`)
})

const AlertsLive = Layer.effect(
  Alerts,
  Effect.flatMap(ActorSystem.ActorSystem, (system) => system.spawn(AlertLog, "alerts"))
).pipe(Layer.orDie)

const GrainsLive = Grains.layer([Device]).pipe(
  Layer.provideMerge(AlertsLive),
  Layer.provideMerge(ActorSystem.layer({ name: "devices" }))
)

const main = Effect.gen(function* () {
  // The device pings every 10 seconds for 40 seconds, then goes silent.
  for (let second = 0; second <= 40; second += 10) {
    yield* at("ping")
    yield* Grains.tell(Device, "dev-1", { _tag: "DevicePing" })
    yield* TestClock.adjust("10 seconds")
  }
  yield* TestClock.adjust("2 minutes")
}).pipe(
  Effect.provide(GrainsLive),
  // The real durations (30 s, 1 min) on simulated time: a TestClock moved by hand, so this file runs at once.
  // Leave this line out in an application.
  Effect.provide(TestContext.TestContext)
)

// `npx tsx docs/examples/grains-device.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
