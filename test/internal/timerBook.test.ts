import { assert, describe, it } from "@effect/vitest"
import { TimerBook } from "../../src/internal/timerBook.js"

const book = () => new TimerBook<string, number>()

describe("TimerBook", () => {
  it("holds timers by key and lists them in the order they came", () => {
    const b = book()
    assert.strictEqual(b.timerCount, 0)
    assert.deepStrictEqual(b.timerList(), [])
    b.setTimer("a", 1)
    b.setTimer("b", 2)
    b.setTimer("c", 3)
    assert.strictEqual(b.timerCount, 3)
    assert.deepStrictEqual(b.timerList(), [1, 2, 3])
    assert.strictEqual(b.getTimer("a"), 1)
    assert.strictEqual(b.getTimer("c"), 3)
    assert.isUndefined(b.getTimer("d"))
  })

  it("a timer set under a key it holds replaces the old one in its place", () => {
    const b = book()
    b.setTimer("a", 1)
    b.setTimer("b", 2)
    b.setTimer("a", 10)
    b.setTimer("b", 20)
    assert.deepStrictEqual(b.timerList(), [10, 20])
    assert.strictEqual(b.timerCount, 2)
  })

  it("keeps the order when the first timer goes and others come after", () => {
    const b = book()
    b.setTimer("a", 1)
    b.setTimer("b", 2)
    b.deleteTimer("a")
    b.setTimer("c", 3)
    assert.deepStrictEqual(b.timerList(), [2, 3], "the newest is listed last, not in the first's place")
    assert.isUndefined(b.getTimer("a"))
    b.deleteTimer("b")
    b.deleteTimer("c")
    assert.strictEqual(b.timerCount, 0)
    b.setTimer("d", 4)
    b.setTimer("e", 5)
    assert.deepStrictEqual(b.timerList(), [4, 5])
  })

  it("deleting a key it does not hold changes nothing; clearing empties it", () => {
    const b = book()
    b.setTimer("a", 1)
    b.deleteTimer("x")
    assert.deepStrictEqual(b.timerList(), [1])
    b.setTimer("b", 2)
    b.clearTimers()
    assert.strictEqual(b.timerCount, 0)
    assert.isUndefined(b.getTimer("a"))
    assert.isUndefined(b.getTimer("b"))
  })

  it("a key held by the first timer's place is not found once that timer went (an undefined key included)", () => {
    const b = new TimerBook<string | undefined, number>()
    assert.isUndefined(b.getTimer(undefined), "an empty book has no timer under the key its empty fields hold")
    b.setTimer(undefined, 7)
    assert.strictEqual(b.getTimer(undefined), 7)
    b.deleteTimer(undefined)
    assert.isUndefined(b.getTimer(undefined))
  })
})
