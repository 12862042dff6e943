/**
 * `npm start`: a tour of tickwork's timers on the real clock, about 10 seconds.
 *
 * Every line is `elapsed ms since start | who | what happened`. The default logger is replaced by one that prints
 * warnings and errors on the same timeline (the SchedulerError and the supervisor's restart show up there) and drops
 * the rest, so the output stays readable.
 */

import { Cause, Clock, Effect, Metric, Schedule } from "effect"
import { Actor, type ActorRef, ActorSystem, EventStream, Metrics } from "tickwork"
import { entitiesDemo } from "./entities.js"
import { grainsDemo } from "./grains.js"
import { collect, makeTimeline } from "./output.js"
import { spotsDemo } from "./spots.js"

// ------------------------------------------------------------------ the timeline

const timeline = makeTimeline(12)
const { say, scene } = timeline

// ------------------------------------------------------------------ the actors

type Beat = { readonly _tag: "Beat" }

/** Beats every second for the whole demo (fixed delay); its postStop runs at shutdown. */
const Heartbeat = Actor.make<Beat>()({
  preStart: (ctx) =>
    Effect.as(Effect.orDie(ctx.timers.startTimerWithFixedDelay("beat", { _tag: "Beat" }, "1 second")), 0),
  receive: (_beat, _ctx, beats) => Effect.as(say("heartbeat", `beat ${beats + 1} (fixed delay, 1 s)`), beats + 1),
  postStop: (_ctx, beats) => say("heartbeat", `postStop after ${beats} beats: stopped by the shutdown`)
})

type ReminderMsg = { readonly _tag: "Fire"; readonly key: string } | { readonly _tag: "CancelIt" }

/** Two single timers; a third one cancels the second before it is due. */
const Reminders = Actor.make<ReminderMsg>()({
  preStart: (ctx) =>
    Effect.gen(function* () {
      yield* ctx.timers.startSingleTimer("fires", { _tag: "Fire", key: "fires" }, "1200 millis")
      yield* ctx.timers.startSingleTimer("cancelled", { _tag: "Fire", key: "cancelled" }, "1400 millis")
      yield* ctx.timers.startSingleTimer("cancel-it", { _tag: "CancelIt" }, "600 millis")
      yield* say("reminders", `started single timers: ${(yield* ctx.timers.activeKeys).join(", ")}`)
    }).pipe(Effect.orDie),
  receive: (msg, ctx) =>
    msg._tag === "CancelIt"
      ? Effect.flatMap(ctx.timers.cancel("cancelled"), (cancelled) =>
          say("reminders", `cancel("cancelled") -> ${cancelled}: it will never fire`)
        )
      : Effect.flatMap(ctx.timers.isTimerActive(msg.key), (active) =>
          say("reminders", `single timer "${msg.key}" fired once; isTimerActive -> ${active}`)
        )
})

/** A fixed-rate timer (200 ms grid) with a 350 ms handler: ticks queue up; after 6 it cancels the timer. */
const SlowRate = Actor.make<"tick">()({
  preStart: (ctx) =>
    Effect.gen(function* () {
      yield* ctx.timers.startTimerAtFixedRate("rate", "tick", "200 millis")
      return { since: yield* Clock.currentTimeMillis, handled: 0 }
    }).pipe(Effect.orDie),
  receive: (_tick, ctx, state) =>
    Effect.gen(function* () {
      const handled = state.handled + 1
      const lag = (yield* Clock.currentTimeMillis) - (state.since + handled * 200)
      yield* say("slow-rate", `tick ${handled} (grid slot ${handled * 200} ms) handled ${lag} ms behind`)
      yield* Effect.sleep("350 millis")
      if (handled === 6) {
        const cancelled = yield* ctx.timers.cancel("rate")
        yield* say("slow-rate", `cancel("rate") -> ${cancelled}: the ticks still queued are now stale`)
      }
      return { ...state, handled }
    })
})

/** Retries on an exponential backoff (200, 400, 800, 1600 ms); the timer ends with the schedule. */
const Retry = Actor.make<"attempt">()({
  preStart: (ctx) =>
    Effect.as(
      ctx.timers.startTimerWithSchedule(
        "retry",
        "attempt",
        Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(4)))
      ),
      0
    ),
  receive: (_attempt, ctx, attempts) =>
    Effect.gen(function* () {
      const active = yield* ctx.timers.isTimerActive("retry")
      const note = active ? "next delay doubles" : "schedule done, the timer has ended"
      yield* say("retry", `attempt ${attempts + 1} (backoff): ${note}`)
      return attempts + 1
    })
})

