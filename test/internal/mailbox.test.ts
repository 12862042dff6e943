import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { EMPTY, MAX_ENTRIES, Mailbox } from "../../src/internal/mailbox.js"

/** A cheap assertion for hot loops: chai's `assert` costs too much to call hundreds of thousands of times. */
const check = (ok: boolean, message: () => string): void => {
  if (!ok) assert.fail(message())
}

/** Polls until `EMPTY`. */
const drain = (mailbox: Mailbox): Array<unknown> => {
  const out: Array<unknown> = []
  for (let m = mailbox.poll(); m !== EMPTY; m = mailbox.poll()) out.push(m)
  return out
}

/** The reference model: two plain arrays. */
class Model {
  readonly user: Array<unknown> = []
  readonly system: Array<unknown> = []
  constructor(readonly capacity: number) {}

  offer(m: unknown): boolean {
    if (this.user.length >= this.capacity) return false
    this.user.push(m)
    return true
  }

  poll(): unknown {
    if (this.system.length > 0) return this.system.shift()
    return this.pollUser()
  }

  pollUser(): unknown {
    return this.user.length > 0 ? this.user.shift() : EMPTY
  }
}

type Op =
  | { readonly _tag: "offer"; readonly count: number }
  | { readonly _tag: "offerSystem" }
  | { readonly _tag: "poll"; readonly count: number }
  | { readonly _tag: "pollUser"; readonly count: number }

const opArb: FastCheck.Arbitrary<Op> = FastCheck.oneof(
  {
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("offer" as const),
      count: FastCheck.integer({ min: 1, max: 40 })
    }),
    weight: 6
  },
  { arbitrary: FastCheck.record({ _tag: FastCheck.constant("offerSystem" as const) }), weight: 1 },
  {
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("poll" as const),
      count: FastCheck.integer({ min: 1, max: 40 })
    }),
    weight: 4
  },
  {
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("pollUser" as const),
      count: FastCheck.integer({ min: 1, max: 10 })
    }),
    weight: 1
  }
)

const runOps = (capacity: number, ops: ReadonlyArray<Op>): void => {
  const mailbox = new Mailbox(capacity)
  const model = new Model(capacity)
  let next = 0
  for (const op of ops) {
    switch (op._tag) {
      case "offer": {
        for (let i = 0; i < op.count; i++) {
          const m = next++
          const got = mailbox.offer(m)
          const want = model.offer(m)
          check(got === want, () => `offer(${m}) returned ${got}, model ${want}`)
        }
        break
      }
      case "offerSystem": {
        const m = `sys${next++}`
        mailbox.offerSystem(m)
        model.system.push(m)
        break
      }
      case "poll": {
        for (let i = 0; i < op.count; i++) {
          const got = mailbox.poll()
          const want = model.poll()
          check(got === want, () => `poll returned ${String(got)}, model ${String(want)}`)
        }
        break
      }
      case "pollUser": {
        for (let i = 0; i < op.count; i++) {
          const got = mailbox.pollUser()
          const want = model.pollUser()
          check(got === want, () => `pollUser returned ${String(got)}, model ${String(want)}`)
        }
        break
      }
    }
    check(mailbox.size === model.user.length, () => `size ${mailbox.size}, model ${model.user.length}`)
    check(mailbox.isFull === model.user.length >= capacity, () => `isFull ${mailbox.isFull} at size ${mailbox.size}`)
    check(mailbox.hasSystemMessages === model.system.length > 0, () => `hasSystemMessages ${mailbox.hasSystemMessages}`)
  }
  assert.deepStrictEqual(drain(mailbox), [...model.system, ...model.user])
  assert.strictEqual(mailbox.size, 0)
}

