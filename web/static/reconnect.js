// stompgate reconnect schedule for @stomp/stompjs: exponential backoff with
// full jitter, and the server's Retry-After when one is known.
//
//   const client = new StompJs.Client({ brokerURL: 'wss://example.com/ws' });
//   StompgateReconnect.attach(client, { onWait: (ms, why) => show(ms, why) });
//   client.activate();
//
// Without a Retry-After, the wait before the retry that follows n failures
// in a row is drawn uniformly from [0, min(cap, base * 2^n)): base 1 s, cap
// 30 s (full jitter: clients dropped together come back spread over the
// whole window). With one, from a refused CONNECT's ERROR frame
// (retry-after header) or from a GET probe of the WebSocket URL, the wait is
// that many seconds plus a uniform fraction of a second, never less. A
// browser cannot read the status of a refused WebSocket handshake, so after
// a handshake that failed before CONNECTED the helper sends one plain GET to
// the URL: the server answers it as it would the handshake (429 or 503 with
// Retry-After; 426 otherwise). The probe is itself counted against the
// client's handshake limit, so it is sent only then. A connection that
// stayed up for `stable` (10 s) resets the schedule.
//
// attach sets reconnectDelay to 1 ms: stompjs schedules the reconnect at
// once and the wait happens in beforeConnect. Callbacks set on the client
// before or after attach are kept and called after the helper's. Options:
// base, cap, stable (ms), probeURL (false: never probe), onWait(ms, why)
// with why = {kind, retryAfter, status, message, failures}, random, fetch.
'use strict';

(function (root, factory) {
  if (typeof module === 'object' && module.exports) {
    module.exports = factory();
  } else {
    root.StompgateReconnect = factory();
  }
})(typeof self !== 'undefined' ? self : this, () => {
  const BASE_MS = 1000; // first ceiling: a crowd spreads over a second
  const CAP_MS = 30000; // highest ceiling: a restarting server is not hammered
  const STABLE_MS = 10000; // a connection this old was a success
  const RETRY_AFTER_MAX_S = 3600; // a larger Retry-After is read as this

  // parseRetryAfter reads a Retry-After value (seconds or an HTTP date) as
  // whole seconds from now; null when absent or unreadable.
  function parseRetryAfter(v) {
    v = String(v ?? '').trim();
    const s = /^\d+$/.test(v) ? Number(v) : Math.ceil((Date.parse(v) - Date.now()) / 1000);
    return Number.isNaN(s) ? null : Math.min(Math.max(s, 0), RETRY_AFTER_MAX_S);
  }

  // hook makes client[name] call before(...args) first, then whatever
  // function the application sets, before attach or after it. With wait,
  // the application's function runs once before's promise settles.
  function hook(client, name, before, wait) {
    let app = client[name];
    const call = (args) => (typeof app === 'function' ? app.apply(client, args) : undefined);
    Object.defineProperty(client, name, {
      configurable: true,
      get: () => (wait
        ? async (...args) => { await before(...args); return call(args); }
        : (...args) => { before(...args); return call(args); }),
      set: (f) => { app = f; },
    });
  }

  function attach(client, options = {}) {
    const base = options.base ?? BASE_MS;
    const cap = options.cap ?? CAP_MS;
    const stable = options.stable ?? STABLE_MS;
    const random = options.random || Math.random;
    const doFetch = options.fetch || globalThis.fetch;
    const onWait = options.onWait || (() => {});
    let failures = 0; // failed attempts since the last stable connection
    let connectedAt = 0; // when the current connection got CONNECTED
    let error = null; // the ERROR frame of the current attempt
    let next = null; // why the last attempt ended (a promise while probing)
    let wake = null; // ends the current wait early

    // probe asks the WebSocket URL with a plain GET why a handshake failed.
    async function probe() {
      const url = options.probeURL ?? String(client.brokerURL || '').replace(/^ws/, 'http');
      if (!url || !doFetch) {
        return { kind: 'failed', retryAfter: null };
      }
      let r;
      try {
        r = await doFetch(url, { cache: 'no-store', credentials: 'same-origin' });
      } catch {
        return { kind: 'unreachable', retryAfter: null };
      }
      const kind = { 429: 'limited', 503: 'unavailable' }[r.status] || 'failed';
      const retryAfter = kind === 'failed' ? null : parseRetryAfter(r.headers.get('Retry-After'));
      return { kind, retryAfter, status: r.status };
    }

    client.reconnectDelay = 1;
    hook(client, 'onConnect', () => { connectedAt = Date.now(); });
    hook(client, 'onStompError', (frame) => { error = frame; });
    hook(client, 'onWebSocketClose', () => {
      const wasConnected = connectedAt > 0;
      if (wasConnected && Date.now() - connectedAt >= stable) {
        failures = 0;
      }
      if (!client.active) {
        next = null; // deactivated: the next activate() connects at once
      } else if (wasConnected || error) {
        next = {
          kind: wasConnected ? 'lost' : 'refused',
          retryAfter: error ? parseRetryAfter(error.headers['retry-after']) : null,
          message: error ? error.headers.message : undefined,
        };
      } else {
        next = probe();
      }
      connectedAt = 0;
      error = null;
    });
    hook(client, 'onChangeState', (state) => {
      if (state !== 0 && wake) { // not ACTIVE any more: stop waiting
        next = null;
        wake();
      }
    });
    hook(client, 'beforeConnect', async () => {
      const why = await next;
      next = null;
      if (!why || !client.active) {
        return; // the first attempt after activate(), or deactivated
      }
      const ms = why.retryAfter !== null
        ? why.retryAfter * 1000 + random() * 1000
        : random() * Math.min(cap, base * 2 ** failures);
      failures++;
      onWait(ms, { ...why, failures });
      await new Promise((resolve) => {
        const t = setTimeout(resolve, ms);
        wake = () => { clearTimeout(t); resolve(); };
      });
      wake = null;
    }, true);
    return {
      reset() { failures = 0; },
      get failures() { return failures; },
    };
  }

  return { attach, parseRetryAfter, BASE_MS, CAP_MS, STABLE_MS };
});
