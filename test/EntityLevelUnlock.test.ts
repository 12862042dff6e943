/**
 * The source's worked example, end to end: a level unlocks for every player at a scheduled time.
 *
 * The model stores the completion time (`nextLevelAvailableAt`, rule 1). Session start checks it (rule 2) and, when
 * it is still ahead, arms a one-shot at the deadline so that an online player gets the level on time. A randomized
 * 60 s poll backs it up (rule 3): it spreads the unlocks and stays correct when the deadline is edited. The unlock
 * command is idempotent, because the poll and the one-shot can both see the deadline pass.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Random, TestClock } from "effect"
import { TestProbe, TestSystem } from "tickwork/testkit"
import * as Deadline from "../src/Deadline.js"
import * as Entity from "../src/Entity.js"
import * as EntityTimers from "../src/EntityTimers.js"
import * as GameClock from "../src/GameClock.js"

const MINUTE = 60_000

/** Level n unlocks at (n - 1) × 10 minutes of game time: level 2 at 10 minutes, level 3 at 20 (level 1 is open). */
const unlockTime = (level: number) => Deadline.unsafeMake((level - 1) * 10 * MINUTE)

interface PlayerModel {
  readonly unlocked: ReadonlyArray<number>
  readonly nextLevel: number
  readonly nextLevelAvailableAt: Deadline.Deadline
  /** Unlock commands that found the level already unlocked. */
  readonly alreadyUnlocked: number
}

type PlayerCommand =
  | { readonly _tag: "UnlockLevel"; readonly level: number; readonly source: string }
  | { readonly _tag: "SetNextLevelAt"; readonly at: Deadline.Deadline }

type PlayerContext = Entity.EntityContext<PlayerModel, PlayerCommand>

const makePlayer = (probe: TestProbe.TestProbe<string>) => {
  /** The spec's CheckNextLevel: unlock when due, else a one-shot at the deadline that checks again. */
  const checkNextLevel = (ctx: PlayerContext, source: string) =>
    ctx.checkDeadline({
      deadline: (player) => player.nextLevelAvailableAt,
      onDue: (player) => ctx.send({ _tag: "UnlockLevel", level: player.nextLevel, source })
    })

  return Entity.make<PlayerModel, PlayerCommand>()({
    name: "Player",
    initialize: () =>
      Effect.succeed({ unlocked: [1], nextLevel: 2, nextLevelAvailableAt: unlockTime(2), alreadyUnlocked: 0 }),
    onSessionStart: (player, ctx) => Effect.as(checkNextLevel(ctx, "session"), player),
    commands: {
      // A synchronized server action: idempotent, it checks that the level is still the next one.
      UnlockLevel: (cmd, player, ctx) => {
        if (cmd.level !== player.nextLevel) {
          return Effect.succeed({ ...player, alreadyUnlocked: player.alreadyUnlocked + 1 })
        }
        return Effect.as(probe.ref.tell(`${ctx.id} unlocked level ${cmd.level} (${cmd.source})`), {
          ...player,
          unlocked: [...player.unlocked, cmd.level],
          nextLevel: cmd.level + 1,
          nextLevelAvailableAt: unlockTime(cmd.level + 1)
        })
      },
      // An admin edit: only the poll notices it; the one-shot armed for the old deadline does not.
      SetNextLevelAt: (cmd, player) => Effect.succeed({ ...player, nextLevelAvailableAt: cmd.at })
    },
    timers: [
      EntityTimers.pollDeadline<PlayerModel, PlayerCommand>({
        name: "next-level",
        interval: "60 seconds",
        deadline: (player) => player.nextLevelAvailableAt,
        onDue: (player, ctx) => ctx.send({ _tag: "UnlockLevel", level: player.nextLevel, source: "poll" })
      })
    ]
  })
}

/** A test system whose `Random` (the randomized polls) is seeded with `seed`, or is `random`, and a game clock. */
const live = (random: string | Random.Random) =>
  Layer.merge(
    TestSystem.layer(
      typeof random === "string" ? { name: "level-unlock", seed: random } : { name: "level-unlock", random }
    ),
    GameClock.layer
  )

/** Player `id`'s model, read in its mailbox order. */
const getPlayer = (players: Entity.EntityRegistry<PlayerCommand>, id: string) =>
  TestSystem.inside(TestSystem.entity<PlayerModel, PlayerCommand>(players, id), (_ctx, player) =>
    Effect.succeed(player)
  )

const unlocks = (probe: TestProbe.TestProbe<string>) =>
  Effect.map(probe.receiveAll, (all) => all.map((r) => `${r.message} @${r.at / 1000}s`))

