// The demo page of a running stompgate server, in a real headless Chromium
// (Debian's /usr/bin/chromium, or $CHROMIUM), driven by playwright-core.
//
//   node test.mjs <base-url> <output-dir>
//
// Three people use the page:
//
//   1. alice and bob join the same room; alice types a message and presses
//      Enter; it must appear in bob's page.
//      Then mallory, a raw WebSocket client, sends the room SENDs with a
//      header that is not UTF-8 (in a text and in a binary message), and a
//      body that is not UTF-8 in a binary message. The server must close
//      mallory's first two sessions and deliver the third in a binary
//      message, and alice's and bob's sockets must stay open (Chromium
//      fails a socket on "Could not decode a text frame as UTF-8"): a
//      second chat line still reaches bob.
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
//   {"chat":{...},"garbage":{...},"flood":{...},"retry":{...},
//    "screenshots":[...],"pageErrors":[...],"cspViolations":[...]}
//
// On any failure it prints the error on stderr and exits with status 1.

import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const TOTAL_TIMEOUT_MS = 120_000; // the whole run; far above what it needs
const STEP_TIMEOUT_MS = 15_000; // one wait for the page
const FLOOD_MS = 3_000;
const ROOM = 'e2e-room';
const CHAT_TEXT = 'hello bob, ünïcödé ✓';
const HAMMER_GAP_MS = 25;
const AFTER_GARBAGE_TEXT = 'still connected after the garbage';

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
  members: null,
  chat: null,
  garbage: null,
  flood: null,
  retry: null,
  screenshots: [],
  pageErrors: [],
  cspViolations: [],
};

