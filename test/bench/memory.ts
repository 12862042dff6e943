/**
 * Memory scenario: heap held by pending timers, after a full gc, against the heap before anything was created.
 *
 * - Idle actors, each holding one long (1 hour) timer, at 10k and 100k: tickwork (`ctx.timers.startSingleTimer`),
 *   the naive Effect design (a consumer fiber parked on a `Queue` plus a fiber sleeping for the timer) and Node (an
 *   object plus a `setTimeout`).
 * - Pending grain timers (`ctx.scheduleOnce` on the first message, `Passivation.never`) and pending entity timers
 *   (`ctx.startPeriodicTimer` in `initialize`), both through the public API, in two shapes: 1M timers spread 1,000 to
 *   an activation (the timers' own cost), and one timer per activation (activation included; 1M activations exceed
 *   the heap, so that shape is measured at 100k and multiplied, which the output says).
 * - Node baseline for 1M pending timers: 1M `setTimeout`s.
 */

import * as v8 from "node:v8"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import { Actor, ActorSystem, Entity, Grain, Grains, Passivation } from "../../src/index.js"
import { fmtBytes, fmtCount, fmtInt, fmtRatio, heapAfterGc, sleep, type TargetRow, table } from "./stats.js"

export interface MemoryOptions {
  /** Idle actor counts. */
  readonly idleActors: ReadonlyArray<number>
  /** Pending grain / entity timers in the "many timers per activation" shape (1,000 per activation). */
  readonly manyTimers: number
  /** Activations in the "one timer per activation" shape. */
  readonly singleTimerActivations: number
  /** How long to wait for every activation / timer to be in place. */
  readonly readyTimeoutMillis: number
}

export interface HeldRow {
  readonly what: string
  readonly design: string
  /** Actors / activations / timer owners. */
  readonly owners: number
  readonly timers: number
  readonly heapBytes: number
  readonly bytesPerOwner: number
  readonly bytesPerTimer: number
  /** Seconds to create everything (until every timer was in place). */
  readonly startSeconds: number
  /** Timers in place when the heap was read (per-timer figures divide by it). */
  readonly armed: number
  /** False when not every timer was in place (the row then says how many were). */
  readonly complete: boolean
  /** Error-level logs of the runtime under test (counted, not printed), and the first one. */
  readonly errorLogs: number
  readonly firstError: string | undefined
}

export interface MemoryResult {
  readonly scenario: "memory"
  readonly options: MemoryOptions
  readonly rows: ReadonlyArray<HeldRow>
  readonly notes: ReadonlyArray<string>
  readonly targets: ReadonlyArray<TargetRow>
}

const HOUR = 3_600_000
const TIMERS_PER_ACTIVATION = 1_000
const GB = 1024 ** 3

/** A set-up that creates `owners` × `perOwner` pending timers and counts those in place. */
interface Held {
  readonly armed: () => Promise<number>
  readonly stop: () => Promise<void>
}

/** Error logs of one set-up: counted, and the first one kept, instead of a stack trace printed per failure. */
interface ErrorLogs {
  count: number
  first: string | undefined
}

const countErrors = (logs: ErrorLogs): Layer.Layer<never> =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel, message, cause }) => {
      if (logLevel._tag !== "Error" && logLevel._tag !== "Fatal") return
      logs.count++
      logs.first ??= `${String(message)}: ${Cause.pretty(cause).split("\n")[0]}`
    })
  )

/** Waits until `expected` timers are in place, or no more came in for `stallMillis`, or the timeout. */
const settle = async (held: Held, expected: number, timeoutMillis: number, stallMillis = 1_000): Promise<number> => {
  const end = performance.now() + timeoutMillis
  let last = -1
  let lastChange = performance.now()
  for (;;) {
    const armed = await held.armed()
    const now = performance.now()
    if (armed >= expected || now >= end || (armed === last && now - lastChange >= stallMillis)) return armed
    if (armed !== last) {
      last = armed
      lastChange = now
    }
    await sleep(50)
  }
}

