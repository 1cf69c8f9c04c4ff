package outcome

// Who decided a frame under the per-principal send limit
// (stompgate_principal_limit_decisions_total{source}).
const (
	// PrincipalLimitLocal: the limiter's pre-check in memory, with no
	// round trip (an optimistic pass, or a drop because Redis said the
	// principal is over for the window).
	PrincipalLimitLocal = "local"
	// PrincipalLimitRedis: Redis answered a charge.
	PrincipalLimitRedis = "redis"
	// PrincipalLimitMemory: this instance's own count (no Redis, Redis
	// unreachable, or a charge that failed in the window).
	PrincipalLimitMemory = "memory"
)

// PrincipalLimitSources returns every source of a per-principal limit
// decision. The slice is a fresh copy.
func PrincipalLimitSources() []string {
	return []string{PrincipalLimitLocal, PrincipalLimitRedis, PrincipalLimitMemory}
}