describe("Mailbox", () => {
  describe("against an array model", () => {
    for (const capacity of [1, 3, 16, 17, 100, Number.POSITIVE_INFINITY]) {
      it(`random offer / offerSystem / poll / pollUser, capacity ${capacity}`, () => {
        FastCheck.assert(
          FastCheck.property(FastCheck.array(opArb, { minLength: 10, maxLength: 200, size: "max" }), (ops) =>
            runOps(capacity, ops)
          ),
          { numRuns: 150 }
        )
      })
    }
  })

  describe("FIFO order", () => {
    it("holds across growth from an empty start", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      const items = Array.from({ length: 1000 }, (_, i) => i)
      for (const i of items) assert.isTrue(mailbox.offer(i))
      assert.strictEqual(mailbox.size, 1000)
      assert.deepStrictEqual(drain(mailbox), items)
    })

    it("holds when the buffer grows while wrapped around", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      const model: Array<number> = []
      const out: Array<unknown> = []
      let next = 0
      // 12 in (the buffer grows from 4 to 16 slots), 10 out: head sits at 10 of 16. 20 more in: the write index wraps
      // past 15, then the buffer is full
      // (16 entries, head 10) and must grow, copying the wrapped run in order.
      for (let i = 0; i < 12; i++) mailbox.offer(next++)
      for (let i = 0; i < 10; i++) out.push(mailbox.poll())
      for (let i = 0; i < 20; i++) mailbox.offer(next++)
      for (let i = 0; i < next; i++) model.push(i)
      out.push(...drain(mailbox))
      assert.deepStrictEqual(out, model)
    })

    it("holds over hundreds of items with every offer/poll rhythm up to 7/6", () => {
      for (let offers = 1; offers <= 7; offers++) {
        for (let polls = 1; polls <= 6; polls++) {
          const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
          const model: Array<number> = []
          const out: Array<unknown> = []
          const got: Array<unknown> = []
          let next = 0
          while (next < 400) {
            for (let i = 0; i < offers; i++) {
              mailbox.offer(next)
              model.push(next++)
            }
            for (let i = 0; i < polls; i++) {
              const m = mailbox.poll()
              const want = model.shift() ?? EMPTY
              got.push(m)
              out.push(want)
            }
            check(mailbox.size === model.length, () => `rhythm ${offers}/${polls}: size ${mailbox.size}`)
          }
          got.push(...drain(mailbox))
          out.push(...model)
          assert.deepStrictEqual(got, out, `rhythm ${offers}/${polls}`)
        }
      }
    })

    it("holds across many wrap-arounds of a buffer that never grows", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      const seen: Array<unknown> = []
      for (let i = 0; i < 500; i++) {
        mailbox.offer(i)
        if (i >= 9) seen.push(mailbox.poll())
      }
      seen.push(...drain(mailbox))
      assert.deepStrictEqual(
        seen,
        Array.from({ length: 500 }, (_, i) => i)
      )
    })
  })

  describe("capacity", () => {
    it("offer returns false when full and isFull says so", () => {
      const mailbox = new Mailbox(5)
      for (let i = 0; i < 5; i++) {
        assert.isFalse(mailbox.isFull)
        assert.isTrue(mailbox.offer(i))
      }
      assert.isTrue(mailbox.isFull)
      assert.isFalse(mailbox.offer(5))
      assert.isFalse(mailbox.offer(6))
      assert.strictEqual(mailbox.size, 5)
      assert.strictEqual(mailbox.poll(), 0)
      assert.isFalse(mailbox.isFull)
      assert.isTrue(mailbox.offer(7))
      assert.isTrue(mailbox.isFull)
      assert.deepStrictEqual(drain(mailbox), [1, 2, 3, 4, 7])
    })

    it("a capacity above the initial buffer grows up to the bound and no further", () => {
      const mailbox = new Mailbox(40)
      for (let i = 0; i < 40; i++) assert.isTrue(mailbox.offer(i), `offer ${i}`)
      assert.isTrue(mailbox.isFull)
      assert.isFalse(mailbox.offer(40))
      assert.deepStrictEqual(
        drain(mailbox),
        Array.from({ length: 40 }, (_, i) => i)
      )
    })

    it("capacity 0 refuses every user entry", () => {
      const mailbox = new Mailbox(0)
      assert.isTrue(mailbox.isFull)
      assert.isFalse(mailbox.offer("x"))
      assert.strictEqual(mailbox.size, 0)
      assert.strictEqual(mailbox.poll(), EMPTY)
    })

    it("an unbounded mailbox is never full", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      for (let i = 0; i < 5000; i++) check(mailbox.offer(i), () => `offer ${i} refused`)
      assert.isFalse(mailbox.isFull)
      assert.strictEqual(mailbox.size, 5000)
    })

    it("system messages are accepted when the user lane is full and do not count toward size", () => {
      const mailbox = new Mailbox(2)
      mailbox.offer("u1")
      mailbox.offer("u2")
      mailbox.offerSystem("s1")
      mailbox.offerSystem("s2")
      assert.strictEqual(mailbox.size, 2)
      assert.isTrue(mailbox.isFull)
      assert.deepStrictEqual(drain(mailbox), ["s1", "s2", "u1", "u2"])
    })
  })

  describe("system lane", () => {
    it("system messages come before user entries, FIFO among themselves", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      mailbox.offer("u1")
      mailbox.offerSystem("s1")
      mailbox.offer("u2")
      mailbox.offerSystem("s2")
      assert.isTrue(mailbox.hasSystemMessages)
      assert.strictEqual(mailbox.poll(), "s1")
      mailbox.offerSystem("s3")
      assert.strictEqual(mailbox.poll(), "s2")
      assert.strictEqual(mailbox.poll(), "s3")
      assert.isFalse(mailbox.hasSystemMessages)
      assert.strictEqual(mailbox.poll(), "u1")
      mailbox.offerSystem("s4")
      assert.strictEqual(mailbox.poll(), "s4")
      assert.strictEqual(mailbox.poll(), "u2")
      assert.strictEqual(mailbox.poll(), EMPTY)
    })

    it("pollUser skips the system lane", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      mailbox.offerSystem("s1")
      assert.strictEqual(mailbox.pollUser(), EMPTY)
      mailbox.offer("u1")
      assert.strictEqual(mailbox.pollUser(), "u1")
      assert.isTrue(mailbox.hasSystemMessages)
      assert.strictEqual(mailbox.poll(), "s1")
      assert.strictEqual(mailbox.poll(), EMPTY)
    })
  })

  describe("EMPTY and undefined", () => {
    it("poll and pollUser return EMPTY when nothing is queued", () => {
      const mailbox = new Mailbox(4)
      assert.strictEqual(mailbox.poll(), EMPTY)
      assert.strictEqual(mailbox.pollUser(), EMPTY)
      mailbox.offer(1)
      mailbox.poll()
      assert.strictEqual(mailbox.poll(), EMPTY)
      assert.strictEqual(mailbox.size, 0)
    })

    it("undefined and null user messages are preserved, not mistaken for empty", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      assert.isTrue(mailbox.offer(undefined))
      assert.isTrue(mailbox.offer(null))
      assert.isTrue(mailbox.offer(undefined))
      mailbox.offerSystem(undefined)
      assert.strictEqual(mailbox.size, 3)
      assert.isTrue(mailbox.hasSystemMessages)
      const out = drain(mailbox)
      assert.strictEqual(out.length, 4)
      assert.deepStrictEqual(out, [undefined, undefined, null, undefined])
      assert.strictEqual(mailbox.size, 0)
      assert.strictEqual(mailbox.poll(), EMPTY)
    })

    it("undefined survives growth and wrap-around", () => {
      const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
      for (let i = 0; i < 10; i++) mailbox.offer(i)
      for (let i = 0; i < 8; i++) mailbox.poll()
      for (let i = 0; i < 30; i++) mailbox.offer(i % 3 === 0 ? undefined : i)
      const out = drain(mailbox)
      assert.deepStrictEqual(out, [8, 9, ...Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? undefined : i))])
    })
  })
})

