// One STOMP round trip through a stompgate server with @stomp/stompjs, the
// client browser apps use, over the `ws` package (Node has no WebSocket of
// its own before version 22).
//
//   node roundtrip.mjs <ws-url> [passcode]
//
// It connects (with the passcode, a JWT, when given), subscribes to
// /topic/e2e, publishes one message with a custom header and a receipt,
// waits for both the RECEIPT and the MESSAGE, disconnects, and prints one
// JSON line of what it observed:
//
//   {"connected":true,"version":"1.2","receipt":"e2e-receipt-1",
//    "body":"...","header":"...","user":"...","destination":"/topic/e2e"}
//
// On any error, or if the round trip takes more than 10 s, it prints the
// error on stderr and exits with status 1.

import { Client } from '@stomp/stompjs';
import WebSocket from 'ws';

const TIMEOUT_MS = 10_000;
const DESTINATION = '/topic/e2e';
const RECEIPT_ID = 'e2e-receipt-1';
const BODY = 'hello from stompjs: ünïcödé ✓';
const HEADER_NAME = 'x-e2e-check';
const HEADER_VALUE = 'stompjs-roundtrip';

function fail(err) {
  process.stderr.write(`roundtrip: ${err instanceof Error ? err.stack || err.message : String(err)}\n`);
  process.exit(1);
}

const [url, passcode] = process.argv.slice(2);
if (!url) {
  fail('usage: node roundtrip.mjs <ws-url> [passcode]');
}

const timer = setTimeout(() => fail(`no round trip within ${TIMEOUT_MS} ms`), TIMEOUT_MS);

const observed = {
  connected: false,
  version: '',
  receipt: '',
  body: '',
  header: '',
  user: '',
  destination: '',
};

let finishing = false;
let gotReceipt = false;
let gotMessage = false;

const client = new Client({
  webSocketFactory: () => new WebSocket(url, ['v12.stomp', 'v11.stomp', 'v10.stomp']),
  connectHeaders: passcode ? { login: 'e2e', passcode } : {},
  // One attempt: a failure is reported, not retried.
  reconnectDelay: 0,
  heartbeatIncoming: 0,
  heartbeatOutgoing: 0,
  debug: () => {},
});

async function finish() {
  if (finishing || !gotReceipt || !gotMessage) {
    return;
  }
  finishing = true;
  try {
    await client.deactivate();
  } catch (err) {
    fail(err);
  }
  clearTimeout(timer);
  process.stdout.write(JSON.stringify(observed) + '\n');
  process.exit(0);
}

client.onConnect = (frame) => {
  observed.connected = true;
  observed.version = frame.headers.version ?? '';
  observed.user = frame.headers['user-name'] ?? '';

  client.subscribe(DESTINATION, (message) => {
    observed.body = message.body;
    observed.header = message.headers[HEADER_NAME] ?? '';
    observed.destination = message.headers.destination ?? '';
    gotMessage = true;
    finish();
  });

  // The server handles a session's frames in order, so the SUBSCRIBE above
  // is in place when this SEND arrives.
  client.watchForReceipt(RECEIPT_ID, (receipt) => {
    observed.receipt = receipt.headers['receipt-id'] ?? '';
    gotReceipt = true;
    finish();
  });
  client.publish({
    destination: DESTINATION,
    body: BODY,
    headers: { [HEADER_NAME]: HEADER_VALUE, receipt: RECEIPT_ID },
  });
};

client.onStompError = (frame) => {
  fail(`ERROR frame: ${frame.headers.message ?? ''} ${frame.body}`);
};
client.onWebSocketError = (event) => {
  fail(`WebSocket error: ${event?.message ?? event?.error ?? event}`);
};
client.onWebSocketClose = (event) => {
  if (!finishing) {
    fail(`WebSocket closed before the round trip: code ${event?.code} ${event?.reason ?? ''}`);
  }
};

client.activate();