// socketCloses counts, per person, the page's WebSocket connections that
// closed or failed; utf8Errors are Chromium's console errors about text
// frames that are not UTF-8.
const socketCloses = {};
const utf8Errors = [];

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
    if (/UTF-8/i.test(msg.text())) {
      utf8Errors.push(`${who}: ${msg.text()}`);
    }
  });
  socketCloses[who] = 0;
  page.on('websocket', (ws) => {
    ws.on('close', () => socketCloses[who]++);
    ws.on('socketerror', (err) => utf8Errors.push(`${who}: socket error ${err}`));
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

// rawSession is mallory's client: a WebSocket spoken by hand over TCP, so
// that it can send what no browser or library would. It opens a session
// (retrying while the handshake limiter answers 429), sends CONNECT, then
// frame in a WebSocket message of the given opcode (1 text, 2 binary),
// then, when follow is set, a DISCONNECT. It resolves with the close code
// the server sent (0 for none) and the opcodes of the messages received.
async function rawSession(opcode, frame, follow) {
  const { hostname, port, host } = new URL(base);
  for (;;) {
    const sock = net.connect(Number(port), hostname);
    await once(sock, 'connect');
    sock.write(
      `GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
        'Sec-WebSocket-Protocol: v12.stomp\r\n\r\n',
    );
    const reader = frameReader(sock);
    const head = await reader.head();
    const status = Number(head.split(' ')[1]);
    if (status === 429) {
      sock.destroy();
      const retry = Number(/retry-after: *(\d+)/i.exec(head)?.[1] || 1);
      await sleep(retry * 1000);
      continue;
    }
    if (status !== 101) {
      sock.destroy();
      throw new Error(`mallory's handshake: ${head.split('\r\n')[0]}`);
    }
    sock.write(wsFrame(1, Buffer.from('CONNECT\naccept-version:1.2\nheart-beat:0,0\n\n\0')));
    const connected = await reader.next();
    if (!connected || !connected.payload.toString().startsWith('CONNECTED')) {
      throw new Error(`mallory got no CONNECTED: ${connected?.payload}`);
    }
    sock.write(wsFrame(opcode, frame));
    if (follow) {
      sock.write(wsFrame(1, Buffer.from('DISCONNECT\nreceipt:bye\n\n\0')));
    }
    const types = [];
    for (;;) {
      const f = await reader.next();
      if (!f) {
        return { code: 0, types };
      }
      if (f.opcode === 8) {
        sock.end();
        return { code: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 0, types };
      }
      types.push(f.opcode);
    }
  }
}

// wsFrame encodes one masked client frame.
function wsFrame(opcode, payload) {
  const mask = randomBytes(4);
  let head;
  if (payload.length < 126) {
    head = Buffer.from([0x80 | opcode, 0x80 | payload.length]);
  } else {
    head = Buffer.alloc(4);
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 126;
    head.writeUInt16BE(payload.length, 2);
  }
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) {
    body[i] ^= mask[i % 4];
  }
  return Buffer.concat([head, mask, body]);
}

// frameReader reads the HTTP response head, then unmasked server frames,
// from sock.
function frameReader(sock) {
  let buf = Buffer.alloc(0);
  let ended = false;
  let wake = null;
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    wake?.();
  });
  const end = () => {
    ended = true;
    wake?.();
  };
  sock.on('end', end);
  sock.on('close', end);
  sock.on('error', end);
  const more = () => new Promise((resolve) => (wake = resolve));
  return {
    async head() {
      for (;;) {
        const i = buf.indexOf('\r\n\r\n');
        if (i >= 0) {
          const h = buf.subarray(0, i).toString();
          buf = buf.subarray(i + 4);
          return h;
        }
        if (ended) {
          throw new Error('connection closed during the handshake');
        }
        await more();
      }
    },
    async next() {
      for (;;) {
        if (buf.length >= 2) {
          let len = buf[1] & 0x7f;
          let off = 2;
          if (len === 126 && buf.length >= 4) {
            len = buf.readUInt16BE(2);
            off = 4;
          } else if (len === 127 && buf.length >= 10) {
            len = Number(buf.readBigUInt64BE(2));
            off = 10;
          }
          if (len < 126 || off > 2) {
            if (buf.length >= off + len) {
              const f = { opcode: buf[0] & 0x0f, payload: buf.subarray(off, off + len) };
              buf = buf.subarray(off + len);
              return f;
            }
          }
        }
        if (ended) {
          return null;
        }
        await more();
      }
    },
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
  // The room keeps presence: bob's page lists both, by the names given.
  await bob.waitForFunction(() => document.querySelectorAll('#members li').length === 2, null, { timeout: STEP_TIMEOUT_MS });
  result.members = await bob.locator('#members li').allTextContents();

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

  // 1b. mallory sends the room what would make a browser drop its socket.
  const room = `/topic/room.${ROOM}`;
  const badHeader = Buffer.concat([
    Buffer.from(`SEND\ndestination:${room}\nsender:mallory\nx-name:caf`),
    Buffer.from([0xe9]),
    Buffer.from('\n\nhello\0'),
  ]);
  const badBody = Buffer.concat([
    Buffer.from(`SEND\ndestination:${room}\nsender:mallory\ncontent-length:9\n\n`),
    Buffer.from([0xff, 0xfe, 0x62, 0x69, 0x6e, 0x61, 0x72, 0x79, 0x21]),
    Buffer.from('\0'),
  ]);
  const textHeader = await rawSession(1, badHeader, false);
  const binaryHeader = await rawSession(2, badHeader, false);
  const binaryBody = await rawSession(2, badBody, true);
  // The binary body reaches bob's page as a chat line from mallory.
  await bob.locator('#log li.msg').filter({ hasText: 'binary!' }).first().waitFor();
  await alice.locator('#message').focus();
  await alice.keyboard.type(AFTER_GARBAGE_TEXT);
  await alice.keyboard.press('Enter');
  await bob.locator('#log li.msg').filter({ hasText: AFTER_GARBAGE_TEXT }).first().waitFor();
  result.garbage = {
    textHeaderClose: textHeader.code,
    binaryHeaderClose: binaryHeader.code,
    binaryBodyClose: binaryBody.code,
    aliceSocketCloses: socketCloses.alice,
    bobSocketCloses: socketCloses.bob,
    afterGarbageReceived: true,
    utf8Errors: [...utf8Errors],
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
