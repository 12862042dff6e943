import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Schema } from "effect"
import { Grain } from "tickwork"
import { ClusterGrain, Reminders } from "tickwork/cluster"
import { TestCluster } from "tickwork/cluster/testkit"

// ---------------------------------------------------------------- what we test: an invoice with durable reminders

const Msg = Schema.Union(
  Schema.TaggedStruct("Issue", {}),
  Schema.TaggedStruct("Dun", {}),
  Schema.TaggedStruct("Expire", {})
)
type Msg = typeof Msg.Type

/** What the invoices did, as "<key> <what>@<millis>": a test reads it. */
const log: Array<string> = []

/** Issued: dunned every 14 days, and expired after 30 seconds unless paid (a short expiry, to show the clock move). */
const Invoice = ClusterGrain.make(
  Grain.make<Msg>()({
    name: "invoice",
    onReceive: (ctx) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        log.push(`${ctx.identity.key} ${ctx.message._tag}@${now}`)
        if (ctx.message._tag === "Issue") {
          yield* Effect.orDie(
            Reminders.register(ctx, "dunning", { _tag: "Dun" }, Reminders.after("14 days", { period: "14 days" }))
          )
          yield* Effect.orDie(Reminders.register(ctx, "expiry", { _tag: "Expire" }, Reminders.after("30 seconds")))
        }
      })
  }),
  { message: Msg }
)

// ---------------------------------------------------------------- the tests

describe("invoices", () => {
  it.effect("a dunning reminder, fired on demand: 14 days away, delivered now, its schedule unmoved", () =>
    Effect.gen(function* () {
      log.length = 0
      yield* ClusterGrain.tell(Invoice, "inv-7", { _tag: "Issue" })
      const fired = yield* TestCluster.fireReminder(Invoice, "inv-7", "dunning")
      assert.deepStrictEqual(fired.message, { _tag: "Dun" })
      assert.deepStrictEqual(log, ["inv-7 Issue@0", "inv-7 Dun@0"])
      const [dunning] = yield* Reminders.listFor(Invoice, "inv-7")
      assert.strictEqual(dunning?.nextDue, 14 * 86_400_000)
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [Invoice] })))
  )

  it.effect("every reminder of a grain at once (FireAllReminders)", () =>
    Effect.gen(function* () {
      log.length = 0
      yield* ClusterGrain.tell(Invoice, "inv-8", { _tag: "Issue" })
      const fired = yield* TestCluster.fireAllReminders(Invoice, "inv-8")
      assert.deepStrictEqual(
        fired.map((f) => f.name),
        ["dunning", "expiry"]
      )
      assert.deepStrictEqual(log, ["inv-8 Issue@0", "inv-8 Dun@0", "inv-8 Expire@0"])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [Invoice] })))
  )

  it.effect("the clock jumps to the next reminder occurrence, read from storage", () =>
    Effect.gen(function* () {
      log.length = 0
      yield* ClusterGrain.tell(Invoice, "inv-9", { _tag: "Issue" })
      const step = yield* TestCluster.advanceToNext
      assert.strictEqual(step.now, 30_000)
      assert.deepStrictEqual(
        step.delivered.map((d) => d.reference),
        ["invoice/inv-9/expiry"]
      )
      assert.deepStrictEqual(log, ["inv-9 Issue@0", "inv-9 Expire@30000"])
    }).pipe(Effect.provide(TestCluster.layer({ kinds: [Invoice] })))
  )
})