/** Subscribed to SchedulerError on the event stream. */
const Alarm = Actor.make<EventStream.SchedulerError>()({
  receive: (event) => say("alarm", `SchedulerError received: ${String(Cause.squash(event.cause))}`)
})

type SessionMsg = { readonly _tag: "Request" } | { readonly _tag: "Nudge" } | { readonly _tag: "Idle" }

/** Receive timeout of 400 ms; closes after two idle periods in a row. */
const Session = Actor.make<SessionMsg>()({
  preStart: (ctx) => Effect.as(Effect.orDie(ctx.setReceiveTimeout("400 millis", { _tag: "Idle" })), 0),
  receive: (msg, ctx, idle) => {
    switch (msg._tag) {
      case "Request":
        return Effect.as(say("session", "request (a user message: the idle clock restarts)"), 0)
      case "Nudge":
        return Effect.as(say("session", "nudge (a scheduler message is a tick: not activity)"), idle)
      case "Idle":
        return idle === 0
          ? Effect.as(say("session", "idle for 400 ms (receive timeout)"), 1)
          : Effect.as(Effect.zipRight(say("session", "idle again: closing"), ctx.stop(ctx.self)), 2)
    }
  }
})

type FlakyMsg = { readonly _tag: "Work" } | { readonly _tag: "Crash" }

let incarnations = 0

/** Works on a 200 ms fixed-rate timer; a Crash takes 400 ms and then dies. The guardian restarts it. */
const Flaky = Actor.make<FlakyMsg>()({
  preStart: (ctx) =>
    Effect.as(Effect.orDie(ctx.timers.startTimerAtFixedRate("work", { _tag: "Work" }, "200 millis")), ++incarnations),
  receive: (msg, _ctx, incarnation) =>
    msg._tag === "Work"
      ? Effect.as(say("flaky", `work tick, handled by incarnation ${incarnation}`), incarnation)
      : Effect.zipRight(
          say("flaky", "crash: busy 400 ms, then dies (work ticks queue up meanwhile)"),
          Effect.zipRight(Effect.sleep("400 millis"), Effect.die(`incarnation ${incarnation} crashed`))
        ),
  preRestart: (_ctx, incarnation) => say("flaky", `preRestart: incarnation ${incarnation} ends, its timers cancelled`),
  postRestart: (_ctx, incarnation) => say("flaky", `postRestart: incarnation ${incarnation} starts a fresh timer`)
})

// ------------------------------------------------------------------ the tour

const staleCount = Effect.map(Metric.value(Metrics.ticksDropped("stale")), (state) => state.count)

