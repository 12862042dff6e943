/**
 * Entities, entity timers, deadlines and the skippable game clock, on the real clock: about 5 seconds.
 *
 * Players log in together; their randomized 1 s polls spread out. Level 2 unlocks for everyone at a scheduled game
 * time: online players get it from the one-shot their session start armed, an offline player at login. A time skip
 * of one hour makes level 3 due (the polls pick it up, spread over a second) and fires an absolute "season end"
 * one-shot at once. A slow crafting timer drops missed invocations with a warning. Sleep cancels every timer.
 *
 * Every line is `elapsed ms since start | who | what happened`. The default logger is replaced by one that prints
 * warnings and errors on the same timeline and drops the rest.
 *
 * `npx tsx demo/entities.ts` runs it; `import { entitiesDemo } from "./entities.js"` gives the effect.
 */

import { Effect, Layer, Option } from "effect"
import { ActorSystem, Deadline, Entity, EntityTimers, GameClock } from "tickwork"
import { makeTimeline } from "./output.js"

// ------------------------------------------------------------------ the timeline

const timeline = makeTimeline(8)
const { say, scene } = timeline

/** Game time as hh:mm:ss, relative to the start of the demo. */
const gameTime = (ctx: { readonly currentTimeMillis: Effect.Effect<number> }) =>
  Effect.map(ctx.currentTimeMillis, (now) => new Date(timeline.elapsed(now)).toISOString().slice(11, 19))

// ------------------------------------------------------------------ the player

interface PlayerModel {
  readonly nextLevel: number
  readonly nextLevelAvailableAt: Deadline.Deadline
  readonly polls: number
}

type PlayerCommand = { readonly _tag: "UnlockLevel"; readonly level: number; readonly source: string }

type PlayerContext = Entity.EntityContext<PlayerModel, PlayerCommand>

/** Level 2 unlocks for everyone at `levelTwoAt` (game time), each next level one hour later. */
const makePlayer = (levelTwoAt: Deadline.Deadline, seasonEndsAt: Deadline.Deadline) => {
  const unlockTime = (level: number) => Deadline.unsafeMake(levelTwoAt.epochMillis + (level - 2) * 3_600_000)

  /** Check on demand: unlock when due, else a one-shot at the deadline runs the check again. */
  const checkNextLevel = (ctx: PlayerContext) => {
    let atLogin = true // onDue runs during this call when the level is due, later when the one-shot fires
    return ctx
      .checkDeadline({
        deadline: (player) => player.nextLevelAvailableAt,
        onDue: (player) =>
          ctx.send({ _tag: "UnlockLevel", level: player.nextLevel, source: atLogin ? "login check" : "one-shot" })
      })
      .pipe(Effect.ensuring(Effect.sync(() => (atLogin = false))))
  }

  return Entity.make<PlayerModel, PlayerCommand>()({
    name: "Player",
    initialize: () => Effect.succeed({ nextLevel: 2, nextLevelAvailableAt: unlockTime(2), polls: 0 }),
    onSessionStart: (player, ctx) =>
      Effect.gen(function* () {
        const armed = yield* checkNextLevel(ctx)
        const plan = Option.isSome(armed) ? "level 2 is ahead: one-shot armed at its deadline" : "level 2 is due"
        yield* say(ctx.id, `session start (game time ${yield* gameTime(ctx)}): ${plan}`)
        if (ctx.id === "alice") {
          yield* ctx.scheduleExecuteOnActorContext(
            seasonEndsAt,
            Effect.flatMap(gameTime(ctx), (t) => say(ctx.id, `season ended (absolute one-shot, game time ${t})`))
          )
        }
        return player
      }),
    onShutdown: (player, ctx) => say(ctx.id, `shutdown: next level ${player.nextLevel}, polls so far: ${player.polls}`),
    commands: {
      // Idempotent: the poll and the one-shot may both ask for the same level.
      UnlockLevel: (cmd, player, ctx) =>
        cmd.level !== player.nextLevel
          ? Effect.as(say(ctx.id, `level ${cmd.level} already unlocked (${cmd.source}): nothing to do`), player)
          : Effect.flatMap(gameTime(ctx), (t) =>
              Effect.as(say(ctx.id, `unlocked level ${cmd.level} by ${cmd.source} (game time ${t})`), {
                ...player,
                nextLevel: cmd.level + 1,
                nextLevelAvailableAt: unlockTime(cmd.level + 1)
              })
            )
    },
    timers: [
      // Spread the load: a randomized 1 s poll (a minute in a real game) backs up the one-shot.
      {
        name: "first-poll-report",
        interval: "1 second",
        run: (player, ctx) =>
          player.polls === 0
            ? Effect.as(say(ctx.id, "first poll (randomized: 0.5-1.5 s after login)"), { ...player, polls: 1 })
            : Effect.succeed({ ...player, polls: player.polls + 1 })
      },
      EntityTimers.pollDeadline<PlayerModel, PlayerCommand>({
        name: "next-level",
        interval: "1 second",
        deadline: (player) => player.nextLevelAvailableAt,
        onDue: (player, ctx) => ctx.send({ _tag: "UnlockLevel", level: player.nextLevel, source: "poll" })
      })
    ]
  })
}

