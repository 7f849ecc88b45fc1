// Drives headless Chromium through the booking app in the test host page:
//   node drive.mjs <host page URL> <screenshot path>
// Waits for the app to initialise, books a table for 4 on 2026-12-24 through it, probes the
// app's Content Security Policy from inside it, saves a screenshot and prints one JSON line
// for examples/tests/browser.rs. Exits non-zero on any failure, and after 90 s in any case.
import { chromium } from "playwright-core";

const [url, screenshot] = process.argv.slice(2);
if (!url || !screenshot) {
  console.error("usage: node drive.mjs <host page URL> <screenshot path>");
  process.exit(2);
}
const deadline = setTimeout(() => {
  console.error("drive.mjs: no result within 90 s");
  process.exit(3);
}, 90_000);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // Root in a container has no user namespace for Chromium's own sandbox; the frames' sandbox
  // attributes, which the test is about, do not depend on it.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 640, height: 460 } });
  const consoleLines = [];
  page.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => consoleLines.push(`pageerror: ${e.message}`));
  await page.goto(url);
  await page.waitForFunction(
    () => window.hostState && (window.hostState.initialized || window.hostState.errors.length > 0),
    null,
    { timeout: 30_000 },
  );
  const ready = await page.evaluate(() => window.hostState);
  if (!ready.initialized) throw new Error(`the app did not initialise: ${ready.errors.join("; ")}`);

  const view = page.frameLocator("#sandbox").frameLocator("#view");
  await view.locator("#date").fill("2026-12-24");
  await view.locator("#party").fill("4");
  await view.locator("#book").click();
  await view.locator("#result").filter({ hasText: "Booked" }).waitFor({ timeout: 30_000 });
  const result = (await view.locator("#result").textContent()).trim();
  const status = (await view.locator("#status").textContent()).trim();
  await page.screenshot({ path: screenshot });

  const viewFrame = page.frames().find((f) => f.url() === "about:srcdoc");
  if (!viewFrame) throw new Error("the app's frame is not there");
  const csp = await viewFrame.evaluate(async (target) => {
    const meta = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
    const violations = [];
    document.addEventListener("securitypolicyviolation", (e) => violations.push(e.effectiveDirective));
    let fetched = "allowed";
    try {
      await fetch(target);
    } catch {
      fetched = "refused";
    }
    await new Promise((r) => setTimeout(r, 200));
    return { policy: meta ? meta.content : null, fetched, violations };
  }, new URL(url).origin + "/host.html");

  const state = await page.evaluate(() => window.hostState);
  console.log(JSON.stringify({
    result, status, calls: state.calls, errors: state.errors, csp, console: consoleLines,
    appCapabilities: state.appCapabilities, sizes: state.sizes
  }));
} catch (e) {
  failed = true;
  console.error(`drive.mjs: ${e.message}`);
} finally {
  await browser.close();
  clearTimeout(deadline);
}
process.exit(failed ? 1 : 0);
