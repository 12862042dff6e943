/**
 * Takes docs/inspector.png: the inspector page of docs/examples/inspector.ts, a few seconds after it started, in
 * headless Chromium (scripts/chromium.ts). `npx tsx scripts/inspector-screenshot.ts`; run it again when the page
 * changes.
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { Admin } from "tickwork/admin"
import { live, setup } from "../docs/examples/inspector.js"
import { chromiumMissing, launchChromium } from "./chromium.js"

const target = fileURLToPath(new URL("../docs/inspector.png", import.meta.url))

const shoot = (url: string) =>
  Effect.promise(async () => {
    const browser = await launchChromium()
    try {
      const page = await browser.context.newPage()
      await page.setViewportSize({ width: 1100, height: 800 })
      await page.goto(url)
      await page.locator('tr[data-reference="report"] td.last-run time').waitFor()
      await page.getByRole("button", { name: "History of report" }).click()
      await page.locator("#history tbody tr").first().waitFor()
      await page.mouse.move(0, 0)
      await page.locator("body").focus()
      await page.screenshot({ path: target, fullPage: true })
    } finally {
      await browser.close()
    }
  })

const main = Effect.gen(function* () {
  yield* setup
  const admin = yield* Admin.AdminServer
  // long enough for each schedule to have run and the timers and histogram to fill
  yield* Effect.sleep("5500 millis")
  yield* shoot(admin.url)
  yield* Effect.logInfo(`wrote ${target}`)
}).pipe(Effect.provide(live(0)))

if (import.meta.filename === process.argv[1]) {
  const missing = chromiumMissing()
  if (missing !== undefined) {
    console.error(`inspector-screenshot: ${missing}`)
    process.exit(1)
  }
  Effect.runPromise(main)
}
