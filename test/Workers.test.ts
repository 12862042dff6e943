import { threadId } from "node:worker_threads"
import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Schema, TestClock } from "effect"
import { ActorSystem } from "tickwork"
import * as Spot from "../src/Spot.js"
import * as Workers from "../src/Workers.js"
import { busyFor, checkedSqrt, nextDay, spin, threadOf } from "./fixtures/spotCpuTasks.js"
import { captureLogs } from "./utils.js"

/** Waits real time (worker threads start and exit in real time, whatever the test clock says). */
const realSleep = (millis: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, millis)))

/** Polls `check` in real time until it holds, for up to `millis`. */
const eventually = (check: Effect.Effect<boolean>, millis = 10_000): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    for (let waited = 0; waited < millis; waited += 20) {
      if (yield* check) return true
      yield* realSleep(20)
    }
    return yield* check
  })

/** A task defined in the fixture module's name space but not in the module itself: worker threads cannot find it. */
const ghost = Workers.cpuTask(new URL("./fixtures/spotCpuTasks.ts", import.meta.url), {
  name: "ghost",
  input: Schema.Number,
  output: Schema.Number,
  run: (n) => n
})

describe("Workers options", () => {
  it.effect("defaults: one thread kept, one per core at most, 30 s idle time, 1000 queued", () =>
    Effect.gen(function* () {
      const options = yield* Workers.decodeOptions({})
      assert.strictEqual(options.minThreads, 1)
      assert.isAtLeast(options.maxThreads, 1)
      assert.strictEqual(Duration.toMillis(options.idleTime), 30_000)
      assert.strictEqual(options.queueLength, 1000)
      const custom = yield* Workers.decodeOptions({
        minThreads: 0,
        maxThreads: 3,
        idleTime: "2 seconds",
        queueLength: 0
      })
      assert.deepStrictEqual(custom, {
        minThreads: 0,
        maxThreads: 3,
        idleTime: Duration.seconds(2),
        queueLength: 0
      })
    })
  )

  it.effect("bad options fail with one readable line per problem", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Workers.decodeOptions({ minThreads: -1, maxThreads: 1.5, idleTime: "soon", queueLength: -2, threads: 4 })
      )
      assert.strictEqual(error._tag, "InvalidWorkersOptions")
      const lines = error.message.split("\n")
      assert.strictEqual(lines[0], "invalid Workers options:")
      assert.include(error.message, "- minThreads: must be an integer >= 0, got -1")
      assert.include(error.message, "- maxThreads: must be an integer >= 1, got 1.5")
      assert.include(error.message, '- idleTime: must be a positive finite duration such as "30 seconds"')
      assert.include(error.message, "- queueLength: must be an integer >= 0, got -2")
      assert.include(error.message, "- threads: ")
      const crossed = yield* Effect.flip(Workers.decodeOptions({ minThreads: 4, maxThreads: 2 }))
      assert.include(crossed.message, "- minThreads: must not exceed maxThreads (2), got 4")
      const zero = yield* Effect.flip(Workers.decodeOptions({ idleTime: 0 }))
      assert.include(zero.message, "- idleTime: must be a positive finite duration")
    })
  )

  it.effect("options of the wrong type or not an object: one line each, as ActorSystem.layer reports them", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ maxThreads: "2" }, '- maxThreads: expected number, got "2"'],
        [{ queueLength: Number.NaN }, "- queueLength: must be an integer >= 0, got NaN"],
        [{ maxThreads: Number.POSITIVE_INFINITY }, "- maxThreads: must be an integer >= 1, got Infinity"],
        [null, "- options: must be an object such as { maxThreads: 2 }, got null"],
        ["fast", '- options: must be an object such as { maxThreads: 2 }, got "fast"'],
        [{ idleTime: 0.001 }, "- idleTime: must be at least 1 ms, the timer engine's resolution, got 0.001 ms"]
      ]
      for (const [options, line] of cases) {
        const error = yield* Effect.flip(Workers.decodeOptions(options))
        assert.strictEqual(error._tag, "InvalidWorkersOptions")
        assert.deepStrictEqual(error.message.split("\n"), ["invalid Workers options:", line])
      }
      const several = yield* Effect.flip(Workers.decodeOptions({ minThreads: "1", maxThreads: 0 }))
      assert.deepStrictEqual(several.message.split("\n").slice(1), [
        '- minThreads: expected number, got "1"',
        "- maxThreads: must be an integer >= 1, got 0"
      ])
      // undefined means "the defaults", as for the layer
      assert.strictEqual((yield* Workers.decodeOptions(undefined)).queueLength, 1000)
    })
  )

  it.effect("the layer fails with the same error, before starting any thread", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.scoped(Effect.asVoid(Workers.Workers.pipe(Effect.provide(Workers.layer({ maxThreads: 0 })))))
      )
      assert.strictEqual(error._tag, "InvalidWorkersOptions")
    })
  )
})

