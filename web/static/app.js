// stompgate chat: joins a room over STOMP with @stomp/stompjs (loaded
// before this script, as the StompJs global), chats, floods the server on
// demand, and shows the server's own count of this session's frames, so
// that the silent drop of excess frames can be seen.
'use strict';

(() => {
  const FLOOD_RATE = 100; // SEND frames per second while flooding
  const FLOOD_TICK_MS = 50; // frames are sent in small batches, on time on average
  const POLL_MS = 1000; // counts refresh while connected
  const RECEIPT_WAIT_MS = 5000; // how long joining waits for the SUBSCRIBE receipt
  const MAX_LOG = 200; // messages kept in the log
  const BACKOFF_MIN_S = 1; // first reconnect delay without Retry-After
  const BACKOFF_MAX_S = 30; // longest reconnect delay without Retry-After
  const RETRY_AFTER_MAX_S = 3600; // a larger Retry-After is read as this
  const ROOM_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

  const $ = (id) => document.getElementById(id);
  const ui = {
    status: $('status'),
    joinForm: $('join-form'),
    room: $('room'),
    name: $('name'),
    join: $('join'),
    leave: $('leave'),
    error: $('error'),
    roomLabel: $('room-label'),
    log: $('log'),
    sendForm: $('send-form'),
    message: $('message'),
    send: $('send'),
    flood: $('flood'),
    sent: $('count-sent'),
    received: $('count-received'),
    passed: $('count-passed'),
    dropped: $('count-dropped'),
    floodIn: $('flood-in'),
  };

  // The WebSocket endpoint is on this page's host, at the path the server
  // renders into the page.
  const wsPath = document.querySelector('meta[name="stompgate-ws-path"]')?.getAttribute('content') || '/ws';
  const probeURL = new URL(wsPath, location.href);
  const wsURL = new URL(probeURL.href);
  wsURL.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';

  // tabID marks this tab's messages (two people may pick the same name).
  // getRandomValues, unlike randomUUID, works on plain-http pages too.
  const tabID = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');

  let joined = null; // {room, name, destination, connects} while the user is in a room
  let client = null; // the StompJs.Client of the joined room
  let sessionId = ''; // the CONNECTED frame's session header
  let reachedConnected = false; // the current attempt got CONNECTED
  let ready = false; // subscribed: messages can be sent and arrive
  let backoffS = BACKOFF_MIN_S;
  let retryTimer = 0;
  let countdownTimer = 0;
  let pollTimer = 0;
  let polling = false;
  let receiptTimer = 0;
  let receiptSeq = 0;
  let flood = null; // {start, sent} while flooding
  let floodTimer = 0;
  let sent = 0; // SEND frames this tab published in this room
  let floodIn = 0; // flood messages from other tabs received here

  // ---- status, errors, log ----

  // setStatus shows the connection state. The status is a live region; a
  // countdown, when given, ticks in a child that is not announced, so a
  // screen reader hears the sentence once rather than every second.
  // data-retry-in keeps the countdown's first value.
  function setStatus(state, text, countdown) {
    ui.status.dataset.state = state;
    if (countdown === undefined) {
      delete ui.status.dataset.retryIn;
      ui.status.replaceChildren(text);
      return;
    }
    ui.status.dataset.retryIn = String(countdown);
    const n = document.createElement('span');
    n.className = 'countdown';
    n.setAttribute('aria-live', 'off');
    n.textContent = String(countdown);
    ui.status.replaceChildren(`${text}, retrying in `, n, ' s');
  }

  function showError(text) {
    ui.error.textContent = text;
    ui.error.hidden = false;
  }

  function clearError() {
    ui.error.hidden = true;
    ui.error.textContent = '';
  }

  function appendLog(li) {
    const atBottom = ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 40;
    ui.log.append(li);
    while (ui.log.childElementCount > MAX_LOG) {
      ui.log.firstElementChild.remove();
    }
    if (atBottom) {
      ui.log.scrollTop = ui.log.scrollHeight;
    }
  }

  function addChat(sender, text, mine) {
    const li = document.createElement('li');
    li.className = mine ? 'msg mine' : 'msg';
    const now = new Date();
    const time = document.createElement('time');
    time.dateTime = now.toISOString();
    time.textContent = now.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = mine ? `${sender} (you)` : sender;
    const body = document.createElement('span');
    body.className = 'text';
    body.textContent = text;
    li.append(who, body, time);
    appendLog(li);
  }

  function addSystem(text) {
    const li = document.createElement('li');
    li.className = 'note';
    li.textContent = text;
    appendLog(li);
  }

  // ---- controls ----

  function setJoinedControls(isJoined) {
    ui.room.disabled = isJoined;
    ui.name.disabled = isJoined;
    ui.join.disabled = isJoined;
    ui.leave.disabled = !isJoined;
  }

  function setReadyControls(isReady) {
    ui.message.disabled = !isReady;
    ui.send.disabled = !isReady;
    ui.flood.disabled = !isReady;
  }

  function renderSent() {
    ui.sent.textContent = String(sent);
  }

  function renderCounts(c) {
    ui.received.textContent = c ? String(c.received) : '–';
    ui.passed.textContent = c ? String(c.passed) : '–';
    ui.dropped.textContent = c ? String(c.dropped) : '–';
    ui.dropped.classList.toggle('has-drops', Boolean(c && c.dropped > 0));
  }

  // ---- joining and leaving ----

  function join(room, name) {
    clearError();
    joined = { room, name, destination: `/topic/room.${room}`, connects: 0 };
    ui.roomLabel.textContent = `in ${room}`;
    sent = 0;
    floodIn = 0;
    renderSent();
    renderCounts(null);
    ui.floodIn.textContent = '0';
    setJoinedControls(true);
    backoffS = BACKOFF_MIN_S;

    const c = new StompJs.Client({
      brokerURL: wsURL.href,
      // stompjs' own reconnect is off: this page schedules reconnects
      // itself so that it can honour the server's Retry-After.
      reconnectDelay: 0,
      connectionTimeout: 10000,
      heartbeatIncoming: 10000,
      heartbeatOutgoing: 10000,
    });
    // Callbacks of a client the page has let go of are ignored.
    c.onConnect = (frame) => { if (c === client) onConnect(frame); };
    c.onStompError = (frame) => { if (c === client) onStompError(frame); };
    c.onWebSocketClose = () => { if (c === client) void onClose(c); };
    client = c;
    connect();
  }

  function leave() {
    const c = client;
    const room = joined?.room;
    joined = null;
    client = null;
    ready = false;
    sessionId = '';
    stopFlood();
    stopPolling();
    clearRetry();
    clearTimeout(receiptTimer);
    setReadyControls(false);
    setJoinedControls(false);
    ui.roomLabel.textContent = '';
    if (c) {
      void c.deactivate(); // sends DISCONNECT when connected
    }
    if (room) {
      addSystem(`You left ${room}.`);
    }
    setStatus('disconnected', 'not connected');
    ui.room.focus();
  }

  function connect() {
    if (!joined) {
      return;
    }
    reachedConnected = false;
    ready = false;
    sessionId = '';
    setStatus('connecting', `connecting to ${joined.room}…`);
    client.activate();
  }

  function onConnect(frame) {
    reachedConnected = true;
    backoffS = BACKOFF_MIN_S;
    sessionId = frame.headers.session || '';
    startPolling();
    setStatus('connecting', `joining ${joined.room}…`);

    // The room is joined when the server has the subscription: it
    // answers the SUBSCRIBE's receipt after putting it in place.
    const receipt = `join-${++receiptSeq}`;
    const c = client;
    const done = () => {
      clearTimeout(receiptTimer);
      if (c === client && !ready && c.connected) {
        onReady();
      }
    };
    client.watchForReceipt(receipt, done);
    // A server that limits SUBSCRIBE may drop it silently, receipt and
    // all; the page then carries on without the confirmation.
    receiptTimer = setTimeout(done, RECEIPT_WAIT_MS);
    client.subscribe(joined.destination, onMessage, { receipt });
  }

  function onReady() {
    ready = true;
    clearError();
    setReadyControls(true);
    setStatus('connected', `connected to ${joined.room} as ${joined.name}`);
    addSystem(`You ${joined.connects++ ? 'rejoined' : 'joined'} ${joined.room} as ${joined.name}.`);
    // The Join button that had the focus is disabled now.
    if (document.activeElement === document.body || document.activeElement === ui.join) {
      ui.message.focus();
    }
  }

  function onStompError(frame) {
    const msg = frame.headers.message || 'unknown error';
    const detail = (frame.body || '').trim();
    showError(`Server error: ${msg}${detail ? ` (${detail})` : ''}`);
  }

  // onClose handles the end of a connection or of a failed attempt.
  async function onClose(c) {
    const wasConnected = reachedConnected;
    ready = false;
    sessionId = '';
    clearTimeout(receiptTimer);
    stopFlood();
    stopPolling();
    setReadyControls(false);
    // With reconnectDelay 0 the client stays active after a close;
    // deactivating it lets the next activate() start afresh.
    void c.deactivate();

    if (wasConnected) {
      addSystem('Connection lost.');
      scheduleRetry(nextBackoff(), 'connection lost');
      return;
    }
    setStatus('connecting', 'connection failed, asking the server why…');
    const p = await probe();
    if (c !== client) {
      return; // left, or joined another room, meanwhile
    }
    switch (p.kind) {
      case 'limited':
        scheduleRetry(p.retryAfter ?? nextBackoff(), 'too many connection attempts');
        break;
      case 'unavailable':
        scheduleRetry(p.retryAfter ?? nextBackoff(), 'server unavailable');
        break;
      case 'unreachable':
        scheduleRetry(nextBackoff(), 'server unreachable');
        break;
      default:
        scheduleRetry(nextBackoff(), 'connection failed');
    }
  }

  // probe asks the WebSocket URL with a plain GET why a handshake failed.
  //
  // A browser does not let a page read the HTTP status of a refused
  // WebSocket handshake: the close event says 1006 whether the server
  // answered 429, 503 or nothing. The server's handshake limiter runs
  // before the upgrade and limits any request to this URL, so a plain GET
  // gets the same answer a handshake would: 429 with Retry-After when this
  // client is over the limit, 503 with Retry-After while the server shuts
  // down, and otherwise 426 Upgrade Required.
  //
  // Trade-off: the probe is a counted request. When the client is under
  // the limit it takes one slot of its handshake budget, so a failed
  // attempt costs two slots instead of one. That is why the page probes
  // only after a handshake failed before CONNECTED, never before the first
  // attempt or after a connection that worked.
  async function probe() {
    let r;
    try {
      r = await fetch(probeURL.href, { cache: 'no-store', credentials: 'same-origin' });
    } catch {
      return { kind: 'unreachable' };
    }
    const retryAfter = parseRetryAfter(r.headers.get('Retry-After'));
    if (r.status === 429) {
      return { kind: 'limited', retryAfter };
    }
    if (r.status === 503) {
      return { kind: 'unavailable', retryAfter };
    }
    return { kind: 'other', status: r.status };
  }

  // parseRetryAfter reads a Retry-After value (seconds or an HTTP date) as
  // whole seconds from now, at least 1; null when absent or unreadable.
  function parseRetryAfter(v) {
    if (!v) {
      return null;
    }
    v = v.trim();
    let s;
    if (/^\d+$/.test(v)) {
      s = Number(v);
    } else {
      const t = Date.parse(v);
      if (Number.isNaN(t)) {
        return null;
      }
      s = Math.ceil((t - Date.now()) / 1000);
    }
    return Math.min(Math.max(s, 1), RETRY_AFTER_MAX_S);
  }

  // nextBackoff returns the next reconnect delay in whole seconds:
  // doubling from BACKOFF_MIN_S to BACKOFF_MAX_S, with jitter so that
  // clients dropped together do not come back together.
  function nextBackoff() {
    const s = backoffS;
    backoffS = Math.min(backoffS * 2, BACKOFF_MAX_S);
    return Math.max(1, Math.round(s * (0.5 + Math.random() / 2)));
  }

  function scheduleRetry(seconds, reason) {
    clearRetry();
    let left = seconds;
    setStatus('retrying', reason, left);
    countdownTimer = setInterval(() => {
      left = Math.max(left - 1, 1);
      const n = ui.status.querySelector('.countdown');
      if (n) {
        n.textContent = String(left);
      }
    }, 1000);
    retryTimer = setTimeout(() => {
      clearRetry();
      connect();
    }, seconds * 1000);
  }

  function clearRetry() {
    clearTimeout(retryTimer);
    clearInterval(countdownTimer);
    retryTimer = 0;
    countdownTimer = 0;
  }

  // ---- messages ----

  function publish(kind, body, extra) {
    client.publish({
      destination: joined.destination,
      body,
      headers: { 'content-type': 'text/plain;charset=utf-8', sender: joined.name, kind, tab: tabID, ...extra },
    });
    sent++;
  }

  function onMessage(msg) {
    const h = msg.headers;
    const mine = h.tab === tabID;
    if (h.kind === 'flood') {
      if (!mine) {
        floodIn++;
        ui.floodIn.textContent = String(floodIn);
      }
      return;
    }
    addChat(h.sender || 'anonymous', msg.body, mine);
  }

  // ---- flood ----

  function startFlood() {
    flood = { start: performance.now(), sent: 0 };
    ui.flood.setAttribute('aria-pressed', 'true');
    ui.flood.textContent = 'Stop flood';
    floodTimer = setInterval(floodTick, FLOOD_TICK_MS);
    floodTick();
  }

  function stopFlood() {
    clearInterval(floodTimer);
    floodTimer = 0;
    flood = null;
    ui.flood.setAttribute('aria-pressed', 'false');
    ui.flood.textContent = 'Start flood';
  }

  // floodTick sends what is due at FLOOD_RATE since the flood started;
  // after a stalled timer it sends at most one second's worth at once.
  function floodTick() {
    if (!flood || !ready || !client?.connected) {
      stopFlood();
      return;
    }
    const due = Math.floor(((performance.now() - flood.start) * FLOOD_RATE) / 1000) + 1;
    flood.sent = Math.max(flood.sent, due - FLOOD_RATE);
    while (flood.sent < due) {
      flood.sent++;
      publish('flood', `flood #${flood.sent}`, { seq: String(flood.sent) });
    }
    renderSent();
  }

  // ---- counts ----

  function startPolling() {
    stopPolling();
    void pollCounts();
    pollTimer = setInterval(pollCounts, POLL_MS);
  }

  function stopPolling() {
    clearInterval(pollTimer);
    pollTimer = 0;
  }

  // pollCounts shows the server's frame counts of this session. The last
  // counts stay on screen after the session ends.
  async function pollCounts() {
    const id = sessionId;
    if (!id || polling) {
      return;
    }
    polling = true;
    try {
      const r = await fetch(`api/sessions/${encodeURIComponent(id)}/counts`, { cache: 'no-store' });
      if (id !== sessionId || !r.ok) {
        return; // a 404 means the session just ended
      }
      renderCounts(await r.json());
    } catch {
      // the next poll tries again
    } finally {
      polling = false;
    }
  }

  // ---- wiring ----

  ui.joinForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const room = ui.room.value.trim();
    const name = ui.name.value.trim();
    ui.room.removeAttribute('aria-invalid');
    ui.name.removeAttribute('aria-invalid');
    if (!ROOM_PATTERN.test(room)) {
      ui.room.setAttribute('aria-invalid', 'true');
      showError('Room: use 1 to 32 letters, digits, “-” or “_”.');
      ui.room.focus();
      return;
    }
    if (!name) {
      ui.name.setAttribute('aria-invalid', 'true');
      showError('Please enter your name.');
      ui.name.focus();
      return;
    }
    join(room, name);
  });

  ui.leave.addEventListener('click', leave);

  // Enter in the message field submits the form.
  ui.sendForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = ui.message.value.trim();
    if (!text || !ready) {
      return;
    }
    publish('chat', text);
    renderSent();
    ui.message.value = '';
    ui.message.focus();
  });

  ui.flood.addEventListener('click', () => {
    if (flood) {
      stopFlood();
    } else if (ready) {
      startFlood();
    }
  });

  if (typeof StompJs === 'undefined') {
    setStatus('error', 'STOMP client failed to load');
    ui.join.disabled = true;
  }
})();
