/**
 * The dispatcher of a runner's reminders (src/cluster/internal/reminderDispatch.ts) on its own, with a scan and a send
 * of the test's: when it hands occurrences over, how it groups them per grain, bounds the sends, pauses after a failed
 * one, arms what the runner wrote itself, pages a backlog, and stops with its scope. `TestClock` only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Metric, Scope, TestClock } from "effect"
import { Metrics } from "tickwork"
import * as Dispatch from "../../src/cluster/internal/reminderDispatch.js"
import type { DueRow } from "../../src/cluster/internal/reminderSql.js"

/** A reminder's row; its generation is one per (kind, key, name) unless given, as a registration's snowflake is. */
const row = (key: string, name: string, due: number, generation?: string, kind = "k"): DueRow => ({
  kind,
  key,
  name,
  generation: generation ?? `${kind}/${key}/${name}`,
  due
})

interface Sent {
  readonly at: number
  readonly grain: string
  readonly names: ReadonlyArray<string>
}

/** When each hand-over happened. */
const timesOf = (sent: ReadonlyArray<Sent>) => sent.map((s) => s.at)

/** When each hand-over happened, and the reminders it carried. */
const timelineOf = (sent: ReadonlyArray<Sent>) => sent.map((s): [number, ReadonlyArray<string>] => [s.at, s.names])

/**
 * A dispatcher (poll 1 s, window 2 s) whose scan answers `rows()` (what is due by its horizon, as storage would),
 * and whose send records (time, grain, names) and then runs `onSend`.
 */
const harness = (options: {
  readonly rows?: () => ReadonlyArray<DueRow>
  readonly onSend?: (rows: ReadonlyArray<DueRow>) => Effect.Effect<void, unknown>
  readonly holds?: (kind: string, key: string) => boolean
  readonly windowMillis?: number
  readonly scan?: (until: number) => Effect.Effect<ReadonlyArray<DueRow>, any>
  /** Answer the dispatcher's reads of a full page's grains' other reminders (from `rows()`), and record them. */
  readonly siblings?: boolean
}) =>
  Effect.gen(function* () {
    const sent: Array<Sent> = []
    const scans: Array<number> = []
    /** Each read of siblings: the grains asked about, and until when. */
    const siblingReads: Array<{ readonly grains: number; readonly until: number }> = []
    const scope = yield* Scope.make()
    const dispatcher = yield* Dispatch.make({
      heldShards: () => ["default:1"],
      holds: options.holds ?? (() => true),
      scan: (_shards, from, until, limit) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          scans.push(now)
          if (options.scan !== undefined) return options.scan(until)
          const due = (options.rows?.() ?? []).filter((r) => r.due >= from && r.due <= until)
          return Effect.succeed(due.sort((a, b) => a.due - b.due).slice(0, limit))
        }),
      ...(options.siblings
        ? {
            siblings: (grains, until, limit) =>
              Effect.sync(() => {
                siblingReads.push({ grains: grains.length, until })
                const asked = new Set(grains.map((g) => `${g.kind}/${g.key}`))
                return (options.rows?.() ?? [])
                  .filter((r) => asked.has(`${r.kind}/${r.key}`) && r.due <= until)
                  .sort((a, b) => a.due - b.due)
                  .slice(0, limit)
              })
          }
        : {}),
      send: (kind, key, rows) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) => {
          sent.push({ at, grain: `${kind}/${key}`, names: rows.map((r) => r.name) })
          return options.onSend?.(rows) ?? Effect.void
        }),
      pollMillis: 1_000,
      windowMillis: options.windowMillis ?? 2_000
    }).pipe(Scope.extend(scope))
    return { dispatcher, scans, scope, sent, siblingReads }
  })

