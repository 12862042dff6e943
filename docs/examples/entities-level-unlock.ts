import { Effect, Layer } from "effect"
import { ActorSystem, Deadline, Entity, EntityTimers, GameClock } from "tickwork"

// The source's worked example: a level unlocks for every player at a scheduled time.
// Rule 1: the model stores the completion time, not a countdown.
interface PlayerModel {
  readonly nextLevel: number
  readonly nextLevelAvailableAt: Deadline.Deadline
}

type PlayerCommand = { readonly _tag: "UnlockLevel"; readonly level: number; readonly source: string }

type PlayerContext = Entity.EntityContext<PlayerModel, PlayerCommand>

/** The unlock schedule, the same for everyone: level 2 two seconds after start, each next level one hour later. */
const makePlayer = (levelTwoAt: Deadline.Deadline) => {
  const unlockTime = (level: number) => Deadline.unsafeMake(levelTwoAt.epochMillis + (level - 2) * 3_600_000)

  // Rule 2: check on demand. Due: unlock now. Ahead: a one-shot at the deadline runs this check again.
  const checkNextLevel = (ctx: PlayerContext) =>
    ctx.checkDeadline({
      deadline: (player) => player.nextLevelAvailableAt,
      onDue: (player) => ctx.send({ _tag: "UnlockLevel", level: player.nextLevel, source: "check" })
    })

  return Entity.make<PlayerModel, PlayerCommand>()({
    name: "Player",
    initialize: () => Effect.succeed({ nextLevel: 2, nextLevelAvailableAt: unlockTime(2) }),
    onSessionStart: (player, ctx) => Effect.as(checkNextLevel(ctx), player),
    commands: {
      // Idempotent: the poll and the one-shot may both ask for the same level.
      UnlockLevel: (cmd, player, ctx) =>
        cmd.level !== player.nextLevel
          ? Effect.succeed(player) // already unlocked
          : Effect.as(Effect.logInfo(`${ctx.id} unlocked level ${cmd.level} (${cmd.source})`), {
              nextLevel: cmd.level + 1,
              nextLevelAvailableAt: unlockTime(cmd.level + 1)
            })
    },
    // Rule 3: spread the load. A randomized poll (first run after 0.5-1.5 intervals) backs up the one-shot, and
    // keeps working when the deadline is edited or the clock skips.
    timers: [
      EntityTimers.pollDeadline<PlayerModel, PlayerCommand>({
        name: "next-level",
        interval: "1 second", // a minute in a real game
        deadline: (player) => player.nextLevelAvailableAt,
        onDue: (player, ctx) => ctx.send({ _tag: "UnlockLevel", level: player.nextLevel, source: "poll" })
      })
    ]
  })
}

const main = Effect.gen(function* () {
  const players = yield* Entity.makeRegistry(makePlayer(yield* Deadline.fromNow("2 seconds")))
  yield* players.startSession("alice") // online: her one-shot unlocks level 2 at 2 s
  yield* Effect.sleep("3 seconds")
  yield* players.startSession("bob") // was offline at 2 s: unlocked at login
  yield* Effect.sleep("200 millis")
  yield* GameClock.skip("1 hour") // level 3 is due: alice's poll sees it within a second
  yield* Effect.sleep("1500 millis")
}).pipe(Effect.scoped, Effect.provide(Layer.merge(ActorSystem.layer({ name: "levels" }), GameClock.layer)))

// `npx tsx docs/examples/entities-level-unlock.ts`; importing this file runs nothing.
if (import.meta.filename === process.argv[1]) Effect.runPromise(main)
