/**
 * Quartz cron expressions: parse them with errors that name the field at fault, and compute fire instants from a
 * time you pass in.
 *
 * Format: `sec min hour day-of-month month day-of-week [year]`, with `* , - /` everywhere, `?` in exactly one of
 * day-of-month and day-of-week, `L`, `L-n`, `W`, `LW` (and `L-nW`) in day-of-month, `L`, `nL` and `n#k` in
 * day-of-week, `JAN-DEC` and `SUN-SAT` names in any case, day-of-week 1=SUN..7=SAT, and years 1970-2099.
 *
 * Choices:
 * - `?` is strict, as in Quartz: exactly one of day-of-month and day-of-week must be `?`. `0 0 12 * * *` is
 *   rejected, because croner would read it as day-of-month OR day-of-week and Quartz refuses it.
 * - Ranges may wrap (`22-2`, `FRI-MON`), as in Quartz, except in the year field. Steps never wrap: `2/2` in
 *   day-of-week is MON,WED,FRI.
 * - `L`, `L-n`, `LW`, `L-nW` and `nW` must stand alone in day-of-month, as in Quartz. Day-of-week allows lists of
 *   `n#k` and `nL` items (`2#1,2#3`), an extension croner supports natively.
 * - An expression whose day-of-month no selected month has (`30 FEB`, `31 APR`) is rejected, since it can never
 *   fire; one that only runs out later (a past year, a `#5` that does not exist) parses and `next` returns none.
 *
 * Evaluation uses croner 11 rather than cron-parser: croner implements `W`, `LW`, `#`, the year field and Quartz
 * weekday numbering, and is several times faster with named zones; cron-parser lacks W/LW/year and its steps wrap 7
 * to Sunday. We validate the Quartz syntax ourselves, then hand croner a canonical pattern of plain lists, so its
 * own parser quirks never matter. Croner has no `L-n`: we give it the few candidate days and keep the one that is
 * `n` days before the month's last day. The croner instance is created paused and only ever asked for the next run
 * after an instant we pass in, so nothing here depends on the clock (croner's `nextRun` builds a default
 * `new Date()` that it ignores when given a reference).
 *
 * DST: seconds, minutes and hours are always given to croner as explicit lists, so croner treats every expression
 * as a wall-clock ("fixed-time" in croner's terms) schedule. A time in a spring-forward gap fires once, at the first
 * valid instant after the gap; a time in a repeated fall-back hour fires once, at its first occurrence. (Left to
 * itself, croner would skip gap times and fire twice in the repeated hour for expressions with `*` or steps.)
 *
 * @since 0.1.0
 */
import { Cron, CronDate, type CronOptions } from "croner"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Equal from "effect/Equal"
import { dual } from "effect/Function"
import * as Hash from "effect/Hash"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import { InvalidCronExpression } from "./TimerError.js"

/**
 * The unique identifier of a `QuartzCron` value.
 *
 * @example
 * ```ts
 * import { QuartzCron } from "tickwork"
 *
 * console.log(QuartzCron.TypeId.toString()) // Symbol(tickwork/QuartzCron)
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("tickwork/QuartzCron")

/**
 * The type of `TypeId`.
 *
 * @example
 * ```ts
 * import { QuartzCron } from "tickwork"
 *
 * const id: QuartzCron.TypeId = QuartzCron.TypeId
 * ```
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A parsed, validated Quartz cron expression, ready to compute fire instants in its time zone.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const cron: QuartzCron.QuartzCron = Either.getOrThrow(QuartzCron.parse("0 0 9 ? * MON-FRI"))
 * console.log(cron.expression, cron.timeZone) // "0 0 9 ? * MON-FRI" undefined
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface QuartzCron extends Pipeable, Equal.Equal, Inspectable.Inspectable {
  readonly [TypeId]: TypeId
  /** The expression as it was given. */
  readonly expression: string
  /** The IANA zone the expression is evaluated in; `undefined` means the process's local zone. */
  readonly timeZone: string | undefined
}

