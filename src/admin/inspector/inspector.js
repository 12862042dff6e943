// The inspector page: it reads the admin API every second and renders it; its buttons call the mutating endpoints.
// Plain browser JavaScript, no build step. Text goes in through textContent only, so a note cannot inject markup.

const REFRESH_MILLIS = 1000
const page = { operable: false, history: undefined, pausing: undefined, timer: undefined, loading: false, again: false }

const $ = (selector) => document.querySelector(selector)

/** A call to the admin API, relative to this page (`/admin`); a refusal throws with the server's message. */
const call = async (path, init = {}) => {
  const headers = { accept: "application/json" }
  if (init.body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(`admin/${path}`, { ...init, headers })
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`
    try {
      const body = await response.json()
      if (typeof body.message === "string") message = body.message
    } catch {}
    throw new Error(message)
  }
  return response.status === 204 ? undefined : response.json()
}

const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue
    if (key === "dataset") Object.assign(node.dataset, value)
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value)
    else node.setAttribute(key, value === true ? "" : String(value))
  }
  node.append(...children.flat().filter((child) => child !== undefined && child !== null))
  return node
}

const svg = (tag, attributes = {}, ...children) => {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag)
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value))
  node.append(...children.filter((child) => child !== undefined))
  return node
}

const say = (message, isError = false) => {
  const status = $("#status")
  status.textContent = message
  status.classList.toggle("error", isError)
}

// ---------------------------------------------------------------- formatting

/** One decimal at most: `2 s`, `1.5 s`. */
const decimal = (n) => String(Number(n.toFixed(1)))

const duration = (millis) =>
  millis < 1_000
    ? `${Math.round(millis)} ms`
    : millis < 60_000
      ? `${decimal(millis / 1_000)} s`
      : millis < 3_600_000
        ? `${decimal(millis / 60_000)} min`
        : `${decimal(millis / 3_600_000)} h`

const clock = (millis) =>
  `${new Date(millis).toLocaleTimeString([], { hour12: false })}.${String(millis % 1_000).padStart(3, "0")}`

const when = (millis) => {
  if (millis === undefined) return el("span", { class: "muted" }, "—")
  const delta = millis - Date.now()
  const relative = delta >= 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`
  const iso = new Date(millis).toISOString()
  return el("time", { datetime: iso, title: iso }, `${clock(millis)} (${relative})`)
}

const specOf = (schedule) =>
  schedule.intervalMillis !== undefined
    ? `every ${duration(schedule.intervalMillis)}`
    : [
        "cron ",
        el("code", {}, schedule.expression ?? "?"),
        schedule.timeZone === undefined ? undefined : ` (${schedule.timeZone})`
      ]

const outcomeOf = (run) => el("span", { class: `outcome-${run.outcome}` }, run.outcome)

// ---------------------------------------------------------------- schedules

const actionButton = (label, reference, onclick) =>
  el(
    "button",
    {
      type: "button",
      "aria-label": `${label} ${reference}`,
      disabled: !page.operable,
      title: page.operable ? undefined : "read-only: the admin layer has no authorize option",
      onclick
    },
    label
  )

const scheduleRow = (schedule) => {
  const { reference, pause, lastRun } = schedule
  const paused = schedule.state === "paused"
  return el(
    "tr",
    { class: paused ? "paused" : undefined, dataset: { reference } },
    el("th", { scope: "row" }, el("code", {}, reference)),
    el("td", { class: "spec" }, specOf(schedule)),
    el("td", {}, schedule.owner),
    el(
      "td",
      { class: "state" },
      schedule.state,
      pause && el("span", { class: "note" }, `“${pause.note}” (${pause.by}, ${clock(pause.at)})`)
    ),
    el("td", { class: "next-run" }, when(schedule.nextFire)),
    el("td", { class: "last-run" }, lastRun ? [when(lastRun.instant), " ", outcomeOf(lastRun)] : when(undefined)),
    el(
      "td",
      { class: "actions" },
      paused
        ? actionButton("Resume", reference, () => operate(reference, "resume"))
        : actionButton("Pause", reference, () => askPause(reference)),
      actionButton("Trigger", reference, () => operate(reference, "trigger")),
      el(
        "button",
        { type: "button", "aria-label": `History of ${reference}`, onclick: () => showHistory(reference) },
        "History"
      )
    )
  )
}

const renderSchedules = (schedules) => {
  $("#schedules tbody").replaceChildren(...schedules.map(scheduleRow))
  $("#schedules-empty").hidden = schedules.length > 0
}

const renderHistory = (runs) => {
  $("#history-section").hidden = runs === undefined
  if (runs === undefined) return
  $("#history-reference").textContent = page.history
  const rows = runs
    .slice()
    .reverse()
    .map((run) =>
      el(
        "tr",
        { dataset: { trigger: run.trigger, outcome: run.outcome } },
        el("td", {}, when(run.instant)),
        el("td", {}, run.trigger),
        el("td", {}, outcomeOf(run)),
        el("td", {}, run.lateness === undefined ? "—" : duration(run.lateness)),
        el("td", {}, String(run.attempts)),
        el("td", {}, run.detail ?? "")
      )
    )
  $("#history tbody").replaceChildren(...rows)
}

const showHistory = (reference) => {
  page.history = reference
  refresh()
}

const operate = async (reference, action, body) => {
  try {
    await call(`schedules/${encodeURIComponent(reference)}/${action}`, {
      method: "POST",
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    say(`${action}: ${reference} done`)
  } catch (error) {
    say(`${action} ${reference} refused: ${error.message}`, true)
  }
  await refresh()
}

const askPause = (reference) => {
  page.pausing = reference
  $("#pause-reference").textContent = reference
  $("#pause-note").value = ""
  $("#pause-dialog").showModal()
  $("#pause-note").focus()
}

// ---------------------------------------------------------------- timers, engine, lateness

const renderTimers = (owners) => {
  const rows = owners.flatMap(({ owner, timers }) =>
    timers.map((timer) =>
      el(
        "tr",
        {},
        el("td", {}, owner),
        el("td", {}, el("code", {}, timer.key)),
        el("td", {}, `${timer.mode} (${timer.kind})`),
        el(
          "td",
          {},
          timer.intervalMillis !== undefined
            ? duration(timer.intervalMillis)
            : timer.expression !== undefined
              ? el("code", {}, timer.expression)
              : "—"
        ),
        el("td", {}, when(timer.nextDue))
      )
    )
  )
  $("#timers tbody").replaceChildren(...rows)
  $("#timers-empty").hidden = rows.length > 0
}

const renderStats = ({ stats }, metrics) => {
  const entries = [
    ["actors", stats.actors],
    ["fibers", stats.fibers],
    ["timers", stats.timers],
    ["engine entries", stats.engineEntries],
    ["engine running", stats.engineRunning ? "yes" : "no"],
    ["engine restarts", stats.engineRestarts],
    ["dead letters", stats.deadLetters],
    ...metrics
      .filter((metric) => metric.type === "counter")
      .map((metric) => [
        `${metric.name
          .replace(/^tickwork_/, "")
          .replace(/_total$/, "")
          .replaceAll("_", " ")} · ${Object.values(metric.tags).join(", ")}`,
        metric.value
      ])
  ]
  $("#stats").replaceChildren(...entries.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, String(value))]))
}

