package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/admission"
	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/redisclient"
	"github.com/stompgate/stompgate/jwtauth"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/policy"
	"github.com/stompgate/stompgate/principallimit"
	"github.com/stompgate/stompgate/reconnect"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/sessioncap"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
	"github.com/stompgate/stompgate/tracing"
	"github.com/stompgate/stompgate/web"
)

// app is the wired server: every component, built in one place so the
// chain order, the stores and the registry read together.
type app struct {
	handler  http.Handler // the public listener: STOMP, health, the demo
	admin    http.Handler // the admin listener: metrics, pprof
	stomp    *server.Server
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	limiter  *handshake.Limiter
	redis    redis.UniversalClient
	appRedis redis.UniversalClient // the -app-redis-url; nil without it
	relay    *relay.Relay          // nil without -relay
	history  *appHistory           // destination histories (history.go)
	// jwks is the key set of -jwt-jwks-url, fetched in the background
	// until close; nil without it.
	jwks     *jwtauth.JWKS
	caps     *sessioncap.Limiter
	gate     *admission.Gate        // the instance admission
	capStore *sessioncap.RedisStore // nil without -redis-url
	fanout   *relay.Disconnects     // disconnect requests between instances; nil without -redis-url
	// plimit is the per-principal send limit; nil with
	// -principal-send-limit 0.
	plimit *principallimit.Limiter
	// presence keeps room members (presence.go).
	presence *presenceParts
	// rules are the policy's destination rules in force, replaced on
	// SIGHUP (reload).
	rules *ruleSet
	// loops is the reconnect-loop counter; nil with -reconnect-limit 0.
	loops *reconnect.Counter
	// deps are the Redis servers the configuration needs, as checked at
	// start-up and reported by /readyz.
	deps *dependencies
	// tracer records spans (tracing.go); nil without -otel-endpoint.
	tracer *tracing.Tracer
}

// newApp builds the server from settings that validate has accepted.
// It reads in the order a request meets the parts: the handshake limiter,
// the session caps, the STOMP server (its chain, broker and relay, and
// backend), then the public listener's routes, which put the limiter and
// the caps in front of the server and so are assembled once those exist,
// and the admin listener. Whatever was built before a failure is released
// once, here.
func newApp(st *settings, logger *slog.Logger) (_ *app, err error) {
	a := &app{registry: metrics.NewRegistry()}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	if err := a.newMetrics(st, logger); err != nil {
		return nil, err
	}
	edge, err := a.newHandshakeLimiter(st, logger)
	if err != nil {
		return nil, err
	}
	if err := a.newSessionCaps(st, logger); err != nil {
		return nil, err
	}
	if err := a.newAdmission(st, logger); err != nil {
		return nil, err
	}
	if err := a.newTracer(st, logger); err != nil {
		return nil, err
	}
	if err := a.newServer(st, logger); err != nil {
		return nil, err
	}
	if err := a.startDisconnects(st, logger); err != nil {
		return nil, err
	}
	if a.handler, err = a.publicHandler(st, edge, logger); err != nil {
		return nil, err
	}
	if a.admin, err = a.adminHandler(st, logger); err != nil {
		return nil, err
	}
	a.deps = a.newDependencies(st, logger)
	return a, nil
}

// newMetrics builds the collectors on a.registry.
func (a *app) newMetrics(st *settings, logger *slog.Logger) error {
	m, err := metrics.New(a.registry, metrics.Config{DestinationPrefixes: splitList(st.metricsPrefixes), Build: buildInfo()})
	if err != nil {
		return fmt.Errorf("-metrics-destination-prefixes: %w", err)
	}
	a.metrics = m
	return nil
}

// edge is what the public listener's handshake middleware needs beyond
// the limiter itself: the policy's ws_handshake zone and the proxies whose
// client-address headers are believed.
type edge struct {
	zone    policy.Zone
	trusted []netip.Prefix
}