/**
 * Options for `parse` and `make`.
 *
 * @example
 * ```ts
 * import { QuartzCron } from "tickwork"
 *
 * const options: QuartzCron.ParseOptions = { timeZone: "Europe/Berlin" }
 * const cron = QuartzCron.parse("0 30 2 * * ?", options)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface ParseOptions {
  /** An IANA time zone such as `"Europe/Berlin"`; omit it to use the process's local zone. */
  readonly timeZone?: string | undefined
}

/**
 * Tells whether a value is a `QuartzCron`.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const cron = Either.getOrThrow(QuartzCron.parse("0 0 * * * ?"))
 * console.log(QuartzCron.isQuartzCron(cron), QuartzCron.isQuartzCron("0 0 * * * ?")) // true false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isQuartzCron = (u: unknown): u is QuartzCron => Predicate.hasProperty(u, TypeId)

// ---------------------------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------------------------

type FieldName = "seconds" | "minutes" | "hours" | "dayOfMonth" | "month" | "dayOfWeek" | "year"

interface FieldSpec {
  readonly name: FieldName
  readonly min: number
  readonly max: number
  readonly names: ReadonlyArray<string> | undefined
  readonly namesLabel: string
  readonly wraps: boolean
}

const MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] as const
const DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] as const

const spec = (
  name: FieldName,
  min: number,
  max: number,
  wraps: boolean,
  names?: ReadonlyArray<string>,
  namesLabel = ""
): FieldSpec => ({ name, min, max, names, namesLabel, wraps })

const SECONDS = spec("seconds", 0, 59, true)
const MINUTES = spec("minutes", 0, 59, true)
const HOURS = spec("hours", 0, 23, true)
const DAY_OF_MONTH = spec("dayOfMonth", 1, 31, true)
const MONTH = spec("month", 1, 12, true, MONTH_NAMES, "month name (JAN-DEC)")
const DAY_OF_WEEK = spec("dayOfWeek", 1, 7, true, DAY_NAMES, "day name (SUN-SAT)")
const YEAR = spec("year", 1970, 2099, false)

/** Thrown inside the parser only, and turned into an `InvalidCronExpression` by `parse`. */
class Rejection {
  constructor(
    readonly field: FieldName | undefined,
    readonly reason: string
  ) {}
}

function reject(field: FieldName | undefined, reason: string): never {
  throw new Rejection(field, reason)
}

const DIGITS = /^\d+$/

const parseValue = (text: string, field: FieldSpec, item: string): number => {
  let value: number
  if (DIGITS.test(text)) {
    value = Number(text)
  } else {
    const index = field.names === undefined ? -1 : field.names.indexOf(text.toUpperCase())
    if (index < 0) {
      if (text === "") return reject(field.name, `a value is missing in '${item}'`)
      return reject(
        field.name,
        field.names === undefined
          ? `'${text}' is not a number`
          : `'${text}' is neither a number nor a ${field.namesLabel}`
      )
    }
    value = field.min + index
  }
  if (value < field.min || value > field.max) {
    return reject(field.name, `${value} is outside ${field.min}-${field.max}`)
  }
  return value
}

/** Adds the values of one list item (`*`, `a`, `a-b`, each optionally `/step`) to `into`. */
const addItem = (item: string, field: FieldSpec, into: Set<number>): void => {
  if (item === "") reject(field.name, "a list has an empty item")
  const parts = item.split("/")
  if (parts.length > 2) reject(field.name, `'${item}' has more than one '/'`)
  const [base = "", stepText] = parts
  const span = field.max - field.min + 1
  let step = 1
  if (stepText !== undefined) {
    if (!DIGITS.test(stepText)) reject(field.name, `step '${stepText}' in '${item}' is not a number`)
    step = Number(stepText)
    if (step < 1 || step > span) reject(field.name, `step ${step} in '${item}' is outside 1-${span}`)
  }
  let from: number
  let to: number
  if (base === "*") {
    from = field.min
    to = field.max
  } else {
    if (base === "") reject(field.name, `'${item}' has nothing before '/'`)
    const bounds = base.split("-")
    if (bounds.length === 1) {
      from = parseValue(base, field, item)
      to = stepText === undefined ? from : field.max
    } else if (bounds.length === 2) {
      from = parseValue(bounds[0] ?? "", field, item)
      to = parseValue(bounds[1] ?? "", field, item)
    } else {
      reject(field.name, `'${item}' is not a valid range`)
    }
  }
  if (from <= to) {
    for (let value = from; value <= to; value += step) into.add(value)
    return
  }
  if (!field.wraps) reject(field.name, `range ${from}-${to} runs backwards`)
  // A wrapping range such as 22-2 or FRI-MON runs past the maximum and on from the minimum, as in Quartz.
  for (let value = from; value <= to + span; value += step) into.add(((value - field.min) % span) + field.min)
}

