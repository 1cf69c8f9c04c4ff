// The reconnect schedule the server ships for browsers
// (web/static/reconnect.js), driven by @stomp/stompjs over the `ws`
// package against two stompgate servers:
//
//   node reconnect.mjs <limited-ws-url> <auth-ws-url> <plain-ws-url>
//
// limited: a server whose handshake limit allows one handshake per few
// seconds. The script spends it with plain GETs until one is refused, then
// connects: the handshake fails, the helper probes the URL, gets 429 with
// Retry-After and waits; the client connects after that.
//
// auth: a server that requires a token, which the client does not send:
// every CONNECT gets an ERROR frame, and the helper backs off with a small
// base and cap (50 ms, 400 ms) so that the schedule's growth shows within a
// second. Its random draws are recorded so the delays can be checked.
//
// plain: a server with no limit in the way. Each session, once CONNECTED,
// sends a frame with an unknown command, which the server answers with an
// ERROR and a close: a lost connection. With `stable` above the session's
// life the schedule keeps growing; with `stable` 0 every session counts as
// one that stayed up, and each wait starts again from the first ceiling.
//
// refusal: a stand-in for a server that refuses a CONNECT with an ERROR
// frame carrying retry-after (seconds), started here on a loopback port:
// the first CONNECT gets ERROR retry-after:1, the second CONNECTED. No
// stompgate version sends that header yet; the helper must read it.
//
// It prints one JSON line of what it observed; the Go test checks it. On
// an error, or after 60 s, it prints the error on stderr and exits 1.

import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { Client } from '@stomp/stompjs';
import WebSocket, { WebSocketServer } from 'ws';

const require = createRequire(import.meta.url);
const { attach } = require('../../web/static/reconnect.js');

const TIMEOUT_MS = 60_000;
const BACKOFF_WAITS = 6; // waits observed against the auth server
const PROTOCOLS = ['v12.stomp', 'v11.stomp', 'v10.stomp'];

function fail(err) {
  process.stderr.write(`reconnect: ${err instanceof Error ? err.stack || err.message : String(err)}\n`);
  process.exit(1);
}

const [limitedURL, authURL, plainURL] = process.argv.slice(2);
if (!limitedURL || !authURL || !plainURL) {
  fail('usage: node reconnect.mjs <limited-ws-url> <auth-ws-url> <plain-ws-url>');
}
setTimeout(() => fail(`not done within ${TIMEOUT_MS} ms`), TIMEOUT_MS).unref();

const httpURL = (u) => u.replace(/^ws/, 'http');

// retryAfter: the limited server refuses a handshake, and the client
// waits what its probe was told.
async function retryAfter() {
  const out = { spentWith: 0, probes: [], waits: [], attempts: [], connected: false, appOnConnect: false };
  // Spend the handshake budget: the server limits any GET of the URL.
  for (;;) {
    const r = await fetch(httpURL(limitedURL), { cache: 'no-store' });
    out.spentWith++;
    if (r.status === 429) {
      break;
    }
    if (out.spentWith > 20) {
      throw new Error(`no 429 after ${out.spentWith} requests (last ${r.status})`);
    }
  }
  const client = new Client({
    webSocketFactory: () => {
      out.attempts.push(performance.now());
      return new WebSocket(limitedURL, PROTOCOLS);
    },
    heartbeatIncoming: 0,
    heartbeatOutgoing: 0,
  });
  const connected = new Promise((resolve) => {
    attach(client, {
      probeURL: httpURL(limitedURL),
      fetch: async (url, init) => {
        const r = await fetch(url, init);
        out.probes.push({ status: r.status, retryAfter: r.headers.get('retry-after'), at: performance.now() });
        return r;
      },
      onWait: (ms, why) => out.waits.push({ ms, kind: why.kind, retryAfter: why.retryAfter, failures: why.failures, at: performance.now() }),
    });
    // Set after attach: the helper must keep it.
    client.onConnect = () => {
      out.appOnConnect = true;
      resolve();
    };
  });
  client.activate();
  await connected;
  out.connected = client.connected;
  await client.deactivate();
  return out;
}

// backoff: every CONNECT is refused with an ERROR frame that says nothing
// of when to come back.
async function backoff() {
  const out = { draws: [], waits: [], errors: [] };
  const client = new Client({
    webSocketFactory: () => new WebSocket(authURL, PROTOCOLS),
    heartbeatIncoming: 0,
    heartbeatOutgoing: 0,
  });
  client.onStompError = (frame) => out.errors.push(frame.headers.message);
  await new Promise((resolve) => {
    attach(client, {
      base: 50,
      cap: 400,
      random: () => {
        const r = Math.random();
        out.draws.push(r);
        return r;
      },
      onWait: (ms, why) => {
        out.waits.push({ ms, kind: why.kind, retryAfter: why.retryAfter, failures: why.failures });
        if (out.waits.length === BACKOFF_WAITS) {
          resolve();
        }
      },
    });
    client.activate();
  });
  // Deactivating during a wait ends it: the script then exits on its own
  // (process.exit below is only for the result line's sake).
  await client.deactivate();
  return out;
}

// lost: sessions that reach CONNECTED and are then closed by the server,
// with stable ms as the helper's threshold; it returns the waits' failure
// counts and ceilings.
async function lost(stable) {
  const waits = [];
  const client = new Client({
    webSocketFactory: () => new WebSocket(plainURL, PROTOCOLS),
    heartbeatIncoming: 0,
    heartbeatOutgoing: 0,
  });
  client.onConnect = () => client.webSocket.send('BOGUS\n\n\0');
  await new Promise((resolve) => {
    attach(client, {
      base: 20,
      cap: 1000,
      stable,
      random: () => 0.5,
      onWait: (ms, why) => {
        waits.push({ ms, kind: why.kind, retryAfter: why.retryAfter, failures: why.failures });
        if (waits.length === 3) {
          resolve();
        }
      },
    });
    client.activate();
  });
  await client.deactivate();
  return waits;
}

async function refusal() {
  const out = { waits: [], attempts: [], connected: false };
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (p) => [...p][0] });
  await new Promise((resolve) => wss.on('listening', resolve));
  let connects = 0;
  wss.on('connection', (ws) => {
    out.attempts.push(performance.now());
    ws.on('message', (data) => {
      if (!String(data).startsWith('CONNECT')) {
        return;
      }
      if (connects++ === 0) {
        ws.send('ERROR\nmessage:server busy\nretry-after:1\n\n\0');
        ws.close();
      } else {
        ws.send('CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\0');
      }
    });
  });
  const url = `ws://127.0.0.1:${wss.address().port}/ws`;
  const client = new Client({
    webSocketFactory: () => new WebSocket(url, PROTOCOLS),
    heartbeatIncoming: 0,
    heartbeatOutgoing: 0,
  });
  await new Promise((resolve) => {
    attach(client, {
      probeURL: false,
      onWait: (ms, why) => out.waits.push({ ms, kind: why.kind, retryAfter: why.retryAfter, failures: why.failures, at: performance.now() }),
    });
    client.onConnect = resolve;
    client.activate();
  });
  out.connected = client.connected;
  await client.deactivate({ force: true });
  for (const ws of wss.clients) {
    ws.terminate();
  }
  await new Promise((resolve) => wss.close(resolve));
  return out;
}

try {
  const result = {
    refusal: await refusal(),
    retryAfter: await retryAfter(),
    backoff: await backoff(),
    lostUnstable: await lost(60_000),
    lostStable: await lost(0),
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
} catch (err) {
  fail(err);
}
