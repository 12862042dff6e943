import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { HeapEntry, TimerHeap } from "../../src/internal/timerHeap.js"
import { check, drainAll, ENTRIES, Model, type Op, runAgainstModel } from "./timerModel.js"

class Entry extends HeapEntry {
  constructor(readonly id: number) {
    super()
  }

  get isPending(): boolean {
    return this.index >= 0
  }
}

const opArb = (maxDue: number): FastCheck.Arbitrary<Op> => {
  const id = FastCheck.integer({ min: 0, max: ENTRIES - 1 })
  const time = FastCheck.integer({ min: 0, max: maxDue })
  return FastCheck.oneof(
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("insert" as const), id, due: time }), weight: 8 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("remove" as const), id }), weight: 3 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("popDue" as const), now: time }), weight: 3 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("drain" as const), now: time }), weight: 1 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("clear" as const) }), weight: 1 }
  )
}

/**
 * White-box look at the heap's array: every parent precedes its children by (due, seq), every slot knows its index,
 * and no pending entry claims an index another one holds.
 */
const checkHeapShape = (heap: TimerHeap<Entry>, entries: ReadonlyArray<Entry>): void => {
  const items = (heap as unknown as { readonly items: ReadonlyArray<Entry> }).items
  check(items.length === heap.size, () => `size ${heap.size} but ${items.length} slots`)
  items.forEach((e, i) => {
    check(e.index === i, () => `slot ${i} holds an entry that thinks it is at ${e.index}`)
    if (i > 0) {
      const parent = items[(i - 1) >> 1]!
      check(
        parent.due < e.due || (parent.due === e.due && parent.seq < e.seq),
        () => `heap order broken at slot ${i}: parent (${parent.due}, ${parent.seq}) child (${e.due}, ${e.seq})`
      )
    }
  })
  for (const e of entries) {
    check(e.index === -1 || items[e.index] === e, () => `entry ${e.id} claims slot ${e.index}`)
  }
}

const runOps = (ops: ReadonlyArray<Op>): void => {
  const heap = new TimerHeap<Entry>()
  const entries = Array.from({ length: ENTRIES }, (_, i) => new Entry(i))
  runAgainstModel(ops, heap, new Model(), entries, () => checkHeapShape(heap, entries))
}

const drainIds = (heap: TimerHeap<Entry>, now: number): Array<number> => drainAll(() => heap.popDue(now)?.id)

const heapOf = (dues: ReadonlyArray<number>): { heap: TimerHeap<Entry>; entries: Array<Entry> } => {
  const heap = new TimerHeap<Entry>()
  const entries = dues.map((due, i) => {
    const e = new Entry(i)
    heap.insert(e, due)
    return e
  })
  return { heap, entries }
}

