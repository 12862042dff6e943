import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { QueueEntry, TimerQueue } from "../../src/internal/timerQueue.js"
import { check, drainIds, ENTRIES, Model, type Op, runAgainstModel, type Subject } from "./timerModel.js"

class Entry extends QueueEntry {
  /** The queue the entry was made for: its due time reads back through it (`TimerQueue.dueOf`). */
  queue: TimerQueue<Entry> | undefined = undefined
  constructor(readonly id: number) {
    super()
  }
  get due(): number {
    return this.queue!.dueOf(this)
  }
}

/**
 * Dues on a half-millisecond grid, so that whole and fractional due times meet in the same buckets; most are close
 * together (shared milliseconds), some spread over several far windows (opening them).
 */
const opArb = (maxDue: number): FastCheck.Arbitrary<Op> => {
  const id = FastCheck.integer({ min: 0, max: ENTRIES - 1 })
  const halves = (max: number) => FastCheck.integer({ min: 0, max: max * 2 }).map((half) => half / 2)
  const due = FastCheck.oneof({ arbitrary: halves(30), weight: 3 }, { arbitrary: halves(maxDue), weight: 1 })
  const now = FastCheck.oneof(
    { arbitrary: FastCheck.integer({ min: 0, max: 30 }), weight: 3 },
    { arbitrary: FastCheck.integer({ min: 0, max: maxDue }), weight: 1 }
  )
  return FastCheck.oneof(
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("insert" as const), id, due }), weight: 8 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("remove" as const), id }), weight: 3 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("popDue" as const), now }), weight: 3 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("drain" as const), now }), weight: 1 },
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("clear" as const) }), weight: 1 },
    {
      arbitrary: FastCheck.record({
        _tag: FastCheck.constant("openAhead" as const),
        budget: FastCheck.integer({ min: 1, max: 4 })
      }),
      weight: 2
    }
  )
}

interface BucketView {
  readonly items: ReadonlyArray<Entry | undefined>
  readonly head: number
  readonly live: number
  readonly index: number
}

interface LevelView {
  readonly byKey: Map<number, BucketView>
}

interface QueueView {
  readonly near: LevelView
  readonly far: LevelView
  readonly openUntil: number
}

const levels = (queue: TimerQueue<Entry>) => queue as unknown as QueueView

/**
 * White-box look: near buckets are whole milliseconds, far buckets 1024-ms windows, none empty and all in their heap;
 * every pending entry knows its place (`slot`) and nothing sits before a bucket's head; holes stay bounded (at most 32
 * or one per pending entry); every far window is later than the last window opened, and a near timer sits in an
 * opened window or in one `openAhead` has started to open (`started`).
 */
const checkShape = (queue: TimerQueue<Entry>, started: ReadonlySet<number>): void => {
  let count = 0
  const { openUntil } = levels(queue)
  for (const [name, level, tag, keyOf] of [
    ["near", levels(queue).near, 0, (millis: number) => millis],
    ["far", levels(queue).far, 1, (millis: number) => Math.floor(millis / 1024)]
  ] as const) {
    for (const [key, bucket] of level.byKey) {
      check(bucket.live > 0, () => `${name} bucket ${key} is empty but kept`)
      check(bucket.index >= 0, () => `${name} bucket ${key} is not in its heap`)
      if (name === "far") check(key > openUntil, () => `far window ${key} is not after the last opened, ${openUntil}`)
      for (let i = 0; i < bucket.head; i++) check(bucket.items[i] === undefined, () => `${name} ${key}: item ${i} left`)
      let live = 0
      for (let i = bucket.head; i < bucket.items.length; i++) {
        const e = bucket.items[i]
        if (e === undefined) continue
        live++
        const millis = Math.ceil(e.due)
        const window = Math.floor(millis / 1024)
        check(e.slot === i * 2 + tag, () => `entry ${e.id} has slot ${e.slot}, sits at ${i} of ${name} ${key}`)
        check(keyOf(millis) === key, () => `entry ${e.id} due ${e.due} sits in ${name} bucket ${key}`)
        if (name === "near") {
          check(
            window <= openUntil || started.has(window),
            () => `entry ${e.id} is near, but its window ${window} was neither opened nor being opened`
          )
        }
      }
      check(live === bucket.live, () => `${name} bucket ${key} counts ${bucket.live} pending, holds ${live}`)
      const holes = bucket.items.length - bucket.head - live
      check(holes <= Math.max(32, live), () => `${name} bucket ${key} keeps ${holes} holes for ${live} entries`)
      count += live
    }
  }
  check(count === queue.size, () => `size ${queue.size} but ${count} entries in buckets`)
}

