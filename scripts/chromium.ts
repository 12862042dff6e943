/**
 * Debian's Chromium driven by Playwright (`playwright-core`, which never downloads a browser of its own), for the
 * inspector's browser test (test/browser) and its screenshot (scripts/inspector-screenshot.ts). `.ci/run` installs
 * the `chromium` package when it is missing.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium } from "playwright-core"

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

/** Why the browser cannot run here, or undefined when it can. */
export const chromiumMissing = (): string | undefined =>
  existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`

/**
 * A headless Chromium with a fresh profile. The network flags keep it from calling home: this machine's network is
 * closed, and each refused connection costs time.
 */
export const launchChromium = async (): Promise<{ readonly context: BrowserContext; close(): Promise<void> }> => {
  const profile = mkdtempSync(join(tmpdir(), "tickwork-chromium-"))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1100, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
  return {
    context,
    close: async () => {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    }
  }
}
