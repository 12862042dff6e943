import { assert, describe, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Equal from "effect/Equal"
import { pipe } from "effect/Function"
import * as Option from "effect/Option"
import { firstInstant } from "../src/internal/validate.js"
import * as QuartzCron from "../src/QuartzCron.js"
import { InvalidCronExpression } from "../src/TimerError.js"

const parseOrThrow = (expression: string, timeZone?: string): QuartzCron.QuartzCron => {
  const parsed = QuartzCron.parse(expression, timeZone === undefined ? {} : { timeZone })
  if (Either.isLeft(parsed)) throw new Error(`expected "${expression}" to parse: ${parsed.left.message}`)
  return parsed.right
}

const iso = (millis: number): string => new Date(millis).toISOString()

interface Case {
  readonly name: string
  readonly expression: string
  readonly timeZone: string
  /** The reference instant; every expected fire is strictly after it. */
  readonly after: string
  /** The next fires, in order, as instants with explicit offsets. */
  readonly expected: ReadonlyArray<string>
  /** The expression fires no more after the last expected instant. */
  readonly exhausted?: true
}

// Every expected instant below was worked out by hand from the calendar (2026-01-01 is a Thursday; Berlin springs
// forward 2026-03-29 02:00 CET and falls back 2026-10-25 03:00 CEST; New York springs forward 2026-03-08 02:00 EST
// and falls back 2026-11-01 02:00 EDT).
const conformance: ReadonlyArray<Case> = [
  // seconds, minutes, hours, steps and ranges
  {
    name: "every second, from the middle of a second",
    expression: "* * * * * ?",
    timeZone: "UTC",
    after: "2026-01-15T10:00:00.500Z",
    expected: ["2026-01-15T10:00:01Z", "2026-01-15T10:00:02Z"]
  },
  {
    name: "a fire exactly at `after` is not returned",
    expression: "0 0 12 * * ?",
    timeZone: "UTC",
    after: "2026-01-15T12:00:00Z",
    expected: ["2026-01-16T12:00:00Z", "2026-01-17T12:00:00Z"]
  },
  {
    name: "0/15 minutes",
    expression: "0 0/15 * * * ?",
    timeZone: "UTC",
    after: "2026-01-15T10:07:30Z",
    expected: ["2026-01-15T10:15:00Z", "2026-01-15T10:30:00Z", "2026-01-15T10:45:00Z", "2026-01-15T11:00:00Z"]
  },
  {
    name: "*/20 seconds",
    expression: "*/20 * * * * ?",
    timeZone: "UTC",
    after: "2026-01-15T10:00:00Z",
    expected: ["2026-01-15T10:00:20Z", "2026-01-15T10:00:40Z", "2026-01-15T10:01:00Z"]
  },
  {
    name: "5/20 seconds starts at 5",
    expression: "5/20 * * * * ?",
    timeZone: "UTC",
    after: "2026-01-15T10:00:00Z",
    expected: ["2026-01-15T10:00:05Z", "2026-01-15T10:00:25Z", "2026-01-15T10:00:45Z", "2026-01-15T10:01:05Z"]
  },
  {
    name: "stepped range 10-50/15",
    expression: "0 10-50/15 9 * * ?",
    timeZone: "UTC",
    after: "2026-01-15T00:00:00Z",
    expected: ["2026-01-15T09:10:00Z", "2026-01-15T09:25:00Z", "2026-01-15T09:40:00Z", "2026-01-16T09:10:00Z"]
  },
  {
    name: "wrapping hour range 22-2",
    expression: "0 0 22-2 * * ?",
    timeZone: "UTC",
    after: "2026-01-15T12:00:00Z",
    expected: [
      "2026-01-15T22:00:00Z",
      "2026-01-15T23:00:00Z",
      "2026-01-16T00:00:00Z",
      "2026-01-16T01:00:00Z",
      "2026-01-16T02:00:00Z",
      "2026-01-16T22:00:00Z"
    ]
  },
  // month ends and leap years
  {
    name: "31 skips February and April",
    expression: "0 0 0 31 * ?",
    timeZone: "UTC",
    after: "2026-01-31T00:00:00Z",
    expected: ["2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"]
  },
  {
    name: "30 skips February",
    expression: "0 0 0 30 * ?",
    timeZone: "UTC",
    after: "2026-01-30T00:00:00Z",
    expected: ["2026-03-30T00:00:00Z", "2026-04-30T00:00:00Z"]
  },
  {
    name: "28 February every year",
    expression: "0 0 12 28 2 ?",
    timeZone: "UTC",
    after: "2026-02-28T12:00:00Z",
    expected: ["2027-02-28T12:00:00Z", "2028-02-28T12:00:00Z"]
  },
  {
    name: "29 February only in leap years",
    expression: "0 0 0 29 2 ?",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"]
  },
  {
    name: "29 February skips 2100, which is not a leap year",
    expression: "0 0 0 29 2 ?",
    timeZone: "UTC",
    after: "2096-03-01T00:00:00Z",
    expected: ["2104-02-29T00:00:00Z"]
  },
  // L, L-n, LW, L-nW
  {
    name: "L is the last day of each month",
    expression: "0 0 0 L * ?",
    timeZone: "UTC",
    after: "2026-01-31T00:00:00Z",
    expected: ["2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z"]
  },
  {
    name: "L in February follows leap years",
    expression: "0 0 0 L 2 ?",
    timeZone: "UTC",
    after: "2027-03-01T00:00:00Z",
    expected: ["2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"]
  },
  {
    name: "L-3 is three days before the last day",
    expression: "0 0 0 L-3 * ?",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-28T00:00:00Z", "2026-02-25T00:00:00Z", "2026-03-28T00:00:00Z", "2026-04-27T00:00:00Z"]
  },
  {
    name: "L-3 in February follows leap years",
    expression: "0 0 0 L-3 2 ?",
    timeZone: "UTC",
    after: "2027-03-01T00:00:00Z",
    expected: ["2028-02-26T00:00:00Z", "2029-02-25T00:00:00Z"]
  },
  {
    name: "L-30 is the 1st of 31-day months only",
    expression: "0 0 0 L-30 * ?",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z", "2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z"]
  },
  {
    name: "LW is the last weekday (Sat 31 Jan -> Fri 30, Sat 28 Feb -> Fri 27, Sun 31 May -> Fri 29)",
    expression: "0 0 0 LW * ?",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: [
      "2026-01-30T00:00:00Z",
      "2026-02-27T00:00:00Z",
      "2026-03-31T00:00:00Z",
      "2026-04-30T00:00:00Z",
      "2026-05-29T00:00:00Z"
    ]
  },
  {
    name: "L-2W is the weekday nearest two days before the last (Sun 29 Mar -> Mon 30)",
    expression: "0 0 0 L-2W * ?",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-29T00:00:00Z", "2026-02-26T00:00:00Z", "2026-03-30T00:00:00Z", "2026-04-28T00:00:00Z"]
  },
  // W
  {
    name: "15W moves a Sunday 15th to Monday the 16th",
    expression: "0 0 0 15W * ?",
    timeZone: "UTC",
    after: "2026-01-31T00:00:00Z",
    expected: ["2026-02-16T00:00:00Z", "2026-03-16T00:00:00Z", "2026-04-15T00:00:00Z"]
  },
  {
    name: "15W moves a Saturday 15th to Friday the 14th",
    expression: "0 0 0 15W * ?",
    timeZone: "UTC",
    after: "2026-08-01T00:00:00Z",
    expected: ["2026-08-14T00:00:00Z"]
  },
  {
    name: "1W on a Saturday 1st goes to Monday the 3rd, not back into the previous month",
    expression: "0 0 0 1W * ?",
    timeZone: "UTC",
    after: "2026-07-15T00:00:00Z",
    expected: ["2026-08-03T00:00:00Z", "2026-09-01T00:00:00Z"]
  },
  {
    name: "1W on a Sunday 1st goes to Monday the 2nd",
    expression: "0 0 0 1W * ?",
    timeZone: "UTC",
    after: "2026-01-15T00:00:00Z",
    expected: ["2026-02-02T00:00:00Z"]
  },
  {
    name: "31W on a Sunday 31st goes to Friday the 29th, and skips months without a 31st",
    expression: "0 0 0 31W * ?",
    timeZone: "UTC",
    after: "2026-05-01T00:00:00Z",
    expected: ["2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z"]
  },
  // #, nL and weekday numbering
  {
    name: "6#3 is the third Friday",
    expression: "0 0 0 ? * 6#3",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-16T00:00:00Z", "2026-02-20T00:00:00Z", "2026-03-20T00:00:00Z"]
  },
  {
    name: "2#5 skips months without a fifth Monday",
    expression: "0 0 0 ? * 2#5",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z", "2026-08-31T00:00:00Z", "2026-11-30T00:00:00Z"]
  },
  {
    name: "FRI#1 with a day name",
    expression: "0 0 12 ? * FRI#1",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-02T12:00:00Z", "2026-02-06T12:00:00Z", "2026-03-06T12:00:00Z"]
  },
  {
    name: "6L is the last Friday",
    expression: "0 0 0 ? * 6L",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-24T00:00:00Z"]
  },
  {
    name: "FRIL is the last Friday too",
    expression: "0 0 0 ? * FRIL",
    timeZone: "UTC",
    after: "2026-05-01T00:00:00Z",
    expected: ["2026-05-29T00:00:00Z", "2026-06-26T00:00:00Z"]
  },
  {
    name: "a list of # items: first and third Monday",
    expression: "0 0 0 ? * 2#1,2#3",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z", "2026-02-02T00:00:00Z", "2026-02-16T00:00:00Z"]
  },
  {
    name: "1 is Sunday",
    expression: "0 0 0 ? * 1",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]
  },
  {
    name: "7 is Saturday",
    expression: "0 0 0 ? * 7",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z"]
  },
  {
    name: "L alone in day-of-week is Saturday",
    expression: "0 0 0 ? * L",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z"]
  },
  {
    name: "2/2 in day-of-week is Mon, Wed, Fri and never wraps to Sunday",
    expression: "0 0 9 ? * 2/2",
    timeZone: "UTC",
    after: "2026-01-16T09:00:00Z",
    expected: ["2026-01-19T09:00:00Z", "2026-01-21T09:00:00Z", "2026-01-23T09:00:00Z", "2026-01-26T09:00:00Z"]
  },
  {
    name: "MON-FRI skips the weekend",
    expression: "0 0 9 ? * MON-FRI",
    timeZone: "UTC",
    after: "2026-01-16T09:00:00Z",
    expected: ["2026-01-19T09:00:00Z", "2026-01-20T09:00:00Z"]
  },
  {
    name: "wrapping weekday range FRI-MON",
    expression: "0 0 9 ? * FRI-MON",
    timeZone: "UTC",
    after: "2026-01-15T09:00:00Z",
    expected: [
      "2026-01-16T09:00:00Z",
      "2026-01-17T09:00:00Z",
      "2026-01-18T09:00:00Z",
      "2026-01-19T09:00:00Z",
      "2026-01-23T09:00:00Z"
    ]
  },
  // names
  {
    name: "month and day names",
    expression: "0 0 12 ? JAN,JUL SUN",
    timeZone: "UTC",
    after: "2026-01-20T00:00:00Z",
    expected: ["2026-01-25T12:00:00Z", "2026-07-05T12:00:00Z"]
  },
  {
    name: "lower-case day names",
    expression: "0 30 8 ? * mon,wed",
    timeZone: "UTC",
    after: "2026-01-15T00:00:00Z",
    expected: ["2026-01-19T08:30:00Z", "2026-01-21T08:30:00Z"]
  },
  {
    name: "lower-case month range",
    expression: "0 0 0 1 jan-mar ?",
    timeZone: "UTC",
    after: "2026-02-15T00:00:00Z",
    expected: ["2026-03-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"]
  },
  // the year field
  {
    name: "a single year",
    expression: "0 0 0 1 * ? 2027",
    timeZone: "UTC",
    after: "2026-06-01T00:00:00Z",
    expected: ["2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"]
  },
  {
    name: "a year list runs out",
    expression: "0 0 12 1 1 ? 2026,2028",
    timeZone: "UTC",
    after: "2026-06-01T00:00:00Z",
    expected: ["2028-01-01T12:00:00Z"],
    exhausted: true
  },
  {
    name: "years all in the past never fire",
    expression: "0 0 0 1 1 ? 2020-2025",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: [],
    exhausted: true
  },
  {
    name: "2#5 in a February that has no fifth Monday never fires",
    expression: "0 0 0 ? 2 2#5 2026",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: [],
    exhausted: true
  },
  {
    name: "stepped years 2030/10",
    expression: "0 0 0 1 1 ? 2030/10",
    timeZone: "UTC",
    after: "2026-01-01T00:00:00Z",
    expected: ["2030-01-01T00:00:00Z", "2040-01-01T00:00:00Z", "2050-01-01T00:00:00Z"]
  },
  {
    name: "nothing after the last second of 2099",
    expression: "0 0 0 31 12 ? 2099",
    timeZone: "UTC",
    after: "2099-12-31T00:00:00Z",
    expected: [],
    exhausted: true
  },
  {
    name: "a zone without DST",
    expression: "0 0 9 ? * MON",
    timeZone: "Asia/Tokyo",
    after: "2026-01-01T00:00:00+09:00",
    expected: ["2026-01-05T09:00:00+09:00", "2026-01-12T09:00:00+09:00"]
  },
  // DST, Europe/Berlin
  {
    name: "Berlin spring: 02:30 is in the gap and fires once at 03:00 CEST",
    expression: "0 30 2 * * ?",
    timeZone: "Europe/Berlin",
    after: "2026-03-28T12:00:00+01:00",
    expected: ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
  },
  {
    name: "Berlin spring: every 30 minutes, the gap times fire once at 03:00",
    expression: "0 0/30 * * * ?",
    timeZone: "Europe/Berlin",
    after: "2026-03-29T01:00:00+01:00",
    expected: ["2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"]
  },
  {
    name: "Berlin spring: hourly at :15, 02:15 fires at 03:00",
    expression: "0 15 * * * ?",
    timeZone: "Europe/Berlin",
    after: "2026-03-29T01:30:00+01:00",
    expected: ["2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00"]
  },
  {
    name: "Berlin spring: L-2 in March 2026 is the DST day",
    expression: "0 30 2 L-2 3 ?",
    timeZone: "Europe/Berlin",
    after: "2026-01-01T00:00:00+01:00",
    expected: ["2026-03-29T03:00:00+02:00", "2027-03-29T02:30:00+02:00"]
  },
  {
    name: "Berlin fall: 02:30 fires once, at the first (CEST) occurrence",
    expression: "0 30 2 * * ?",
    timeZone: "Europe/Berlin",
    after: "2026-10-24T12:00:00+02:00",
    expected: ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
  },
  {
    name: "Berlin fall: every 30 minutes, the repeated hour fires once",
    expression: "0 0/30 * * * ?",
    timeZone: "Europe/Berlin",
    after: "2026-10-25T01:45:00+02:00",
    expected: [
      "2026-10-25T02:00:00+02:00",
      "2026-10-25T02:30:00+02:00",
      "2026-10-25T03:00:00+01:00",
      "2026-10-25T03:30:00+01:00"
    ]
  },
  // DST, America/New_York
  {
    name: "New York spring: 02:30 is in the gap and fires once at 03:00 EDT",
    expression: "0 30 2 * * ?",
    timeZone: "America/New_York",
    after: "2026-03-07T12:00:00-05:00",
    expected: ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]
  },
  {
    name: "New York spring: every minute of hour 2 collapses into one fire at 03:00",
    expression: "0 * 2 * * ?",
    timeZone: "America/New_York",
    after: "2026-03-08T01:59:30-05:00",
    expected: ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"]
  },
  {
    name: "New York fall: 01:30 fires once, at the first (EDT) occurrence",
    expression: "0 30 1 * * ?",
    timeZone: "America/New_York",
    after: "2026-10-31T12:00:00-04:00",
    expected: ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]
  },
  {
    name: "New York fall: hourly, 01:00 fires once",
    expression: "0 0 * * * ?",
    timeZone: "America/New_York",
    after: "2026-11-01T00:30:00-04:00",
    expected: ["2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"]
  },
  {
    name: "New York fall: from inside the second pass, its times already fired",
    expression: "0 0/20 1 * * ?",
    timeZone: "America/New_York",
    after: "2026-11-01T01:10:00-05:00",
    expected: ["2026-11-02T01:00:00-05:00"]
  },
  {
    name: "New York: L at local midnight",
    expression: "0 0 0 L * ?",
    timeZone: "America/New_York",
    after: "2026-02-27T23:00:00-05:00",
    expected: ["2026-02-28T00:00:00-05:00", "2026-03-31T00:00:00-04:00"]
  }
]