/** `ahead`: the queue may open windows starting up to `ahead` ms after the last `popDue` time as timers are inserted. */
const runOps = (ops: ReadonlyArray<Op>, ahead?: number): void => {
  let now = 0
  const queue = new TimerQueue<Entry>(ahead === undefined ? undefined : () => now + ahead)
  const entries = Array.from({ length: ENTRIES }, (_, i) => Object.assign(new Entry(i), { queue }))
  // The windows `openAhead` has begun to open: their timers may be near before the window is fully open.
  const started = new Set<number>()
  const subject: Subject<Entry> = {
    insert: (entry, due) => queue.insert(entry, due),
    remove: (entry) => queue.remove(entry),
    popDue: (at) => {
      now = Math.max(now, at)
      return queue.popDue(at)
    },
    clear: () => queue.clear(),
    peekDue: () => queue.peekDue(),
    get size() {
      return queue.size
    },
    openAhead: (budget) => {
      const start = queue.nextWindowStart()
      if (start !== undefined) started.add(start / 1024)
      return queue.openAhead(budget)
    }
  }
  runAgainstModel(
    ops,
    subject,
    new Model(Math.ceil),
    entries,
    () => checkShape(queue, started),
    // exact, or a lower bound: the first millisecond of the earliest window not fully open; `earliestDue` (the
    // testkit's) is always exact
    (peek, expected) =>
      queue.earliestDue() === expected &&
      (peek === expected ||
        (expected !== undefined && peek !== undefined && peek <= expected && peek === queue.nextWindowStart()))
  )
}

const queueOf = (dues: ReadonlyArray<number>) => {
  const queue = new TimerQueue<Entry>()
  const entries = dues.map((due, i) => {
    const e = new Entry(i)
    queue.insert(e, due)
    return e
  })
  return { queue, entries }
}