// newHandshakeLimiter builds the handshake limiter of the policy's
// ws_handshake zone: in Redis with -redis-url (connecting a.redis, which
// the caps, the relay and the disconnects share), in process memory
// otherwise. It sets a.limiter, and a.rules from the same policy file's
// destination rules.
func (a *app) newHandshakeLimiter(st *settings, logger *slog.Logger) (edge, error) {
	pol, err := policy.Load(st.policyFile)
	if err != nil {
		return edge{}, fmt.Errorf("-policy: %w", err)
	}
	zone, ok := pol.Zone(policy.ZoneHandshake)
	if !ok {
		return edge{}, fmt.Errorf("-policy %q: no %q zone", st.policyFile, policy.ZoneHandshake)
	}
	if a.rules, err = newRuleSet(st.policyFile, pol, a.metrics, logger); err != nil {
		return edge{}, err
	}
	trusted, err := clientip.ParseTrustedProxies(st.trustedProxies)
	if err != nil {
		return edge{}, fmt.Errorf("-trusted-proxies (%s): %w", envName("trusted-proxies"), err)
	}
	hcfg := handshake.Config{FailClosed: st.limiterFail == "closed", Logger: logger, Observer: observer{a.metrics}}
	if st.redisURL != "" {
		client, err := redisclient.New(st.redisURL)
		if err != nil {
			return edge{}, fmt.Errorf("-redis-url (%s): %w", envName("redis-url"), err)
		}
		a.redis = client
		if err := checkEviction(client, "redis-url", st, logger); err != nil {
			return edge{}, err
		}
		rcfg := handshake.RedisConfig{Client: client, Timeout: st.redisTimeout}
		st.limiterConfig(&hcfg, &rcfg)
		rs, err := handshake.NewRedisStore(rcfg)
		if err != nil {
			return edge{}, err
		}
		hcfg.Redis = rs
		a.observeHandshakePipeline(rs)
	}
	if a.limiter, err = handshake.New(hcfg); err != nil {
		return edge{}, err
	}
	return edge{zone: zone, trusted: trusted}, nil
}

// newServer builds the STOMP server and, in the order a frame meets
// them, what it hands frames to: the interceptor chain, the broker (with
// the relay to other instances) and the backend of app destinations. It
// sets a.stomp.
func (a *app) newServer(st *settings, logger *slog.Logger) error {
	obs := observer{a.metrics}
	keys, err := a.newKeySource(st, logger)
	if err != nil {
		return err
	}
	displaced := func(id string) { a.disconnectDisplaced(id, st.redisTimeout) }
	loops, err := a.newReconnectStage(st, logger)
	if err != nil {
		return err
	}
	if err := a.newPrincipalLimit(st, logger); err != nil {
		return err
	}
	plimit, err := a.principalLimitStage(st)
	if err != nil {
		return err
	}
	chain, err := newChain(st, obs, a.limiter, keys, a.caps, displaced, loops, plimit, a.rules, logger)
	if err != nil {
		return err
	}
	// Topic fan-out across instances: the relay is the broker's hooks
	// (it subscribes to the destinations with local subscribers) and the
	// server's relay (it publishes every SEND that passed the chain).
	b, srvRelay, err := a.newBroker(st, obs, logger)
	if err != nil {
		return err
	}
	hist, err := a.newHistory(st, b)
	if err != nil {
		return err
	}
	appHandler, err := a.newAppHandler(st, logger)
	if err != nil {
		return err
	}
	inFrames, inBytes := st.inboundBudget()
	pres, err := a.newPresence(st, logger)
	if err != nil {
		return err
	}
	a.stomp, err = server.New(server.Config{
		Limits: stompframe.Limits{
			MaxFrameSize:  st.maxFrameSize,
			MaxHeaders:    st.maxHeaders,
			MaxHeaderLine: st.maxHeaderLine,
		},
		MaxSubscriptions:     st.maxSubscriptions,
		ConnectTimeout:       st.connectTimeout,
		HeartBeatSend:        st.heartBeatSend,
		HeartBeatReceive:     st.heartBeatRecv,
		HeartBeatTolerance:   st.heartBeatTol,
		MaxHeartBeat:         st.maxHeartBeat,
		OutboundQueue:        st.outboundQueue,
		OutboundBytes:        st.outboundBytes,
		OutboundTotalBytes:   serverOutbound(st.outboundTotalBytes),
		SocketSendBuffer:     serverOutbound(st.socketSendBuffer),
		MaxTransactions:      st.maxTx,
		MaxTransactionFrames: st.maxTxFrames,
		MaxTransactionBytes:  st.maxTxBytes,
		ControlLimit:         st.controlLimit,
		ControlWindow:        st.controlWindow,
		InboundFrames:        inFrames,
		InboundBytes:         inBytes,
		InboundWindow:        st.inboundWindow,
		WriteTimeout:         st.writeTimeout,
		OriginPatterns:       splitList(st.allowedOrigins),
		Compression:          st.serverCompression(),
		Chain:                chain,
		Broker:               b,
		Relay:                srvRelay,
		Observer:             obs,
		Logger:               logger,
		PingInterval:         st.pingInterval,
		PingTimeout:          st.pingTimeout,
		ClientIP:             clientIP,
		AppPrefix:            st.appPrefix,
		AppHandler:           appHandler,
		AppTimeout:           st.appTimeout,
		Destinations:         a.destinationOptions,
		SubscriberSlots:      a.subscriberSlots(),
		History:              hist,
		Presence:             pres,
		// Clients of the sessions a shutdown ends come back as fast as
		// this instance admits (zero: no rate, the server's default).
		RetryRate:     st.admit.cfg.Rate,
		RetryAfterMax: st.retryAfterMax,
		Tracer:        a.serverTracer(),
	})
	if err != nil {
		return err
	}
	a.observeOutbound()
	return nil
}

