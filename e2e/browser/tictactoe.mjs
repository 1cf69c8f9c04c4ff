// The tic-tac-toe example's page in a real headless Chromium (Debian's
// /usr/bin/chromium, or $CHROMIUM), driven by playwright-core.
//
//   node tictactoe.mjs <page-url>
//
// Two tabs open the page that the game's command serves, join the same
// game and play it by clicking cells: X takes the top row while O plays
// the middle. Each tab must show its mark, the other's moves, and the
// result. The script prints one JSON line:
//
//   {"marks":["X","O"],"boards":["XXXOO....","XXXOO...."],
//    "results":["You win!","X wins."],"sockets":[1,1],
//    "pageErrors":[...],"cspViolations":[...]}
//
// Only a failure of the script itself (a step that times out included)
// exits with status 1.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const TOTAL_TIMEOUT_MS = 150_000; // the whole run; far above what it needs
// One wait for the page to show something: far above what it needs on
// an idle machine, for two shared cores under several test runs.
const STEP_TIMEOUT_MS = 45_000;
const GAME = 'browser-game';

const url = process.argv[2];
if (!url) {
  fail('usage: node tictactoe.mjs <page-url>');
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

function fail(err) {
  process.stderr.write(`tictactoe test: ${err instanceof Error ? err.stack || err.message : String(err)}\n`);
  process.exit(1);
}

const watchdog = setTimeout(() => fail(`not done within ${TOTAL_TIMEOUT_MS} ms`), TOTAL_TIMEOUT_MS);

const result = { marks: [], boards: [], results: [], sockets: [0, 0], pageErrors: [], cspViolations: [] };

// openTab opens the page and joins GAME; it returns once the tab shows
// its mark.
async function openTab(context, i) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.on('pageerror', (err) => result.pageErrors.push(`tab ${i}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) {
      result.cspViolations.push(`tab ${i}: ${msg.text()}`);
    }
  });
  page.on('websocket', () => result.sockets[i]++);
  await page.goto(url);
  await page.locator('#game').fill(GAME);
  await page.locator('#join').click();
  try {
    await page.locator('#status[data-state="connected"]').waitFor();
    await page.locator('#you', { hasText: 'You play' }).waitFor();
  } catch (err) {
    const shows = async (sel) => ((await page.locator(sel).textContent()) ?? '').trim();
    throw new Error(`tab ${i} did not join: status "${await shows('#status')}", ` +
      `you "${await shows('#you')}", error "${await shows('#error')}", ` +
      `${result.sockets[i]} WebSockets, page errors ${JSON.stringify(result.pageErrors)}: ${err.message}`);
  }
  return page;
}

// cell is the button of cell n on page.
const cell = (page, n) => page.locator(`#board button[data-cell="${n}"]`);

// board reads the nine cells of page as the backend writes a board.
async function board(page) {
  const texts = await page.locator('#board button').allTextContents();
  return texts.map((t) => t.trim() || '.').join('');
}

async function run() {
  const userDataDir = await mkdtemp(join(tmpdir(), 'stompgate-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
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
    // The first to join plays X: join one tab after the other.
    const x = await openTab(context, 0);
    const o = await openTab(context, 1);
    for (const page of [x, o]) {
      result.marks.push(((await page.locator('#you').textContent()) ?? '').replace(/^You play (\w).*$/, '$1'));
    }
    const moves = [
      [x, 0, 'X'],
      [o, 3, 'O'],
      [x, 1, 'X'],
      [o, 4, 'O'],
      [x, 2, 'X'],
    ];
    for (const [page, n, mark] of moves) {
      // The cell is enabled once the page has the state that says it is
      // this tab's turn.
      await cell(page, n).click();
      for (const p of [x, o]) {
        await cell(p, n).filter({ hasText: mark }).waitFor();
      }
    }
    for (const page of [x, o]) {
      await page.locator('#result:not([data-result=""])').waitFor();
      result.boards.push(await board(page));
      result.results.push(((await page.locator('#result').textContent()) ?? '').trim());
    }
  } finally {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}

run().then(
  () => {
    clearTimeout(watchdog);
    process.exit(0);
  },
  (err) => fail(err),
);