// ------------------------------------------------------------------ a slow crafting timer

const Crafter = Entity.make<number, never>()({
  name: "Crafter",
  initialize: () => Effect.succeed(0),
  commands: {},
  timers: [
    {
      name: "craft",
      interval: "100 millis",
      initialDelay: 0,
      run: (crafted, ctx) =>
        Effect.zipRight(
          say(ctx.id, `craft #${crafted + 1} (every 100 ms, takes 250 ms)`),
          Effect.as(Effect.sleep("250 millis"), crafted + 1)
        )
    }
  ]
})

// ------------------------------------------------------------------ the tour

const tour = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem
  const levelTwoAt = yield* Deadline.fromNow("1200 millis")
  const seasonEndsAt = yield* Deadline.fromNow("30 minutes")
  const players = yield* Entity.makeRegistry(makePlayer(levelTwoAt, seasonEndsAt))
  const crafters = yield* Entity.makeRegistry(Crafter)

  yield* scene("1. a wave of logins: sessions start together, the polls spread out; level 2 unlocks at 1.2 s")
  for (const id of ["alice", "bob", "carol"]) yield* players.startSession(id)
  yield* Effect.sleep("1600 millis")

  yield* scene("2. dave was offline when level 2 unlocked: he gets it at login")
  yield* players.startSession("dave")
  yield* Effect.sleep("300 millis")

  yield* scene("3. skip the game clock by 1 hour: level 3 is due (the polls spread it), the season ends at once")
  yield* GameClock.skip("1 hour")
  yield* say("main", "skipped 1 hour of game time")
  yield* Effect.sleep("1100 millis")
  const backwards = yield* Effect.flip(GameClock.skip("-1 minute"))
  yield* say("main", `skip("-1 minute") fails with ${backwards._tag}`)

  yield* scene("4. a slow periodic handler: missed invocations are dropped, with one warning each time")
  yield* crafters.startSession("anvil") // any routed message wakes an entity
  yield* Effect.sleep("800 millis")
  yield* crafters.sleep("anvil")

  yield* scene("5. sleep: the shutdown hooks run, every entity timer is cancelled with its actor")
  yield* say("main", `before: ${JSON.stringify(yield* players.stats)}, engine ${(yield* system.stats).engineEntries}`)
  yield* Effect.forEach(["alice", "bob", "carol", "dave"], players.sleep, { concurrency: "unbounded", discard: true })
  yield* say("main", `after:  ${JSON.stringify(yield* players.stats)}, engine ${(yield* system.stats).engineEntries}`)
})

/** The whole demo, with its actor system, game clock and logger provided. */
export const entitiesDemo: Effect.Effect<void> = Effect.gen(function* () {
  yield* timeline.start(
    "tickwork entities demo: entity timers, deadlines and the game clock on the real clock (about 5 s)"
  )
  yield* tour.pipe(
    Effect.scoped,
    Effect.provide(Layer.merge(ActorSystem.layer({ name: "entities-demo" }), GameClock.layer))
  )
}).pipe(Effect.orDie, Effect.provide(timeline.logger))

// `npx tsx demo/entities.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) {
  Effect.runPromise(entitiesDemo).catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