// newChain builds the interceptor chain in its fixed order: principal,
// per-principal session cap (caps), reconnect loops (loops, nil with
// -reconnect-limit 0: it counts only CONNECTs the two before accepted),
// session limiter, per-principal send limit (plimit, nil without one:
// after the session limiter, so that frames it drops are never charged
// to the principal). Metrics are no
// stage: obs, the chain's observer, counts each frame once after the
// last stage. bans is the handshake limiter: the LimitStage
// records its escalation bans there and the PrincipalStage checks the
// principal's ban at CONNECT, so an abuser's ban follows it to another IP.
// keys verifies RS256 and ES256 tokens; nil without -jwt-public-key or
// -jwt-jwks-url. caps holds the per-principal session cap, displaced
// ends the sessions it displaces. rules are the policy's destination
// rules, which the session limiter enforces (per-rule limits, read-only
// destinations) and which reload replaces in it.
func newChain(st *settings, obs observer, bans *handshake.Limiter, keys jwtauth.KeySource, caps *sessioncap.Limiter, displaced func(string), loops, plimit interceptor.Stage, rules *ruleSet, logger *slog.Logger) (*interceptor.Chain, error) {
	verifier, err := tokenVerifier(st, keys)
	if err != nil {
		return nil, err
	}
	principal, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{
		Verifier:         verifier,
		Required:         st.authRequired,
		Bans:             bans,
		RememberedTokens: st.rememberedTokens,
		TokenChecks:      st.tokenChecks,
		TokenCheckWindow: st.tokenCheckWindow,
	})
	if err != nil {
		return nil, err
	}
	alg, err := sessionlimit.ParseAlgorithm(st.sendAlgorithm)
	if err != nil {
		return nil, fmt.Errorf("-send-limit-algorithm: %w", err)
	}
	limit, err := interceptor.NewLimitStage(interceptor.LimitConfig{
		Limit:          sessionlimit.Config{Algorithm: alg, Limit: st.sendLimit, Window: st.sendWindow},
		Commands:       splitList(st.limitedCommands),
		EscalateAfter:  st.abuseDrops,
		EscalateWindow: st.abuseWindow,
		BanFor:         st.abuseBan,
		Banner:         bans,
		BanKey:         func(ip netip.Addr) string { return clientip.Key(ip, st.ipv6Prefix) },
		Logger:         logger,
		Dropped:        obs.RuleDropped,
	})
	if err != nil {
		return nil, fmt.Errorf("-limited-commands / -send-*: %w", err)
	}
	if err := rules.attach(limit, alg); err != nil {
		return nil, fmt.Errorf("-policy: %w", err)
	}
	stages := []interceptor.Stage{principal}
	capStage, err := principalCapStage(st, caps, displaced)
	if err != nil {
		return nil, err
	}
	if capStage != nil {
		stages = append(stages, capStage)
	}
	if loops != nil {
		stages = append(stages, loops)
	}
	stages = append(stages, limit)
	if plimit != nil {
		stages = append(stages, plimit)
	}
	return interceptor.NewChain(obs, stages...), nil
}

