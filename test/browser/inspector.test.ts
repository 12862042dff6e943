/**
 * The inspector page in a real headless Chromium (Debian's, driven by playwright-core), on a running system on the
 * real clock: the page is about a browser and a server talking in real time, so this test is not under TestClock. It
 * is bounded (a schedule every 200 ms, waits of at most a few seconds) and `npm test` runs test/browser on its own,
 * after the rest. Without Chromium it is skipped, and says why.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import type { Page } from "playwright-core"
import { Actor, ActorSystem, Schedules } from "tickwork"
import { Admin } from "tickwork/admin"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { chromiumMissing, launchChromium } from "../../scripts/chromium.js"

const missing = chromiumMissing()
if (missing !== undefined) console.log(`test/browser skipped: ${missing}`)

/** A system with the schedule "tick" every 200 ms, sending to an actor that counts what it receives. */
const startSystem = async (options: Admin.Options) => {
  const received = { count: 0 }
  const Counter = Actor.make<"tick">()({
    receive: () =>
      Effect.sync(() => {
        received.count++
      })
  })
  const runtime = ManagedRuntime.make(
    Admin.layer({ port: 0, ...options }).pipe(
      Layer.provideMerge(Schedules.layer),
      Layer.provideMerge(ActorSystem.layer({ name: "browser" }))
    )
  )
  const url = await runtime.runPromise(
    Effect.gen(function* () {
      const counter = yield* ActorSystem.spawn(Counter, "counter")
      const schedules = yield* Schedules.Schedules
      yield* schedules.create("tick", Schedules.every("200 millis"), Schedules.send(counter, "tick"))
      return (yield* Admin.AdminServer).url
    })
  )
  const history = () => runtime.runPromise(Effect.flatMap(Schedules.Schedules, (s) => s.history("tick")))
  return { runtime, url, received, history }
}

/** Waits until `condition` holds, checking every 50 ms, for at most `millis`. */
const eventually = async (condition: () => Promise<boolean>, millis = 3_000) => {
  const end = Date.now() + millis
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`not true within ${millis} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe.skipIf(missing !== undefined)("the inspector page in headless Chromium", () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>
  beforeAll(async () => {
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
  })

  /** A new page at `url`, failing the test on any script error in it. */
  const open = async (url: string): Promise<{ page: Page; errors: Array<string> }> => {
    const page = await browser.context.newPage()
    page.setDefaultTimeout(5_000)
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text())
    })
    await page.goto(url)
    return { page, errors }
  }

  it("shows a schedule; pause with a note stops its runs; resume starts them; a trigger shows in its history", async () => {
    const system = await startSystem({ authorize: () => true })
    try {
      const { page, errors } = await open(system.url)
      const row = page.locator('tr[data-reference="tick"]')
      await row.locator("td.state", { hasText: "active" }).waitFor()
      await row.locator("td.last-run time").waitFor()
      assert.include(await row.textContent(), "every 200 ms")

      await page.getByRole("button", { name: "Pause tick" }).click()
      const dialog = page.getByRole("dialog")
      await dialog.getByLabel("Note: why is it paused?").fill("deploying a fix")
      await dialog.getByLabel("By").fill("ada")
      await dialog.getByRole("button", { name: "Pause", exact: true }).click()
      await row.locator("td.state", { hasText: "paused" }).waitFor()
      assert.include(await row.locator("td.state .note").textContent(), "“deploying a fix” (ada")
      const paused = await system.runtime.runPromise(Effect.flatMap(Schedules.Schedules, (s) => s.get("tick")))
      assert.deepStrictEqual([paused.state, paused.pause?.note, paused.pause?.by], ["paused", "deploying a fix", "ada"])

      // its runs stop: the history, the last run on the page and the actor's count stay as they are
      const runsAtPause = (await system.history()).length
      const lastShown = await row.locator("td.last-run time").getAttribute("datetime")
      const receivedAtPause = system.received.count
      await page.waitForTimeout(700)
      assert.strictEqual((await system.history()).length, runsAtPause)
      assert.strictEqual(await row.locator("td.last-run time").getAttribute("datetime"), lastShown)
      assert.strictEqual(system.received.count, receivedAtPause)

      await page.getByRole("button", { name: "Resume tick" }).click()
      await row.locator("td.state", { hasText: "active" }).waitFor()
      assert.strictEqual(await row.locator("td.state .note").count(), 0)
      await eventually(async () => (await system.history()).length > runsAtPause)
      await eventually(async () => (await row.locator("td.last-run time").getAttribute("datetime")) !== lastShown)

      await page.getByRole("button", { name: "Trigger tick" }).click()
      await page.getByRole("button", { name: "History of tick" }).click()
      await page.locator('#history tr[data-trigger="manual"][data-outcome="sent"]').waitFor()
      assert.isTrue((await system.history()).some((run) => run.trigger === "manual" && run.outcome === "sent"))
      assert.deepStrictEqual(errors, [])
    } finally {
      await system.runtime.dispose()
    }
  }, 20_000)

  it("without authorize the page is read-only: its buttons are disabled and say why", async () => {
    const system = await startSystem({})
    try {
      const { page, errors } = await open(system.url)
      await page.locator('tr[data-reference="tick"] td.last-run time').waitFor()
      const pause = page.getByRole("button", { name: "Pause tick" })
      assert.isTrue(await pause.isDisabled())
      assert.isTrue(await page.getByRole("button", { name: "Trigger tick" }).isDisabled())
      assert.include(await pause.getAttribute("title"), "read-only")
      assert.include(await page.locator("#updated").textContent(), "read-only")
      assert.deepStrictEqual(errors, [])
    } finally {
      await system.runtime.dispose()
    }
  }, 20_000)
})