const parseList = (text: string, field: FieldSpec): ReadonlyArray<number> => {
  if (text.includes("?")) {
    return reject(
      field.name,
      field === DAY_OF_MONTH || field === DAY_OF_WEEK
        ? "'?' must stand alone"
        : "'?' is only allowed in dayOfMonth or dayOfWeek"
    )
  }
  if (text.includes("#") && field !== DAY_OF_WEEK) return reject(field.name, "'#' is only allowed in dayOfWeek")
  const values = new Set<number>()
  for (const item of text.split(",")) addItem(item, field, values)
  return Array.from(values).sort((a, b) => a - b)
}

type DayOfMonth =
  | { readonly _tag: "NoSpec" }
  | { readonly _tag: "Days"; readonly days: ReadonlyArray<number> }
  | { readonly _tag: "Last"; readonly offset: number; readonly weekday: boolean }
  | { readonly _tag: "NearestWeekday"; readonly day: number }

const LAST_DAY = /^L(?:-(\d+))?(W?)$/
const NEAREST_WEEKDAY = /^(\d+)W$/

const parseDayOfMonth = (text: string): DayOfMonth => {
  if (text === "?") return { _tag: "NoSpec" }
  const upper = text.toUpperCase()
  const last = LAST_DAY.exec(upper)
  if (last !== null) {
    const offset = last[1] === undefined ? 0 : Number(last[1])
    if (offset > 30) return reject("dayOfMonth", `the offset in 'L-${last[1]}' is outside 0-30`)
    return { _tag: "Last", offset, weekday: last[2] === "W" }
  }
  const nearest = NEAREST_WEEKDAY.exec(upper)
  if (nearest !== null) return { _tag: "NearestWeekday", day: parseValue(nearest[1] ?? "", DAY_OF_MONTH, text) }
  if (upper.includes("L") || upper.includes("W")) {
    return reject(
      "dayOfMonth",
      `'L' and 'W' must stand alone ('L', 'L-3', 'LW', 'L-3W' or '15W'), not in a list, range or step: '${text}'`
    )
  }
  return { _tag: "Days", days: parseList(text, DAY_OF_MONTH) }
}

interface WeekdayItem {
  /** 1=SUN..7=SAT */
  readonly weekday: number
  /** `undefined`: every such weekday; a number: the nth in the month (`#`); `"last"`: the last in the month (`L`). */
  readonly nth: number | "last" | undefined
}

type DayOfWeek = { readonly _tag: "NoSpec" } | { readonly _tag: "Weekdays"; readonly items: ReadonlyArray<WeekdayItem> }