// newBroker returns the broker and, with -relay redis, the relay wired to
// it (started) as the server's Relay; without -relay the Relay is nil.
func (a *app) newBroker(st *settings, obs observer, logger *slog.Logger) (*broker.Broker, server.Relay, error) {
	switch st.relay {
	case "":
		return broker.New(), nil, nil
	case "redis":
	default:
		return nil, nil, fmt.Errorf("-relay %q: want redis or empty", st.relay)
	}
	if a.redis == nil {
		return nil, nil, errors.New("-relay redis needs -redis-url")
	}
	r, err := relay.New(relay.Config{Client: a.redis, Observer: obs, Logger: logger,
		MaxPayload: st.relayPayloadLimit(), Key: st.relayKey, MaxAge: st.relayMaxAge, Tracer: a.relayTracer()})
	if err != nil {
		return nil, nil, fmt.Errorf("-relay: %w", err)
	}
	b := broker.NewWithConfig(broker.Config{Hooks: r})
	if err := r.Start(b); err != nil {
		return nil, nil, fmt.Errorf("-relay: %w", err)
	}
	a.relay = r
	return b, r, nil
}

// startDisconnects lets the instances sharing -redis-url end each other's
// sessions (the server API's disconnect, a session cap's displacement),
// signed with -relay-key. It sets a.fanout; without Redis it does nothing.
func (a *app) startDisconnects(st *settings, logger *slog.Logger) error {
	if a.redis == nil {
		return nil
	}
	d, err := relay.StartDisconnects(relay.DisconnectConfig{
		Client:     a.redis,
		Sessions:   a.stomp,
		MaxPayload: st.relayPayloadLimit(),
		Key:        st.relayKey,
		MaxAge:     st.relayMaxAge,
		Dropped: func(reason string) {
			a.metrics.RelayDisconnectDropped(metrics.RelayDropReasonOf(reason), 1)
		},
		Logger: logger,
	})
	if err != nil {
		return fmt.Errorf("-relay-key (%s): %w", envName("relay-key"), err)
	}
	a.fanout = d
	return nil
}

// publicHandler is the public listener's routes: the WebSocket path
// through the instance admission, then the handshake limiter and the
// per-client session cap, to the STOMP server; health and readiness; the
// demo page. The admission looks first, so that a busy instance's
// refusal costs no Redis round trip, and takes its token only when the
// limiter and the cap let the handshake through
// (admission.MiddlewareConfig.Checks), so a client refused for its own
// excess (429) never holds the instance's tokens, not even while it is
// being refused.
func (a *app) publicHandler(st *settings, e edge, logger *slog.Logger) (http.Handler, error) {
	ws, err := a.admit(a.stomp, func(next http.Handler) (http.Handler, error) {
		capped, err := a.capHandshakes(e.zone, e.trusted, st.ipv6Prefix, logger, next)
		if err != nil {
			return nil, err
		}
		return handshake.Middleware(handshake.MiddlewareConfig{
			Limiter:        a.limiter,
			Limit:          handshake.Limit{Name: e.zone.Name, Rate: int64(e.zone.Rate), Burst: e.zone.Burst},
			TrustedProxies: e.trusted,
			IPv6Prefix:     st.ipv6Prefix,
			PrefixRefused:  func() { a.metrics.IPv6PrefixRefused(metrics.PrefixLimitHandshake) },
			Logger:         logger,
		}, capped)
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(st.wsPath, ws)
	mux.HandleFunc("GET /healthz", serveHealth)
	mux.HandleFunc("GET /readyz", a.serveReadiness)
	if st.demo {
		// The demo page, its assets and the session counts it polls.
		mux.Handle("/", web.Handler(web.Config{Counts: a.stomp.SessionCounts, WSPath: st.wsPath, Presence: a.demoPresence()}))
	}
	return mux, nil
}

// close releases what newApp built: the relay first (it publishes what is
// still queued), then the Redis client it uses. Call it after the STOMP
// sessions are shut down.
func (a *app) close() {
	if a.jwks != nil {
		a.jwks.Close()
	}
	a.deps.close()
	a.closeSessionCaps()
	a.closePresence()
	a.closePrincipalLimit()
	if a.loops != nil {
		_ = a.loops.Close()
	}
	if a.limiter != nil {
		_ = a.limiter.Close()
	}
	a.history.close()
	if a.relay != nil {
		_ = a.relay.Close()
	}
	_ = a.fanout.Close()
	a.closeTracer()
	if a.redis != nil {
		_ = a.redis.Close()
	}
	if a.appRedis != nil {
		_ = a.appRedis.Close()
	}
}
