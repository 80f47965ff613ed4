package devserver

import (
	"sync/atomic"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
)

// forceSARefreshKey makes every read of the search-attribute registry
// reload it from the cluster metadata. A visibility listing reads the
// registry once per execution it returns, so with the key on, listing
// 1,000 waiting turns cost 1,000+ cluster-metadata reads from SQLite
// (a third of the listing's CPU in a profile at 2,000 waiting turns).
const forceSARefreshKey = "system.forceSearchAttributesCacheRefreshOnRead"

// saCacheTTL is how long the server's services may keep a registry read
// before refreshing it on their own (the server's cacheRefreshInterval,
// 60 s, plus a margin).
const saCacheTTL = 65 * time.Second

// dynConfig is the server's dynamic config: static values, except that
// forceSARefreshKey is on only while search attributes registered at
// startup may still be missing from a service's cached registry.
type dynConfig struct {
	static dynamicconfig.StaticClient
	// fixed is set when the caller set forceSARefreshKey itself.
	fixed   bool
	refresh atomic.Bool
	// on and off are the two answers for forceSARefreshKey, kept so the
	// server's dynamic-config cache sees the same slices each time.
	on, off []dynamicconfig.ConstrainedValue
}

var _ dynamicconfig.Client = (*dynConfig)(nil)

func newDynConfig(static dynamicconfig.StaticClient) *dynConfig {
	d := &dynConfig{static: static,
		on: []dynamicconfig.ConstrainedValue{{Value: true}}, off: []dynamicconfig.ConstrainedValue{{Value: false}}}
	_, d.fixed = static[dynamicconfig.MakeKey(forceSARefreshKey)]
	d.refresh.Store(true)
	return d
}

// GetValue implements dynamicconfig.Client.
func (d *dynConfig) GetValue(key dynamicconfig.Key) []dynamicconfig.ConstrainedValue {
	if !d.fixed && key == dynamicconfig.MakeKey(forceSARefreshKey) {
		if d.refresh.Load() {
			return d.on
		}
		return d.off
	}
	return d.static.GetValue(key)
}

// registered ends the forced refresh: at once when startup registered no
// search attribute (the database had them all), or once every service's
// cached registry has expired when it did.
func (d *dynConfig) registered(added bool) {
	if !added {
		d.refresh.Store(false)
		return
	}
	time.AfterFunc(saCacheTTL, func() { d.refresh.Store(false) })
}