describe("Mailbox memory", () => {
  const bufferOf = (mailbox: Mailbox) => (mailbox as unknown as { buffer: Array<unknown> | undefined }).buffer

  it("an empty mailbox holds no buffer: none before the first offer, none once drained, a backlog's included", () => {
    const mailbox = new Mailbox(Number.POSITIVE_INFINITY)
    assert.isUndefined(bufferOf(mailbox), "a new mailbox")
    mailbox.offer("one")
    assert.strictEqual(bufferOf(mailbox)?.length, 4, "the first offer makes 4 slots")
    assert.strictEqual(mailbox.poll(), "one")
    assert.isUndefined(bufferOf(mailbox), "drained")
    for (let i = 0; i < 5000; i++) mailbox.offer(i)
    assert.isAtLeast(bufferOf(mailbox)!.length, 5000)
    for (let i = 0; i < 5000; i++) assert.strictEqual(mailbox.poll(), i)
    assert.isUndefined(bufferOf(mailbox), "a drained backlog gives its buffer back")
    mailbox.offer("after")
    assert.strictEqual(mailbox.poll(), "after")
    assert.strictEqual(mailbox.poll(), EMPTY)
  })

  it("keeps its bound as a small integer (Infinity would be a boxed double per mailbox) and reports it as given", () => {
    const limitOf = (mailbox: Mailbox) => (mailbox as unknown as { limit: number }).limit
    for (const capacity of [0, 1, 40, 1_000_000, Number.POSITIVE_INFINITY]) {
      const mailbox = new Mailbox(capacity)
      assert.strictEqual(mailbox.capacity, capacity)
      assert.strictEqual(limitOf(mailbox), limitOf(mailbox) | 0, `capacity ${capacity}: an int32 limit`)
    }
    // No mailbox holds more than MAX_ENTRIES: a capacity of it and up is unbounded.
    for (const capacity of [MAX_ENTRIES, 2 ** 28]) {
      const mailbox = new Mailbox(capacity)
      assert.strictEqual(mailbox.capacity, Number.POSITIVE_INFINITY)
      assert.strictEqual(limitOf(mailbox), MAX_ENTRIES)
    }
  })
})
