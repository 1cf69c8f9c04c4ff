package redisclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The limiter's buckets, the session caps' leases and the bans live in one
// Redis, beside whatever else the deployment puts there (the app stream,
// unless it has a Redis of its own). Under a maxmemory-policy that evicts,
// a full Redis drops them to make room: an evicted ban admits the banned
// address, an evicted lease frees a capped slot. Under noeviction a full
// Redis refuses writes instead, which the limiter meets with its fail
// mode, and the keys that were written stay. So the server checks the
// policy when it starts.

// EvictionError says that a Redis evicts keys when full.
type EvictionError struct {
	// Addr is the Redis node checked.
	Addr string
	// Policy is its maxmemory-policy.
	Policy string
}

func (e *EvictionError) Error() string {
	return fmt.Sprintf("redisclient: Redis %s has maxmemory-policy %s: when full it evicts keys (bans, leases, limiter buckets); want noeviction", e.Addr, e.Policy)
}

// ErrEvictionUnchecked wraps the error of a policy check that could not
// reach Redis.
var ErrEvictionUnchecked = errors.New("redisclient: could not check Redis' maxmemory-policy")

// CheckNoEviction asks every master c reaches (each node of a cluster, the
// current master behind Sentinel) for its maxmemory-policy and returns an
// *EvictionError for the first that is not noeviction. A Redis that
// refuses CONFIG GET (a managed Redis may) is an error of its own;
// one that cannot be reached gives an error wrapping ErrEvictionUnchecked.
func CheckNoEviction(ctx context.Context, c redis.UniversalClient) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return checkNode(ctx, n, n.Options().Addr)
		})
	}
	addr := ""
	if n, ok := c.(*redis.Client); ok {
		addr = n.Options().Addr
	}
	return checkNode(ctx, c, addr)
}

func checkNode(ctx context.Context, c redis.Cmdable, addr string) error {
	res, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		if _, ok := errors.AsType[redis.Error](err); ok {
			return fmt.Errorf("redisclient: Redis %s refused CONFIG GET maxmemory-policy: %w", addr, err)
		}
		return fmt.Errorf("%w at %s: %w", ErrEvictionUnchecked, addr, err)
	}
	if p := res["maxmemory-policy"]; p != "noeviction" {
		return &EvictionError{Addr: addr, Policy: p}
	}
	return nil
}
