/**
 * Self time of a `.cpuprofile` (node --cpu-prof) by function and by package, optionally within a time window.
 *
 *   npx tsx test/bench/cpuprofile-summary.ts <file.cpuprofile> [fromMicros toMicros] [--top=25]
 *
 * The window is in the profile's own clock (CLOCK_MONOTONIC µs, what `process.hrtime.bigint() / 1000n` reads on
 * Linux); restart-profile.ts passes the window between its 10th and 90th percentile deliveries. Packages: effect,
 * @effect/<name>, pg (pg, pg-protocol, pg-types, pg-pool, ...), better-sqlite3, tickwork src (src/...), the bench's
 * own code, node internals, GC, and V8's (program) / (idle).
 */
import * as fs from "node:fs"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export const packageOf = (frame: CallFrame): string => {
  const url = frame.url
  if (url === "") {
    if (frame.functionName === "(garbage collector)") return "GC"
    if (frame.functionName === "(program)" || frame.functionName === "(idle)" || frame.functionName === "(root)")
      return frame.functionName
    return "native/V8 builtins"
  }
  if (url.startsWith("node:")) return "node internals"
  const nm = url.lastIndexOf("/node_modules/")
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/")
    const name = rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!
    if (/^pg(-|$)|^postgres-/.test(name) || name === "pgpass" || name === "split2") return "pg driver"
    if (name === "tsx" || name === "esbuild" || name === "get-tsconfig") return "tsx (loader)"
    return name
  }
  if (url.includes("/src/cluster/")) return "tickwork src/cluster"
  if (url.includes("/src/")) return "tickwork src (engine)"
  if (url.includes("/test/bench/")) return "bench runner"
  return "other"
}

const shortUrl = (url: string): string => {
  const nm = url.lastIndexOf("/node_modules/")
  if (nm >= 0) return url.slice(nm + "/node_modules/".length)
  const src = url.indexOf("/src/")
  if (src >= 0) return url.slice(src + 1)
  const bench = url.indexOf("/test/bench/")
  if (bench >= 0) return url.slice(bench + 1)
  return url.replace(/^file:\/\//, "")
}

export interface Summary {
  readonly totalMicros: number
  readonly samples: number
  readonly byPackage: ReadonlyArray<{ readonly name: string; readonly micros: number }>
  readonly byFunction: ReadonlyArray<{ readonly name: string; readonly where: string; readonly micros: number }>
  /** Total (inclusive) time of selected functions: name → µs (a frame counted once per sample). */
  readonly inclusive: ReadonlyArray<{ readonly name: string; readonly micros: number }>
}

/** Self time (µs) by package and by function of the samples taken within [from, to] (the whole profile if unset). */
export const summarize = (
  profile: Profile,
  from = -Infinity,
  to = Infinity,
  inclusiveOf: Array<string> = []
): Summary => {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const self = new Map<number, number>()
  let t = profile.startTime
  let total = 0
  let samples = 0
  // A sample's time is the delta to the next one (V8 stamps each sample; the last gets nothing).
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!
    const next = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1]! : 0
    if (t < from || t > to) continue
    const id = profile.samples[i]!
    self.set(id, (self.get(id) ?? 0) + next)
    total += next
    samples++
  }
  const packages = new Map<string, number>()
  const functions = new Map<string, { name: string; where: string; micros: number }>()
  const inclusive = new Map<string, number>()
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame
    const pkg = packageOf(frame)
    packages.set(pkg, (packages.get(pkg) ?? 0) + micros)
    const name = frame.functionName === "" ? "(anonymous)" : frame.functionName
    const where = frame.url === "" ? "" : `${shortUrl(frame.url)}:${frame.lineNumber + 1}`
    const key = `${name}@${where}`
    const entry = functions.get(key) ?? { name, where, micros: 0 }
    entry.micros += micros
    functions.set(key, entry)
    if (inclusiveOf.length > 0) {
      const seen = new Set<string>()
      for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
        const f = byId.get(node)!.callFrame
        for (const wanted of inclusiveOf) {
          const label = `${f.functionName} ${shortUrl(f.url)}`
          if (!seen.has(wanted) && label.includes(wanted)) {
            seen.add(wanted)
            inclusive.set(wanted, (inclusive.get(wanted) ?? 0) + micros)
          }
        }
      }
    }
  }
  return {
    totalMicros: total,
    samples,
    byPackage: Array.from(packages, ([name, micros]) => ({ name, micros })).sort((a, b) => b.micros - a.micros),
    byFunction: Array.from(functions.values()).sort((a, b) => b.micros - a.micros),
    inclusive: Array.from(inclusive, ([name, micros]) => ({ name, micros })).sort((a, b) => b.micros - a.micros)
  }
}

export const render = (summary: Summary, top = 25, perDelivery?: number): string => {
  const pct = (micros: number) => `${((micros / summary.totalMicros) * 100).toFixed(1).padStart(5)}%`
  const ms = (micros: number) => `${(micros / 1000).toFixed(0).padStart(7)} ms`
  const per = (micros: number) =>
    perDelivery === undefined ? "" : `${(micros / perDelivery).toFixed(0).padStart(6)} µs/delivery`
  const lines = [
    `window: ${(summary.totalMicros / 1000).toFixed(0)} ms sampled (${summary.samples} samples)` +
      (perDelivery === undefined ? "" : `, ${perDelivery} deliveries`),
    "by package (self time):"
  ]
  for (const p of summary.byPackage) lines.push(`  ${pct(p.micros)} ${ms(p.micros)} ${per(p.micros)}  ${p.name}`)
  lines.push(`top ${top} functions (self time):`)
  for (const f of summary.byFunction.slice(0, top))
    lines.push(`  ${pct(f.micros)} ${ms(f.micros)} ${per(f.micros)}  ${f.name}  ${f.where}`)
  if (summary.inclusive.length > 0) {
    lines.push("inclusive (total) time of:")
    for (const f of summary.inclusive) lines.push(`  ${pct(f.micros)} ${ms(f.micros)} ${per(f.micros)}  ${f.name}`)
  }
  return lines.join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2).filter((a) => !a.startsWith("--"))
  const topArg = process.argv.find((a) => a.startsWith("--top="))
  const profile = JSON.parse(fs.readFileSync(args[0]!, "utf8")) as Profile
  const from = args[1] === undefined ? -Infinity : Number(args[1])
  const to = args[2] === undefined ? Infinity : Number(args[2])
  console.log(render(summarize(profile, from, to), topArg === undefined ? 25 : Number(topArg.slice(6))))
}
