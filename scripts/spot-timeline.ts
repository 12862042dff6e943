/**
 * Draws docs/spots-timeline.svg: the same slow Spot timer handler under each overrun policy, from a TestClock run.
 *
 *   npx tsx scripts/spot-timeline.ts            # writes docs/spots-timeline.svg
 *   npx tsx scripts/spot-timeline.ts --print    # also prints the ticks as a table
 *
 * A timer with a 100 ms period whose handler takes 250 ms is registered at time 0; the clock runs for 1.2 s. Every
 * number in the picture is a tick field the handler received (scheduled time, start time, delay, skipped ticks), so
 * the picture cannot drift from what the library does.
 */

import { writeFileSync } from "node:fs"
import { Duration, Effect, TestClock, TestContext } from "effect"
import * as ActorSystem from "../src/ActorSystem.js"
import * as OverrunPolicy from "../src/OverrunPolicy.js"
import * as Spot from "../src/Spot.js"

const PERIOD = 100
const HANDLER = 250
const WINDOW = 1200

interface Run {
  readonly index: number
  readonly delivery: number
  readonly scheduled: number
  readonly start: number
  end: number | undefined
  readonly delay: number
  readonly skipped: number
}

const record = (overrun: OverrunPolicy.OverrunPolicy) =>
  Effect.gen(function* () {
    const runs: Array<Run> = []
    yield* Spot.spawn(
      {
        initialState: 0,
        onStart: (ctx) =>
          Effect.orDie(
            ctx.timers.start({
              name: "slow",
              period: PERIOD,
              overrun,
              handler: (tick) =>
                Effect.gen(function* () {
                  const run: Run = {
                    index: tick.scheduledIndex,
                    delivery: tick.deliveryIndex,
                    scheduled: tick.scheduledTime,
                    start: tick.startTime,
                    end: undefined,
                    delay: Duration.toMillis(tick.delay),
                    skipped: tick.skippedTicks
                  }
                  runs.push(run)
                  yield* Effect.sleep(HANDLER)
                  run.end = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
                })
            })
          )
      },
      "timeline"
    )
    yield* TestClock.adjust(WINDOW)
    return runs
  }).pipe(Effect.provide(ActorSystem.layer({ name: "timeline" })), Effect.provide(TestContext.TestContext))

// ------------------------------------------------------------------------------------------------------- drawing

const LEFT = 235
const SCALE = 0.6 // px per ms
const LANE = 118
const TOP = 78
const WIDTH = LEFT + WINDOW * SCALE + 30
const x = (t: number) => (LEFT + t * SCALE).toFixed(1)

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const text = (px: string | number, py: number, s: string, attrs = "") =>
  `<text x="${px}" y="${py}" ${attrs}>${escapeXml(s)}</text>`

const lane = (title: string, subtitle: string, runs: ReadonlyArray<Run>, grid: boolean, row: number): string => {
  const y0 = TOP + row * LANE
  const schedY = y0 + 34
  const barY = y0 + 58
  const out: Array<string> = []
  out.push(`<rect x="8" y="${y0}" width="${WIDTH - 16}" height="${LANE - 10}" rx="6" class="lane"/>`)
  out.push(text(18, y0 + 24, title, 'class="policy"'))
  out.push(text(18, y0 + 42, subtitle, 'class="small"'))
  out.push(text(LEFT - 10, schedY + 4, "scheduled", 'class="small" text-anchor="end"'))
  out.push(text(LEFT - 10, barY + 13, "handler", 'class="small" text-anchor="end"'))
  if (grid) {
    for (let t = PERIOD; t <= WINDOW; t += PERIOD) {
      out.push(`<line x1="${x(t)}" y1="${y0 + 8}" x2="${x(t)}" y2="${y0 + LANE - 18}" class="grid"/>`)
    }
  }
  for (const run of runs) {
    // ticks dropped just before this one, on the grid
    for (let k = run.index - run.skipped; k < run.index; k++) {
      const t = k * PERIOD
      out.push(`<circle cx="${x(t)}" cy="${schedY}" r="6" class="skipped"/>`)
      out.push(
        `<path d="M${x(t - 4 / SCALE)} ${schedY - 4} l8 8 m0 -8 l-8 8" class="cross"/>`,
        text(x(t), schedY - 10, `#${k}`, 'class="tiny skippedText" text-anchor="middle"')
      )
    }
    out.push(`<circle cx="${x(run.scheduled)}" cy="${schedY}" r="6" class="scheduled"/>`)
    out.push(text(x(run.scheduled), schedY - 10, `#${run.index}`, 'class="tiny" text-anchor="middle"'))
    if (run.delay > 0) {
      out.push(
        `<path d="M${x(run.scheduled)} ${schedY + 6} L${x(run.start)} ${barY}" class="delay"/>`,
        text(
          ((LEFT + ((run.scheduled + run.start) / 2) * SCALE) as number).toFixed(1),
          schedY + 18,
          `+${run.delay}`,
          'class="tiny delayText" text-anchor="middle"'
        )
      )
    }
    const end = Math.min(run.end ?? WINDOW, WINDOW)
    const width = (end - run.start) * SCALE - 2
    const cls = run.end === undefined ? "bar running" : "bar"
    out.push(
      `<rect x="${x(run.start)}" y="${barY}" width="${width.toFixed(1)}" height="18" rx="3" class="${cls}"/>`,
      text(
        (LEFT + run.start * SCALE + 5).toFixed(1),
        barY + 13,
        `#${run.index}${run.skipped > 0 && width > 90 ? `  skipped ${run.skipped}` : ""}`,
        'class="barText"'
      )
    )
  }
  if (!grid) {
    // DelayNextTick: each tick is scheduled one period after the previous handler ended
    for (let i = 0; i + 1 < runs.length; i++) {
      const end = runs[i]!.end
      const next = runs[i + 1]!
      if (end === undefined) continue
      out.push(
        `<path d="M${x(end)} ${barY + 9} L${x(next.scheduled)} ${barY + 9} L${x(next.scheduled)} ${schedY + 6}" class="gap"/>`,
        text(
          x((end + next.scheduled) / 2),
          barY + 4,
          `+${next.scheduled - end}`,
          'class="tiny delayText" text-anchor="middle"'
        )
      )
    }
  }
  return out.join("\n  ")
}

