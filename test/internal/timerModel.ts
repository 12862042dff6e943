/**
 * The reference model the timer structures (`TimerHeap`, `TimerQueue`) are checked against: a list of pending
 * (id, due, seq) kept sorted by (key of the due time, seq), and the random operations both are driven with.
 */
import { assert } from "@effect/vitest"

/** What a structure under test exposes to the model check. */
export interface Subject<E> {
  insert(entry: E, due: number): void
  remove(entry: E): boolean
  popDue(now: number): E | undefined
  clear(): ReadonlyArray<E>
  readonly size: number
  peekDue(): number | undefined
  /** Work a structure may do ahead of time (the queue opening a window in steps); nothing the model can observe. */
  openAhead?(budget: number): boolean
}

export interface ModelEntry {
  readonly id: number
  readonly due: number
  readonly isPending: boolean
}

export class Model {
  private pending: Array<{ id: number; due: number; seq: number }> = []
  private nextSeq = 0

  /** `keyOf` maps a due time to what the structure orders and fires by (a whole millisecond for the queue). */
  constructor(private readonly keyOf: (due: number) => number = (due) => due) {}

  get size(): number {
    return this.pending.length
  }

  has(id: number): boolean {
    return this.pending.some((p) => p.id === id)
  }

  insert(id: number, due: number): void {
    this.remove(id)
    this.pending.push({ id, due, seq: this.nextSeq++ })
    this.pending.sort((a, b) => this.keyOf(a.due) - this.keyOf(b.due) || a.seq - b.seq)
  }

  remove(id: number): boolean {
    const i = this.pending.findIndex((p) => p.id === id)
    if (i < 0) return false
    this.pending.splice(i, 1)
    return true
  }

  peekDue(): number | undefined {
    const top = this.pending[0]
    return top === undefined ? undefined : this.keyOf(top.due)
  }

  popDue(now: number): number | undefined {
    const top = this.pending[0]
    if (top === undefined || this.keyOf(top.due) > now) return undefined
    this.pending.shift()
    return top.id
  }

  clear(): Array<number> {
    const ids = this.pending.map((p) => p.id)
    this.pending = []
    return ids
  }
}

export type Op =
  | { readonly _tag: "insert"; readonly id: number; readonly due: number }
  | { readonly _tag: "remove"; readonly id: number }
  | { readonly _tag: "popDue"; readonly now: number }
  | { readonly _tag: "drain"; readonly now: number }
  | { readonly _tag: "clear" }
  | { readonly _tag: "openAhead"; readonly budget: number }

/** How many distinct entries the random operations address. */
export const ENTRIES = 40

/** A cheap assertion for hot loops: chai's `assert` costs too much to call hundreds of thousands of times. */
export const check = (ok: boolean, message: () => string): void => {
  if (!ok) assert.fail(message())
}

/** Calls `pop` until it returns undefined; the ids in order. */
export const drainAll = (pop: () => number | undefined): Array<number> => {
  const out: Array<number> = []
  let id: number | undefined
  while ((id = pop()) !== undefined) out.push(id)
  return out
}

/** The ids `subject` pops at `now`, in order, until nothing more is due. */
export const drainIds = (subject: Pick<Subject<ModelEntry>, "popDue">, now: number): Array<number> =>
  drainAll(() => subject.popDue(now)?.id)

/**
 * Runs `ops` on `subject` and on the model and checks every observable property after each step: results, size,
 * `peekDue` (through `peekMatches`, exact unless the structure says otherwise), which entries are pending, and the
 * structure's own invariants (`checkShape`). Ends with a full drain in model order.
 */
export const runAgainstModel = <E extends ModelEntry>(
  ops: ReadonlyArray<Op>,
  subject: Subject<E>,
  model: Model,
  entries: ReadonlyArray<E>,
  checkShape: () => void,
  peekMatches: (peek: number | undefined, expected: number | undefined) => boolean = (peek, expected) =>
    peek === expected
): void => {
  const entry = (id: number): E => entries[id]!
  for (const op of ops) {
    switch (op._tag) {
      case "insert":
        subject.insert(entry(op.id), op.due)
        model.insert(op.id, op.due)
        check(entry(op.id).due === op.due, () => `insert did not keep the exact due of ${op.id}`)
        break
      case "remove": {
        const removed = subject.remove(entry(op.id))
        const expected = model.remove(op.id)
        check(removed === expected, () => `remove ${op.id}: ${removed}, model ${expected}`)
        break
      }
      case "popDue": {
        const popped = subject.popDue(op.now)?.id
        const expected = model.popDue(op.now)
        check(popped === expected, () => `popDue(${op.now}): ${popped}, model ${expected}`)
        break
      }
      case "drain": {
        const got = drainAll(() => {
          const e = subject.popDue(op.now)
          if (e !== undefined) check(e.due <= op.now, () => `drain(${op.now}) popped ${e.id} due ${e.due}`)
          return e?.id
        })
        assert.deepStrictEqual(
          got,
          drainAll(() => model.popDue(op.now)),
          `drain(${op.now})`
        )
        break
      }
      case "openAhead":
        subject.openAhead?.(op.budget)
        break
      case "clear":
        assert.deepStrictEqual(
          subject
            .clear()
            .map((e) => e.id)
            .sort((a, b) => a - b),
          model.clear().sort((a, b) => a - b),
          "clear returns every pending entry"
        )
        break
    }
    checkShape()
    check(subject.size === model.size, () => `size ${subject.size}, model ${model.size}`)
    const peek = subject.peekDue()
    const expected = model.peekDue()
    check(peekMatches(peek, expected), () => `peekDue ${peek}, model ${expected}`)
    for (const e of entries) {
      check(e.isPending === model.has(e.id), () => `entry ${e.id} pending ${e.isPending}, model ${model.has(e.id)}`)
    }
  }
  assert.deepStrictEqual(
    drainAll(() => subject.popDue(Number.POSITIVE_INFINITY)?.id),
    drainAll(() => model.popDue(Number.POSITIVE_INFINITY)),
    "final drain"
  )
  assert.strictEqual(subject.size, 0)
  for (const e of entries) check(!e.isPending, () => `entry ${e.id} still pending after the final drain`)
}
