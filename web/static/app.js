// stompgate chat: joins a room over STOMP with @stomp/stompjs (loaded
// before this script, as the StompJs global), chats, floods the server on
// demand, and shows the server's own count of this session's frames, so
// that the silent drop of excess frames can be seen. Reconnects follow
// reconnect.js (the StompgateReconnect global), which honours the
// server's Retry-After.
'use strict';

(() => {
  const FLOOD_RATE = 100; // SEND frames per second while flooding
  const FLOOD_TICK_MS = 50; // frames are sent in small batches, on time on average
  const POLL_MS = 1000; // counts refresh while connected
  const RECEIPT_WAIT_MS = 5000; // how long joining waits for the SUBSCRIBE receipt
  const MAX_LOG = 200; // messages kept in the log
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
    membersBox: $('members-box'),
    members: $('members'),
    membersCount: $('members-count'),
  };

  // The WebSocket endpoint is on this page's host, at the path the server
  // renders into the page.
  const wsPath = document.querySelector('meta[name="stompgate-ws-path"]')?.getAttribute('content') || '/ws';
  const probeURL = new URL(wsPath, location.href);
  const wsURL = new URL(probeURL.href);
  // The server tells the page whether its rooms keep presence: only then
  // does it subscribe to /presence (a room without it refuses that).
  const presenceOn = document.querySelector('meta[name="stompgate-presence"]')?.getAttribute('content') === 'true';
  wsURL.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';

  // tabID marks this tab's messages (two people may pick the same name).
  // getRandomValues, unlike randomUUID, works on plain-http pages too.
  const tabID = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');

  let joined = null; // {room, name, destination, connects, position} while the user is in a room
  let client = null; // the StompJs.Client of the joined room
  let sessionId = ''; // the CONNECTED frame's session header
  let reachedConnected = false; // the current attempt got CONNECTED
  let ready = false; // subscribed: messages can be sent and arrive
  let countdownTimer = 0;
  let pollTimer = 0;
  let polling = false;
  let receiptTimer = 0;
  let receiptSeq = 0;
  let flood = null; // {start, sent} while flooding
  let presence = null; // {seq, members: Map principal -> info} of the joined room
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
    // position is the last message's {offset, epoch} when the room keeps
    // a history (a policy rule with history), from which a reconnect
    // resumes.
    joined = { room, name, destination: `/topic/room.${room}`, connects: 0, position: null };
    ui.roomLabel.textContent = `in ${room}`;
    sent = 0;
    floodIn = 0;
    renderSent();
    renderCounts(null);
    ui.floodIn.textContent = '0';
    setJoinedControls(true);

    const c = new StompJs.Client({
      brokerURL: wsURL.href,
      connectionTimeout: 10000,
      heartbeatIncoming: 10000,
      heartbeatOutgoing: 10000,
    });
    // reconnect.js schedules the reconnects: backoff with jitter, and the
    // server's Retry-After when it gives one. It tells the page how long
    // it waits, for the countdown.
    StompgateReconnect.attach(c, {
      probeURL: probeURL.href,
      onWait: (ms, why) => { if (c === client) showRetry(ms, why); },
    });
    // Callbacks of a client the page has let go of are ignored.
    c.beforeConnect = () => { if (c === client) onAttempt(); };
    c.onConnect = (frame) => { if (c === client) onConnect(frame); };
    c.onStompError = (frame) => { if (c === client) onStompError(frame); };
    c.onWebSocketClose = () => { if (c === client) onClose(); };
    client = c;
    c.activate();
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
    presence = null;
    renderMembers();
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

  // onAttempt runs as each attempt starts, after any wait.
  function onAttempt() {
    clearRetry();
    reachedConnected = false;
    ready = false;
    sessionId = '';
    setStatus('connecting', `connecting to ${joined.room}…`);
  }

  function onConnect(frame) {
    reachedConnected = true;
    sessionId = frame.headers.session || '';
    startPolling();
    setStatus('connecting', `joining ${joined.room}…`);

    // The room is joined when the server has the subscription: it
    // answers the SUBSCRIBE's receipt after putting it in place.
    const receipt = `join-${++receiptSeq}`;
    const c = client;
    const resuming = joined.position;
    const done = (frame) => {
      clearTimeout(receiptTimer);
      if (c === client && !ready && c.connected) {
        onReady();
        if (resuming && frame) {
          reportResume(frame.headers);
        }
      }
    };
    client.watchForReceipt(receipt, done);
    // A server that limits SUBSCRIBE may drop it silently, receipt and
    // all; the page then carries on without the confirmation.
    receiptTimer = setTimeout(done, RECEIPT_WAIT_MS);
    // presence-info is the name others see in the member list.
    const headers = { receipt, 'presence-info': joined.name };
    if (resuming) {
      // Resume after the last message seen: the server replays what was
      // missed, or says it cannot (recovered:false).
      headers['x-stream-offset'] = String(resuming.offset + 1);
      headers['x-stream-epoch'] = resuming.epoch;
    }
    client.subscribe(joined.destination, onMessage, headers);
    if (presenceOn) {
      client.subscribe(`/presence${joined.destination}`, onPresence);
    }
  }

  // ---- who is in the room ----

  // onPresence applies a presence frame: a snapshot replaces the list, a
  // delta's events continue it (see go doc ./presence for the JSON).
  function onPresence(msg) {
    let f;
    try {
      f = JSON.parse(msg.body);
    } catch {
      return;
    }
    if (f.type === 'snapshot') {
      presence = { seq: f.seq, count: f.count, members: new Map() };
      for (const m of f.members || []) {
        presence.members.set(m.principal, m.info || m.principal);
      }
    } else if (f.type === 'delta' && presence) {
      for (const e of f.events || []) {
        if (e.seq !== presence.seq + 1) {
          continue; // not the next one: the server sends a snapshot after a gap
        }
        presence.seq = e.seq;
        if (e.op === 'join') {
          presence.members.set(e.principal, e.info || e.principal);
          presence.count++;
        } else if (presence.members.delete(e.principal) || presence.count > presence.members.size) {
          presence.count--;
        }
      }
    }
    renderMembers();
  }

  function renderMembers() {
    ui.membersBox.hidden = !presence;
    if (!presence) {
      ui.members.replaceChildren();
      return;
    }
    const names = [...presence.members.values()].sort((a, b) => a.localeCompare(b));
    ui.members.replaceChildren(...names.map((n) => {
      const li = document.createElement('li');
      li.textContent = n;
      return li;
    }));
    ui.membersCount.textContent = `(${presence.count})`;
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

  // onClose handles the end of a connection or of a failed attempt;
  // reconnect.js then decides when to try again.
  function onClose() {
    const wasConnected = reachedConnected;
    reachedConnected = false;
    ready = false;
    sessionId = '';
    clearTimeout(receiptTimer);
    stopFlood();
    stopPolling();
    setReadyControls(false);
    presence = null;
    renderMembers();
    if (wasConnected) {
      addSystem('Connection lost.');
      setStatus('connecting', 'connection lost');
    } else {
      setStatus('connecting', 'connection failed, asking the server why…');
    }
  }

  // retryReasons says why reconnect.js waits, by the kind it reports.
  const retryReasons = {
    limited: 'too many connection attempts', // 429 to the probe
    unavailable: 'server unavailable', // 503 to the probe
    unreachable: 'server unreachable',
    lost: 'connection lost',
    refused: 'server refused the connection', // an ERROR frame before CONNECTED
  };

  // showRetry shows the wait before the next attempt as a countdown in
  // whole seconds: the server's Retry-After when it gave one (the wait
  // adds less than a second to it), else the wait rounded up.
  function showRetry(ms, why) {
    const seconds = why.retryAfter ?? Math.max(1, Math.ceil(ms / 1000));
    scheduleRetry(seconds, retryReasons[why.kind] || 'connection failed');
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
  }

  function clearRetry() {
    clearInterval(countdownTimer);
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

  // reportResume says whether a reconnect got what was sent meanwhile.
  function reportResume(h) {
    if (h.recovered === 'true') {
      addSystem('Resumed: nothing sent while you were away was missed.');
    } else if (h.recovered === 'false' && h['recovery-reason'] !== 'no_history') {
      addSystem(`Could not resume (${h['recovery-reason'] || 'unknown'}): messages sent while you were away are missing.`);
    }
  }

  function onMessage(msg) {
    const h = msg.headers;
    const offset = Number(h['x-stream-offset']);
    if (joined && offset > 0 && h['x-stream-epoch']) {
      joined.position = { offset, epoch: h['x-stream-epoch'] };
    }
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

  if (typeof StompJs === 'undefined' || typeof StompgateReconnect === 'undefined') {
    setStatus('error', 'STOMP client failed to load');
    ui.join.disabled = true;
  }
})();
