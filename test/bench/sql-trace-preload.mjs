/**
 * A preload for bench runner processes (`node --import ./sql-trace-preload.mjs ...`, e.g. through
 * `TICKWORK_BENCH_RUNNER_NODE_ARGS`): logs every SQL statement the `pg` and `better-sqlite3` drivers run, to
 * `$SQL_TRACE_DIR/sql-<pid>.log`, one line each:
 *
 *   <start µs, CLOCK_MONOTONIC (the clock of a .cpuprofile)> <duration µs> <connection> <tx: 0 outside a transaction,
 *   1 inside> <the statement, whitespace collapsed, cut at 160 characters>
 *
 * For PostgreSQL the duration is the round trip (query sent to its callback); for SQLite the synchronous call.
 * Nothing of the library is touched: the drivers' prototypes are wrapped. Lines are buffered and written every 200 ms
 * (a SIGKILLed process loses its last 200 ms).
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

const dir = process.env.SQL_TRACE_DIR
if (dir !== undefined && dir !== "") {
  const require = createRequire(import.meta.url)
  const fd = fs.openSync(path.join(dir, `sql-${process.pid}.log`), "a")
  let buffer = []
  const flush = () => {
    if (buffer.length === 0) return
    fs.writeSync(fd, buffer.join(""))
    buffer = []
  }
  setInterval(flush, 200).unref()
  process.on("exit", flush)
  const nowMicros = () => Number(process.hrtime.bigint() / 1000n)
  const shorten = (text) => String(text).replace(/\s+/g, " ").trim().slice(0, 160)
  const record = (start, duration, connection, inTx, text) => {
    buffer.push(`${start} ${duration} ${connection} ${inTx ? 1 : 0} ${shorten(text)}\n`)
  }
  const txState = (holder, text) => {
    const head = String(text).trimStart().slice(0, 8).toUpperCase()
    const was = holder.__twInTx === true
    if (head.startsWith("BEGIN") || head.startsWith("SAVEPOIN")) holder.__twInTx = true
    else if (head.startsWith("COMMIT") || head.startsWith("ROLLBACK")) {
      if (!/ROLLBACK TO|RELEASE/.test(String(text).toUpperCase())) holder.__twInTx = false
    }
    return was || holder.__twInTx === true
  }

  let nextConnection = 1
  const idOf = (holder) => {
    if (holder.__twId === undefined) holder.__twId = nextConnection++
    return holder.__twId
  }

  try {
    const pg = require("pg")
    const original = pg.Client.prototype.query
    pg.Client.prototype.query = function (config, values, callback) {
      const text = typeof config === "string" ? config : (config?.text ?? "<submittable>")
      const start = nowMicros()
      const connection = idOf(this)
      const inTx = txState(this, text)
      const done = () => record(start, nowMicros() - start, `pg${connection}`, inTx, text)
      if (typeof values === "function") {
        const cb = values
        return original.call(this, config, (...args) => {
          done()
          return cb(...args)
        })
      }
      if (typeof callback === "function") {
        return original.call(this, config, values, (...args) => {
          done()
          return callback(...args)
        })
      }
      const result = original.call(this, config, values)
      if (result !== null && typeof result === "object" && typeof result.then === "function") {
        result.then(done, done)
      } else if (config !== null && typeof config === "object" && typeof config.on === "function") {
        config.once?.("end", done)
        config.once?.("error", done)
      } else done()
      return result
    }
  } catch {
    // no pg here
  }

  try {
    const Database = require("better-sqlite3")
    const probe = new Database(":memory:")
    const Statement = probe.prepare("SELECT 1").constructor
    probe.close()
    for (const method of ["run", "all", "get", "iterate"]) {
      const original = Statement.prototype[method]
      Statement.prototype[method] = function (...args) {
        const start = nowMicros()
        const inTx = txState(this.database, this.source)
        try {
          return original.apply(this, args)
        } finally {
          record(start, nowMicros() - start, `sq${idOf(this.database)}`, inTx, this.source)
        }
      }
    }
    const exec = Database.prototype.exec
    Database.prototype.exec = function (text) {
      const start = nowMicros()
      const inTx = txState(this, text)
      try {
        return exec.call(this, text)
      } finally {
        record(start, nowMicros() - start, `sq${idOf(this)}`, inTx, text)
      }
    }
  } catch {
    // no better-sqlite3 here
  }
}
