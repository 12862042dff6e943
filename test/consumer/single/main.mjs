// A new user's first program against the installed package, run with plain `node`: an actor timer, a grain with a
// cron timer, a Spot with a CPU worker task and an entity timer, on the real clock. It checks what it saw, prints
// one line per part, and exits non-zero on the first thing that is wrong.
import assert from "node:assert/strict"
import { threadId } from "node:worker_threads"
import { Effect, Layer, Logger, LogLevel, Schema } from "effect"
import { Actor, ActorSystem, Entity, Grain, Grains, Passivation, Spot, Workers } from "tickwork"
import { TestProbe, TestTimers } from "tickwork/testkit"
import { sumOfSquares } from "./tasks.mjs"

const seen = { actorTicks: 0, cronTicks: 0, entityTicks: 0 }

const Ticker = Actor.make()({
  preStart: (ctx) => Effect.as(Effect.orDie(ctx.timers.startTimerWithFixedDelay("tick", "tick", "20 millis")), 0),
  receive: (_msg, _ctx, ticks) =>
    Effect.sync(() => {
      seen.actorTicks++
      return ticks + 1
    })
})

const Reports = Grain.make()({
  name: "reports",
  passivation: Passivation.never,
  onActivate: (props) => Effect.asVoid(Effect.orDie(props.scheduleWithCron("cron", "* * * * * ?"))),
  onReceive: (ctx) =>
    Effect.sync(() => {
      if (ctx.message === "cron") seen.cronTicks++
    })
})

const Player = Entity.make()({
  name: "Player",
  initialize: (_id, ctx) =>
    Effect.as(Effect.orDie(ctx.startPeriodicTimer("30 millis", "30 millis", { _tag: "Tick" })), { ticks: 0 }),
  commands: {
    Wake: (_cmd, model) => Effect.succeed(model),
    Tick: (_cmd, model) =>
      Effect.sync(() => {
        seen.entityTicks++
        return { ticks: model.ticks + 1 }
      })
  }
})

/** Polls `check` every 20 ms until it holds, for up to `millis`. */
const eventually = (what, check, millis = 5_000) =>
  Effect.gen(function* () {
    for (let waited = 0; waited < millis; waited += 20) {
      if (check()) return
      yield* Effect.sleep("20 millis")
    }
    assert.fail(`${what}: not seen within ${millis} ms (${JSON.stringify(seen)})`)
  })

const TypeScriptTask = Workers.cpuTask(new URL("./tasks-in-typescript.ts", import.meta.url), {
  name: "notLoadable",
  input: Schema.Number,
  output: Schema.Number,
  run: (n) => n
})

const main = Effect.gen(function* () {
  const system = yield* ActorSystem.ActorSystem

  yield* system.spawn(Ticker, "ticker")
  yield* eventually("actor timer ticks", () => seen.actorTicks >= 3)
  console.log(`actor timer: ${seen.actorTicks} ticks`)

  yield* Grains.tell(Reports, "daily", "hello")
  yield* eventually("grain cron ticks", () => seen.cronTicks >= 1, 3_000)
  console.log(`grain cron timer: ${seen.cronTicks} ticks`)

  const players = yield* Entity.makeRegistry(Player)
  yield* players.tell("p1", { _tag: "Wake" })
  yield* eventually("entity timer ticks", () => seen.entityTicks >= 3)
  console.log(`entity timer: ${seen.entityTicks} ticks`)

  const spot = yield* Spot.spawn({ initialState: 0 }, "squares")
  const result = yield* spot.run((ctx) =>
    Effect.gen(function* () {
      const computed = yield* Workers.cpu(sumOfSquares, 100).pipe(Spot.Async)
      yield* ctx.update(() => computed.sum)
      return computed
    })
  )
  assert.equal(result.sum, 338_350)
  assert.notEqual(result.thread, threadId, "the task ran on the main thread")
  assert.equal(yield* spot.run((ctx) => ctx.state), 338_350)
  console.log(`spot cpu task: sum ${result.sum} on worker thread ${result.thread}`)

  // A TypeScript task module needs tsx in the project; there is none here, and the task says so.
  const untyped = yield* Effect.flip(Workers.run(TypeScriptTask, 1))
  assert.equal(untyped._tag, "CpuTaskNotFound")
  assert.match(untyped.message, /npm install --save-dev tsx/)
  console.log(`typescript task without tsx: ${untyped._tag}`)
}).pipe(
  Effect.scoped,
  // a busy machine makes the entity's 30 ms timer drop invocations, with a warning each time
  Logger.withMinimumLogLevel(LogLevel.Error),
  Effect.provide(
    Grains.layer([Reports]).pipe(
      Layer.provideMerge(ActorSystem.layer({ name: "consumer", workers: { minThreads: 1, maxThreads: 1 } }))
    )
  )
)

await Effect.runPromise(main)

assert.equal(typeof TestProbe.make, "function")
assert.equal(typeof TestTimers.advance, "function")

// Without the cluster's peer packages, tickwork/cluster fails at import and names every one of them.
const cluster = await import("tickwork/cluster").then(
  () => assert.fail("tickwork/cluster imported without its peer packages"),
  (error) => error
)
for (const name of ["@effect/cluster", "@effect/sql", "@effect/sql-sqlite-node", "@effect/sql-pg", "@effect/rpc"]) {
  assert.match(cluster.message, new RegExp(`${name}[,.@]`))
}
assert.match(cluster.message, /npm install @effect\/cluster@\^/)
console.log(`tickwork/cluster without its peers: ${cluster.message.split(".")[0]}`)

// So does the cluster's testkit, which needs the same peers.
const clusterTestkit = await import("tickwork/cluster/testkit").then(
  () => assert.fail("tickwork/cluster/testkit imported without its peer packages"),
  (error) => error
)
assert.match(clusterTestkit.message, /@effect\/cluster[,.@]/)
