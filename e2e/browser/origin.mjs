// The demo page reached through a reverse proxy, in a real headless
// Chromium (Debian's /usr/bin/chromium, or $CHROMIUM), driven by
// playwright-core.
//
//   node origin.mjs <page-url>...
//
// For each URL (for example nginx on a port other than 80 or 443, plain or
// with TLS), one person opens the page, joins a room and waits until the
// page says it is connected. The browser sends an Origin header with the
// port, so the proxy must pass the Host the browser used, port included,
// or the server refuses the handshake as cross-origin (403).
//
// The script prints one JSON line, one entry per URL, in order:
//
//   [{"url":"...","connected":true,"state":"connected","status":"...",
//     "sockets":N,"pageErrors":[...]}, ...]
//
// A page that does not connect within STEP_TIMEOUT_MS is reported with
// connected false and the status it shows; only a failure of the script
// itself exits with status 1.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const TOTAL_TIMEOUT_MS = 90_000; // the whole run; far above what it needs
const STEP_TIMEOUT_MS = 15_000; // one page's wait for "connected"
const ROOM = 'origin-room';

const urls = process.argv.slice(2);
if (urls.length === 0) {
  fail('usage: node origin.mjs <page-url>...');
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

function fail(err) {
  process.stderr.write(`origin test: ${err instanceof Error ? err.stack || err.message : String(err)}\n`);
  process.exit(1);
}

const watchdog = setTimeout(() => fail(`not done within ${TOTAL_TIMEOUT_MS} ms`), TOTAL_TIMEOUT_MS);

async function visit(context, url) {
  const page = await context.newPage();
  const entry = { url, connected: false, state: '', status: '', sockets: 0, pageErrors: [] };
  page.on('pageerror', (err) => entry.pageErrors.push(err.message));
  page.on('websocket', () => entry.sockets++);
  try {
    await page.goto(url);
    await page.locator('#room').fill(ROOM);
    await page.locator('#name').fill('dana');
    await page.locator('#name').press('Enter');
    try {
      await page.locator('#status[data-state="connected"]').waitFor({ timeout: STEP_TIMEOUT_MS });
      entry.connected = true;
    } catch {
      // Reported below with what the page shows.
    }
    entry.state = (await page.locator('#status').getAttribute('data-state')) ?? '';
    entry.status = ((await page.locator('#status').textContent()) ?? '').trim();
  } finally {
    await page.close();
  }
  return entry;
}

async function run() {
  const userDataDir = await mkdtemp(join(tmpdir(), 'stompgate-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    // The TLS listener's certificate is made by the test for 127.0.0.1.
    ignoreHTTPSErrors: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
    ],
  });
  const out = [];
  try {
    for (const url of urls) {
      out.push(await visit(context, url));
    }
  } finally {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

run().then(
  () => {
    clearTimeout(watchdog);
    process.exit(0);
  },
  (err) => fail(err),
);
