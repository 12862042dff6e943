import { assert, describe, it } from "@effect/vitest"
import type { ActorRef } from "../../src/ActorRef.js"
import { MAX_ENTRIES } from "../../src/internal/mailbox.js"
import { ScheduledMessage, type SchedulerHost } from "../../src/internal/scheduler.js"

/** The most copies of one tick that can wait: a tick's copies all wait in its own mailbox. */
const MAX_QUEUED = MAX_ENTRIES

/**
 * A real tick kind with a two-bit state of its own (`ownBits`): a scheduler entry, whose host and target are never
 * touched here. Its state is set to every two-bit value, 3 included, to show that no bit leaks.
 */
const newTick = () => new ScheduledMessage({} as SchedulerHost, {} as ActorRef<unknown>, "tick", undefined, undefined)
type TestTick = ReturnType<typeof newTick>
const flagsOf = (tick: TestTick): number => (tick as unknown as { flags: number }).flags

describe("MailboxTick flags", () => {
  it("starts active, not finished, with nothing queued", () => {
    const tick = newTick()
    assert.isTrue(tick.active)
    assert.isFalse(tick.finished)
    assert.strictEqual(tick.queued, 0)
    assert.strictEqual(tick.state, 0)
  })

  it("the queued count and every flag change independently of one another", () => {
    const tick = newTick()
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
    const tick = newTick()
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
    const tick = newTick()
    tick.state = 3 as number
    tick.finished = true
    tick.queued = MAX_QUEUED
    const flags = flagsOf(tick)
    assert.strictEqual(flags, flags | 0)
    assert.isAbove(flags, 0)
    assert.strictEqual(tick.queued, MAX_QUEUED)
  })
})