describe("Workers pool limits", () => {
  it.effect("a full queue is a typed error at once, not a hang; the pool recovers", () =>
    Effect.gen(function* () {
      const workers = yield* Workers.Workers
      const first = yield* Effect.fork(workers.run(busyFor, 300))
      const second = yield* Effect.fork(workers.run(busyFor, 10))
      yield* eventually(Effect.map(workers.stats, (s) => s.running === 1 && s.queued === 1))
      assert.deepStrictEqual(yield* workers.stats, { threads: 1, running: 1, queued: 1 })
      const full = yield* Effect.flip(workers.run(spin, 1))
      assert.deepStrictEqual(full, new Workers.WorkerQueueFull({ maxThreads: 1, queueLength: 1 }))
      assert.strictEqual(full.message, "worker queue full: 1 threads busy and 1 tasks waiting")
      // inside a Spot, Yield fails at once too, before giving the turn back
      const spot = yield* Spot.spawn({ initialState: 0 }, "full")
      const fromSpot = yield* Effect.flip(spot.run(() => Workers.cpu(spin, 1).pipe(Spot.Yield)))
      assert.strictEqual(fromSpot._tag, "WorkerQueueFull")
      yield* first
      yield* second
      assert.strictEqual(yield* workers.run(spin, 1), 0)
      assert.deepStrictEqual(yield* workers.stats, { threads: 1, running: 0, queued: 0 })
    }).pipe(
      // the pool is configured in the system's root options
      Effect.provide(ActorSystem.layer({ name: "full", workers: { minThreads: 1, maxThreads: 1, queueLength: 1 } }))
    )
  )

  it.effect("minThreads 0: no thread before the first task; idle threads exit after idleTime (TestClock)", () =>
    Effect.gen(function* () {
      const workers = yield* Workers.Workers
      yield* realSleep(100)
      assert.strictEqual((yield* workers.stats).threads, 0, "nothing started with the layer")
      yield* Effect.all([workers.run(busyFor, 100), workers.run(busyFor, 100)], { concurrency: 2 })
      assert.strictEqual((yield* workers.stats).threads, 2)
      yield* TestClock.adjust("500 millis")
      yield* realSleep(100)
      assert.strictEqual((yield* workers.stats).threads, 2, "not idle long enough")
      yield* TestClock.adjust("2 seconds")
      assert.isTrue(yield* eventually(Effect.map(workers.stats, (s) => s.threads === 0)))
      assert.strictEqual(yield* workers.run(spin, 1), 0, "a thread starts again on demand")
    }).pipe(Effect.provide(Workers.layer({ minThreads: 0, maxThreads: 2, idleTime: "1 second" })))
  )

  it.effect("closing the layer ends every thread", () =>
    Effect.gen(function* () {
      let stats: Workers.Stats | undefined
      const exit = yield* Effect.exit(
        Effect.scoped(
          Effect.gen(function* () {
            const workers = yield* Workers.Workers
            yield* workers.run(spin, 1)
            stats = yield* workers.stats
            return workers
          }).pipe(Effect.provide(Workers.layer({ minThreads: 2, maxThreads: 2 })))
        )
      )
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(stats?.threads, 2)
      const workers = (exit as Exit.Success<Workers.WorkersService, never>).value
      assert.isTrue(yield* eventually(Effect.map(workers.stats, (s) => s.threads === 0)))
      const after = yield* Effect.exit(workers.run(spin, 1))
      assert.isTrue(Exit.isFailure(after) && (Cause.isInterruptedOnly(after.cause) || Cause.isFailure(after.cause)))
    })
  )
})

