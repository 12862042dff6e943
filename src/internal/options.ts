/**
 * Options errors a person can read: one line per bad option, nothing else. Effect's `ArrayFormatter` reports every
 * branch of a union, so an optional option that is wrong says "Expected undefined" beside what is actually wrong, and a
 * literal union says each literal on a line of its own; a value that is not an object at all dumps the whole schema.
 */
import * as ParseResult from "effect/ParseResult"

const EXPECTED = /^Expected (.*), actual (.*)$/s

/** The lines of `error`, one per path; `example` is shown when the options are not an object at all. */
export const formatOptionsError = (error: ParseResult.ParseError, input: unknown, example: string): string => {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return `- options: must be an object such as ${example}, got ${input === null ? "null" : Array.isArray(input) ? "an array" : typeof input === "string" ? JSON.stringify(input) : String(input)}`
  }
  const byPath = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = issue.path.join(".") || "options"
    const messages = byPath.get(path) ?? []
    messages.push(issue.message)
    byPath.set(path, messages)
  }
  const paths = Array.from(byPath.keys())
  const lines: Array<string> = []
  for (const [path, messages] of byPath) {
    // "Expected undefined" is the optional branch of the union, never what the caller got wrong
    const real = messages.filter((message) => !message.startsWith("Expected undefined, actual"))
    // a parent whose fields have lines of their own says nothing more
    if (real.length === 0 && paths.some((other) => other.startsWith(`${path}.`))) continue
    const shown = real.length === 0 ? messages : real
    const expected = shown.map((message) => EXPECTED.exec(message))
    if (expected.every((match) => match !== null) && new Set(expected.map((match) => match![2])).size === 1) {
      // the branches of one union: "expected A, B or C, got X" on one line
      const names = expected.map((match) => match![1]!)
      const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`
      lines.push(`- ${path}: expected ${list}, got ${expected[0]![2]}`)
    } else {
      // a message that names its own option ("throughput must be ...") loses the repeated name
      const name = `${path.slice(path.lastIndexOf(".") + 1)} `
      const texts = shown.map((message) => (message.startsWith(name) ? message.slice(name.length) : message))
      lines.push(`- ${path}: ${Array.from(new Set(texts)).join("; ")}`)
    }
  }
  return lines.join("\n")
}