const parseDayOfWeek = (text: string): DayOfWeek => {
  if (text === "?") return { _tag: "NoSpec" }
  if (text.includes("?")) return reject("dayOfWeek", "'?' must stand alone")
  const plain = new Set<number>()
  const special: Array<WeekdayItem> = []
  for (const item of text.split(",")) {
    const upper = item.toUpperCase()
    if (upper === "L") {
      // Quartz: 'L' alone in day-of-week means 7, Saturday.
      plain.add(7)
    } else if (item.includes("#")) {
      const hashReason = `'#' needs a weekday 1-7 and an occurrence 1-5, got '${item}'`
      const [weekdayText = "", nthText = "", ...rest] = item.split("#")
      if (rest.length > 0 || !DIGITS.test(nthText)) return reject("dayOfWeek", hashReason)
      const nth = Number(nthText)
      const weekdayIndex = DAY_NAMES.indexOf(weekdayText.toUpperCase() as (typeof DAY_NAMES)[number])
      const weekday = DIGITS.test(weekdayText) ? Number(weekdayText) : weekdayIndex < 0 ? 0 : weekdayIndex + 1
      if (weekday < 1 || weekday > 7 || nth < 1 || nth > 5) return reject("dayOfWeek", hashReason)
      special.push({ weekday, nth })
    } else if (upper.endsWith("L")) {
      const base = item.slice(0, -1)
      if (!DIGITS.test(base) && !DAY_NAMES.includes(base.toUpperCase() as (typeof DAY_NAMES)[number])) {
        return reject("dayOfWeek", `'nL' needs a single weekday 1-7 or SUN-SAT before 'L' (like '6L'), got '${item}'`)
      }
      special.push({ weekday: parseValue(base, DAY_OF_WEEK, item), nth: "last" })
    } else {
      addItem(item, DAY_OF_WEEK, plain)
    }
  }
  const items: Array<WeekdayItem> = Array.from(plain)
    .sort((a, b) => a - b)
    .map((weekday) => ({ weekday, nth: undefined }))
  return { _tag: "Weekdays", items: items.concat(special) }
}

const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : ([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 31)

/** Rejects a day-of-month that none of the selected months (in the selected years) has, e.g. `30 FEB`. */
const checkDayOfMonthOccurs = (
  dayOfMonth: DayOfMonth,
  months: ReadonlyArray<number>,
  years: ReadonlyArray<number> | undefined
): void => {
  const leapPossible = years === undefined || years.some(isLeapYear)
  const longest = (month: number) => (month === 2 ? (leapPossible ? 29 : 28) : daysInMonth(2001, month))
  let occurs: boolean
  let what: string
  switch (dayOfMonth._tag) {
    case "NoSpec":
      return
    case "Days":
      occurs = months.some((month) => dayOfMonth.days.some((day) => day <= longest(month)))
      what = dayOfMonth.days.join(",")
      break
    case "NearestWeekday":
      occurs = months.some((month) => dayOfMonth.day <= longest(month))
      what = `${dayOfMonth.day}W`
      break
    case "Last":
      occurs = months.some((month) => longest(month) - dayOfMonth.offset >= 1)
      what = `L-${dayOfMonth.offset}${dayOfMonth.weekday ? "W" : ""}`
      break
  }
  if (!occurs) {
    const monthList = months.map((month) => MONTH_NAMES[month - 1]).join(",")
    const inYears = years !== undefined && months.includes(2) ? " of the selected years" : ""
    reject("dayOfMonth", `day ${what} never occurs in ${monthList}${inYears}, so the expression can never fire`)
  }
}

const isKnownTimeZone = (timeZone: string): boolean => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone })
    return true
  } catch {
    return false
  }
}

const range = (from: number, to: number): ReadonlyArray<number> =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i)

/** Candidate days for `L-n` / `L-nW`: every day the target can land on in a month of 28 to 31 days. */
const lastDayCandidates = (offset: number, weekday: boolean): ReadonlyArray<number> => {
  const slack = weekday ? 2 : 0
  return range(Math.max(1, 28 - offset - slack), Math.min(31, 31 - offset + slack))
}

const cronerDayOfMonth = (dayOfMonth: DayOfMonth): string => {
  switch (dayOfMonth._tag) {
    case "NoSpec":
      return "*"
    case "Days":
      return dayOfMonth.days.length === 31 ? "*" : dayOfMonth.days.join(",")
    case "NearestWeekday":
      return `${dayOfMonth.day}W`
    case "Last":
      if (dayOfMonth.offset === 0) return dayOfMonth.weekday ? "LW" : "L"
      return lastDayCandidates(dayOfMonth.offset, dayOfMonth.weekday).join(",")
  }
}

/** Croner's standard numbering is 0=SUN..6=SAT; we convert ourselves rather than rely on `alternativeWeekdays`. */
const cronerDayOfWeek = (dayOfWeek: DayOfWeek): string => {
  if (dayOfWeek._tag === "NoSpec") return "*"
  const { items } = dayOfWeek
  if (items.length === 7 && items.every((item) => item.nth === undefined)) return "*"
  return items
    .map(({ nth, weekday }) =>
      nth === undefined ? `${weekday - 1}` : nth === "last" ? `${weekday - 1}L` : `${weekday - 1}#${nth}`
    )
    .join(",")
}