describe("level unlock (spec example)", () => {
  it.effect("an offline player gets the level at session start", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      // the player is offline (asleep) while the game clock passes the unlock time
      yield* GameClock.skip("15 minutes")
      yield* TestClock.adjust("5 seconds")
      yield* players.startSession("alice")
      assert.deepStrictEqual(yield* unlocks(probe), ["alice unlocked level 2 (session) @5s"])
      const alice = yield* getPlayer(players, "alice")
      assert.deepStrictEqual(alice.unlocked, [1, 2])
      assert.isTrue(Deadline.isDue(unlockTime(2), yield* GameClock.currentTimeMillis))
    }).pipe(Effect.scoped, Effect.provide(live("offline")))
  )

  it.effect("an online player gets the level on time from the one-shot; the poll covers the next one", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.startSession("bob")
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(yield* unlocks(probe), [])
      // the poll runs about once a minute; the deadline is at 10 minutes: the one-shot gets there on the dot
      yield* TestClock.adjust("10 minutes")
      const first = yield* unlocks(probe)
      assert.strictEqual(first.length, 1)
      assert.match(first[0]!, /^bob unlocked level 2 \((session|poll)\) @600s$/)
      // nothing re-arms the one-shot after the unlock: level 3 (at 20 minutes) comes from the poll, within a minute
      yield* TestClock.adjust("11 minutes")
      const second = (yield* probe.receiveAll).map((r) => ({ message: r.message, at: r.at }))
      assert.strictEqual(second.length, 1)
      assert.strictEqual(second[0]!.message, "bob unlocked level 3 (poll)")
      assert.isAtLeast(second[0]!.at, 20 * MINUTE)
      assert.isBelow(second[0]!.at, 21 * MINUTE)
    }).pipe(Effect.scoped, Effect.provide(live("online")))
  )

  it.effect("the poll and the one-shot race on the same deadline: the unlock happens once", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      // U = 0.5 puts the first poll at exactly one interval (60 s), so polls land on 60 s, 120 s, ..., 600 s:
      // the poll and the one-shot both see the 600 s deadline pass at the same instant
      yield* players.startSession("carol")
      yield* TestClock.adjust("10 minutes")
      assert.deepStrictEqual(yield* unlocks(probe), ["carol unlocked level 2 (session) @600s"])
      const carol = yield* getPlayer(players, "carol")
      assert.deepStrictEqual(carol.unlocked, [1, 2], "unlocked exactly once")
      // The one-shot's tick is handled first and its UnlockLevel right after it (ticks run in place on an idle
      // entity), so the poll usually sees the new model; when the model lags, the unlock itself is idempotent:
      assert.isAtMost(carol.alreadyUnlocked, 1)
      yield* players.tell("carol", { _tag: "UnlockLevel", level: 2, source: "poll" })
      yield* players.tell("carol", { _tag: "UnlockLevel", level: 2, source: "session" })
      const after = yield* getPlayer(players, "carol")
      assert.deepStrictEqual(after.unlocked, [1, 2], "a lagging duplicate unlock changes nothing")
      assert.strictEqual(after.alreadyUnlocked, carol.alreadyUnlocked + 2)
    }).pipe(Effect.scoped, Effect.provide(live(Random.fixed([0.5]))))
  )

  it.effect("a time skip past the deadline fires the one-shot at once", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.startSession("dave")
      yield* TestClock.adjust("3 seconds")
      yield* GameClock.skip("10 minutes")
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(yield* unlocks(probe), ["dave unlocked level 2 (session) @3s"])
    }).pipe(Effect.scoped, Effect.provide(live(Random.fixed([0.99]))))
  )

  it.effect("the poll stays correct when an admin moves the deadline (the one-shot does not know)", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      yield* players.startSession("erin") // one-shot armed for 10 minutes
      yield* TestClock.adjust("30 seconds")
      yield* players.tell("erin", { _tag: "SetNextLevelAt", at: Deadline.unsafeMake(0) }) // due now
      yield* TestClock.adjust("2 minutes")
      const got = (yield* probe.receiveAll).map((r) => ({ message: r.message, at: r.at }))
      assert.deepStrictEqual(
        got.map((g) => g.message),
        ["erin unlocked level 2 (poll)"]
      )
      assert.isBelow(got[0]!.at, 30_000 + 90_000, "within the poll's first run (at most 1.5 intervals)")
    }).pipe(Effect.scoped, Effect.provide(live("admin")))
  )

  it.effect("many players sharing the deadline: the poll spreads the unlocks of offline-then-online players", () =>
    Effect.gen(function* () {
      const probe = yield* TestProbe.make<string>()
      const players = yield* Entity.makeRegistry(makePlayer(probe))
      const ids = Array.from({ length: 30 }, (_, i) => `p${i}`)
      // they are online (awake) but nobody starts a session: only the polls will notice the deadline
      yield* Effect.forEach(ids, (id) => players.tell(id, { _tag: "SetNextLevelAt", at: unlockTime(2) }), {
        discard: true
      })
      yield* TestClock.adjust(0)
      yield* GameClock.skip("10 minutes") // the shared deadline passes for everyone at once
      yield* TestClock.adjust("90 seconds")
      const at = (yield* probe.receiveAll).map((r) => r.at)
      assert.strictEqual(at.length, 30, "every player unlocked once")
      assert.isAtLeast(new Set(at).size, 25, "spread over the interval, not one spike")
    }).pipe(Effect.scoped, Effect.provide(live("spread")))
  )
})
