/**
 * Group commit: many callers, each with one item to write, share statements and durable commits. A caller enqueues its
 * item and waits; one worker fiber takes everything queued (up to `maxBatch`), writes it with the batch writer given
 * (one statement or transaction: one commit for the lot), then completes each caller with its own result. While a
 * batch is written, new callers queue for the next one: a lone caller is written at once (no waiting window, so no
 * added delay), and N callers in flight together cost about N / (batch size) commits instead of N.
 *
 * - **A failed batch** (a typed failure or a defect) is written again item by item, in queue order, each caller getting
 *   the answer its item alone gets: a batch is one statement or transaction, so one item the storage refuses (a value
 *   too long for a column, a kind this runner cannot send to) fails it whole, and callers must not pay for another's
 *   item. On an outage every item fails again alone, one after the other (each caller still gets its own typed
 *   error); that costs one more attempt per item, only when writing already failed.
 * - **Order**: items are written in the order they were enqueued, within a batch and across batches; the writer decides
 *   what two items of one batch for the same thing mean (the later wins, for registrations).
 * - **Interruption of a caller** whose item is still queued takes the item out: it is never written. Once its batch
 *   is being written the write goes on (the other callers of the batch need it) and its result is dropped.
 * - **Closing the scope** stops taking items: a caller arriving after that, or still queued, fails with
 *   `closed("queued")`; the batch in flight is interrupted with the worker and its callers fail with
 *   `closed("inFlight")` (its write may or may not have committed). No caller is left waiting.
 *
 * It reads no clock and holds nothing but the queue: the waiting callers' items.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"

export interface GroupCommit<I, A, E> {
  /** Enqueues `item` and waits for the write of the batch it goes in: its own result, or its own failure. */
  readonly submit: (item: I) => Effect.Effect<A, E>
  /**
   * `submit` without waiting: `done` is called once, with the item's result or failure, unless it is cancelled first.
   * Returns the canceller, which takes the item out while it is still queued (true when it did).
   */
  readonly unsafeSubmit: (item: I, done: (exit: Exit.Exit<A, E>) => void) => () => boolean
}

export interface Options<I, A, E, R> {
  /**
   * Writes a batch (one statement or transaction): one result per item, in the items' order. Called with a single
   * item too (a lone caller, or an item written alone after its batch failed).
   */
  readonly write: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<A>, E, R>
  /** Items a batch takes at most (at least 1). */
  readonly maxBatch: number
  /**
   * The failure of a caller whose item is not written because the scope closed: `"queued"` when it was never taken
   * (nothing written), `"inFlight"` when its batch was being written (it may have been stored).
   */
  readonly closed: (when: "queued" | "inFlight") => E
}

interface Entry<I, A, E> {
  readonly item: I
  /** Resumes the caller (once: the runtime ignores a resume after the caller was interrupted). */
  readonly resume: (exit: Exit.Exit<A, E>) => void
  /** queued → taken (in a batch), or queued → cancelled (its caller was interrupted first). */
  state: "queued" | "taken" | "cancelled"
  answered: boolean
}

/**
 * A group commit whose worker runs in the current scope, with the context `write` needs (the worker's, taken when it
 * is made: a caller's fiber refs and services do not reach the write, so pass what it needs in the item).
 */
