/**
 * The armed reminders' columns (src/cluster/internal/armedReminders.ts) on their own: found by generation, handed
 * over as the rows they were armed with, in due order (those due together in the order they were armed), while the
 * columns grow, shrink and move reminders from slot to slot; against a model of plain objects.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { ArmedReminders } from "../../src/cluster/internal/armedReminders.js"
import type { DueRow } from "../../src/cluster/internal/reminderSql.js"

/** Reminders of the tests: snowflake-like generations, and three whose generation, key and name read alike joined. */
const POOL: ReadonlyArray<Omit<DueRow, "due">> = [
  { kind: "k1", key: "3a", name: "b", generation: "12" },
  { kind: "k1", key: "a", name: "b", generation: "123" },
  { kind: "k2", key: "23a", name: "b", generation: "1" },
  ...Array.from({ length: 197 }, (_, i) => ({
    kind: i % 3 === 0 ? "k2" : "k1",
    key: `g${i % 17}`,
    name: `r${i}`,
    generation: String(254749289081856576n + BigInt(i * 4099))
  }))
]

interface Held {
  readonly row: Omit<DueRow, "due">
  due: number
  seq: number
  /** -1 while waiting; once handed over, the next occurrence armed (0 for none). */
  next: number
}

type Op =
  | { readonly _tag: "add"; readonly i: number; readonly due: number }
  | { readonly _tag: "wait"; readonly i: number; readonly due: number }
  | { readonly _tag: "remove"; readonly i: number }
  | { readonly _tag: "take"; readonly now: number; readonly handOver: boolean }
  | { readonly _tag: "armNext"; readonly i: number; readonly due: number }

const opArb: FastCheck.Arbitrary<Op> = (() => {
  const i = FastCheck.integer({ min: 0, max: POOL.length - 1 })
  const due = FastCheck.integer({ min: 1, max: 50 })
  return FastCheck.oneof(
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("add" as const), i, due }), weight: 8 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("wait" as const), i, due }), weight: 2 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("remove" as const), i }), weight: 3 },
    {
      arbitrary: FastCheck.record({
        _tag: FastCheck.constant("take" as const),
        now: due,
        handOver: FastCheck.boolean()
      }),
      weight: 3
    },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("armNext" as const), i, due }), weight: 1 }
  )
})()

/** Throws `message()` unless `ok` (cheaper than an assertion per reminder and operation). */
const check = (ok: boolean, message: () => string): void => {
  if (!ok) throw new Error(message())
}

const sameRow = (a: DueRow, b: DueRow): boolean =>
  a.kind === b.kind && a.key === b.key && a.name === b.name && a.generation === b.generation && a.due === b.due

/** Runs `ops` on the columns and on a map of plain objects, and compares every reminder after each. */
const runAgainstModel = (ops: ReadonlyArray<Op>): void => {
  const armed = new ArmedReminders()
  const model = new Map<string, Held>()
  let seq = 0
  const slotOf = (i: number) => armed.find(POOL[i]!.generation)
  for (const op of ops) {
    switch (op._tag) {
      case "add": {
        if (model.has(POOL[op.i]!.generation)) break
        armed.add({ ...POOL[op.i]!, due: op.due })
        model.set(POOL[op.i]!.generation, { row: POOL[op.i]!, due: op.due, seq: seq++, next: -1 })
        break
      }
      case "wait": {
        const held = model.get(POOL[op.i]!.generation)
        if (held === undefined) break
        armed.wait(slotOf(op.i), op.due)
        Object.assign(held, { due: op.due, seq: seq++, next: -1 })
        break
      }
      case "remove": {
        if (!model.delete(POOL[op.i]!.generation)) break
        armed.remove(slotOf(op.i))
        break
      }
      case "take": {
        let first: Held | undefined
        for (const held of model.values()) {
          if (held.next >= 0 || held.due > op.now) continue
          if (first === undefined || held.due < first.due || (held.due === first.due && held.seq < first.seq)) {
            first = held
          }
        }
        const slot = armed.takeDue(op.now)
        if (first === undefined) {
          check(slot === -1, () => `nothing is due at ${op.now}`)
          break
        }
        check(sameRow(armed.row(slot), { ...first.row, due: first.due }), () => `the first due at ${op.now}`)
        if (op.handOver) {
          armed.handOver(slot)
          first.next = 0
        } else {
          armed.remove(slot)
          model.delete(first.row.generation)
        }
        break
      }
      case "armNext": {
        const held = model.get(POOL[op.i]!.generation)
        if (held === undefined || held.next < 0) break
        armed.armNext(slotOf(op.i), op.due)
        held.next = Math.max(held.next, op.due)
        break
      }
    }
    check(armed.size === model.size, () => `${armed.size} held, ${model.size} in the model`)
    let earliest: number | undefined
    for (let i = 0; i < POOL.length; i++) {
      const held = model.get(POOL[i]!.generation)
      const slot = slotOf(i)
      if (held === undefined) {
        check(slot === -1, () => `${POOL[i]!.generation} is not held, found in slot ${slot}`)
        continue
      }
      check(slot >= 0 && sameRow(armed.row(slot), { ...held.row, due: held.due }), () => `${POOL[i]!.generation}`)
      check(armed.handingOver(slot) === held.next >= 0, () => `${POOL[i]!.generation} handed over`)
      if (held.next >= 0) check(armed.next(slot) === held.next, () => `${POOL[i]!.generation}'s next`)
      else if (earliest === undefined || held.due < earliest) earliest = held.due
    }
    check(armed.earliest() === earliest, () => `earliest ${armed.earliest()}, in the model ${earliest}`)
  }
}

describe("armed reminders", () => {
  it("random add / wait / remove / take due / arm next, against a model", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.array(opArb, { minLength: 50, maxLength: 400, size: "max" }), (ops) =>
        runAgainstModel(ops)
      ),
      { numRuns: 100 }
    )
  })

  it("generations that read alike joined with their key and name are told apart", () => {
    const armed = new ArmedReminders()
    for (const row of POOL.slice(0, 3)) armed.add({ ...row, due: 10 })
    for (const row of POOL.slice(0, 3))
      assert.deepStrictEqual(armed.row(armed.find(row.generation)), { ...row, due: 10 })
    assert.strictEqual(armed.find("1234"), -1)
  })

  it("thousands armed, then nearly all removed: the columns give the room back; the rest is intact, in order", () => {
    const armed = new ArmedReminders()
    const rows = Array.from(
      { length: 5_000 },
      (_, i): DueRow => ({
        kind: "k",
        key: `g${i}`,
        name: "r",
        generation: String(1_000_000 + i),
        due: 5_000 - i
      })
    )
    for (const row of rows) armed.add(row)
    const capacity = () => (armed as unknown as { readonly capacity: number }).capacity
    const grown = capacity()
    assert.isAtLeast(grown, 5_000)
    const kept = rows.filter((_, i) => i % 1_000 === 7)
    for (const row of rows) if (!kept.includes(row)) armed.remove(armed.find(row.generation))
    assert.strictEqual(armed.size, kept.length)
    assert.isBelow(capacity(), grown / 16)
    const taken: Array<DueRow> = []
    for (let slot = armed.takeDue(5_000); slot >= 0; slot = armed.takeDue(5_000)) {
      taken.push(armed.row(slot))
      armed.remove(slot)
    }
    assert.deepStrictEqual(taken, [...kept].reverse())
  })
})