/** Lets the dispatcher's fibers run what the last clock move started. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

const adjust = (millis: number) => Effect.zipRight(TestClock.adjust(millis), settle)

describe("reminder dispatcher", () => {
  it.scoped("a scanned reminder is handed over at its due time, not before, once", () =>
    Effect.gen(function* () {
      const pending = [row("a", "r", 2_500)]
      const { sent } = yield* harness({ rows: () => pending })
      yield* adjust(2_499)
      assert.deepStrictEqual(sent, [])
      yield* adjust(1)
      assert.deepStrictEqual(sent, [{ at: 2_500, grain: "k/a", names: ["r"] }])
      // Handled: storage moved it on (here: it is gone), and nothing is handed over again.
      pending.length = 0
      yield* adjust(5_000)
      assert.strictEqual(sent.length, 1)
    })
  )

  it.scoped("occurrences of one grain due together go in one message; another grain's in its own", () =>
    Effect.gen(function* () {
      const { sent } = yield* harness({ rows: () => [row("a", "x", 500), row("b", "y", 500), row("a", "z", 500)] })
      yield* adjust(500)
      assert.deepStrictEqual(
        sent.map((s) => [s.grain, s.names]),
        [
          ["k/a", ["x", "z"]],
          ["k/b", ["y"]]
        ]
      )
    })
  )

  it.scoped("at most MAX_SENDING grains are sent to at once; the others wait their turn, in order", () =>
    Effect.gen(function* () {
      const n = Dispatch.MAX_SENDING + 10
      const gate = yield* Deferred.make<void>()
      let inFlight = 0
      let most = 0
      const { sent } = yield* harness({
        rows: () => Array.from({ length: n }, (_, i) => row(`g${String(i).padStart(4, "0")}`, "r", 100)),
        onSend: () =>
          Effect.suspend(() => {
            most = Math.max(most, ++inFlight)
            return Effect.ensuring(
              Deferred.await(gate),
              Effect.sync(() => inFlight--)
            )
          })
      })
      yield* adjust(100)
      assert.strictEqual(sent.length, Dispatch.MAX_SENDING)
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.strictEqual(sent.length, n)
      assert.strictEqual(most, Dispatch.MAX_SENDING)
      assert.deepStrictEqual(
        sent.map((s) => s.grain),
        Array.from({ length: n }, (_, i) => `k/g${String(i).padStart(4, "0")}`)
      )
    })
  )

  it.scoped("a send that fails leaves the occurrence to the scans, which arm it again after the cooldown", () =>
    Effect.gen(function* () {
      let attempts = 0
      const { sent } = yield* harness({
        rows: () => [row("a", "r", 300)],
        onSend: () => (attempts++ === 0 ? Effect.fail("shard moved") : Effect.void)
      })
      yield* adjust(300)
      assert.deepStrictEqual(timesOf(sent), [300])
      // The scan at 1 000 finds it still due, within the cooldown: left alone.
      yield* adjust(700)
      assert.strictEqual(sent.length, 1)
      // The scan at 2 000 hands it over again.
      yield* adjust(1_000)
      assert.deepStrictEqual(timesOf(sent), [300, 2_000])
    })
  )

  it.scoped("a reminder the runner wrote itself is armed at once; one beyond the window is left to the scans", () =>
    Effect.gen(function* () {
      const pending: Array<DueRow> = []
      const { dispatcher, sent } = yield* harness({ rows: () => pending })
      yield* adjust(10)
      dispatcher.arm(row("a", "soon", 500))
      const late = row("a", "late", 5_000)
      dispatcher.arm(late)
      pending.push(late)
      yield* adjust(490)
      assert.deepStrictEqual(timelineOf(sent), [[500, ["soon"]]])
      yield* adjust(4_500)
      assert.deepStrictEqual(timelineOf(sent), [
        [500, ["soon"]],
        [5_000, ["late"]]
      ])
    })
  )

  it.scoped("the next occurrence, armed while its predecessor is still being handled, is armed once it ends", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      let dispatcher: Dispatch.Dispatcher | undefined
      const { dispatcher: made, sent } = yield* harness({
        rows: () => [],
        onSend: (rows) =>
          rows[0]!.due === 100
            ? Effect.zipRight(
                // What the grain's delivery does: the row moved to its next occurrence, armed by this runner.
                Effect.sync(() => dispatcher!.arm(row("a", "r", 700))),
                Deferred.await(gate)
              )
            : Effect.void
      })
      dispatcher = made
      dispatcher.arm(row("a", "r", 100))
      yield* adjust(100)
      assert.strictEqual(sent.length, 1)
      yield* adjust(400)
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      yield* adjust(199)
      assert.strictEqual(sent.length, 1)
      yield* adjust(1)
      assert.deepStrictEqual(timesOf(sent), [100, 700])
    })
  )

  it.scoped(
    "an occurrence of a generation at or before the one armed is stale; a new generation is armed beside it",
    () =>
      Effect.gen(function* () {
        const { dispatcher, sent } = yield* harness({ rows: () => [] })
        dispatcher.arm(row("a", "r", 700, "g1"))
        // A scan that read the row before it moved on brings the earlier occurrence: it is not armed again.
        dispatcher.arm(row("a", "r", 300, "g1"))
        // Registered again (a new generation, due sooner): armed on its own; the old one's delivery is dropped by the
        // row's generation check in storage, not here.
        dispatcher.arm(row("a", "r", 500, "g2"))
        yield* adjust(1_000)
        assert.deepStrictEqual(timelineOf(sent), [
          [500, ["r"]],
          [700, ["r"]]
        ])
      })
  )

  it.scoped("with hundreds armed, each keeps the stale rule while those around it are delivered and dropped", () =>
    Effect.gen(function* () {
      const { dispatcher, sent } = yield* harness({ rows: () => [], windowMillis: 10_000 })
      const n = 300
      for (let i = 0; i < n; i++) dispatcher.arm(row(`g${i}`, "r", i % 2 === 0 ? 100 : 5_000 + i))
      yield* adjust(200)
      assert.strictEqual(sent.length, n / 2)
      const odd = Array.from({ length: n / 2 }, (_, j) => 2 * j + 1)
      for (const i of odd) {
        // The occurrence armed, and an earlier one: both stale.
        dispatcher.arm(row(`g${i}`, "r", 5_000 + i))
        dispatcher.arm(row(`g${i}`, "r", 4_000))
        // A later one, for every other: armed in its place.
        if (i % 4 === 1) dispatcher.arm(row(`g${i}`, "r", 8_000 + i))
      }
      yield* adjust(9_000)
      assert.deepStrictEqual(
        sent.slice(n / 2).map((s) => [s.at, s.grain]),
        [
          ...odd.filter((i) => i % 4 === 3).map((i) => [5_000 + i, `k/g${i}`]),
          ...odd.filter((i) => i % 4 === 1).map((i) => [8_000 + i, `k/g${i}`])
        ]
      )
    })
  )

  it.scoped("a later occurrence of an armed generation replaces the earlier one (the row moved on)", () =>
    Effect.gen(function* () {
      const { dispatcher, sent } = yield* harness({ rows: () => [] })
      dispatcher.arm(row("a", "r", 300))
      dispatcher.arm(row("a", "r", 800))
      yield* adjust(700)
      assert.deepStrictEqual(sent, [])
      yield* adjust(100)
      assert.deepStrictEqual(timesOf(sent), [800])
    })
  )

  it.scoped("a backlog is read a page at a time, the next page as soon as half of one is handed over", () =>
    Effect.gen(function* () {
      const pending = new Map(
        Array.from({ length: 3 * Dispatch.PAGE }, (_, i): [string, DueRow] => [`g${i}`, row(`g${i}`, "r", 1 + (i % 7))])
      )
      const { scans, sent } = yield* harness({
        rows: () => Array.from(pending.values()),
        // Handled: the row is gone.
        onSend: (rows) =>
          Effect.sync(() => {
            for (const r of rows) pending.delete(r.key)
          })
      })
      yield* adjust(10)
      // All of them before the next poll: each page asked for the next.
      assert.strictEqual(sent.length, 3 * Dispatch.PAGE)
      assert.isAtLeast(scans.length, 4)
      assert.isTrue(scans.every((at) => at < 1_000))
      assert.strictEqual(new Set(sent.map((s) => s.grain)).size, 3 * Dispatch.PAGE)
    })
  )

  it.scoped("a full page's grains bring their other due occurrences: each grain gets its own in one hand-over", () =>
    Effect.gen(function* () {
      // 550 grains with two reminders each, all due at 1.5 s: a page (1,024) holds every grain's first and only
      // some grains' second; the rest come with the siblings read.
      const grains = 550
      const pending = new Map(
        [
          ...Array.from({ length: grains }, (_, i) => row(`g${i}`, "first", 1_500)),
          ...Array.from({ length: grains }, (_, i) => row(`g${i}`, "second", 1_500))
        ].map((r): [string, DueRow] => [r.generation, r])
      )
      const { sent, siblingReads } = yield* harness({
        rows: () => Array.from(pending.values()),
        siblings: true,
        // Handled: the row is gone.
        onSend: (rows) =>
          Effect.sync(() => {
            for (const r of rows) pending.delete(r.generation)
          })
      })
      yield* adjust(1_500)
      // Every full page reads them (the first scan's, and the poll's at 1 s: both a page of the same 1,024).
      assert.deepStrictEqual(siblingReads, [
        { grains, until: 2_000 },
        { grains, until: 3_000 }
      ])
      assert.strictEqual(sent.length, grains)
      assert.isTrue(
        sent.every((s) => s.names.length === 2),
        sent
          .filter((s) => s.names.length !== 2)
          .map((s) => s.grain)
          .join(", ")
      )
    })
  )

  it.scoped("a page that is not full reads no siblings: it holds every due occurrence already", () =>
    Effect.gen(function* () {
      const { sent, siblingReads } = yield* harness({
        rows: () => [row("a", "first", 1_500), row("a", "second", 1_500)],
        siblings: true
      })
      yield* adjust(1_500)
      assert.deepStrictEqual(siblingReads, [])
      assert.deepStrictEqual(timelineOf(sent), [[1_500, ["first", "second"]]])
    })
  )

  it.scoped("an occurrence of a grain whose shard this runner no longer holds is not handed over here", () =>
    Effect.gen(function* () {
      let held = true
      const { sent } = yield* harness({ rows: () => [row("a", "r", 1_500)], holds: () => held })
      yield* adjust(1_100)
      held = false
      yield* adjust(1_000)
      assert.deepStrictEqual(sent, [])
    })
  )

  it.scoped("with no window (local arming off), a reminder is handed over by the first scan after its due time", () =>
    Effect.gen(function* () {
      const { dispatcher, sent } = yield* harness({ rows: () => [row("a", "r", 1_200)], windowMillis: 0 })
      dispatcher.arm(row("a", "r", 1_200))
      yield* adjust(1_999)
      assert.deepStrictEqual(sent, [])
      yield* adjust(1)
      assert.deepStrictEqual(timesOf(sent), [2_000])
    })
  )

  it.scoped("a scan that fails is counted and tried again at the next poll", () =>
    Effect.gen(function* () {
      const retries = Effect.map(Metric.value(Metrics.scheduleEvents("storage_retry")), (state) => state.count)
      const before = yield* retries
      let failing = true
      const { sent } = yield* harness({
        scan: (until) =>
          failing ? Effect.fail("storage is down") : Effect.succeed([row("a", "r", 500)].filter((r) => r.due <= until))
      })
      yield* adjust(2_000)
      assert.deepStrictEqual(sent, [])
      assert.strictEqual((yield* retries) - before, 3)
      failing = false
      yield* adjust(1_000)
      assert.deepStrictEqual(timesOf(sent), [3_000])
    })
  )

  it.scoped("closing its scope stops it: no scan, no send after", () =>
    Effect.gen(function* () {
      const { scans, scope, sent } = yield* harness({ rows: () => [row("a", "r", 5_000)] })
      yield* adjust(1_500)
      yield* Scope.close(scope, Exit.void)
      const scanned = scans.length
      yield* adjust(10_000)
      assert.strictEqual(scans.length, scanned)
      assert.deepStrictEqual(sent, [])
    })
  )
})