const measure = async (
  what: string,
  design: string,
  owners: number,
  perOwner: number,
  make: (logs: Layer.Layer<never>) => Promise<Held>,
  timeoutMillis: number,
  log: (line: string) => void
): Promise<HeldRow> => {
  const h0 = heapAfterGc()
  const t0 = performance.now()
  const logs: ErrorLogs = { count: 0, first: undefined }
  const held = await make(countErrors(logs))
  const timers = owners * perOwner
  const armed = await settle(held, timers, timeoutMillis)
  const complete = armed >= timers
  const startSeconds = (performance.now() - t0) / 1000
  await sleep(100)
  const heapBytes = heapAfterGc() - h0
  await held.stop()
  heapAfterGc()
  const row: HeldRow = {
    what,
    design,
    owners,
    timers,
    heapBytes,
    bytesPerOwner: heapBytes / owners,
    bytesPerTimer: heapBytes / Math.max(1, armed),
    startSeconds,
    armed,
    complete,
    errorLogs: logs.count,
    firstError: logs.first
  }
  log(
    `  ${what}, ${design}: ${fmtInt(owners)} × ${fmtInt(perOwner)}: ${fmtBytes(heapBytes)} ` +
      `(${fmtBytes(row.bytesPerOwner)} each)${complete ? "" : `, only ${fmtInt(armed)} timers in place`}` +
      (logs.count === 0 ? "" : `, ${fmtInt(logs.count)} error logs (first: ${logs.first})`)
  )
  return row
}

// ---------------------------------------------------------------- idle actors holding one timer

const tickworkIdle =
  (n: number) =>
  async (logs: Layer.Layer<never>): Promise<Held> => {
    const Idle = Actor.make<"arm" | "tick">()({
      receive: (msg, ctx) =>
        msg === "arm" ? Effect.orDie(ctx.timers.startSingleTimer("t", "tick", HOUR)) : Effect.void
    })
    const runtime = ManagedRuntime.make(Layer.provide(ActorSystem.layer({ name: "bench-idle" }), logs))
    const system = await runtime.runPromise(ActorSystem.ActorSystem)
    await runtime.runPromise(
      Effect.forEach(
        Array.from({ length: n }, (_, i) => i),
        (i) => Effect.flatMap(system.spawn(Idle, `idle-${i}`), (ref) => ref.tell("arm")),
        { discard: true }
      )
    )
    return {
      armed: () => runtime.runPromise(Effect.map(system.stats, (stats) => stats.timers)),
      stop: () => runtime.dispose()
    }
  }

