import { assert, describe, it } from "@effect/vitest"
import { FLAG_FREE, MAX_QUEUED, MailboxTick } from "../../src/internal/tick.js"

/** A tick with a two-bit state of its own in the bits from `FLAG_FREE`, as scheduler entries keep theirs. */
class TestTick extends MailboxTick {
  readonly message = "tick"
  get kind() {
    return "actor_timer" as const
  }
  get state(): number {
    return (this.flags >> FLAG_FREE) & 3
  }
  set state(state: number) {
    this.flags = (this.flags & ~(3 << FLAG_FREE)) | (state << FLAG_FREE)
  }
  get rawFlags(): number {
    return this.flags
  }
  fire(): undefined {
    return undefined
  }
  accept(): boolean {
    return true
  }
  undeliverable(): void {}
}

describe("MailboxTick flags", () => {
  it("starts active, not finished, with nothing queued", () => {
    const tick = new TestTick()
    assert.isTrue(tick.active)
    assert.isFalse(tick.finished)
    assert.strictEqual(tick.queued, 0)
    assert.strictEqual(tick.state, 0)
  })

  it("the queued count and every flag change independently of one another", () => {
    const tick = new TestTick()
    for (const count of [1, 2, 15, 16, 17, 1_000, MAX_QUEUED - 1, MAX_QUEUED]) {
      for (const state of [0, 1, 2, 3]) {
        for (const finished of [false, true]) {
          for (const active of [false, true]) {
            tick.queued = count
            tick.state = state
            tick.finished = finished
            tick.active = active
            assert.strictEqual(tick.queued, count, `queued ${count} after the flags were set`)
            assert.strictEqual(tick.state, state)
            assert.strictEqual(tick.finished, finished)
            assert.strictEqual(tick.active, active)
          }
        }
      }
    }
  })

  it("counts up and down like a field (queued++ and queued--), leaving the flags alone", () => {
    const tick = new TestTick()
    tick.state = 2
    tick.finished = true
    for (let i = 0; i < 40; i++) tick.queued++
    assert.strictEqual(tick.queued, 40)
    for (let i = 0; i < 40; i++) tick.queued--
    assert.strictEqual(tick.queued, 0)
    assert.strictEqual(tick.state, 2)
    assert.isTrue(tick.finished)
    assert.isTrue(tick.active)
  })

  it("the largest count keeps the packed field a positive int32 (a small integer, not a boxed double)", () => {
    const tick = new TestTick()
    tick.state = 3
    tick.finished = true
    tick.queued = MAX_QUEUED
    const flags = tick.rawFlags
    assert.strictEqual(flags, flags | 0)
    assert.isAbove(flags, 0)
    assert.strictEqual(tick.queued, MAX_QUEUED)
  })
})