interface BadCase {
  readonly expression: string
  readonly timeZone?: string
  readonly field: string | undefined
  readonly reason: string
}

const bad: ReadonlyArray<BadCase> = [
  { expression: "", field: undefined, reason: "6 or 7 fields expected" },
  { expression: "0 0 12 * *", field: undefined, reason: "got 5" },
  { expression: "0 0 12 * * ? 2026 1", field: undefined, reason: "got 8" },
  { expression: "60 0 0 * * ?", field: "seconds", reason: "60 is outside 0-59" },
  { expression: "0/0 0 0 * * ?", field: "seconds", reason: "step 0 in '0/0' is outside 1-60" },
  { expression: "0 60 0 * * ?", field: "minutes", reason: "60 is outside 0-59" },
  { expression: "0 0 24 * * ?", field: "hours", reason: "24 is outside 0-23" },
  { expression: "0 0 ? * * ?", field: "hours", reason: "'?' is only allowed in dayOfMonth or dayOfWeek" },
  { expression: "0 0 0 32 * ?", field: "dayOfMonth", reason: "32 is outside 1-31" },
  { expression: "0 0 0 0 * ?", field: "dayOfMonth", reason: "0 is outside 1-31" },
  { expression: "0 0 0 1,,2 * ?", field: "dayOfMonth", reason: "empty item" },
  { expression: "0 0 0 L-31 * ?", field: "dayOfMonth", reason: "'L-31' is outside 0-30" },
  { expression: "0 0 0 1,L * ?", field: "dayOfMonth", reason: "'L' and 'W' must stand alone" },
  { expression: "0 0 0 1-5W * ?", field: "dayOfMonth", reason: "'L' and 'W' must stand alone" },
  { expression: "0 0 0 3#2 * ?", field: "dayOfMonth", reason: "'#' is only allowed in dayOfWeek" },
  { expression: "0 0 0 30 2 ?", field: "dayOfMonth", reason: "day 30 never occurs in FEB" },
  { expression: "0 0 0 31 APR,JUN,SEP,NOV ?", field: "dayOfMonth", reason: "day 31 never occurs in APR,JUN,SEP,NOV" },
  { expression: "0 0 0 29 2 ? 2097-2099", field: "dayOfMonth", reason: "day 29 never occurs in FEB of the selected" },
  { expression: "0 0 0 1 13 ?", field: "month", reason: "13 is outside 1-12" },
  { expression: "0 0 0 1 FOO ?", field: "month", reason: "'FOO' is neither a number nor a month name (JAN-DEC)" },
  { expression: "0 0 0 ? * 0", field: "dayOfWeek", reason: "0 is outside 1-7" },
  { expression: "0 0 0 ? * 8", field: "dayOfWeek", reason: "8 is outside 1-7" },
  { expression: "0 0 0 ? * FUN", field: "dayOfWeek", reason: "'FUN' is neither a number nor a day name (SUN-SAT)" },
  { expression: "0 0 0 ? * 6#6", field: "dayOfWeek", reason: "'#' needs a weekday 1-7 and an occurrence 1-5" },
  { expression: "0 0 0 ? * 8#2", field: "dayOfWeek", reason: "'#' needs a weekday 1-7 and an occurrence 1-5" },
  { expression: "0 0 0 ? * 2#1-3", field: "dayOfWeek", reason: "'#' needs a weekday 1-7 and an occurrence 1-5" },
  { expression: "0 0 0 ? * 1-3L", field: "dayOfWeek", reason: "'nL' needs a single weekday" },
  { expression: "0 0 0 1 1 ? 1969", field: "year", reason: "1969 is outside 1970-2099" },
  { expression: "0 0 0 1 1 ? 2100", field: "year", reason: "2100 is outside 1970-2099" },
  { expression: "0 0 0 1 1 ? 2030-2025", field: "year", reason: "range 2030-2025 runs backwards" },
  {
    expression: "0 0 0 * * *",
    field: undefined,
    reason: "specify either day-of-month or day-of-week with '?' in the other"
  },
  {
    expression: "0 0 0 15 * 2#3",
    field: undefined,
    reason: "specify either day-of-month or day-of-week with '?' in the other"
  },
  {
    expression: "0 0 0 ? * ?",
    field: undefined,
    reason: "specify either day-of-month or day-of-week with '?' in the other"
  },
  { expression: "0 0 0 * * ?", timeZone: "Mars/Olympus_Mons", field: undefined, reason: "unknown time zone" }
]