describe("TimerQueue", () => {
  it("fires in (millisecond, insertion) order, a fractional due at the next whole millisecond", () => {
    const { queue } = queueOf([20, 10, 10.5, 10, 11, 9.2])
    assert.strictEqual(queue.peekDue(), 0) // the first millisecond of the window they wait in
    assert.deepStrictEqual(drainIds(queue, 10), [1, 3, 5])
    assert.strictEqual(queue.peekDue(), 11)
    assert.isUndefined(queue.popDue(10.9))
    assert.deepStrictEqual(drainIds(queue, 11), [2, 4])
    assert.deepStrictEqual(drainIds(queue, 100), [0])
    assert.isUndefined(queue.peekDue())
  })

  it("moving a pending entry puts it at the end of its new millisecond; removing twice is false", () => {
    const { queue, entries } = queueOf([5, 5, 5])
    queue.insert(entries[0]!, 5)
    assert.isTrue(queue.remove(entries[1]!))
    assert.isFalse(queue.remove(entries[1]!))
    assert.isFalse(entries[1]!.isPending)
    assert.deepStrictEqual(drainIds(queue, 5), [2, 0])
  })

  it("drops a millisecond's bucket when its last entry leaves, and clear leaves nothing pending", () => {
    const { queue, entries } = queueOf([1, 2, 2, 3])
    const buckets = () => levels(queue).near.byKey.size + levels(queue).far.byKey.size
    assert.strictEqual(buckets(), 1) // all in far window 0
    assert.strictEqual(queue.peekDue(), 0)
    assert.isUndefined(queue.popDue(0)) // opens the window: one bucket per millisecond from here
    assert.strictEqual(buckets(), 3)
    assert.strictEqual(queue.peekDue(), 1)
    queue.remove(entries[0]!)
    queue.remove(entries[1]!)
    assert.strictEqual(buckets(), 2)
    assert.deepStrictEqual(
      queue.toArray().map((e) => e.id),
      [2, 3]
    )
    assert.deepStrictEqual(
      queue
        .clear()
        .map((e) => e.id)
        .sort(),
      [2, 3]
    )
    assert.strictEqual(buckets(), 0)
    assert.strictEqual(queue.size, 0)
    for (const e of entries) assert.isFalse(e.isPending)
  })

  it("opens far windows in order: a timer scheduled after its window opened still comes after the earlier ones", () => {
    const { queue, entries } = queueOf([5000, 3000, 3000.5, 10])
    assert.strictEqual(queue.peekDue(), 0) // window 0 has not opened yet
    assert.isUndefined(queue.popDue(9))
    assert.strictEqual(queue.peekDue(), 10)
    const late = new Entry(9)
    // window 2 (2048-3071) is still far: the new timer queues behind entries 1 and 2 when it opens
    queue.insert(late, 3000)
    assert.deepStrictEqual(drainIds(queue, 2999), [3])
    assert.strictEqual(queue.peekDue(), 3000) // popDue(2999) reached window 2 and opened it
    queue.insert(entries[3]!, 3000) // window 2 is open now: straight to its millisecond, at the end
    assert.deepStrictEqual(drainIds(queue, 3001), [1, 9, 3, 2])
    assert.strictEqual(queue.peekDue(), 4096)
    assert.isUndefined(queue.popDue(4999))
    assert.strictEqual(queue.peekDue(), 5000)
    assert.strictEqual(queue.popDue(5000)?.id, 0)
  })

  it("openAhead opens the earliest window in steps; timers scheduled meanwhile keep their order", () => {
    const { queue, entries } = queueOf([3000, 3000.5, 3000, 2100])
    assert.strictEqual(queue.nextWindowStart(), 2048)
    assert.isFalse(queue.openAhead(2)) // entries 0 and 1 moved to their milliseconds, 2 and 3 still wait
    const late = new Entry(9)
    queue.insert(late, 3000) // window 2 is still being opened: behind entry 2
    assert.strictEqual(queue.peekDue(), 2048) // a lower bound while the window is not fully open
    assert.isFalse(queue.openAhead(1))
    assert.isTrue(queue.openAhead(10))
    assert.isUndefined(queue.nextWindowStart())
    assert.strictEqual(queue.peekDue(), 2100)
    queue.insert(entries[1]!, 3000) // open now: straight to its millisecond, at the end
    assert.isUndefined(queue.popDue(2099))
    assert.deepStrictEqual(drainIds(queue, 3001), [3, 0, 2, 9, 1])
  })

  it("openAhead: a millisecond emptied by cancels while its window opens gets a new bucket", () => {
    const { queue, entries } = queueOf([5, 5, 5])
    assert.isFalse(queue.openAhead(1))
    assert.isTrue(queue.remove(entries[0]!)) // its millisecond's bucket leaves the near level
    assert.isFalse(queue.openAhead(1))
    assert.isTrue(queue.remove(entries[1]!))
    assert.isTrue(queue.openAhead(1))
    assert.strictEqual(queue.size, 1)
    assert.strictEqual(queue.peekDue(), 5)
    assert.deepStrictEqual(drainIds(queue, 5), [2])
  })

  it("a window half opened ahead is finished by popDue, after an earlier window scheduled meanwhile", () => {
    const { queue } = queueOf([3000, 3001, 3002])
    assert.isFalse(queue.openAhead(1)) // window 2 half open
    const early = new Entry(7)
    queue.insert(early, 1500) // window 1: now the earliest far window
    assert.strictEqual(queue.peekDue(), 1024)
    assert.strictEqual(queue.popDue(1500)?.id, 7)
    assert.isUndefined(queue.popDue(2999))
    assert.deepStrictEqual(drainIds(queue, 3002), [0, 1, 2])
  })

  it("cancels leave holes that are compacted away, far and near (while a bucket is being popped), in order", () => {
    const dues = Array.from({ length: 100 }, () => 2000)
    const { queue, entries } = queueOf(dues) // one far window
    const far = () => [...levels(queue).far.byKey.values()][0]!
    for (let i = 0; i < 100; i += 3) queue.remove(entries[i]!) // 34 holes for 66 entries: kept
    assert.strictEqual(far().items.length, 100)
    // holes > pending after 17 more: compacted to 49 (in order, slots renumbered); 16 more holes are kept
    for (let i = 1; i < 100; i += 3) queue.remove(entries[i]!)
    assert.strictEqual(far().items.length, 49)
    assert.strictEqual(far().live, 33)
    assert.isTrue(far().items.every((e, i) => e === undefined || e.slot === i * 2 + 1))
    for (const e of entries) if (!e.isPending) queue.insert(e, 2000) // back, at the end
    const expected = [
      ...Array.from({ length: 33 }, (_, k) => 3 * k + 2),
      ...Array.from({ length: 100 }, (_, i) => i).filter((i) => i % 3 !== 2)
    ]
    const popped = [queue.popDue(2000)!.id, queue.popDue(2000)!.id] // the window opens; two leave the near bucket
    const near = () => levels(queue).near.byKey.get(2000)!
    assert.strictEqual(near().head, 2)
    for (const id of expected.slice(2, 70)) queue.remove(entries[id]!) // compacts from the head on, after 50
    assert.strictEqual(near().head, 0)
    assert.strictEqual(near().items.length, 48)
    assert.strictEqual(near().live, 30)
    assert.isTrue(near().items.every((e, i) => e === undefined || e.slot === i * 2))
    assert.deepStrictEqual([...popped, ...drainIds(queue, 2000)], [...expected.slice(0, 2), ...expected.slice(70)])
    assert.strictEqual(queue.size, 0)
  })

  it("keeps 100,000 timers in a few hundred milliseconds in order", () => {
    const n = 100_000
    const queue = new TimerQueue<Entry>()
    for (let i = 0; i < n; i++) queue.insert(Object.assign(new Entry(i), { queue }), (i * 7919) % 500)
    let last = -1
    let lastId = -1
    let popped = 0
    let e: Entry | undefined
    while ((e = queue.popDue(500)) !== undefined) {
      check(e.due > last || (e.due === last && e.id > lastId), () => `out of order at ${e?.id}`)
      last = e.due
      lastId = e.id
      popped++
    }
    assert.strictEqual(popped, n)
  })

  it("matches a sorted-list model under random insert / move / remove / popDue / drain / clear", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.array(opArb(5000), { maxLength: 200 }), (ops) => runOps(ops)),
      { numRuns: 300 }
    )
  })

  it("matches the model too when windows within a horizon open as timers are inserted", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.array(opArb(5000), { maxLength: 200 }), (ops) => runOps(ops, 2000)),
      { numRuns: 300 }
    )
  })

  it("a window within the horizon, with no far timer in or before it, opens as a timer is inserted", () => {
    let horizon = 5000
    const queue = new TimerQueue<Entry>(() => horizon)
    const [a, b, c, d] = [0, 1, 2, 3].map((id) => new Entry(id)) as [Entry, Entry, Entry, Entry]
    queue.insert(a, 3000) // window 2 (2048-3071) starts within the horizon and nothing is far: open, a is near
    assert.isUndefined(queue.nextWindowStart())
    assert.strictEqual(queue.peekDue(), 3000)
    queue.insert(b, 9000) // window 8 starts after the horizon: far
    assert.strictEqual(queue.nextWindowStart(), 8192)
    horizon = 20_000
    queue.insert(c, 12_000) // within the horizon, but window 8 before it holds a far timer: far as well
    assert.strictEqual(queue.nextWindowStart(), 8192)
    assert.strictEqual(levels(queue).far.byKey.size, 2)
    queue.insert(d, 5000) // window 4 is before every far window: open, d is near
    assert.strictEqual(levels(queue).openUntil, 4)
    assert.deepStrictEqual(drainIds(queue, 20_000), [0, 3, 1, 2])
  })
})

