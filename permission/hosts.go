package permission

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// A host entry (calls.Sandbox.Hosts, a network_for rule's hosts, a call's
// network_hosts) is "*", a name ("registry.npmjs.org"), a suffix
// ("*.example.org": the names below it, not the name itself), an
// address ("10.0.0.5", "::1") or a range ("10.0.0.0/8"), each with an
// optional port (":443"; an IPv6 address with a port in brackets,
// "[::1]:443").

// hostEntry is a parsed host entry.
type hostEntry struct {
	any    bool
	name   string // exact name, lower case
	suffix string // ".example.org" for "*.example.org"
	prefix netip.Prefix
	port   int // 0: any
}

// CheckHost reports whether h is a valid host entry.
func CheckHost(h string) error {
	_, err := parseHost(h)
	return err
}

func parseHost(h string) (hostEntry, error) {
	s := strings.TrimSpace(h)
	if s == "" {
		return hostEntry{}, errors.New("empty host")
	}
	if strings.ContainsAny(s, " \t\\@?#") {
		return hostEntry{}, fmt.Errorf("host %q: want a name, *.suffix, an address or a range, with an optional :port", h)
	}
	var e hostEntry
	host := s
	// A port: "name:443", "[::1]:443", "10.0.0.5:80"; a bare IPv6
	// address has several colons and no port.
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return hostEntry{}, fmt.Errorf("host %q: unclosed [", h)
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return hostEntry{}, fmt.Errorf("host %q: want [address]:port", h)
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return hostEntry{}, fmt.Errorf("host %q: %w", h, err)
			}
			e.port = p
		}
	} else if strings.Count(s, ":") == 1 {
		var ps string
		host, ps, _ = strings.Cut(s, ":")
		p, err := parsePort(ps)
		if err != nil {
			return hostEntry{}, fmt.Errorf("host %q: %w", h, err)
		}
		e.port = p
	}
	switch {
	case host == "*":
		e.any = true
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return hostEntry{}, fmt.Errorf("host %q: %w", h, err)
		}
		e.prefix = p.Masked()
	default:
		if a, err := netip.ParseAddr(host); err == nil {
			e.prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
			break
		}
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		wild := strings.HasPrefix(name, "*.")
		if wild {
			name = name[2:]
		}
		if !validName(name) {
			return hostEntry{}, fmt.Errorf("host %q: want a name, *.suffix, an address or a range, with an optional :port", h)
		}
		if wild {
			e.suffix = "." + name
		} else {
			e.name = name
		}
	}
	return e, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return p, nil
}

func validName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// Public reports whether a is an address a name or "*" may reach (Special
// finds it in none of the non-public ranges).
func Public(a netip.Addr) bool { return a.IsValid() && Special(a) == "" }

// covers reports whether the entry g lets through everything the entry
// r names (statically: r's names as names, its addresses as addresses).
func (g hostEntry) covers(r hostEntry) bool {
	if g.port != 0 && g.port != r.port {
		return false
	}
	switch {
	case g.any:
		if r.prefix.IsValid() {
			return Public(r.prefix.Addr()) && Public(lastAddr(r.prefix))
		}
		return true
	case g.name != "":
		return r.name == g.name
	case g.suffix != "":
		return r.name != "" && strings.HasSuffix(r.name, g.suffix) ||
			r.suffix != "" && strings.HasSuffix(r.suffix, g.suffix)
	case g.prefix.IsValid():
		return r.prefix.IsValid() && g.prefix.Bits() <= r.prefix.Bits() && g.prefix.Contains(r.prefix.Addr())
	}
	return false
}

// lastAddr is the last address of the range p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// HostCovered returns the first entry of hosts that lets through all
// that the entry h names, or "" (an invalid entry is never covered). It
// is the static question "does this grant already include that host?".
func HostCovered(hosts []string, h string) string {
	r, err := parseHost(h)
	if err != nil {
		return ""
	}
	for _, s := range hosts {
		if g, err := parseHost(s); err == nil && g.covers(r) {
			return s
		}
	}
	return ""
}