describe("CPU tasks that cannot run", () => {
  // no thread starts before the first task, and these never reach one
  const Pool = Workers.layer({ minThreads: 0, maxThreads: 1 })
  const good = { name: "double", input: Schema.Number, output: Schema.Number, run: (n: number) => n * 2 }
  const unusable: ReadonlyArray<readonly [Workers.CpuTask<number, number>, string]> = [
    [Workers.cpuTask("tasks.ts", good), "cpu task double cannot run: the module must be its URL: pass import.meta.url"],
    [Workers.cpuTask(import.meta.url, { ...good, name: "" }), 'the name must be a non-empty string, got ""'],
    [Workers.cpuTask(import.meta.url, { ...good, input: Number } as never), "input must be a Schema, got a function"],
    [
      Workers.cpuTask(import.meta.url, { ...good, output: undefined } as never),
      "output must be a Schema, got undefined"
    ],
    [Workers.cpuTask(import.meta.url, { ...good, run: 2 } as never), "run must be a function, got 2"],
    [{ name: "double" } as never, "cpu task an object cannot run: it is not a CpuTask"],
    [undefined as never, "cpu task undefined cannot run: it is not a CpuTask"]
  ]

  it.effect("cpuTask never throws; running the task fails with InvalidCpuTask, before any thread starts", () =>
    Effect.gen(function* () {
      for (const [task, message] of unusable) {
        const error = yield* Effect.flip(Workers.run(task, 1))
        assert.strictEqual(error._tag, "InvalidCpuTask")
        assert.include(error.message, message)
        const service = yield* Workers.Workers
        assert.strictEqual((yield* Effect.flip(service.run(task, 1)))._tag, "InvalidCpuTask")
      }
      assert.strictEqual((yield* (yield* Workers.Workers).stats).threads, 0, "nothing was sent to a thread")
    }).pipe(Effect.provide(Pool))
  )

  it.effect("a Spot's worker call of such a task fails with InvalidCpuTask under every terminator", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: 0 }, "tasks")
      for (const [task] of unusable) {
        const call = Workers.cpu(task, 1)
        assert.strictEqual((yield* Effect.flip(spot.run(() => call.pipe(Spot.Yield))))._tag, "InvalidCpuTask")
        assert.strictEqual((yield* Effect.flip(spot.run(() => call.pipe(Spot.Async))))._tag, "InvalidCpuTask")
      }
      assert.strictEqual(yield* spot.run((ctx) => ctx.state), 0, "the Spot goes on")
    }).pipe(Effect.provide(ActorSystem.layer({ name: "tasks" })), Effect.provide(Pool))
  )
})

