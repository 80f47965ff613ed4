package local

import (
	"github.com/wardenhq/warden/backend/local/egress"
	"github.com/wardenhq/warden/calls"
)

// egressPolicy is the egress policy of a profile with the network on:
// its hosts ("*" when it names none, as profiles recorded before hosts
// existed mean) and what granted the network.
func egressPolicy(prof *calls.Sandbox) egress.Policy {
	hosts := prof.Hosts
	if len(hosts) == 0 {
		hosts = []string{"*"}
	}
	return egress.Policy{Hosts: hosts, By: prof.NetworkBy}
}

// maxConnections bounds the records a call's result carries (the
// observer sees them all): a call that opens thousands of connections
// keeps its first ones, refusals first.
const maxConnections = 1000

// connections collects a call's connection records and shows each to
// the backend's observer.
type connections struct {
	obs  egress.Observer
	list []calls.Connection
	// dropped counts the records not kept.
	dropped int
}

func (c *connections) record(cn calls.Connection) {
	if c.obs != nil {
		c.obs.Connection(cn)
	}
	if len(c.list) < maxConnections {
		c.list = append(c.list, cn)
		return
	}
	c.dropped++
	if cn.Allowed {
		return
	}
	// A refusal replaces the last allowed record: the refusals are what
	// the model needs to read.
	for i := len(c.list) - 1; i >= 0; i-- {
		if c.list[i].Allowed {
			c.list = append(c.list[:i], c.list[i+1:]...)
			c.list = append(c.list, cn)
			return
		}
	}
}
