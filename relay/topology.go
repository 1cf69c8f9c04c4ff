package relay

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// reloadTopology makes a Redis Cluster client read the cluster's slot map
// again now, bounded by Timeout; other clients have nothing to reload.
//
// go-redis reloads the map by itself only after a MOVED answer or every
// ClusterStateReloadInterval (60 s by default). A master that died or
// stopped answering sends no MOVED, so after a failover go-redis would
// keep sending to it for up to a minute. ForEachMaster is the one public
// call that reloads at once (ReloadState only schedules a reload); the
// function it runs on each master does nothing. If no node answers
// within Timeout, the old map is kept and the next failure tries again.
func (r *Relay) reloadTopology() {
	cc, ok := r.cfg.Client.(*redis.ClusterClient)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	_ = cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil })
}