const axis = (y: number): string => {
  const out: Array<string> = [`<line x1="${x(0)}" y1="${y}" x2="${x(WINDOW)}" y2="${y}" class="axis"/>`]
  for (let t = 0; t <= WINDOW; t += PERIOD) {
    out.push(`<line x1="${x(t)}" y1="${y}" x2="${x(t)}" y2="${y + 5}" class="axis"/>`)
    out.push(text(x(t), y + 18, `${t}`, 'class="small" text-anchor="middle"'))
  }
  out.push(text(x(WINDOW), y + 34, "ms (TestClock)", 'class="small" text-anchor="end"'))
  return out.join("\n  ")
}

const svg = (lanes: ReadonlyArray<{ title: string; subtitle: string; runs: ReadonlyArray<Run>; grid: boolean }>) => {
  const height = TOP + lanes.length * LANE + 86
  const legendY = TOP + lanes.length * LANE + 62
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH.toFixed(0)}" height="${height}" viewBox="0 0 ${WIDTH.toFixed(0)} ${height}" font-family="Helvetica, Arial, sans-serif">
  <style>
    .title { font-size: 17px; font-weight: bold; fill: #222; }
    .policy { font-size: 14px; font-weight: bold; fill: #222; }
    .small { font-size: 11px; fill: #555; }
    .tiny { font-size: 10px; fill: #333; }
    .lane { fill: #fafafa; stroke: #ddd; }
    .grid { stroke: #e6e6e6; stroke-dasharray: 2 3; }
    .axis { stroke: #888; }
    .scheduled { fill: #2b6cb0; }
    .skipped { fill: #fff; stroke: #d64545; stroke-width: 1.5; }
    .cross { stroke: #d64545; stroke-width: 1.5; }
    .skippedText { fill: #d64545; }
    .delay { stroke: #999; stroke-dasharray: 3 2; fill: none; }
    .delayText { fill: #777; }
    .gap { stroke: #999; stroke-dasharray: 3 2; fill: none; }
    .bar { fill: #90cdf4; stroke: #2b6cb0; }
    .running { fill: #e2f1fb; stroke-dasharray: 4 2; }
    .barText { font-size: 11px; fill: #1a365d; }
  </style>
  <rect width="100%" height="100%" fill="#fff"/>
  ${text(12, 26, `One Spot timer, period ${PERIOD} ms, handler ${HANDLER} ms, registered at 0: the three overrun policies`, 'class="title"')}
  ${text(12, 48, "Blue dot: the scheduled time of the tick that ran (#scheduled index). Dashed line: its delay (start - scheduled).", 'class="small"')}
  ${text(12, 63, "Red cross: a tick that was skipped (dropped just before the next delivered one). Bar: the handler running.", 'class="small"')}
  ${lanes.map((l, i) => lane(l.title, l.subtitle, l.runs, l.grid, i)).join("\n  ")}
  ${axis(TOP + lanes.length * LANE + 6)}
  ${text(12, legendY, "Generated by scripts/spot-timeline.ts from a TestClock run: every number is a field of the Tick the handler received.", 'class="small"')}
</svg>
`
}

const main = Effect.gen(function* () {
  const skip = yield* record(OverrunPolicy.SkipLateTicks)
  const catchUp = yield* record(OverrunPolicy.CatchUpBounded(1))
  const delayNext = yield* record(OverrunPolicy.DelayNextTick)
  const lanes = [
    { title: "SkipLateTicks", subtitle: "default: latest tick", runs: skip, grid: true },
    { title: "CatchUpBounded(1)", subtitle: "keeps 1 missed tick", runs: catchUp, grid: true },
    { title: "DelayNextTick", subtitle: "next = end + period", runs: delayNext, grid: false }
  ]
  writeFileSync(new URL("../docs/spots-timeline.svg", import.meta.url), svg(lanes))
  if (process.argv.includes("--print")) {
    for (const l of lanes) {
      console.log(`\n${l.title}\n| scheduled index | delivery index | scheduled | start | delay | skipped |`)
      for (const r of l.runs) {
        console.log(`| ${r.index} | ${r.delivery} | ${r.scheduled} | ${r.start} | ${r.delay} | ${r.skipped} |`)
      }
    }
  }
  console.log("wrote docs/spots-timeline.svg")
})

Effect.runPromise(main)