interface LastDayOffset {
  readonly offset: number
  readonly weekday: boolean
  /** Fires at every local midnight: used to step from one candidate day to the next. */
  readonly midnights: Cron
}

interface QuartzCronImpl extends QuartzCron {
  readonly cron: Cron
  readonly lastDayOffset: LastDayOffset | undefined
}

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // biome-ignore lint/complexity/noArguments: pipeArguments takes the arguments object, as everywhere in effect
    return pipeArguments(this, arguments)
  },
  [Equal.symbol](this: QuartzCron, that: unknown): boolean {
    return isQuartzCron(that) && this.expression === that.expression && this.timeZone === that.timeZone
  },
  [Hash.symbol](this: QuartzCron): number {
    return Hash.cached(this, Hash.string(`${this.expression}\u0000${this.timeZone ?? ""}`))
  },
  toJSON(this: QuartzCron) {
    return { _id: "QuartzCron", expression: this.expression, timeZone: this.timeZone }
  },
  toString(this: QuartzCron) {
    return Inspectable.format(this.toJSON())
  },
  [Inspectable.NodeInspectSymbol](this: QuartzCron) {
    return this.toJSON()
  }
}

const cronerOptions = (timeZone: string | undefined): CronOptions => {
  // Explicit lists in seconds, minutes and hours plus "no-wildcard" make croner treat every expression as
  // fixed-time: gap times fire once at the end of the gap, repeated times fire once (docs/design-choices.md, "Cron").
  const options: CronOptions = { paused: true, mode: "7-part", fixedTimeRule: "no-wildcard", domAndDow: true }
  if (timeZone !== undefined) options.timezone = timeZone
  return options
}

const build = (expression: string, timeZone: string | undefined): QuartzCronImpl => {
  const fields = expression.trim() === "" ? [] : expression.trim().split(/\s+/)
  if (fields.length !== 6 && fields.length !== 7) {
    return reject(
      undefined,
      `6 or 7 fields expected (sec min hour day-of-month month day-of-week [year]), got ${fields.length}`
    )
  }
  const [secondsText = "", minutesText = "", hoursText = "", domText = "", monthText = "", dowText = "", yearText] =
    fields
  const seconds = parseList(secondsText, SECONDS)
  const minutes = parseList(minutesText, MINUTES)
  const hours = parseList(hoursText, HOURS)
  const dayOfMonth = parseDayOfMonth(domText)
  const months = parseList(monthText, MONTH)
  const dayOfWeek = parseDayOfWeek(dowText)
  const years = yearText === undefined || yearText === "*" ? undefined : parseList(yearText, YEAR)
  if ((dayOfMonth._tag === "NoSpec") === (dayOfWeek._tag === "NoSpec")) {
    reject(
      undefined,
      `specify either day-of-month or day-of-week with '?' in the other, got '${domText}' and '${dowText}'`
    )
  }
  checkDayOfMonthOccurs(dayOfMonth, months, years)
  if (timeZone !== undefined && !isKnownTimeZone(timeZone)) reject(undefined, `unknown time zone '${timeZone}'`)

  const pattern = [
    seconds.join(","),
    minutes.join(","),
    hours.join(","),
    cronerDayOfMonth(dayOfMonth),
    months.length === 12 ? "*" : months.join(","),
    cronerDayOfWeek(dayOfWeek),
    years === undefined ? "*" : years.join(",")
  ].join(" ")
  let cron: Cron
  let lastDayOffset: LastDayOffset | undefined
  try {
    cron = new Cron(pattern, cronerOptions(timeZone))
    if (dayOfMonth._tag === "Last" && dayOfMonth.offset > 0) {
      const midnights = new Cron("0 0 0 * * * *", cronerOptions(timeZone))
      lastDayOffset = { offset: dayOfMonth.offset, weekday: dayOfMonth.weekday, midnights }
    }
  } catch (error) {
    return reject(undefined, `croner rejected the pattern '${pattern}': ${String(error)}`)
  }
  const self = Object.create(Proto)
  self.expression = expression
  self.timeZone = timeZone
  self.cron = cron
  self.lastDayOffset = lastDayOffset
  return self
}

