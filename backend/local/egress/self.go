package egress

import (
	"fmt"
	"net"
	"net/netip"
)

// selfKind is the kind of an address of the machine itself.
const selfKind = "an address of this machine itself (a service bound to all its interfaces listens there)"

// hostAddrs returns the addresses of every interface of the machine, as
// they are now (looked up at each dial: an address added since the
// worker started counts).
func hostAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("warden: egress: the machine's own addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if p, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, plain(p))
		}
	}
	return out, nil
}

// isSelf says a is one of addrs.
func isSelf(a netip.Addr, addrs []netip.Addr) bool {
	a = plain(a)
	for _, h := range addrs {
		if h == a {
			return true
		}
	}
	return false
}
