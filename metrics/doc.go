// Package metrics holds stompgate's Prometheus collectors, its alerting
// rules (alerts.yml, unit-tested by alerts_test.yml with promtool test
// rules) and its Grafana dashboard (dashboard.json).
//
// New builds every collector on a registerer it is given; the package has
// no global collectors and never touches prometheus.DefaultRegisterer.
// NewRegistry returns a registry with the Go runtime and process collectors
// already on it, for the server binary. Every label value is resolved in
// New, so the methods called per frame pick a pre-resolved counter with a
// switch or an index and add to it: no allocation, no lock, no map.
//
// # Labels
//
// Every label has a fixed set of values, and anything outside it is
// counted as "other", so no input can create a series. Apart from the
// STOMP commands, every set is defined once, in package outcome, where
// the server and the adapters take their values too; New resolves a
// counter for each value of each list, and metrics imports no other
// package of the module (server/adapterdeps_test.go holds it to that):
//
//   - command: the STOMP 1.2 client commands CONNECT, STOMP, SEND,
//     SUBSCRIBE, UNSUBSCRIBE, ACK, NACK, BEGIN, COMMIT, ABORT, DISCONNECT.
//   - reason on session closes: outcome.Closes; result on handshakes:
//     outcome.Handshakes; kind on protocol errors:
//     outcome.ProtocolErrorKinds; reason on dropped frames: DropReason.
//   - store: outcome.LimiterStores; reason on local decisions:
//     outcome.LocalReasons.
//   - scope: outcome.CapScopes (CapScope).
//   - source on the per-principal limit's decisions:
//     outcome.PrincipalLimitSources; result: passed, dropped.
//   - direction: outcome.RelayDirections (RelayDirection); reason on the
//     relay's drops: outcome.RelayDrops (RelayDropReason); on its
//     resubscriptions: outcome.RelayResubscribes.
//   - endpoint, result, bound on the backend: outcome.APIEndpoints,
//     outcome.AppResults, outcome.AppBacklogBounds.
//   - path on delivery latency: outcome.DeliveryPaths.
//   - destination_prefix: one of Config.DestinationPrefixes.
//   - rule: the policy's destination rule names, which the policy bounds
//     (at most 256, [a-z0-9_]+), given to SetRules; default; other.
//   - result on policy reloads: outcome.ReloadResults (ReloadResult).
//   - version, revision, goversion: the one build the binary is
//     (Config.Build), fixed for the life of the process.
//
// Sessions, principals, client addresses and raw destinations are never
// label values.
//
// # Metrics
//
// Sessions:
//
//   - stompgate_sessions_active (gauge): sessions open now.
//   - stompgate_sessions_opened_total: sessions opened.
//   - stompgate_sessions_compressed_total: sessions opened that
//     negotiated permessage-deflate (-compression).
//   - stompgate_sessions_closed_total{reason}: sessions closed, by reason
//     (normal, protocol_error, slow_consumer, heartbeat_timeout,
//     connect_timeout, rate_limit_abuse, auth_failed, shutdown, panic,
//     client_gone, token_expired, control_flood, ping_timeout,
//     session_cap, backend_error, disconnected, outbound_budget,
//     subscriber_cap, other).
//   - stompgate_panics_recovered_total: panics recovered at the session
//     boundary.
//   - stompgate_reader_pauses_total: times a session stopped reading
//     because its own replies (RECEIPTs) filled its outbound bounds; the
//     client's TCP connection then pushes back until it reads them.
//   - stompgate_heartbeat_offers_capped_total: CONNECTs whose heart-beat
//     offer was above -max-heart-beat, treated as none (such sessions are
//     checked with WebSocket pings).
//   - stompgate_input_pauses_total{budget}: times a session stopped
//     reading because it spent its inbound budget per window (frames or
//     bytes); TCP holds the client back until the window ends.
//   - stompgate_input_paused_seconds_total: seconds readers spent in those
//     pauses, summed over sessions.
//
// Inbound frames through the interceptor chain:
//
//   - stompgate_frames_received_total{command}: frames that entered the
//     chain.
//   - stompgate_frames_passed_total{command}: frames that passed every
//     stage; only these are throughput.
//   - stompgate_frames_dropped_total{command,reason}: frames a stage
//     dropped: rate_limit (the session limiter, silently; a transaction
//     whose COMMIT does not fit the limit counts every SEND it held),
//     rejected (an authentication, permission or abuse stage),
//     transaction_aborted (SENDs of a transaction aborted or left open
//     when its session ended), principal_limit (the per-principal send
//     limit across instances, silently), other.
//   - stompgate_protocol_error_closes_total{kind}: sessions closed with an
//     ERROR frame, by kind of violation.
//
// Every inbound frame is accounted for exactly once, for each command:
//
//	received = passed + dropped (summed over reasons)
//
// except for SENDs held in transactions that are still open, which are
// received but counted as passed or dropped only when their transaction
// ends.
//
// The caller keeps the identity by calling FrameReceived once per frame and
// then exactly one of FramePassed or FrameDropped. The drop ratio the
// alerts and the dashboard show is dropped / received.
//
// Destination rules (the policy's destinations list):
//
//   - stompgate_rule_frames_dropped_total{rule}: frames the session
//     limiter stopped, over a limit or a SEND to a read-only destination,
//     by the rule that applied: its name (SetRules), default when no rule
//     did, other past MaxRuleLabels names. Its sum equals the session
//     limiter's share of stompgate_frames_dropped_total: its rate_limit
//     drops, and its escalations and read-only refusals among rejected.
//   - stompgate_policy_reloads_total{result}: re-readings of the policy
//     file on SIGHUP: applied, or refused (the old rules stay).
//
// Delivery:
//
//   - stompgate_messages_delivered_total{destination_prefix}: MESSAGE
//     frames queued to subscribers, one per subscriber.
//   - stompgate_slow_consumer_disconnects_total: sessions closed because
//     their outbound queue was full.
//   - stompgate_outbound_queued_bytes (gauge),
//     stompgate_outbound_budget_bytes (gauge) and
//     stompgate_outbound_budget_sheds_total: bytes all sessions hold for
//     writing, the server-wide bound on them, and sessions closed,
//     largest backlogs first, because the total went over it; exposed by
//     NewOutboundCollector.
//   - stompgate_latest_replaced_total{rule}: MESSAGEs of latest-value
//     destinations that replaced one still waiting to be written to a
//     slow subscriber, by destination rule (its name, other when the
//     policy loaded at start or reloaded did not name it).
//   - stompgate_subscriber_cap_refusals_total{rule}: SUBSCRIBEs refused,
//     with ERROR "subscriber limit reached" and a close, because the
//     destination had its rule's most subscribers on this instance; each
//     is also counted in stompgate_sessions_closed_total{reason="subscriber_cap"}.
//   - stompgate_delivery_latency_seconds{path} (histogram): time from a
//     message's arrival to the write that put each MESSAGE on a
//     subscriber's socket, by path (outcome.DeliveryPaths): local (from
//     the end of the read that brought the SEND), relay (from the relay's
//     read of it from Redis; destinations with a history in Redis come
//     this way too), api (from the server API call or Server.Publish);
//     buckets from 50µs to 2.5s (DeliveryLatencyBuckets).
//     StompgateDeliverySlow fires on its p99.
//   - stompgate_outbound_queue_wait_seconds (histogram): the part of it
//     each MESSAGE spent in its subscriber's outbound queue, from the
//     broker's fan-out to the write; the same buckets.
//
// History and recovery (destinations whose rule has history), exposed by
// NewHistoryCollector:
//
//   - stompgate_history_recoveries_total{result, reason}: SUBSCRIBEs with
//     a position settled: recovered (reason none), or not_recovered by
//     reason (trimmed, too_many, epoch_changed, ...), each told
//     recovered:false.
//   - stompgate_history_replayed_messages_total: messages replayed.
//   - stompgate_history_gaps_total: live messages that skipped offsets or
//     changed epoch, each starting a new recovery.
//   - stompgate_history_appended_total, stompgate_history_epochs_total:
//     messages appended, epochs started.
//   - stompgate_history_publish_lost_total{reason}: messages lost before a
//     history had them (queue_full, redis_error).
//   - stompgate_history_reads_total, stompgate_history_reads_shared_total,
//     stompgate_history_reads_uncoalesced_total,
//     stompgate_history_read_errors_total: history reads, recoveries that
//     shared one, reads made alone past -recovery-max-flights, failures.
//   - stompgate_history_memory_bytes, stompgate_history_memory_destinations
//     (gauges), stompgate_history_memory_evictions_total: the memory store
//     of a single instance and the histories its bounds evicted.
//
// Handshakes and the per-IP handshake limiter:
//
//   - stompgate_handshakes_total{result}: WebSocket upgrade requests by
//     result (accepted, rejected_limit, rejected_ban, rejected_origin,
//     rejected_shutdown, rejected_session_cap, store_error, upgrade_failed,
//     rejected_admission, session_cap_timeout (the per-IP session cap
//     undecided within the handshake's bound: 503, the instance is busy),
//     other).
//   - stompgate_handshake_limiter_decision_seconds{store} (histogram): time
//     to decide one request, buckets from 50µs to 250ms
//     (LimiterDecisionBuckets).
//   - stompgate_handshake_limiter_store_errors_total{store}: failed store
//     calls.
//   - stompgate_handshake_limiter_fallback (gauge): 1 while the limiter
//     runs on its in-process store because Redis is unreachable, else 0.
//   - stompgate_handshake_limiter_local_decisions_total{reason}: decisions
//     made without Redis while Redis was not judged failing: refused and
//     in_flight shed (refused without asking), queue_full, queue_wait and
//     timeout decided in process memory.
//   - stompgate_handshake_limiter_confirmations_total{result}: PINGs
//     bounded by -redis-confirm-timeout that confirmed
//     -redis-timeouts-to-fail round trips timed out in a row: answered
//     (Redis alive, the timeouts were this server's load; no fallback) or
//     failed (fallback mode entered).
//   - stompgate_handshake_redis_batches_total,
//     stompgate_handshake_redis_batched_decisions_total and
//     stompgate_handshake_redis_queue_full_total: the Redis store's
//     pipelines, the decisions they carried (their ratio is the mean
//     batch), and decisions refused because the queue was full; exposed by
//     NewHandshakePipelineCollector when the store is in Redis.
//
// Session caps (per client IP at the handshake, per principal at CONNECT;
// refusals are counted as stompgate_handshakes_total{result=
// "rejected_session_cap"} and stompgate_sessions_closed_total{reason=
// "session_cap"}):
//
//   - stompgate_session_cap_leases{scope} (gauge): session slots this
//     instance holds, by scope (ip, principal; destination: places of
//     subscribers of destinations whose rule caps them, held across
//     instances with -redis-url).
//   - stompgate_session_cap_store_errors_total: failed Redis calls of the
//     caps (acquire, release, lease renewal, probe).
//   - stompgate_session_cap_leases_restored_total: leases renewal found
//     missing in Redis and wrote back (Redis restarted empty, or out of
//     reach for longer than the lease TTL).
//   - stompgate_session_cap_fallback (gauge): 1 while the caps count this
//     instance's sessions only because Redis is unreachable, else 0.
//   - stompgate_session_cap_local_decisions_total: cap decisions made on
//     this instance's own count because a Redis call timed out while
//     Redis was not judged failing (whatever -limiter-fail says).
//   - stompgate_session_cap_confirmations_total{result}: PINGs bounded by
//     -redis-confirm-timeout that confirmed -redis-timeouts-to-fail cap
//     calls timed out in a row: answered (no fallback) or failed
//     (fallback mode entered).
//   - stompgate_session_cap_displaced_total{scope}: sessions that a newer
//     session of the same key displaced at the cap
//     (-session-cap-displace).
//
// The per-principal send limit (all sessions of a principal on every
// instance; its drops are stompgate_frames_dropped_total{reason=
// "principal_limit"}):
//
//   - stompgate_principal_limit_decisions_total{result,source}: its
//     decisions, passed or dropped, by source: local (the pre-check in
//     memory, no round trip), redis (a charge Redis answered), memory
//     (this instance's own count: no Redis, Redis unreachable, or a
//     charge that failed in the window). dropped{source="local"} over all
//     dropped is the share of an abuser's excess that never reached Redis.
//   - stompgate_principal_limit_redis_round_trips_total: charges sent to
//     Redis, answered or not.
//   - stompgate_principal_limit_store_errors_total: failed Redis calls
//     (charges, probe PINGs).
//   - stompgate_principal_limit_evictions_total: principals' entries
//     dropped while their window ran, to keep memory within its bound.
//   - stompgate_principal_limit_fallback (gauge): 1 while the limit counts
//     this instance's frames only because Redis is unreachable, else 0.
//   - stompgate_principal_limit_confirmations_total{result}: PINGs that
//     confirmed -redis-timeouts-to-fail charges timed out in a row.
//
// Reconnect loops (-reconnect-limit CONNECTs per -reconnect-window, then
// a ban of -reconnect-ban; refusals are counted as
// stompgate_handshakes_total{result="rejected_ban"} for a banned address
// and stompgate_sessions_closed_total{reason="rate_limit_abuse"} for the
// CONNECT that looped and a banned principal's):
//
//   - stompgate_reconnect_connects_total{scope,store}: CONNECTs counted,
//     by scope (address, principal) and by the store that counted them
//     (redis, or memory: no Redis, or Redis unreachable).
//   - stompgate_reconnect_bans_total{scope}: keys banned for a loop, by
//     scope (address, principal).
//   - stompgate_reconnect_store_errors_total: failed Redis calls of the
//     counter (counts, probe PINGs).
//   - stompgate_reconnect_fallback (gauge): 1 while the counter counts
//     this instance's CONNECTs only because Redis is unreachable, else 0.
//
// Presence (destinations whose rule says presence: true, watched at
// /presence/<destination>):
//
//   - stompgate_presence_events_total{op}: joins and leaves received for
//     destinations this instance has watchers of.
//   - stompgate_presence_frames_total{kind}: presence frames queued for
//     watchers, by kind (snapshot, delta).
//   - stompgate_presence_refused_total{reason}: presence SUBSCRIBEs
//     refused with ERROR and a close (not_enabled, watch_limit,
//     info_invalid, store_error).
//   - stompgate_presence_truncated_total: snapshots cut to
//     -presence-max-members.
//   - stompgate_presence_store_errors_total: failed presence store calls
//     (member writes, snapshots, lease renewals).
//   - stompgate_presence_dropped_total: event messages from Redis dropped
//     unread (too large, malformed).
//
// IPv6 clients are keyed by prefix (-ipv6-prefix, /64 by default) in the
// handshake rate, the bans and the session caps:
//
//   - stompgate_ipv6_prefix_refusals_total{limit}: handshakes of such
//     clients refused, by limit (handshake, session_cap), also counted in
//     stompgate_handshakes_total; what the prefix keying holds back.
//
// The build:
//
//   - stompgate_build_info{version,revision,goversion} (gauge): always 1;
//     the labels name the running build (Config.Build), one series per
//     instance. count by (version) (stompgate_build_info) shows a rolling
//     upgrade's progress.
//
// The public HTTP server:
//
//   - stompgate_http_timeouts_total{kind}: plain HTTP connections closed
//     because a timeout ran out: idle (a keep-alive connection waited past
//     the idle timeout), read (a request's headers or body came too
//     slowly). WebSocket sessions are counted by their close reason.
//
// The backend (app destinations, the server API, user destinations):
//
//   - stompgate_app_messages_total{result}: SENDs to app destinations
//     handed to the backend: ok (appended to the app stream), error (the
//     append failed or timed out; the session was closed with ERROR
//     "backend unavailable"), refused (the backlog the backend has not
//     taken reached a bound; ERROR "backend busy"), no_backend (none
//     configured).
//   - stompgate_app_backlog_refusals_total{bound}: those refusals by the
//     bound reached: principal, address, total (bytes waiting) or
//     entries (messages waiting).
//   - stompgate_api_requests_total{endpoint,code}: server API requests
//     answered, by endpoint (publish, disconnect, sessions) and HTTP
//     status (200, 202, 400, 401, 500, other); 401s are wrong keys.
//   - stompgate_user_deliveries_total: MESSAGE frames queued to sessions
//     through user destinations; also counted in
//     stompgate_messages_delivered_total.
//
// Cross-instance relay (Redis Pub/Sub between instances; all zero on an
// instance that runs without it):
//
//   - stompgate_relay_messages_total{direction}: messages published to
//     Redis for the other instances (out) and received from them and
//     handed to the local broker (in).
//   - stompgate_relay_dropped_total{reason}: messages that could not
//     cross: queue_full (the relay's bounded queue), redis_error (PUBLISH
//     failed, Redis unreachable), malformed (a payload that did not parse),
//     too_large (over -relay-max-payload, sent or received), and with
//     -relay-key unsigned, bad_signature (another key, or altered) and
//     stale (timestamp beyond -relay-max-age: a replay). Local delivery
//     is never affected.
//
// OpenTelemetry tracing (-otel-endpoint; docs/tracing.md), read at the
// scrape (NewTracingCollector), present only while tracing is on:
//
//   - stompgate_trace_spans_total{result}: sampled spans exported,
//     failed (their export failed: the collector down, slow or
//     refusing) or dropped (the bounded export queue was full). Dropped
//     or failed above 0 for long: the collector does not keep up.
//   - stompgate_traces_capped_total: frames drawn for a trace that
//     -otel-max-traces-per-second kept untraced; the cap, not the ratio,
//     decides how much this instance traces while it grows.
//
// Instance admission (-max-sessions, -admit-rate, -memory-limit), in
// front of the server, behind the per-client limits:
//
//   - stompgate_admission_refused_total{reason}: handshakes (and plain
//     GETs of the WebSocket path) refused with 503 and a jittered
//     Retry-After: sessions (-max-sessions held), rate (the -admit-rate
//     bucket empty), memory (above -memory-admit-threshold of
//     -memory-limit). Each is also counted in
//     stompgate_handshakes_total{result="rejected_admission"}, as the
//     handshake limit counts every request to the WebSocket path.
//   - stompgate_admission_admitted_total: handshakes let through, each
//     holding a token and a slot.
//   - stompgate_listener_refused_total{reason}: connections the public
//     listener answered with a prebuilt 503 (jittered Retry-After,
//     Connection: close) and closed at accept, before any HTTP:
//     accept_rate (the -accept-rate bucket empty), pending
//     (-max-pending-conns accepted and not yet past their request's
//     headers), pending_addr (the client's address holds
//     -max-pending-conns-per-addr of them). Not counted in
//     stompgate_handshakes_total: no request was read.
//   - stompgate_listener_evicted_total: pending connections closed past
//     -pending-conn-timeout to make room for a new one while a pending
//     bound was full (a client that sends nothing, or a stalled
//     instance).
//
// Read at the scrape (NewAdmissionCollector):
//
//   - stompgate_admission_sessions, stompgate_admission_max_sessions
//     (gauges): the sessions held against the cap (0: no cap).
//
//   - stompgate_admission_memory_bytes,
//     stompgate_admission_memory_limit_bytes (gauges): the memory the
//     guard last read against the limit (0: no guard).
//
//   - stompgate_admission_refusing{reason} (gauge): 1 while every new
//     session is refused for sessions or memory; /readyz answers 503.
//
//   - stompgate_admission_retry_backlog (gauge): refused clients told to
//     come back and not yet due.
//
//   - stompgate_admission_peak_admitted (gauge): the most sessions
//     admitted within any 100 ms since the process started, which the
//     bucket holds to -admit-rate/10 + -admit-burst (refunds aside): what
//     a reconnect storm's arrivals are judged on at the server.
//
//   - stompgate_procs_changes_total{reason}: changes of the processors
//     the server runs on with -adaptive-procs: load (a tick filled them),
//     queue (goroutines waited for one between ticks), lower (one given
//     up). go_sched_gomaxprocs_threads is the current count.
//
//   - stompgate_relay_disconnect_dropped_total{reason}: disconnect
//     requests between instances that were ignored, with the same
//     reasons; above 0 with a key set, something else writes to Redis.
//
//   - stompgate_relay_outage (gauge): 1 while the relay cannot reach
//     Redis, else 0.
//
//   - stompgate_relay_subscriptions (gauge): Redis channels the relay is
//     subscribed to, one per destination with local subscribers.
//
//   - stompgate_relay_subscriptions_down (gauge): of those, the channels
//     without a live subscription: lost to a slot move, a failover or a
//     failed connection and not yet subscribed again (or just subscribed
//     and not yet confirmed). Above 0 for more than a moment means
//     messages from other instances are being lost.
//
//   - stompgate_relay_resubscribes_total{reason}: subscription
//     connections the relay replaced, each with all its channels: moved
//     (a Redis Cluster slot moved), connection (it failed), unanswered (a
//     PING or confirmation went unanswered: half-open).
//
// # Alerts
//
// alerts.yml raises StompgateHighFrameDropRatio (more than 20% of frames
// dropped for 5m), StompgateHandshakeRejectionSpike (more than half of
// handshakes, and over 1/s, rejected for 5m),
// StompgateHandshakeLimiterFallback (an instance on its fallback store for
// 1m), StompgateRelayOutage (the relay without Redis for 1m),
// StompgateRelaySubscriptionsDown (relay channels without a live
// subscription for 30s),
// StompgateSlowConsumerDisconnects (more than 10 in 10m),
// StompgateHandshakeLimiterSlow (limiter p99 above 50ms for 5m),
// StompgatePanicsRecovered and StompgateAdmissionRefusing (an instance
// refusing every new session for sessions or memory for 5m).
package metrics