// HostAllows returns the first entry of hosts that lets a connection to
// host:port through when it dials addr (the address after resolution;
// empty: judged by the name alone), or "": a name or "*" reaches only
// public addresses, a loopback or private address needs an entry that
// names it. Empty hosts mean "*" (calls.Sandbox.Hosts).
func HostAllows(hosts []string, host string, port int, addr string) string {
	if len(hosts) == 0 {
		hosts = []string{"*"}
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	a, aerr := netip.ParseAddr(strings.Trim(addr, "[]"))
	if aerr != nil {
		if ap, err := netip.ParseAddrPort(addr); err == nil {
			a, aerr = ap.Addr(), nil
		}
	}
	if h, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && aerr != nil {
		a, aerr = h, nil // an address asked for is the address dialled
	}
	for _, s := range hosts {
		g, err := parseHost(s)
		if err != nil || g.port != 0 && g.port != port {
			continue
		}
		if g.prefix.IsValid() {
			if aerr == nil && g.prefix.Contains(a.Unmap()) {
				return s
			}
			continue
		}
		if aerr == nil && !Public(a) {
			continue // a name never reaches loopback or private addresses
		}
		switch {
		case g.any, g.name != "" && name == g.name, g.suffix != "" && strings.HasSuffix(name, g.suffix):
			return s
		}
	}
	return ""
}

// special is the non-public ranges by kind: what no name and no "*"
// reaches (the IANA special-purpose registries' ranges that are not
// globally reachable).
var special = func() []struct {
	p    netip.Prefix
	kind string
} {
	var out []struct {
		p    netip.Prefix
		kind string
	}
	for _, r := range [][2]string{
		{"0.0.0.0/8", "an unspecified (this-network) address"},
		{"127.0.0.0/8", "a loopback address"},
		{"10.0.0.0/8", "a private address"},
		{"172.16.0.0/12", "a private address"},
		{"192.168.0.0/16", "a private address"},
		{"100.64.0.0/10", "a shared (CGNAT) address"},
		{"169.254.0.0/16", "a link-local address (cloud metadata lives there)"},
		{"192.0.0.0/24", "a reserved address"},
		{"192.0.2.0/24", "a documentation (TEST-NET) address"},
		{"198.51.100.0/24", "a documentation (TEST-NET) address"},
		{"203.0.113.0/24", "a documentation (TEST-NET) address"},
		{"198.18.0.0/15", "a benchmarking address"},
		{"224.0.0.0/4", "a multicast address"},
		{"240.0.0.0/4", "a reserved address"},
		{"::/128", "an unspecified address"},
		{"::1/128", "a loopback address"},
		{"fc00::/7", "a private (unique local) address"},
		{"fe80::/10", "a link-local address"},
		{"ff00::/8", "a multicast address"},
		{"2001:db8::/32", "a documentation address"},
		{"100::/64", "a discard address"},
		{"64:ff9b:1::/48", "a local NAT64 address"},
		{"::/96", "a reserved (IPv4-compatible) address"},
	} {
		out = append(out, struct {
			p    netip.Prefix
			kind string
		}{netip.MustParsePrefix(r[0]), r[1]})
	}
	return out
}()

// plain is a without an IPv6 zone (which netip.Prefix.Contains never
// matches) and IPv4-mapped addresses as IPv4.
func plain(a netip.Addr) netip.Addr { return a.WithZone("").Unmap() }

// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4
// address, which is classified instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Special says what kind of non-public address a is ("a loopback
// address", "a private address", ...), or "" for a public one.
// IPv4-mapped IPv6 addresses are classified as their IPv4 address, and
// so are NAT64 ones; an IPv6 zone is ignored.
func Special(a netip.Addr) string {
	a = plain(a)
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, s := range special {
		if s.p.Contains(a) {
			return s.kind
		}
	}
	return ""
}