const tour = Effect.gen(function* () {
  yield* timeline.start("tickwork demo: timers on the real clock (about 10 s)")
  const system = yield* ActorSystem.ActorSystem
  const stopAll = (refs: ReadonlyArray<ActorRef.ActorRef<never>>) =>
    Effect.forEach(refs, system.stop, { discard: true })

  yield* scene("1. context.timers: a heartbeat (runs until shutdown) and single timers, one of them cancelled")
  yield* system.spawn(Heartbeat, "heartbeat")
  const reminders = yield* system.spawn(Reminders, "reminders")
  yield* Effect.sleep("1600 millis")
  yield* stopAll([reminders])

  yield* scene("2. fixed rate with a slow handler: ticks queue, none is merged or skipped")
  let staleBefore = yield* staleCount
  const slowRate = yield* system.spawn(SlowRate, "slow-rate")
  yield* Effect.sleep("2400 millis")
  yield* say("main", `stale ticks dropped after the cancel: ${(yield* staleCount) - staleBefore}`)
  yield* stopAll([slowRate])

  yield* scene("3. a Schedule timer (exponential backoff) and a system-scheduler task that fails once")
  const alarm = yield* system.spawn(Alarm, "alarm")
  yield* system.eventStream.subscribe(alarm, EventStream.SchedulerError)
  const retry = yield* system.spawn(Retry, "retry")
  let runs = 0
  const task = Effect.suspend(() => {
    runs++
    return runs === 2
      ? Effect.zipRight(say("task", `run ${runs}: fails`), Effect.fail(`downstream unavailable (run ${runs})`))
      : say("task", `run ${runs}: ok`)
  })
  const taskHandle = yield* system.scheduler.scheduleAtFixedRateFunction("300 millis", "600 millis", task)
  yield* Effect.sleep("2500 millis")
  yield* say("main", `task cancel -> ${yield* taskHandle.cancel} (it kept running after the failure)`)
  yield* Effect.sleep("600 millis")
  yield* stopAll([retry, alarm])

  yield* scene("4. receive timeout: user messages count as activity, ticks do not")
  const session = yield* system.spawn(Session, "session")
  yield* system.scheduler.scheduleOnce("350 millis", session, { _tag: "Nudge" })
  yield* Effect.sleep("150 millis")
  yield* session.tell({ _tag: "Request" })
  yield* Effect.sleep("1000 millis")

  yield* scene("5. restart: ticks of the old incarnation are never handled")
  const flaky = yield* system.spawn(Flaky, "flaky")
  yield* Effect.sleep("650 millis")
  staleBefore = yield* staleCount
  yield* flaky.tell({ _tag: "Crash" })
  yield* Effect.sleep("1000 millis")
  yield* say("main", `old-incarnation ticks dropped as stale: ${(yield* staleCount) - staleBefore}`)
  yield* stopAll([flaky])

  yield* scene("6. shutdown: every actor stopped, every timer cancelled, nothing left")
  yield* say("main", `stats before: ${JSON.stringify(yield* system.stats)}`)
  yield* system.shutdown
  yield* say("main", `stats after:  ${JSON.stringify(yield* system.stats)}`)
  const delivered = yield* Effect.forEach(
    ["actor_timer", "receive_timeout", "scheduler_message", "scheduler_function"] as const,
    (kind) => Effect.map(Metric.value(Metrics.ticksDelivered(kind)), (state) => `${kind} ${state.count}`)
  )
  const dropped = yield* Effect.forEach(["stale", "mailbox_full", "owner_stopped"] as const, (reason) =>
    Effect.map(Metric.value(Metrics.ticksDropped(reason)), (state) => `${reason} ${state.count}`)
  )
  yield* say("main", `ticks delivered: ${delivered.join(", ")}`)
  yield* say("main", `ticks dropped:   ${dropped.join(", ")}`)
})

/**
 * After the actor tour, the grains, Spots and entities demos run at the same time (each on its own real-clock
 * timeline, with its own actor system) and their timelines are printed one after the other, so the whole demo stays
 * under 20 seconds. Each also runs alone: `npx tsx demo/grains.ts`, `demo/spots.ts`, `demo/entities.ts`.
 */
const models = Effect.gen(function* () {
  console.log("\n== grains, Spots and entities: three more timelines, recorded side by side (about 6 s) ==")
  const [grains, spots, entities] = yield* Effect.all(
    [collect(grainsDemo), collect(spotsDemo), collect(entitiesDemo)],
    {
      concurrency: "unbounded"
    }
  )
  for (const [title, lines] of [
    ["GRAINS: a device grain with a liveness timer and a cron timer, idle passivation, reactivation", grains],
    ["SPOTS: one slow Spot timer handler under each overrun policy, with the tick fields", spots],
    ["ENTITIES: randomized periodic timers, a game-clock time skip and the level-unlock example", entities]
  ] as const) {
    console.log(`\n== ${title}`)
    for (const line of lines) console.log(line)
  }
  console.log(
    [
      "",
      "== Where to read on",
      "  README.md                  the quick start, the API table, the options",
      "  docs/choosing.md           actors, grains, Spots or entities: which one for what",
      "  docs/actors.md             ctx.timers, the system scheduler, supervision, shutdown",
      "  docs/grains.md, spots.md, entities.md   the other three models",
      "  docs/testing.md            timer tests under TestClock",
      "  docs/reliability.md        what tickwork guarantees when the code around it makes mistakes",
      "  docs/cluster.md            when one process is not enough"
    ].join("\n")
  )
})

Effect.runPromise(
  tour.pipe(
    Effect.provide(ActorSystem.layer({ name: "demo" })),
    Effect.provide(timeline.logger),
    Effect.zipRight(models)
  )
).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