describe("due times as offsets from the queue's epoch", () => {
  const queueAt = (first: number) => {
    const queue = new TimerQueue<Entry>()
    const entry = Object.assign(new Entry(0), { queue })
    queue.insert(entry, first)
    return { queue, entry }
  }

  it("gives back exactly the due it was given: epoch millis, fractions, far and negative dues, infinity", () => {
    const { queue } = queueAt(1_764_547_200_000)
    const dues = [
      1_764_547_200_000,
      0,
      1_764_547_200_000 + 0.25,
      1_764_547_200_000 + 40 * 86_400_000,
      -5,
      12.5,
      2 ** 52
    ]
    for (const due of [...dues, Number.POSITIVE_INFINITY]) {
      const entry = Object.assign(new Entry(1), { queue })
      queue.insert(entry, due)
      assert.strictEqual(entry.due, due, `due ${due}`)
    }
  })

  it("an infinite first due does not become the epoch", () => {
    const queue = new TimerQueue<Entry>()
    const never = Object.assign(new Entry(0), { queue })
    queue.insert(never, Number.POSITIVE_INFINITY)
    const soon = Object.assign(new Entry(1), { queue })
    queue.insert(soon, 1_764_547_200_000)
    assert.strictEqual(never.due, Number.POSITIVE_INFINITY)
    assert.strictEqual(soon.due, 1_764_547_200_000)
    assert.strictEqual(soon.dueOffset, 0, "the first finite due is the epoch")
  })

  it("an offset near the epoch is an int32 (kept in the field by V8), and every offset adds back exactly", () => {
    const epoch = 1_764_547_200_000
    const { queue } = queueAt(epoch)
    for (const millis of [epoch, epoch + 1, epoch - 1, epoch + 86_400_000, epoch - 86_400_000]) {
      const offset = queue.toOffset(millis)
      assert.strictEqual(offset, offset | 0, `an int32 for ${millis}`)
      assert.strictEqual(queue.fromOffset(offset), millis)
    }
    for (const millis of [epoch + 0.5, epoch + 40 * 86_400_000, 0, -5, Number.POSITIVE_INFINITY]) {
      assert.strictEqual(queue.fromOffset(queue.toOffset(millis)), millis, `millis ${millis}`)
    }
  })

  it("each queue has an epoch of its own: a TestClock engine and a live one both keep int32 offsets", () => {
    const test = queueAt(1_000) // a TestClock near 1970
    const live = queueAt(1_764_547_200_000) // the real clock
    const testEntry = Object.assign(new Entry(1), { queue: test.queue })
    test.queue.insert(testEntry, 5_000)
    const liveEntry = Object.assign(new Entry(2), { queue: live.queue })
    live.queue.insert(liveEntry, 1_764_547_205_000)
    assert.strictEqual(testEntry.dueOffset, 4_000)
    assert.strictEqual(liveEntry.dueOffset, 5_000)
    assert.strictEqual(testEntry.due, 5_000)
    assert.strictEqual(liveEntry.due, 1_764_547_205_000)
  })

  it("stays exact for random dues around now, whatever due came first", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 0, max: 2 ** 42 }),
        FastCheck.integer({ min: 0, max: 2 ** 42 }),
        FastCheck.integer({ min: 0, max: 1_000 }),
        (first, millis, quarter) => {
          const { queue } = queueAt(first)
          const entry = Object.assign(new Entry(1), { queue })
          const due = millis + quarter / 4
          queue.insert(entry, due)
          return entry.due === due
        }
      )
    )
  })
})