export const make = <I, A, E, R>(
  options: Options<I, A, E, R>
): Effect.Effect<GroupCommit<I, A, E>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const maxBatch = Math.max(1, Math.floor(options.maxBatch))
    let queue: Array<Entry<I, A, E>> = []
    let closed = false
    /** Open while the queue may hold an item: the worker waits on it. */
    const ready = yield* Effect.makeLatch(false)

    const complete = (entry: Entry<I, A, E>, exit: Exit.Exit<A, E>) => {
      if (entry.answered) return
      entry.answered = true
      entry.resume(exit)
    }

    /** Takes the next batch (synchronously: no caller can enqueue in between, so no wake-up is lost). */
    const take = (): Array<Entry<I, A, E>> => {
      const batch: Array<Entry<I, A, E>> = []
      let i = 0
      for (; i < queue.length && batch.length < maxBatch; i++) {
        const entry = queue[i]!
        if (entry.state !== "queued") continue
        entry.state = "taken"
        batch.push(entry)
      }
      queue = i === queue.length ? [] : queue.slice(i)
      if (queue.length === 0) ready.unsafeClose()
      return batch
    }

    /** `write` of some items, checked: one result per item (else a defect, for each). */
    const written = (items: ReadonlyArray<I>): Effect.Effect<ReadonlyArray<A>, E, R> =>
      Effect.flatMap(options.write(items), (results) =>
        results.length === items.length
          ? Effect.succeed(results)
          : Effect.dieMessage(`group commit: the writer gave ${results.length} results for ${items.length} items`)
      )

    /** Writes a batch and answers each of its callers. */
    const writeBatch = (batch: ReadonlyArray<Entry<I, A, E>>): Effect.Effect<void, never, R> =>
      Effect.flatMap(Effect.exit(written(batch.map((entry) => entry.item))), (exit) => {
        if (Exit.isSuccess(exit)) {
          for (let i = 0; i < batch.length; i++) complete(batch[i]!, Exit.succeed(exit.value[i]!))
          return Effect.void
        }
        if (batch.length === 1 || Cause.isInterruptedOnly(exit.cause)) {
          for (const entry of batch) complete(entry, exit as Exit.Exit<never, E>)
          return Effect.void
        }
        // The batch failed whole: each item alone, in order, so each caller gets its own item's answer.
        return Effect.forEach(
          batch,
          (entry) =>
            Effect.map(Effect.exit(written([entry.item])), (alone) =>
              complete(
                entry,
                Exit.map(alone, (results) => results[0]!)
              )
            ),
          { discard: true }
        )
      })

    /** The batch being written: answered by the worker's interruption (when the scope closes), not left waiting. */
    let inFlight: ReadonlyArray<Entry<I, A, E>> = []
    const step = Effect.flatMap(ready.await, () =>
      Effect.suspend(() => {
        const batch = take()
        if (batch.length === 0) return Effect.void
        inFlight = batch
        return writeBatch(batch)
      })
    )
    // A loop without `Effect.forever`'s yield between turns: the worker yields when it waits for the next item.
    const loop: Effect.Effect<never, never, R> = Effect.flatMap(step, () => loop)
    const worker = Effect.onInterrupt(
      Effect.suspend(() => loop),
      () =>
        Effect.sync(() => {
          for (const entry of inFlight) complete(entry, Exit.fail(options.closed("inFlight")))
        })
    )

    // Finalizers run in reverse: no new item once closing, then the worker interrupted (it answers the callers of the
    // batch in flight), then every caller still queued is failed.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const entry of queue) if (entry.state === "queued") complete(entry, Exit.fail(options.closed("queued")))
        queue = []
      })
    )
    yield* Effect.forkScoped(Effect.interruptible(worker))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
      })
    )

    const unsafeSubmit = (item: I, done: (exit: Exit.Exit<A, E>) => void): (() => boolean) => {
      if (closed) {
        done(Exit.fail(options.closed("queued")))
        return () => false
      }
      const entry: Entry<I, A, E> = { item, resume: done, state: "queued", answered: false }
      queue.push(entry)
      ready.unsafeOpen()
      return () => {
        if (entry.state !== "queued") return false
        entry.state = "cancelled"
        return true
      }
    }

    // The caller waits in `Effect.async` (a `Deferred` per caller cost several times the hand-off itself); its
    // interruption runs the canceler, which takes a queued item out.
    const submit = (item: I): Effect.Effect<A, E> =>
      Effect.async<A, E>((resume) => {
        const cancel = unsafeSubmit(item, resume)
        return Effect.sync(cancel)
      })

    return { submit, unsafeSubmit }
  })