const bound = (millis) => (millis >= 1_024 ? `${millis / 1_024}k` : String(millis))

const renderLateness = (lateness) => {
  const width = 480
  const height = 170
  const base = height - 30
  const buckets = lateness.buckets
  const most = Math.max(1, ...buckets.map((bucket) => bucket.count))
  const slot = (width - 16) / buckets.length
  const nodes = buckets.flatMap((bucket, i) => {
    const label =
      bucket.upToMillis === null ? `>${bound(buckets[i - 1]?.upToMillis ?? 0)}` : `≤${bound(bucket.upToMillis)}`
    const barHeight = (bucket.count / most) * (base - 14)
    const x = 8 + i * slot
    return [
      svg(
        "rect",
        { class: "bar", x: x + 2, y: base - barHeight, width: slot - 4, height: barHeight },
        svg("title", {}, `${label} ms: ${bucket.count} ticks`)
      ),
      svg("text", { x: x + slot / 2, y: base + 13, "text-anchor": "middle" }, label),
      bucket.count > 0
        ? svg("text", { x: x + slot / 2, y: base - barHeight - 3, "text-anchor": "middle" }, String(bucket.count))
        : undefined
    ]
  })
  nodes.push(svg("text", { x: width / 2, y: height - 2, "text-anchor": "middle" }, "milliseconds late"))
  $("#lateness-chart").replaceChildren(svg("title", {}, "Ticks by how late they fired"), ...nodes)
  $("#lateness-caption").textContent =
    lateness.count === 0
      ? "No tick has fired yet."
      : `${lateness.count} ticks fired, ${(lateness.sumMillis / lateness.count).toFixed(1)} ms late on average, ` +
        `${lateness.maxMillis} ms at most (whole process).`
}

// ---------------------------------------------------------------- the loop

/** One refresh at a time: one asked for while another runs follows it at once. */
const refresh = async () => {
  if (page.loading) {
    page.again = true
    return
  }
  page.loading = true
  clearTimeout(page.timer)
  try {
    const [status, schedules, timers, lateness, metrics] = await Promise.all([
      call("stats"),
      call("schedules"),
      call("timers"),
      call("lateness"),
      call("metrics")
    ])
    const history =
      page.history === undefined
        ? undefined
        : await call(`schedules/${encodeURIComponent(page.history)}/history`).catch(() => undefined)
    page.operable = status.operable
    $("#system").textContent = `· system ${status.system}`
    renderSchedules(schedules)
    renderHistory(history)
    renderTimers(timers)
    renderStats(status, metrics)
    renderLateness(lateness)
    $("#updated").textContent =
      `Updated ${clock(Date.now())}` +
      (status.operable
        ? ""
        : " · read-only: start the admin layer with an authorize option to pause, resume or trigger")
  } catch (error) {
    say(`Cannot reach the admin API: ${error.message}`, true)
  }
  page.loading = false
  if (page.again) {
    page.again = false
    return refresh()
  }
  page.timer = setTimeout(refresh, REFRESH_MILLIS)
}

$("#pause-form").addEventListener("submit", (event) => {
  event.preventDefault()
  const note = $("#pause-note").value.trim()
  if (note.length === 0) return $("#pause-note").reportValidity()
  const by = $("#pause-by").value.trim()
  $("#pause-dialog").close()
  operate(page.pausing, "pause", { note, by: by.length > 0 ? by : "inspector" })
})
$("#pause-cancel").addEventListener("click", () => $("#pause-dialog").close())

refresh()
