package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Refusal is why the proxy refused a connection. Its Error is the
// sentence the process (and, through the tool result, the model) reads:
// what was refused, why, and what would allow it.
type Refusal struct {
	// Host and Port are what was asked for.
	Host string
	Port int
	// Addr is the non-public address it is or resolved to ("" for a
	// host no entry names).
	Addr string
	// Kind is the kind of that address ("a loopback address"), or, with
	// no Addr, what is wrong with the host itself; "" for a host no entry
	// names.
	Kind string
	// Hosts and By are the policy's entries and what granted the
	// network.
	Hosts, By string
	// Why, when set, is the whole sentence (a request the method and
	// path rules refuse).
	Why string
}

func (r *Refusal) target() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

func (r *Refusal) grant() string {
	if r.By == "" {
		return "hosts " + r.Hosts
	}
	return r.By + ": hosts " + r.Hosts
}

func (r *Refusal) where() string {
	if r.By == "" {
		return "the hosts the call's network was granted with"
	}
	return "the hosts of " + r.By
}

// Error says what was refused and what would allow it.
func (r *Refusal) Error() string {
	if r.Why != "" {
		return r.Why
	}
	if r.Kind == "" {
		return fmt.Sprintf("warden: %s is not among the hosts this call may reach (%s); add it to %s to allow it",
			r.target(), r.grant(), r.where())
	}
	if r.Addr == "" {
		return fmt.Sprintf("warden: %s is refused: the host is %s", r.target(), r.Kind)
	}
	what := r.target() + " is " + r.Kind
	if _, err := netip.ParseAddr(r.Host); err != nil {
		what = r.target() + " resolves to " + r.Addr + ", " + r.Kind
	}
	return fmt.Sprintf("warden: %s, which no host name and no \"*\" reaches (%s); add %s (or a range holding it) to %s to allow it",
		what, r.grant(), r.Addr, r.where())
}