// Last in the file: @effect/vitest 0.30's `layer` installs its runtime on the global `it`, so every `it.effect` after
// it in the file would run with this pool provided around it.
layer(Workers.layer({ minThreads: 1, maxThreads: 2 }))("Workers pool", (it) => {
  it.effect("runs a task on another thread; input and output are copied through their Schemas", () =>
    Effect.gen(function* () {
      const thread = yield* Workers.run(threadOf, undefined)
      assert.notStrictEqual(thread, threadId)
      const tomorrow = yield* Workers.run(nextDay, new Date("2024-02-28T12:00:00.000Z"))
      assert.instanceOf(tomorrow, Date)
      assert.strictEqual(tomorrow.toISOString(), "2024-02-29T12:00:00.000Z")
      assert.strictEqual(yield* Workers.run(spin, 3), ((0 * 31 + 0) * 31 + 1) * 31 + 2)
    })
  )

  it.effect("a computation that throws fails with CpuTaskFailed; bad input is caught before it is sent", () =>
    Effect.gen(function* () {
      const thrown = yield* Effect.flip(Workers.run(checkedSqrt, -4))
      assert.deepStrictEqual(thrown, new Workers.CpuTaskFailed({ task: "checkedSqrt", reason: "negative input -4" }))
      assert.strictEqual(thrown.message, "cpu task checkedSqrt failed: negative input -4")
      const badInput = yield* Effect.flip(Workers.run(nextDay, new Date(Number.NaN)))
      assert.strictEqual(badInput._tag, "CpuTaskFailed")
      assert.include((badInput as Workers.CpuTaskFailed).reason, "input does not match its Schema")
      assert.strictEqual(yield* Workers.run(checkedSqrt, 9), 3)
    })
  )

  it.effect("a task its module does not define fails with CpuTaskNotFound", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Workers.run(ghost, 1))
      assert.strictEqual(error._tag, "CpuTaskNotFound")
      assert.include(error.message, "cpu task ghost not found")
      assert.include(error.message, "does not define it at its top level")
    })
  )

  it.effect("Spot.Yield on a CPU call: the Spot runs other work while the thread computes", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: [] as ReadonlyArray<string> }, "cpu-yield")
      yield* spot.submit((ctx) =>
        Effect.gen(function* () {
          yield* ctx.update((s) => [...s, "A start"])
          const rounds = yield* Workers.cpu(busyFor, 150).pipe(Spot.Yield)
          yield* ctx.update((s) => [...s, `A got ${rounds > 0}`])
        })
      )
      yield* spot.submit((ctx) => ctx.update((s) => [...s, "B"]))
      const done = yield* eventually(Effect.map(Effect.orDie(spot.run((ctx) => ctx.state)), (s) => s.length === 3))
      assert.isTrue(done)
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.state), ["A start", "B", "A got true"])
    }).pipe(Effect.provide(ActorSystem.layer({ name: "cpu-yield" })))
  )

  it.effect("Spot.Async on a CPU call: the Spot waits for the thread", () =>
    Effect.gen(function* () {
      const spot = yield* Spot.spawn({ initialState: [] as ReadonlyArray<string> }, "cpu-async")
      yield* spot.submit((ctx) =>
        Effect.gen(function* () {
          yield* ctx.update((s) => [...s, "A start"])
          yield* Workers.cpu(busyFor, 150).pipe(Spot.Async)
          yield* ctx.update((s) => [...s, "A end"])
        })
      )
      yield* spot.submit((ctx) => ctx.update((s) => [...s, "B"]))
      assert.deepStrictEqual(yield* spot.run((ctx) => ctx.state), ["A start", "A end", "B"])
    }).pipe(Effect.provide(ActorSystem.layer({ name: "cpu-async" })))
  )

  it.effect("Spot.Submit on a CPU call returns at once and logs a failure", () =>
    Effect.gen(function* () {
      const { layer, logs } = captureLogs()
      yield* Effect.gen(function* () {
        const spot = yield* Spot.spawn({ initialState: 0 }, "cpu-submit")
        yield* spot.run(() => Workers.cpu(checkedSqrt, -1).pipe(Spot.Submit))
        const logged = yield* eventually(Effect.sync(() => logs.some((l) => l.message.includes("checkedSqrt failed"))))
        assert.isTrue(logged)
      }).pipe(Effect.provide(ActorSystem.layer({ name: "cpu-submit" })), Effect.provide(layer))
      const line = logs.find((l) => l.message.includes("Spot.Submit: worker call checkedSqrt failed"))!
      assert.strictEqual(line.level, "ERROR")
      assert.strictEqual(line.annotations.actor, "/user/cpu-submit")
    })
  )
})