describe("TimerHeap", () => {
  describe("against a sorted-array model", () => {
    it("random insert / remove / move / popDue / clear with many ties", () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.array(opArb(8), { minLength: 20, maxLength: 300, size: "max" }), (ops) =>
          runOps(ops)
        ),
        { numRuns: 300 }
      )
    })

    it("random insert / remove / move / popDue / clear with spread deadlines", () => {
      FastCheck.assert(
        FastCheck.property(FastCheck.array(opArb(10_000), { minLength: 20, maxLength: 300, size: "max" }), (ops) =>
          runOps(ops)
        ),
        { numRuns: 300 }
      )
    })

    it("every permutation of a small set of deadlines pops in (due, seq) order", () => {
      const dues = [3, 1, 3, 0, 1, 2]
      const permute = (xs: Array<number>): Array<Array<number>> =>
        xs.length <= 1
          ? [xs]
          : xs.flatMap((x, i) => permute([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]))
      const orders = permute(dues.map((_, i) => i))
      assert.strictEqual(orders.length, 720)
      for (const order of orders) {
        const heap = new TimerHeap<Entry>()
        for (const i of order) heap.insert(new Entry(i), dues[i]!)
        const popped: Array<[number, number]> = []
        let e: Entry | undefined
        while ((e = heap.popDue(10)) !== undefined) popped.push([e.due, order.indexOf(e.id)])
        const sorted = [...popped].sort((a, b) => a[0] - b[0] || a[1] - b[1])
        assert.deepStrictEqual(popped, sorted, `insertion order ${order.join(",")}`)
      }
    })
  })

  describe("explicit cases", () => {
    it("an empty heap has size 0, no peekDue and pops nothing", () => {
      const heap = new TimerHeap<Entry>()
      assert.strictEqual(heap.size, 0)
      assert.isUndefined(heap.peekDue())
      assert.isUndefined(heap.popDue(Number.POSITIVE_INFINITY))
      assert.deepStrictEqual(heap.clear(), [])
    })

    it("equal deadlines pop in scheduling order", () => {
      const { heap } = heapOf([5, 5, 5, 5, 5, 5, 5, 5, 5, 5])
      assert.deepStrictEqual(drainIds(heap, 5), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    })

    it("popDue returns nothing before the earliest deadline and the entry at it", () => {
      const { heap, entries } = heapOf([10, 20])
      assert.isUndefined(heap.popDue(9))
      assert.strictEqual(heap.size, 2)
      assert.strictEqual(heap.popDue(10), entries[0])
      assert.strictEqual(entries[0]!.index, -1)
      assert.isUndefined(heap.popDue(19))
      assert.strictEqual(heap.popDue(25), entries[1])
      assert.strictEqual(heap.size, 0)
    })

    it("popDue(now) takes only what is due, oldest deadline first", () => {
      const { heap } = heapOf([7, 3, 9, 1, 5, 3])
      assert.deepStrictEqual(drainIds(heap, 5), [3, 1, 5, 4])
      assert.strictEqual(heap.peekDue(), 7)
      assert.deepStrictEqual(drainIds(heap, 100), [0, 2])
    })

    it("remove of the root", () => {
      const { heap, entries } = heapOf([1, 2, 3, 4, 5, 6, 7])
      assert.strictEqual(entries[0]!.index, 0)
      assert.isTrue(heap.remove(entries[0]!))
      assert.strictEqual(entries[0]!.index, -1)
      assert.strictEqual(heap.peekDue(), 2)
      assert.deepStrictEqual(drainIds(heap, 100), [1, 2, 3, 4, 5, 6])
    })

    it("remove of the last slot", () => {
      const { heap, entries } = heapOf([1, 2, 3, 4, 5, 6, 7])
      const last = entries.find((e) => e.index === heap.size - 1)!
      assert.isTrue(heap.remove(last))
      assert.strictEqual(last.index, -1)
      assert.strictEqual(heap.size, 6)
      assert.deepStrictEqual(
        drainIds(heap, 100),
        [0, 1, 2, 3, 4, 5, 6].filter((i) => i !== last.id)
      )
    })

    it("remove of a middle slot whose replacement must move up", () => {
      // Left subtree holds large deadlines, right subtree small ones: the last element (small) replaces a large one.
      const { heap, entries } = heapOf([0, 100, 1, 101, 102, 2, 3])
      // Layout: [0, 100, 1, 101, 102, 2, 3]. Removing 101 (slot 3) puts 3 under 100, so it has to sift up.
      const middle = entries[3]!
      assert.strictEqual(middle.index, 3)
      assert.isTrue(heap.remove(middle))
      assert.strictEqual(middle.index, -1)
      assert.strictEqual(entries[6]!.index, 1, "the moved entry went up past its new parent")
      assert.deepStrictEqual(drainIds(heap, 1000), [0, 2, 5, 6, 1, 4])
      assert.isFalse(heap.remove(middle))
    })

    it("remove of a middle slot whose replacement must move down", () => {
      const { heap, entries } = heapOf([0, 1, 50, 2, 3, 60, 70])
      assert.isTrue(heap.remove(entries[1]!))
      assert.deepStrictEqual(drainIds(heap, 1000), [0, 3, 4, 2, 5, 6])
    })

    it("remove of a non-pending entry returns false and changes nothing", () => {
      const { heap, entries } = heapOf([1, 2, 3])
      const stranger = new Entry(99)
      assert.isFalse(heap.remove(stranger))
      assert.isTrue(heap.remove(entries[1]!))
      assert.isFalse(heap.remove(entries[1]!), "removing twice")
      const popped = heap.popDue(1)!
      assert.isFalse(heap.remove(popped), "removing a popped entry")
      assert.strictEqual(heap.size, 1)
      assert.strictEqual(heap.peekDue(), 3)
    })

    it("remove of an entry pending in another heap returns false", () => {
      const a = heapOf([1, 2, 3])
      const b = heapOf([1, 2, 3])
      // b's entry sits at an index that exists in a, but a's slot holds a different entry.
      assert.isFalse(a.heap.remove(b.entries[2]!))
      assert.strictEqual(a.heap.size, 3)
      assert.strictEqual(b.heap.size, 3)
      assert.isTrue(b.entries[2]!.index >= 0)
      assert.deepStrictEqual(drainIds(a.heap, 10), [0, 1, 2])
    })

    it("re-inserting a pending entry moves it (later)", () => {
      const { heap, entries } = heapOf([1, 2, 3])
      heap.insert(entries[0]!, 10)
      assert.strictEqual(heap.size, 3)
      assert.strictEqual(entries[0]!.due, 10)
      assert.strictEqual(heap.peekDue(), 2)
      assert.deepStrictEqual(drainIds(heap, 100), [1, 2, 0])
    })

    it("re-inserting a pending entry moves it (earlier)", () => {
      const { heap, entries } = heapOf([1, 2, 3])
      heap.insert(entries[2]!, 0)
      assert.strictEqual(heap.size, 3)
      assert.strictEqual(heap.peekDue(), 0)
      assert.deepStrictEqual(drainIds(heap, 100), [2, 0, 1])
    })

    it("re-inserting at the same deadline puts the entry behind its equals", () => {
      const { heap, entries } = heapOf([5, 5, 5])
      heap.insert(entries[0]!, 5)
      assert.strictEqual(heap.size, 3)
      assert.deepStrictEqual(drainIds(heap, 5), [1, 2, 0])
    })

    it("a popped entry can be inserted again", () => {
      const { heap, entries } = heapOf([1, 2])
      const e = heap.popDue(1)!
      assert.strictEqual(e, entries[0])
      heap.insert(e, 2)
      assert.strictEqual(heap.size, 2)
      assert.deepStrictEqual(drainIds(heap, 2), [1, 0])
    })

    it("clear returns every entry, marks them not pending and empties the heap", () => {
      const { heap, entries } = heapOf([4, 1, 3, 2])
      const cleared = heap.clear()
      assert.deepStrictEqual(cleared.map((e) => e.id).sort(), [0, 1, 2, 3])
      assert.strictEqual(heap.size, 0)
      assert.isUndefined(heap.peekDue())
      for (const e of entries) {
        assert.strictEqual(e.index, -1)
        assert.isFalse(heap.remove(e))
      }
      heap.insert(entries[3]!, 7)
      assert.strictEqual(heap.size, 1)
      assert.strictEqual(heap.popDue(7), entries[3])
    })

    it("sequence numbers keep growing across clear", () => {
      const { heap, entries } = heapOf([1, 1])
      const seq = entries[1]!.seq
      heap.clear()
      heap.insert(entries[0]!, 1)
      assert.isTrue(entries[0]!.seq > seq)
    })

    it("negative and fractional deadlines order correctly", () => {
      const { heap } = heapOf([0.5, -3, 0, -3, 0.25])
      assert.strictEqual(heap.peekDue(), -3)
      assert.deepStrictEqual(drainIds(heap, 1), [1, 3, 2, 4, 0])
    })
  })
})
