// The tic-tac-toe page: one STOMP session per tab, through the
// server's WebSocket on this page's own origin. It speaks the frames of
// the example backend (see the Go package's doc):
//
//   SUBSCRIBE /user/queue/tictactoe       private answers (joined, errors)
//   SUBSCRIBE /topic/game.<id>            the game's state after each change
//   SEND      /app/tictactoe.join  {"game": "<id>"}
//   SEND      /app/tictactoe.move  {"game": "<id>", "cell": 0..8}
//
// Every text from the server is shown with textContent, never as HTML.
'use strict';

(function () {
  const JOIN = '/app/tictactoe.join';
  const MOVE = '/app/tictactoe.move';
  const PRIVATE = '/user/queue/tictactoe';
  const GAME_ID = /^[A-Za-z0-9_-]{1,32}$/;

  const $ = (id) => document.getElementById(id);
  const cells = Array.from(document.querySelectorAll('#board button'));
  let client = null;
  let game = '';
  let mark = '';
  let state = null;

  function status(text, st) {
    $('status').textContent = text;
    $('status').dataset.state = st;
  }

  function showError(text) {
    $('error').textContent = text;
    $('error').hidden = text === '';
  }

  function render() {
    const g = state;
    cells.forEach((b, i) => {
      const c = g ? g.board[i] : '.';
      b.textContent = c === '.' ? '' : c;
      b.disabled = !g || !mark || g.winner !== '' || g.turn !== mark || c !== '.';
    });
    if (!g) {
      $('turn').textContent = '';
      return;
    }
    if (g.winner === 'draw') {
      $('result').textContent = 'Draw.';
    } else if (g.winner !== '') {
      $('result').textContent = g.winner === mark ? 'You win!' : g.winner + ' wins.';
    } else {
      $('result').textContent = '';
    }
    $('result').dataset.result = g.winner;
    if (g.winner !== '') {
      $('turn').textContent = '';
    } else if (g.o === '') {
      $('turn').textContent = 'Waiting for a second player…';
    } else {
      $('turn').textContent = g.turn === mark ? 'Your turn (' + mark + ').' : 'Waiting for ' + g.turn + '.';
    }
  }

  function onState(msg) {
    let g;
    try {
      g = JSON.parse(msg.body);
    } catch {
      return;
    }
    if (g.game !== game || typeof g.board !== 'string' || g.board.length !== 9) {
      return;
    }
    state = g;
    render();
  }

  function onPrivate(msg) {
    let m;
    try {
      m = JSON.parse(msg.body);
    } catch {
      return;
    }
    if (m.type === 'joined' && m.game === game) {
      mark = m.mark;
      $('you').textContent = 'You play ' + mark + ' in game ' + game + '.';
      showError('');
      render();
    } else if (m.type === 'error') {
      showError(m.error || 'refused');
    }
  }

  function join(id) {
    if (client) {
      client.deactivate();
    }
    game = id;
    mark = '';
    state = null;
    $('you').textContent = '';
    $('result').textContent = '';
    $('result').dataset.result = '';
    showError('');
    render();
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const c = new StompJs.Client({
      brokerURL: scheme + '//' + location.host + '/ws',
      heartbeatIncoming: 10000,
      heartbeatOutgoing: 10000,
      // An anonymous session's principal is new on every connection, so
      // a reconnected tab would be a stranger to its game: no retries.
      reconnectDelay: 0,
    });
    c.onConnect = () => {
      status('connected', 'connected');
      c.subscribe(PRIVATE, onPrivate);
      c.subscribe('/topic/game.' + game, onState);
      c.publish({ destination: JOIN, body: JSON.stringify({ game: game }), headers: { 'content-type': 'application/json' } });
    };
    c.onStompError = (frame) => {
      showError(frame.headers.message || 'the server refused the session');
    };
    c.onWebSocketClose = () => {
      if (client === c) {
        status('disconnected: reload the page to play again', 'disconnected');
        mark = '';
        render();
      }
    };
    client = c;
    status('connecting…', 'connecting');
    c.activate();
  }

  $('join-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = $('game').value.trim();
    if (!GAME_ID.test(id)) {
      showError('A game is named by up to 32 letters, digits, "-" and "_".');
      return;
    }
    join(id);
  });

  cells.forEach((b) => {
    b.addEventListener('click', () => {
      if (!client || !client.connected || b.disabled) {
        return;
      }
      const cell = Number(b.dataset.cell);
      client.publish({ destination: MOVE, body: JSON.stringify({ game: game, cell: cell }), headers: { 'content-type': 'application/json' } });
    });
  });

  render();
})();