const naiveIdle = (n: number) => async (): Promise<Held> => {
  const scope = Effect.runSync(Scope.make())
  let armed = 0
  const one = Effect.gen(function* () {
    const queue = yield* Queue.unbounded<string>()
    yield* Effect.forkIn(Effect.forever(Queue.take(queue)), scope)
    yield* Effect.forkIn(Effect.zipRight(Effect.sleep(HOUR), Queue.offer(queue, "tick")), scope)
    armed++
  })
  await Effect.runPromise(Effect.forEach(Array.from({ length: n }), () => one, { discard: true }))
  return {
    armed: async () => armed,
    stop: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const nodeIdle = (n: number) => async (): Promise<Held> => {
  const handles: Array<NodeJS.Timeout> = []
  for (let i = 0; i < n; i++) {
    const actor = { ticks: 0 }
    handles.push(
      setTimeout(() => {
        actor.ticks++
      }, HOUR)
    )
  }
  return {
    armed: async () => handles.length,
    stop: async () => {
      for (const handle of handles) clearTimeout(handle)
    }
  }
}

// ---------------------------------------------------------------- grain and entity timers

const grainTimers =
  (owners: number, perOwner: number) =>
  async (logs: Layer.Layer<never>): Promise<Held> => {
    let armed = 0
    // Should an activation fail, the row counts the timers in place and the error logs, and says so.
    const Holder = Grain.make<"wake" | "tick">()({
      name: "holder",
      onReceive: (ctx) =>
        ctx.message === "wake"
          ? Effect.gen(function* () {
              for (let i = 0; i < perOwner; i++) yield* ctx.scheduleOnce("tick", HOUR)
              armed++
            }).pipe(Effect.orDie)
          : Effect.void,
      passivation: Passivation.never
    })
    const runtime = ManagedRuntime.make(
      Grains.layer([Holder]).pipe(Layer.provideMerge(ActorSystem.layer({ name: "bench-grains" })), Layer.provide(logs))
    )
    await runtime.runPromise(
      Effect.forEach(
        Array.from({ length: owners }, (_, i) => i),
        (i) => Grains.tell(Holder, `g${i}`, "wake"),
        { discard: true }
      )
    )
    return { armed: async () => armed * perOwner, stop: () => runtime.dispose() }
  }

const entityTimers =
  (owners: number, perOwner: number) =>
  async (logs: Layer.Layer<never>): Promise<Held> => {
    type Cmd = { readonly _tag: "Wake" } | { readonly _tag: "Tick" }
    const Holder = Entity.make<number, Cmd>()({
      name: "Holder",
      initialize: (_id, ctx) =>
        Effect.gen(function* () {
          for (let i = 0; i < perOwner; i++) yield* ctx.startPeriodicTimer(HOUR, { _tag: "Tick" })
          return 0
        }).pipe(Effect.orDie),
      commands: {
        Wake: (_cmd, model) => Effect.succeed(model),
        Tick: (_cmd, model) => Effect.succeed(model + 1)
      }
    })
    const runtime = ManagedRuntime.make(Layer.provide(ActorSystem.layer({ name: "bench-entities" }), logs))
    const scope = await runtime.runPromise(Scope.make())
    const registry = await runtime.runPromise(Scope.extend(Entity.makeRegistry(Holder), scope))
    await runtime.runPromise(
      Effect.forEach(
        Array.from({ length: owners }, (_, i) => i),
        (i) => registry.tell(`e${i}`, { _tag: "Wake" }),
        { discard: true }
      )
    )
    return {
      armed: () => runtime.runPromise(Effect.map(registry.stats, (stats) => stats.timers)),
      stop: async () => {
        await runtime.runPromise(Scope.close(scope, Exit.void))
        await runtime.dispose()
      }
    }
  }

const nodeTimers = (n: number) => async (): Promise<Held> => {
  const handles: Array<NodeJS.Timeout> = new Array(n)
  const onFire = () => {}
  for (let i = 0; i < n; i++) handles[i] = setTimeout(onFire, HOUR + (i % 60_000))
  return {
    armed: async () => n,
    stop: async () => {
      for (const handle of handles) clearTimeout(handle)
    }
  }
}

// ---------------------------------------------------------------- scenario

const IDLE = "idle actor + 1 timer"
const MANY = "pending timers, 1,000 per activation"
const SINGLE = "1 timer per activation"

export const runMemory = async (options: MemoryOptions, log: (line: string) => void): Promise<MemoryResult> => {
  const rows: Array<HeldRow> = []
  const { readyTimeoutMillis: timeout } = options
  // A warm-up, not reported. The first actors of a process run code compiled as it runs (bytecode and feedback vectors
  // live on the heap): ~4 MB, read as ~440 B more per actor in the 10k row when this scenario runs first
  // (`--only=memory`), ~2.05 KB instead of ~1.6 KB.
  await measure(IDLE, "tickwork (warm-up)", 1_000, 1, tickworkIdle(1_000), timeout, () => {})
  for (const n of options.idleActors) {
    rows.push(await measure(IDLE, "tickwork", n, 1, tickworkIdle(n), timeout, log))
    rows.push(await measure(IDLE, "naive Effect (fiber + Queue)", n, 1, naiveIdle(n), timeout, log))
    rows.push(await measure(IDLE, "node setTimeout", n, 1, nodeIdle(n), timeout, log))
  }
  const activations = options.manyTimers / TIMERS_PER_ACTIVATION
  const single = options.singleTimerActivations
  rows.push(
    await measure(
      MANY,
      "tickwork grains",
      activations,
      TIMERS_PER_ACTIVATION,
      grainTimers(activations, TIMERS_PER_ACTIVATION),
      timeout,
      log
    )
  )
  rows.push(
    await measure(
      MANY,
      "tickwork entities",
      activations,
      TIMERS_PER_ACTIVATION,
      entityTimers(activations, TIMERS_PER_ACTIVATION),
      timeout,
      log
    )
  )
  rows.push(
    await measure(
      MANY,
      "node setTimeout",
      activations,
      TIMERS_PER_ACTIVATION,
      nodeTimers(options.manyTimers),
      timeout,
      log
    )
  )
  rows.push(await measure(SINGLE, "tickwork grains", single, 1, grainTimers(single, 1), timeout, log))
  rows.push(await measure(SINGLE, "tickwork entities", single, 1, entityTimers(single, 1), timeout, log))

  const find = (what: string, design: string, owners?: number) =>
    rows.find((r) => r.what === what && r.design === design && (owners === undefined || r.owners === owners))
  const notes: Array<string> = []
  const toMillion = (row: HeldRow | undefined) => (row === undefined ? Number.NaN : row.bytesPerTimer * 1_000_000)
  if (options.manyTimers !== 1_000_000) {
    notes.push(
      `${fmtInt(options.manyTimers)} timers measured, not 1M (quick mode): the 1M figures are ×${1_000_000 / options.manyTimers}.`
    )
  }
  const singleGrain = find(SINGLE, "tickwork grains")
  const heapLimit = v8.getHeapStatistics().heap_size_limit
  const needed = Math.max(toMillion(singleGrain), toMillion(find(SINGLE, "tickwork entities")))
  notes.push(
    `1 timer per activation measured at ${fmtInt(single)} activations, not 1M: 1M activations would need ` +
      `~${fmtBytes(needed)} of heap (measured per activation × 1M), ` +
      (needed > heapLimit / 2
        ? `more than half of V8's ${fmtBytes(heapLimit)} heap limit`
        : "and minutes to activate") +
      `; the 1M figures of that shape are ×${fmtInt(1_000_000 / single)}.`
  )

  /** A row the targets can use: (nearly) every timer in place; the figures divide by the timers that were. */
  const usable = (row: HeldRow | undefined): row is HeldRow => row !== undefined && row.armed >= 0.99 * row.timers
  const partial = (row: HeldRow | undefined) =>
    row === undefined || row.complete ? [] : [`${fmtInt(row.armed)} of ${fmtInt(row.timers)} in place`]
  for (const r of rows.filter((r) => r.errorLogs > 0)) {
    notes.push(`${r.what}, ${r.design}: ${fmtInt(r.errorLogs)} error logs, the first: ${r.firstError}`)
  }
  const targets: Array<TargetRow> = []
  for (const n of options.idleActors) {
    const tw = find(IDLE, "tickwork", n)
    const naive = find(IDLE, "naive Effect (fiber + Queue)", n)
    const node = find(IDLE, "node setTimeout", n)
    targets.push({
      target: `memory: idle actor + 1 timer ≤ 2 KB (${fmtCount(n)})`,
      measured: fmtBytes(tw?.bytesPerOwner ?? Number.NaN),
      baseline: `naive ${fmtBytes(naive?.bytesPerOwner ?? Number.NaN)}, node ${fmtBytes(node?.bytesPerOwner ?? Number.NaN)}`,
      pass: usable(tw) ? tw.bytesPerOwner <= 2048 : undefined,
      ...(partial(tw).length === 0 ? {} : { note: partial(tw).join("") })
    })
  }
  const nodeMany = find(MANY, "node setTimeout")
  const gb = (bytes: number) => `${(bytes / GB).toFixed(2)} GB`
  for (const [design, kind] of [
    ["tickwork grains", "grain"],
    ["tickwork entities", "entity"]
  ] as const) {
    const many = find(MANY, design)
    const one = find(SINGLE, design)
    targets.push({
      target: `memory: 1M pending ${kind} timers ≤ 1 GB (1,000 per activation)`,
      measured: gb(toMillion(many)),
      baseline: `node ${gb(toMillion(nodeMany))}`,
      pass: many?.complete === true ? toMillion(many) <= GB : undefined,
      ...(options.manyTimers === 1_000_000
        ? {}
        : { note: `${fmtInt(options.manyTimers)} measured, ×${1_000_000 / options.manyTimers}` })
    })
    targets.push({
      target: `memory: 1M pending ${kind} timers ≤ 1 GB (1 per activation)`,
      measured: gb(toMillion(one)),
      baseline: `node ${gb(toMillion(nodeMany))}`,
      pass: usable(one) ? toMillion(one) <= GB : undefined,
      note: [`${fmtInt(single)} activations measured, ×${fmtInt(1_000_000 / single)}`, ...partial(one)].join("; ")
    })
  }
  return { scenario: "memory", options, rows, notes, targets }
}

export const formatMemory = (result: MemoryResult): string => {
  const nodeIdle = new Map(
    result.rows.filter((r) => r.what === IDLE && r.design === "node setTimeout").map((r) => [r.owners, r] as const)
  )
  const nodeMany = result.rows.find((r) => r.what === MANY && r.design === "node setTimeout")
  const rows = result.rows.map((r) => {
    const base = r.what === IDLE ? nodeIdle.get(r.owners) : nodeMany
    return [
      r.what,
      r.design,
      fmtInt(r.owners),
      fmtInt(r.timers),
      fmtBytes(r.heapBytes),
      fmtBytes(r.bytesPerOwner),
      fmtBytes(r.bytesPerTimer),
      base === undefined ? "-" : fmtRatio(r.bytesPerTimer, base.bytesPerTimer),
      `${((r.bytesPerTimer * 1e6) / GB).toFixed(2)} GB`,
      r.startSeconds.toFixed(1),
      r.complete ? "all" : fmtInt(r.armed)
    ]
  })
  return [
    "Memory: heap held by pending timers (after gc, against the heap before anything was created; 1 hour timers)",
    table(
      [
        "what",
        "design",
        "owners",
        "timers",
        "heap",
        "per owner",
        "per timer",
        "vs node",
        "×1M timers",
        "start s",
        "in place"
      ],
      rows
    ),
    ...result.notes.map((n) => `NOTE: ${n}`),
    "owners: actors / activations / entities (node: plain objects); per owner includes the owner's own heap;",
    "in place: timers pending when the heap was read (per timer divides by it; not 'all' = some owners failed to start)."
  ].join("\n")
}