/** A value of the wrong type, as a message shows it (this module stays free of the runtime's helpers). */
const shown = (value: unknown): string =>
  typeof value === "string" ? JSON.stringify(value) : value === null ? "null" : `${typeof value} ${String(value)}`

/** What a JavaScript caller may pass instead of a string and an options object; undefined when the types are right. */
const checkTypes = (expression: unknown, options: unknown): string | undefined => {
  if (typeof expression !== "string") {
    return `the expression must be a string such as "0 0 12 ? * MON-FRI", got ${shown(expression)}`
  }
  if (options === undefined) return undefined
  if (typeof options !== "object" || options === null) {
    return `the options must be an object such as { timeZone: "Europe/Berlin" }, got ${shown(options)}`
  }
  const timeZone = (options as ParseOptions).timeZone
  if (timeZone !== undefined && typeof timeZone !== "string") {
    return `the time zone must be an IANA name such as "Europe/Berlin", got ${shown(timeZone)}`
  }
  return undefined
}

/**
 * Parses a Quartz cron expression, optionally for a named time zone.
 *
 * Fails with an `InvalidCronExpression` whose `field` (when one field is at fault) and `reason` say what is wrong: a
 * syntax error, a day that never occurs, an unknown time zone, or an expression or options of the wrong type. Parsing
 * does not read the clock, so an expression whose instants are all in the past (`0 0 0 1 1 ? 1999`) parses; the timer
 * APIs that arm a cron reject it, since it would never fire.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const ok = QuartzCron.parse("0 0 12 ? * MON-FRI", { timeZone: "Europe/Berlin" })
 * const bad = QuartzCron.parse("0 0 0 32 * ?")
 * if (Either.isLeft(bad)) console.log(bad.left.field, bad.left.reason) // "dayOfMonth" "32 is outside 1-31"
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const parse = (expression: string, options?: ParseOptions): Either.Either<QuartzCron, InvalidCronExpression> => {
  const wrongType = checkTypes(expression, options)
  if (wrongType !== undefined) {
    return Either.left(new InvalidCronExpression({ expression: String(expression), reason: wrongType }))
  }
  try {
    return Either.right(build(expression, options?.timeZone))
  } catch (error) {
    if (error instanceof Rejection) {
      return Either.left(new InvalidCronExpression({ expression, field: error.field, reason: error.reason }))
    }
    throw error
  }
}

/**
 * Parses a Quartz cron expression as an effect that fails with `InvalidCronExpression`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const program = Effect.gen(function*() {
 *   const cron = yield* QuartzCron.make("0 0/15 * * * ?", { timeZone: "UTC" })
 *   return QuartzCron.next(cron, Date.parse("2026-01-01T10:07:00Z"))
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (expression: string, options?: ParseOptions): Effect.Effect<QuartzCron, InvalidCronExpression> =>
  Effect.suspend(() => parse(expression, options))

/** The day the `L-n` / `L-nW` target falls on in a month, or `undefined` when the month is too short. */
const lastDayTarget = (year: number, month: number, offset: number, weekday: boolean): number | undefined => {
  const last = daysInMonth(year, month)
  const day = last - offset
  if (day < 1) return undefined
  if (!weekday) return day
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  const dow = date.getUTCDay()
  // Quartz 'W': the nearest weekday, never leaving the month.
  if (dow === 6) return day === 1 ? 3 : day - 1
  if (dow === 0) return day === last ? day - 2 : day + 1
  return day
}

/** Upper bound on candidate days skipped in one `next` call: 8 a month for 1,000 years. */
const MAX_SKIPPED_DAYS = 8 * 12 * 1000

