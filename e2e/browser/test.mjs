// The demo page of a running stompgate server, in a real headless Chromium
// (Debian's /usr/bin/chromium, or $CHROMIUM), driven by playwright-core.
//
//   node test.mjs <base-url> <output-dir>
//
// Three people use the page:
//
//   1. alice and bob join the same room; alice types a message and presses
//      Enter; it must appear in bob's page.
//   2. bob floods for about 3 s (100 frames/s); alice counts the flood
//      messages she receives, and bob's page shows the server's counts of
//      his session (received, passed, dropped).
//   3. while this script hammers the WebSocket URL with plain GETs (which
//      the handshake limiter counts), carol joins; her page must show "too
//      many connection attempts, retrying in N s" and, once the hammering
//      stops, connect by itself.
//
// Screenshots of the pages go to <output-dir>. The script prints one JSON
// line of what it observed (the Go test asserts on it):
//
//   {"chat":{...},"flood":{...},"retry":{...},"screenshots":[...],
//    "pageErrors":[...],"cspViolations":[...]}
//
// On any failure it prints the error on stderr and exits with status 1.

import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const TOTAL_TIMEOUT_MS = 120_000; // the whole run; far above what it needs
const STEP_TIMEOUT_MS = 15_000; // one wait for the page
const FLOOD_MS = 3_000;
const ROOM = 'e2e-room';
const CHAT_TEXT = 'hello bob, ünïcödé ✓';
const HAMMER_GAP_MS = 25;

const [base, outDir] = process.argv.slice(2);
if (!base || !outDir) {
  fail('usage: node test.mjs <base-url> <output-dir>');
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

function fail(err) {
  process.stderr.write(`browser test: ${err instanceof Error ? err.stack || err.message : String(err)}\n`);
  process.exit(1);
}

const watchdog = setTimeout(() => fail(`not done within ${TOTAL_TIMEOUT_MS} ms`), TOTAL_TIMEOUT_MS);

const result = {
  chat: null,
  flood: null,
  retry: null,
  screenshots: [],
  pageErrors: [],
  cspViolations: [],
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// openPage opens the demo page as one person and records uncaught
// exceptions and Content-Security-Policy violations.
async function openPage(context, who) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.on('pageerror', (err) => result.pageErrors.push(`${who}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) {
      result.cspViolations.push(`${who}: ${msg.text()}`);
    }
  });
  await page.goto(base + '/');
  return page;
}

// joinRoom fills the join form with the keyboard and submits it with Enter.
async function joinRoom(page, name) {
  await page.locator('#room').fill(ROOM);
  await page.locator('#name').fill(name);
  await page.locator('#name').press('Enter');
}

async function waitConnected(page) {
  await page.locator('#status[data-state="connected"]').waitFor();
}

const text = (page, selector) => page.locator(selector).textContent();
const number = async (page, selector) => Number(await text(page, selector));

// counts reads the server's counts shown in page.
async function counts(page) {
  return {
    sent: await number(page, '#count-sent'),
    received: await number(page, '#count-received'),
    passed: await number(page, '#count-passed'),
    dropped: await number(page, '#count-dropped'),
  };
}

async function screenshot(page, name) {
  const path = join(outDir, name);
  await page.screenshot({ path, fullPage: true });
  result.screenshots.push(path);
}

async function run() {
  await mkdir(outDir, { recursive: true });
  const userDataDir = await mkdtemp(join(tmpdir(), 'stompgate-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    viewport: { width: 1100, height: 720 },
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
  try {
    await scenarios(context);
  } finally {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  }
}

async function scenarios(context) {
  // 1. Chat between two pages.
  const alice = await openPage(context, 'alice');
  const bob = await openPage(context, 'bob');
  await joinRoom(alice, 'alice');
  await joinRoom(bob, 'bob');
  await waitConnected(alice);
  await waitConnected(bob);

  // The message field has the focus after joining; type and press Enter.
  await alice.locator('#message').focus();
  await alice.keyboard.type(CHAT_TEXT);
  await alice.keyboard.press('Enter');
  const line = bob.locator('#log li.msg').filter({ hasText: CHAT_TEXT }).first();
  await line.waitFor();
  // alice's page shows her message when the server echoes it back.
  const own = alice.locator('#log li.msg.mine').filter({ hasText: CHAT_TEXT });
  await own.first().waitFor();
  result.chat = {
    from: await line.locator('.who').textContent(),
    text: await line.locator('.text').textContent(),
    inputCleared: (await alice.locator('#message').inputValue()) === '',
    ownEcho: (await own.count()) === 1,
  };

  // 2. bob floods; alice counts what reaches her.
  const floodButton = bob.locator('#flood');
  await floodButton.click();
  const started = performance.now();
  await sleep(FLOOD_MS);
  await floodButton.click();
  const seconds = (performance.now() - started) / 1000;
  if ((await floodButton.getAttribute('aria-pressed')) !== 'false') {
    throw new Error('the flood button did not switch off');
  }

  // Wait until bob's page shows counts that account for every frame he
  // sent (the page polls once per second), and alice's count is stable.
  let shown;
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    shown = await counts(bob);
    if (shown.received >= shown.sent && shown.passed + shown.dropped === shown.received) {
      break;
    }
    if (Date.now() > deadline) {
      throw new Error(`bob's counts never settled: ${JSON.stringify(shown)}`);
    }
    await sleep(200);
  }
  let receivedByOther = await number(alice, '#flood-in');
  for (;;) {
    await sleep(500);
    const n = await number(alice, '#flood-in');
    if (n === receivedByOther) {
      break;
    }
    receivedByOther = n;
  }
  result.flood = { seconds, ...shown, receivedByOther };
  await alice.locator('#message').focus(); // show the focus ring
  await screenshot(alice, 'alice.png');
  await screenshot(bob, 'bob.png');

  // 3. carol joins while the handshake limit is exhausted.
  const carol = await openPage(context, 'carol');
  const retryAfterSeen = [];
  let hammering = true;
  const hammer = (async () => {
    while (hammering) {
      try {
        const r = await fetch(`${base}/ws`, { cache: 'no-store' });
        await r.arrayBuffer();
        if (r.status === 429) {
          retryAfterSeen.push(Number(r.headers.get('retry-after')));
        }
      } catch {
        // keep hammering
      }
      await sleep(HAMMER_GAP_MS);
    }
  })();
  let status;
  try {
    // Only start carol once the limit is reached.
    while (retryAfterSeen.length === 0) {
      await sleep(HAMMER_GAP_MS);
    }
    await joinRoom(carol, 'carol');
    await carol.waitForFunction(
      () => /too many connection attempts, retrying in \d+ s/.test(document.getElementById('status').textContent),
    );
    status = {
      text: await text(carol, '#status'),
      retryIn: Number(await carol.locator('#status').getAttribute('data-retry-in')),
    };
    await screenshot(carol, 'carol-retrying.png');
  } finally {
    hammering = false;
    await hammer;
  }
  await waitConnected(carol);
  result.retry = {
    status: status.text,
    retryIn: status.retryIn,
    retryAfterMin: Math.min(...retryAfterSeen),
    retryAfterMax: Math.max(...retryAfterSeen),
    reconnected: true,
    othersStillConnected:
      (await alice.locator('#status').getAttribute('data-state')) === 'connected' &&
      (await bob.locator('#status').getAttribute('data-state')) === 'connected',
  };
  await screenshot(carol, 'carol-connected.png');
}

run()
  .then(() => {
    clearTimeout(watchdog);
    process.stdout.write(JSON.stringify(result) + '\n');
  })
  .catch(fail);