describe("QuartzCron", () => {
  describe("conformance", () => {
    it("has at least 40 cases", () => {
      assert.isAtLeast(conformance.length, 40)
    })

    for (const c of conformance) {
      it(`${c.name}: "${c.expression}" in ${c.timeZone}`, () => {
        const cron = parseOrThrow(c.expression, c.timeZone)
        const after = Date.parse(c.after)
        const fires = QuartzCron.nextN(cron, after, c.expected.length)
        assert.deepStrictEqual(
          fires.map(iso),
          c.expected.map((expected) => iso(Date.parse(expected)))
        )
        if (c.exhausted) {
          const last = fires.at(-1) ?? after
          assert.isTrue(Option.isNone(QuartzCron.next(cron, last)))
        }
      })
    }
  })

  describe("rejects bad expressions", () => {
    it("has at least 15 cases", () => {
      assert.isAtLeast(bad.length, 15)
    })

    for (const b of bad) {
      it(`"${b.expression}"${b.timeZone === undefined ? "" : ` in ${b.timeZone}`}`, () => {
        const parsed = QuartzCron.parse(b.expression, b.timeZone === undefined ? {} : { timeZone: b.timeZone })
        if (Either.isRight(parsed)) return assert.fail(`expected "${b.expression}" to be rejected`)
        const error = parsed.left
        assert.instanceOf(error, InvalidCronExpression)
        assert.strictEqual(error._tag, "InvalidCronExpression")
        assert.strictEqual(error.expression, b.expression)
        assert.strictEqual(error.field, b.field)
        assert.include(error.reason, b.reason)
        assert.include(error.message, b.reason)
      })
    }
  })

  describe("constructors", () => {
    it.effect("make succeeds with a QuartzCron", () =>
      Effect.gen(function* () {
        const cron = yield* QuartzCron.make("0 0 9 ? * MON-FRI", { timeZone: "Europe/Berlin" })
        assert.isTrue(QuartzCron.isQuartzCron(cron))
        assert.strictEqual(cron.expression, "0 0 9 ? * MON-FRI")
        assert.strictEqual(cron.timeZone, "Europe/Berlin")
      })
    )

    it.effect("make fails with InvalidCronExpression naming the field", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(QuartzCron.make("0 0 25 * * ?"))
        assert.instanceOf(error, InvalidCronExpression)
        assert.strictEqual(error.field, "hours")
        assert.strictEqual(error.reason, "25 is outside 0-23")
      })
    )

    it("parse defaults to the process's local zone", () => {
      const cron = parseOrThrow("0 0 12 * * ?")
      assert.isUndefined(cron.timeZone)
      const after = Date.UTC(2026, 0, 15, 6, 0, 0)
      const fire = Option.getOrThrow(QuartzCron.next(cron, after))
      const local = new Date(fire)
      assert.strictEqual(local.getHours(), 12)
      assert.strictEqual(local.getMinutes(), 0)
      assert.strictEqual(local.getSeconds(), 0)
      assert.isAbove(fire, after)
      assert.isAtMost(fire - after, 25 * 60 * 60 * 1000)
    })

    it("isQuartzCron is false for other values", () => {
      assert.isFalse(QuartzCron.isQuartzCron("0 0 12 * * ?"))
      assert.isFalse(QuartzCron.isQuartzCron(null))
      assert.isFalse(QuartzCron.isQuartzCron({ expression: "0 0 12 * * ?" }))
    })

    it("values with the same expression and zone are equal", () => {
      const a = parseOrThrow("0 0 12 * * ?", "UTC")
      assert.isTrue(Equal.equals(a, parseOrThrow("0 0 12 * * ?", "UTC")))
      assert.isFalse(Equal.equals(a, parseOrThrow("0 0 12 * * ?", "Europe/Berlin")))
      assert.isFalse(Equal.equals(a, parseOrThrow("0 0 13 * * ?", "UTC")))
      assert.deepStrictEqual(a.toJSON(), { _id: "QuartzCron", expression: "0 0 12 * * ?", timeZone: "UTC" })
    })
  })

  describe("combinators", () => {
    const cron = parseOrThrow("0 0/15 * * * ?", "UTC")
    const after = Date.parse("2026-01-15T10:07:30Z")

    it("next is dual", () => {
      const dataFirst = QuartzCron.next(cron, after)
      const dataLast = pipe(cron, QuartzCron.next(after))
      assert.deepStrictEqual(dataFirst, Option.some(Date.parse("2026-01-15T10:15:00Z")))
      assert.deepStrictEqual(dataLast, dataFirst)
    })

    it("nextN is dual and returns nothing for a count below 1", () => {
      assert.deepStrictEqual(pipe(cron, QuartzCron.nextN(after, 2)), QuartzCron.nextN(cron, after, 2))
      assert.deepStrictEqual(QuartzCron.nextN(cron, after, 0), [])
    })

    it("iterate is lazy and ends when the expression stops firing", () => {
      const iterator = QuartzCron.iterate(cron, after)
      assert.strictEqual(iso(iterator.next().value as number), "2026-01-15T10:15:00.000Z")
      assert.strictEqual(iso(iterator.next().value as number), "2026-01-15T10:30:00.000Z")
      const finite = parseOrThrow("0 0 0 1 1 ? 2098,2099", "UTC")
      assert.deepStrictEqual(Array.from(QuartzCron.iterate(finite, Date.parse("2026-01-01T00:00:00Z"))).map(iso), [
        "2098-01-01T00:00:00.000Z",
        "2099-01-01T00:00:00.000Z"
      ])
    })

    it("next depends only on afterMillis, never on the clock", () => {
      const lastMinus3 = parseOrThrow("0 0 0 L-3 * ?", "UTC")
      const expected = [QuartzCron.nextN(cron, after, 3), QuartzCron.nextN(lastMinus3, after, 3)]
      vi.useFakeTimers({ now: Date.parse("1999-06-01T00:00:00Z") })
      try {
        assert.deepStrictEqual([QuartzCron.nextN(cron, after, 3), QuartzCron.nextN(lastMinus3, after, 3)], expected)
      } finally {
        vi.useRealTimers()
      }
    })

    it("next rejects a non-finite reference as a defect", () => {
      assert.throws(() => QuartzCron.next(cron, Number.NaN), RangeError)
    })

    it("nextN rejects a count that is not a whole number >= 0 (NaN used to loop forever)", () => {
      for (const count of [Number.NaN, Number.POSITIVE_INFINITY, 1.5, -1]) {
        assert.throws(() => QuartzCron.nextN(cron, after, count), RangeError, "count must be a whole number >= 0")
      }
      assert.deepStrictEqual(QuartzCron.nextN(cron, after, 0), [])
    })
  })

  describe("wrong types from JavaScript callers", () => {
    const rejected: ReadonlyArray<readonly [label: string, expression: unknown, options: unknown, reason: string]> = [
      ["an undefined expression", undefined, undefined, "the expression must be a string"],
      ["a number as the expression", 42, undefined, "got number 42"],
      ["null options", "0 0 * * * ?", null, "the options must be an object"],
      ["a zone name instead of options", "0 0 * * * ?", "UTC", 'such as { timeZone: "Europe/Berlin" }, got "UTC"'],
      ["a number as the zone", "0 0 * * * ?", { timeZone: 1 }, "the time zone must be an IANA name"],
      ["an empty zone", "0 0 * * * ?", { timeZone: "" }, "unknown time zone ''"],
      ["a blank zone", "0 0 * * * ?", { timeZone: "  " }, "unknown time zone"]
    ]
    for (const [label, expression, options, reason] of rejected) {
      it(`${label} is an InvalidCronExpression, not a defect`, () => {
        const parsed = QuartzCron.parse(expression as string, options as QuartzCron.ParseOptions)
        if (Either.isRight(parsed)) return assert.fail("expected a rejection")
        assert.strictEqual(parsed.left._tag, "InvalidCronExpression")
        assert.include(parsed.left.message, reason)
      })
    }
  })

  describe("firstInstant (shared by the timer APIs that arm a cron)", () => {
    it("is the next instant, or InvalidCronExpression saying it has no instant after now", () => {
      const now = Date.parse("2026-01-15T10:07:00Z")
      const hourly = parseOrThrow("0 0 * * * ?", "UTC")
      assert.deepStrictEqual(firstInstant(hourly, "0 0 * * * ?", now), Either.right(Date.parse("2026-01-15T11:00:00Z")))
      // parsing is time-independent: a cron whose years have passed parses
      const past = parseOrThrow("0 0 0 1 1 ? 1999", "UTC")
      const none = firstInstant(past, "0 0 0 1 1 ? 1999", now)
      if (Either.isRight(none)) return assert.fail("expected no instant")
      assert.strictEqual(none.left._tag, "InvalidCronExpression")
      assert.strictEqual(none.left.expression, "0 0 0 1 1 ? 1999")
      assert.include(none.left.message, "it has no instant after 2026-01-15T10:07:00.000Z, so it could never fire")
    })
  })
})