const nextImpl = (self: QuartzCron, afterMillis: number): Option.Option<number> => {
  if (!Number.isFinite(afterMillis))
    throw new RangeError(`QuartzCron.next: afterMillis must be finite, got ${afterMillis}`)
  const { cron, lastDayOffset, timeZone } = self as QuartzCronImpl
  if (lastDayOffset === undefined) {
    const run = cron.nextRun(new Date(afterMillis))
    return run === null ? Option.none() : Option.some(run.getTime())
  }
  // Croner fires on every candidate day; keep the run on the day that is `offset` days before the month's last.
  let reference = afterMillis
  for (let skipped = 0; skipped < MAX_SKIPPED_DAYS; skipped++) {
    const run = cron.nextRun(new Date(reference))
    if (run === null) return Option.none()
    const local = new CronDate(run, timeZone)
    if (local.day === lastDayTarget(local.year, local.month + 1, lastDayOffset.offset, lastDayOffset.weekday)) {
      return Option.some(run.getTime())
    }
    const nextMidnight = lastDayOffset.midnights.nextRun(run)
    if (nextMidnight === null) return Option.none()
    reference = nextMidnight.getTime() - 1
  }
  return Option.none()
}

/**
 * The first fire instant strictly after `afterMillis` (epoch milliseconds), or none if the expression never fires
 * again (its years have passed, or a `#5` it needs never comes).
 *
 * Fire instants are whole seconds. Evaluated in the cron's time zone, or the process's local zone if it has none.
 *
 * @example
 * ```ts
 * import { Either, Option, pipe } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const cron = Either.getOrThrow(QuartzCron.parse("0 0 0 L-3 * ?", { timeZone: "UTC" }))
 * const fire = pipe(cron, QuartzCron.next(Date.parse("2026-01-01T00:00:00Z")))
 * console.log(Option.map(fire, (millis) => new Date(millis).toISOString())) // Some("2026-01-28T00:00:00.000Z")
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const next: {
  (afterMillis: number): (self: QuartzCron) => Option.Option<number>
  (self: QuartzCron, afterMillis: number): Option.Option<number>
} = dual(2, nextImpl)

/**
 * The fire instants strictly after `afterMillis`, in order, lazily; it ends when the expression stops firing.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const cron = Either.getOrThrow(QuartzCron.parse("0 0 9 ? * 2/2", { timeZone: "UTC" }))
 * for (const millis of QuartzCron.iterate(cron, Date.parse("2026-01-16T09:00:00Z"))) {
 *   console.log(new Date(millis).toISOString()) // Mondays, Wednesdays and Fridays at 09:00
 *   break
 * }
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const iterate: {
  (afterMillis: number): (self: QuartzCron) => IterableIterator<number>
  (self: QuartzCron, afterMillis: number): IterableIterator<number>
} = dual(2, function* (self: QuartzCron, afterMillis: number): IterableIterator<number> {
  let reference = afterMillis
  while (true) {
    const fire = nextImpl(self, reference)
    if (Option.isNone(fire)) return
    reference = fire.value
    yield reference
  }
})

/**
 * Up to `count` fire instants strictly after `afterMillis`, in order; fewer if the expression stops firing. A `count`
 * that is not a whole number >= 0 (NaN, Infinity, 1.5, -1) is a programmer error and throws a `RangeError`, as a
 * non-finite `afterMillis` does.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { QuartzCron } from "tickwork"
 *
 * const cron = Either.getOrThrow(QuartzCron.parse("0 0/15 * * * ?", { timeZone: "UTC" }))
 * const fires = QuartzCron.nextN(cron, Date.parse("2026-01-01T10:07:00Z"), 3)
 * console.log(fires.map((millis) => new Date(millis).toISOString())) // 10:15, 10:30, 10:45
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const nextN: {
  (afterMillis: number, count: number): (self: QuartzCron) => ReadonlyArray<number>
  (self: QuartzCron, afterMillis: number, count: number): ReadonlyArray<number>
} = dual(3, (self: QuartzCron, afterMillis: number, count: number): ReadonlyArray<number> => {
  if (!(Number.isSafeInteger(count) && count >= 0)) {
    throw new RangeError(`QuartzCron.nextN: count must be a whole number >= 0, got ${count}`)
  }
  const fires: Array<number> = []
  if (count === 0) return fires
  for (const fire of iterate(self, afterMillis)) {
    fires.push(fire)
    if (fires.length >= count) break
  }
  return fires
})
