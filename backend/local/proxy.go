package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/wardenhq/warden/backend"
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
	return egress.Policy{Hosts: hosts, By: prof.NetworkBy, HTTP: prof.HTTP}
}

// broker is the backend's broker: Broker, or, for a call whose requests
// are held to methods and paths on a worker with no brokered secrets,
// one with none (its CA alone), made at the first such call and its
// bundle removed at Close.
func (b *Backend) broker(prof *calls.Sandbox) (*egress.Broker, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Broker != nil || !prof.Network || len(prof.HTTP) == 0 {
		return b.Broker, nil
	}
	dir, err := os.MkdirTemp("", "warden-broker-")
	if err != nil {
		return nil, fmt.Errorf("local exec: CA for the method and path rules: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("local exec: CA for the method and path rules: %w", err)
	}
	br, err := egress.NewBroker(egress.BrokerConfig{Dir: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("local exec: CA for the method and path rules: %w", err)
	}
	b.Broker, b.brokerDir = br, dir
	return br, nil
}

// callProxy is the egress proxy of one call: its records, kept within
// the call's bound and shown to the backend's observer, and the bound of
// the proxy the call passed, which ended it.
type callProxy struct {
	policy egress.Policy
	opts   egress.Options
	recs   *egress.Records
	// cancel ends the call.
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	over   error
}

// errProxyBound is the cause of a call the egress proxy's bounds ended.
var errProxyBound = errors.New("local exec: the egress proxy's bound ended the call")

// proxyFor returns the proxy of a call whose policy is p (nil: no
// network) and the call's context, which the proxy cancels when the call
// passes one of its bounds.
func (b *Backend) proxyFor(ctx context.Context, p *egress.Policy) (context.Context, *callProxy) {
	if p == nil {
		return ctx, nil
	}
	lim := b.Network
	recs := &egress.Records{Max: lim.Records, Observer: b.Egress}
	ctx, cancel := context.WithCancelCause(ctx)
	px := &callProxy{policy: *p, recs: recs, cancel: cancel}
	px.opts = egress.Options{Limits: lim, Shared: b.egressShared(), Record: recs.Record, Over: px.passed,
		HostAddresses: b.HostAddressesOff, Broker: b.currentBroker()}
	return ctx, px
}

// currentBroker is Broker, read under the lock broker writes it with.
func (b *Backend) currentBroker() *egress.Broker {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Broker
}

// egressShared is the budget of every call's proxy (NetworkShared, or a
// default one made at the first call).
func (b *Backend) egressShared() *egress.Shared {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.NetworkShared == nil {
		b.NetworkShared = egress.NewShared(0, 0)
	}
	return b.NetworkShared
}

// serve serves the call's proxy on ln until ln is closed.
func (px *callProxy) serve(ln net.Listener) { egress.Serve(ln, px.policy, px.opts) }

// done releases the call's context (a nil px: nothing to release).
func (px *callProxy) done() {
	if px != nil {
		px.cancel(nil)
	}
}

// passed ends the call: it passed the bound err names.
func (px *callProxy) passed(err error) {
	px.mu.Lock()
	if px.over == nil {
		px.over = err
	}
	px.mu.Unlock()
	px.cancel(errProxyBound)
}

// result adds the call's connections to res, and the bound that ended
// it; it reports whether one did. A nil px (no network) adds nothing.
func (px *callProxy) result(res *backend.ExecResult) bool {
	if px == nil {
		return false
	}
	res.Connections, res.ConnectionsDropped = px.recs.List()
	res.RefusalsDropped = px.recs.Summary()
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.over == nil {
		return false
	}
	res.Limit = px.over.Error()
	if res.ExitCode == 0 {
		res.ExitCode = -1
	}
	return true
}
