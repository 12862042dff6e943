import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, Schema } from "effect"
import { Grain, Grains, GrainTimers, Schedules } from "tickwork"
import { ClusterGrain, ClusterRunner, ClusterScheduler, Reminders } from "tickwork/cluster"
import { TestCluster } from "tickwork/cluster/testkit"
import { TestSystem } from "tickwork/testkit"

/** A cluster grain kind that records what it receives, as "message@millis". */
const makeSubject = (name = "invoice") => {
  const received: Array<string> = []
  const kind = ClusterGrain.make(
    Grain.make<string>()({
      name,
      onReceive: (ctx) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => received.push(`${ctx.message}@${now}`)))
    }),
    { message: Schema.String }
  )
  return { kind, received }
}

/** A single-process grain beside the cluster's. */
const Local = Grain.make<string>()({ name: "local", onReceive: (ctx) => ctx.reply("pong") })

describe("TestCluster", () => {
  it.effect("layer: a grain answers at once, with the clock still at 0 (the runner holds its shards)", () => {
    const { kind, received } = makeSubject()
    return Effect.gen(function* () {
      yield* ClusterGrain.tell(kind, "inv-1", "hello")
      yield* Reminders.registerFor(kind, "inv-1", "r", "later", Reminders.after("1 hour"))
      assert.deepStrictEqual(received, ["hello@0"])
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
      // the TestSystem's helpers are there too, and its local grains
      assert.strictEqual((yield* TestSystem.TestSystem).startedAt, 0)
      assert.strictEqual(yield* Grains.ask<string>(Local, "l", "ping"), "pong")
      const listed = yield* Effect.flatMap(Schedules.Schedules, (schedules) => schedules.list({ kind: "reminder" }))
      assert.deepStrictEqual(
        listed.map((info) => [info.reference, info.nextFire]),
        [["invoice/inv-1/r", 3_600_000]]
      )
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind], grains: [Local] })))
  })

  it.effect("layer: reminders' policies that are not a function fail it with InvalidSchedulePolicy, in its type", () =>
    Effect.gen(function* () {
      const built = Layer.build(TestCluster.layer({ reminders: { policies: 5 as never } })).pipe(Effect.scoped)
      // Compiles only while TestCluster.LayerError names InvalidSchedulePolicy.
      const policy = yield* Effect.flip(built).pipe(
        Effect.flatMap((error) =>
          Effect.catchTag(Effect.fail(error), "InvalidSchedulePolicy", (invalid) => Effect.succeed(invalid.policy))
        )
      )
      assert.strictEqual(policy, "policies")
    })
  )

  it.scoped("layer: a storage whose shards another live runner holds is a defect that says so, not a hang", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tickwork-testcluster-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const storage = ClusterRunner.sqlite(path.join(dir, "cluster.db"))
      // another runner over the same file, alive for the whole test: it keeps its share of the shards
      yield* Layer.build(ClusterRunner.layerTest({ storage, port: 2 }))
      const exit = yield* Effect.exit(Layer.build(TestCluster.layer({ runner: { storage } })).pipe(Effect.scoped))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "did not acquire its shards")
    })
  )

  it.effect("fireReminder delivers an occurrence now and reports it; the reminder's schedule does not move", () => {
    const { kind, received } = makeSubject()
    return Effect.gen(function* () {
      yield* Reminders.registerFor(kind, "inv-7", "dunning", "send reminder", Reminders.after("14 days"))
      const fired = yield* TestCluster.fireReminder(kind, "inv-7", "dunning")
      assert.deepStrictEqual(received, ["send reminder@0"])
      assert.strictEqual(fired.message, "send reminder")
      assert.strictEqual(fired.reference, "invoice/inv-7/dunning")
      assert.deepStrictEqual([fired.run.trigger, fired.run.outcome, fired.run.instant], ["manual", "sent", 0])
      // twice: two deliveries
      yield* TestCluster.fireReminder(kind, "inv-7", "dunning")
      assert.strictEqual(received.length, 2)
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
      const [info] = yield* Reminders.listFor(kind, "inv-7")
      assert.strictEqual(info?.nextDue, 14 * 86_400_000)
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind] })))
  })

  it.effect("fireReminder of a reminder the grain does not have fails with ScheduledReferenceNotFound", () => {
    const { kind, received } = makeSubject()
    return Effect.gen(function* () {
      const error = yield* Effect.flip(TestCluster.fireReminder(kind, "inv-7", "nope"))
      assert.strictEqual(error._tag, "ScheduledReferenceNotFound")
      assert.deepStrictEqual(received, [])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind] })))
  })

  it.effect("fireAllReminders fires every reminder, of a kind, or of one grain, in order", () => {
    const invoices = makeSubject("invoice")
    const orders = makeSubject("order")
    return Effect.gen(function* () {
      yield* Reminders.registerFor(invoices.kind, "a", "x", "a/x", Reminders.after("1 day"))
      yield* Reminders.registerFor(invoices.kind, "a", "y", "a/y", Reminders.cron("0 0 9 ? * MON"))
      yield* Reminders.registerFor(invoices.kind, "b", "x", "b/x", Reminders.after("1 day", { period: "1 day" }))
      yield* Reminders.registerFor(orders.kind, "c", "x", "c/x", Reminders.after("2 days"))
      const ofA = yield* TestCluster.fireAllReminders(invoices.kind, "a")
      assert.deepStrictEqual(
        ofA.map((fired) => fired.message),
        ["a/x", "a/y"]
      )
      assert.deepStrictEqual(invoices.received, ["a/x@0", "a/y@0"])
      const ofInvoices = yield* TestCluster.fireAllReminders(invoices.kind)
      assert.deepStrictEqual(
        ofInvoices.map((fired) => fired.reference),
        ["invoice/a/x", "invoice/a/y", "invoice/b/x"]
      )
      const all = yield* TestCluster.fireAllReminders()
      assert.deepStrictEqual(
        all.map((fired) => `${fired.kind}:${String(fired.message)}`),
        ["invoice:a/x", "invoice:a/y", "invoice:b/x", "order:c/x"]
      )
      assert.deepStrictEqual(orders.received, ["c/x@0"])
      assert.deepStrictEqual(yield* TestCluster.fireAllReminders(orders.kind, "nobody"), [])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [invoices.kind, orders.kind] })))
  })

  it.effect("fireAllReminders and fireReminder first let what was sent before run (a tell that registers)", () => {
    const received: Array<string> = []
    const kind = ClusterGrain.make(
      Grain.make<string>()({
        name: "issuer",
        onReceive: (ctx) =>
          ctx.message === "issue"
            ? Effect.asVoid(
                Effect.orDie(
                  Effect.zipRight(
                    Reminders.register(ctx, "a", "a!", Reminders.after("1 day")),
                    Reminders.register(ctx, "b", "b!", Reminders.after("2 days"))
                  )
                )
              )
            : Effect.sync(() => void received.push(ctx.message))
      }),
      { message: Schema.String }
    )
    return Effect.gen(function* () {
      yield* ClusterGrain.tell(kind, "k", "issue")
      const all = yield* TestCluster.fireAllReminders(kind)
      assert.deepStrictEqual(
        all.map((fired) => fired.message),
        ["a!", "b!"]
      )
      yield* ClusterGrain.tell(kind, "l", "issue")
      assert.strictEqual((yield* TestCluster.fireReminder(kind, "l", "b")).message, "b!")
      assert.deepStrictEqual(received, ["a!", "b!", "b!"])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind] })))
  })

  it.effect("advanceToNext jumps to the next reminder occurrence and reports the delivery", () => {
    const { kind, received } = makeSubject()
    return Effect.gen(function* () {
      yield* Reminders.registerFor(kind, "inv-1", "r", "due", Reminders.after("30 seconds"))
      const step = yield* TestCluster.advanceToNext
      assert.strictEqual(step.now, 30_000)
      assert.deepStrictEqual(received, ["due@30000"])
      assert.deepStrictEqual(
        step.delivered.map((d) => [d.reference, d.kind, d.run.instant, d.run.outcome]),
        [["invoice/inv-1/r", "reminder", 30_000, "sent"]]
      )
      // nothing left: the clock stays
      const idle = yield* TestCluster.advanceToNext
      assert.deepStrictEqual([idle.now, idle.delivered.length], [30_000, 0])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind] })))
  })

  it.effect("runUntilIdle delivers every one-shot reminder in time order; a periodic one never goes idle", () => {
    const { kind, received } = makeSubject()
    return Effect.gen(function* () {
      yield* Reminders.registerFor(kind, "a", "late", "late", Reminders.after("50 seconds"))
      yield* Reminders.registerFor(kind, "b", "early", "early", Reminders.after("20 seconds"))
      const all = yield* TestCluster.runUntilIdle()
      assert.deepStrictEqual(received, ["early@20000", "late@50000"])
      assert.deepStrictEqual(
        all.delivered.map((d) => d.run.instant),
        [20_000, 50_000]
      )
      yield* Reminders.registerFor(kind, "a", "beat", "beat", Reminders.after("10 seconds", { period: "10 seconds" }))
      const exit = yield* Effect.exit(TestCluster.runUntilIdle({ maxSteps: 3 }))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), 'reminder "invoice/a/beat"')
      assert.deepStrictEqual(received.slice(2), ["beat@60000", "beat@70000", "beat@80000"])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind] })))
  })

  it.effect(
    "TestSystem's timers, inside and fireTimer reach a live cluster grain; an inactive one is UnknownGrainKind",
    () => {
      const polled: Array<number> = []
      const Device = Grain.make<string>()({
        name: "device",
        onActivate: (props) =>
          Effect.as(Effect.orDie(props.schedule("poll", "1 hour", GrainTimers.withTimerReference("poll"))), 0),
        onReceive: (ctx, n) =>
          ctx.message === "poll"
            ? Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => polled.push(now))).pipe(
                Effect.as(n + 1)
              )
            : Effect.succeed(n)
      })
      const kind = ClusterGrain.make(Device, { message: Schema.String })
      return Effect.gen(function* () {
        const owner = TestSystem.grain(Device, "d-1")
        const inactive = yield* Effect.flip(TestSystem.inside(owner, (_props, n) => Effect.succeed(n)))
        assert.strictEqual(inactive._tag, "UnknownGrainKind")
        assert.include(inactive.message, "no activation of device/d-1 is live")
        yield* ClusterGrain.tell(kind, "d-1", "hello")
        yield* TestSystem.expectTimer(owner, "poll", { mode: "interval", dueIn: 3_600_000 })
        yield* TestSystem.fireTimer(owner, "poll")
        assert.deepStrictEqual(polled, [0])
        assert.strictEqual(yield* TestSystem.inside(owner, (_props, n) => Effect.succeed(n)), 1)
      }).pipe(Effect.provide(TestCluster.layer({ kinds: [kind] })))
    }
  )

  it.effect("advanceToNext sees a cluster cron's next instant and the system's own timers", () =>
    Effect.gen(function* () {
      const ran: Array<number> = []
      yield* ClusterScheduler.scheduleWithCron(
        "*/20 * * * * ?",
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => ran.push(now))),
        ClusterScheduler.withTimerReference("report")
      )
      const system = yield* TestSystem.TestSystem
      yield* system.system.scheduler.scheduleOnceFunction("5 seconds", Effect.void)
      const first = yield* TestCluster.advanceToNext
      assert.deepStrictEqual([first.now, first.fired.length, first.delivered.length], [5_000, 1, 0])
      const second = yield* TestCluster.advanceToNext
      assert.strictEqual(second.now, 20_000)
      assert.deepStrictEqual(ran, [20_000])
      assert.deepStrictEqual(
        second.delivered.map((d) => [d.reference, d.kind, d.owner, d.run.instant]),
        [["report", "cluster-cron", "cluster", 20_000]]
      )
    }).pipe(Effect.scoped, Effect.provide(TestCluster.layer()))
  )
})
