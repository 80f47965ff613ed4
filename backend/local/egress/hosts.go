package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/permission"
)

// Hosts is a compiled list of host entries (calls.Sandbox.Hosts): what
// a call may reach by name, and which non-public addresses it may
// reach at all.
type Hosts struct {
	entries []entry
}

// entry is one host entry.
type entry struct {
	raw    string
	any    bool         // "*"
	name   string       // an exact name
	suffix string       // "*.example.org": "example.org"
	prefix netip.Prefix // an address (a /32 or /128) or a range
	port   int          // 0: any port
}

// Compile parses host entries: a name ("registry.npmjs.org"), a suffix
// ("*.example.org", which matches the names below example.org, not
// example.org itself), an address or a range ("10.0.0.5",
// "10.0.0.0/8", "[fd00::1]"), each with an optional ":port"; "*" is
// any host. Names are matched case-insensitively, without a trailing
// dot. It returns the entries it could parse and an error naming the
// others.
func Compile(hosts []string) (Hosts, error) {
	var h Hosts
	var bad []string
	for _, s := range hosts {
		e, err := parseEntry(s)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q (%v)", s, err))
			continue
		}
		h.entries = append(h.entries, e)
	}
	if len(bad) > 0 {
		return h, fmt.Errorf("egress: bad host entries: %s", strings.Join(bad, ", "))
	}
	return h, nil
}

// parseEntry parses one host entry.
func parseEntry(s string) (entry, error) {
	raw := strings.TrimSpace(s)
	host, port := strings.ToLower(raw), 0
	var err error
	switch {
	case strings.HasPrefix(host, "["):
		end := strings.Index(host, "]")
		if end < 0 {
			return entry{}, fmt.Errorf("no closing bracket")
		}
		rest := host[end+1:]
		host = host[1:end]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return entry{}, fmt.Errorf("text after the bracket")
			}
			if port, err = parsePort(rest[1:]); err != nil {
				return entry{}, err
			}
		}
	case isAddrOrPrefix(host):
	default:
		if i := strings.LastIndex(host, ":"); i >= 0 {
			if port, err = parsePort(host[i+1:]); err != nil {
				return entry{}, err
			}
			host = host[:i]
		}
	}
	e := entry{raw: raw, port: port}
	switch {
	case host == "*":
		e.any = true
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return entry{}, err
		}
		e.prefix = netip.PrefixFrom(p.Addr().Unmap(), unmappedBits(p)).Masked()
	case isAddr(host):
		a, _ := netip.ParseAddr(host)
		a = plain(a)
		e.prefix = netip.PrefixFrom(a, a.BitLen())
	case strings.HasPrefix(host, "*."):
		e.suffix = normName(host[2:])
		if e.suffix == "" || strings.Contains(e.suffix, "*") {
			return entry{}, fmt.Errorf("bad suffix")
		}
	default:
		e.name = normName(host)
		if e.name == "" || strings.ContainsAny(e.name, "*/ ") {
			return entry{}, fmt.Errorf("bad name")
		}
	}
	return e, nil
}

// unmappedBits is p's length once its address is unmapped (::ffff:10.0.0.0/104
// is 10.0.0.0/8).
func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return max(p.Bits()-96, 0)
	}
	return p.Bits()
}

func isAddr(s string) bool { _, err := netip.ParseAddr(s); return err == nil }

func isAddrOrPrefix(s string) bool {
	if isAddr(s) {
		return true
	}
	_, err := netip.ParsePrefix(s)
	return err == nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return p, nil
}

// normName is a host name as matched: lower case, no trailing dot.
func normName(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

func (e entry) ports(port int) bool { return e.port == 0 || e.port == port }

// byName returns the entry that lets the call ask for host:port (a name
// or an address literal), or a refusal. A name is matched by the name,
// suffix and "*" entries; an address by the address and range entries,
// and, when it is public, by "*".
func (h Hosts) byName(host string, port int) (entry, *Refusal) {
	host = normName(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if a, err := netip.ParseAddr(host); err == nil {
		a = plain(a)
		for _, e := range h.entries {
			if e.prefix.IsValid() && e.prefix.Contains(a) && e.ports(port) {
				return e, nil
			}
		}
		for _, e := range h.entries {
			if !e.any || !e.ports(port) {
				continue
			}
			if kind := permission.Special(a); kind != "" {
				return entry{}, &Refusal{Host: host, Port: port, Addr: a.String(), Kind: kind}
			}
			return e, nil
		}
		return entry{}, &Refusal{Host: host, Port: port}
	}
	for _, e := range h.entries {
		switch {
		case !e.ports(port):
		case e.any, e.name != "" && e.name == host, e.suffix != "" && strings.HasSuffix(host, "."+e.suffix):
			return e, nil
		}
	}
	return entry{}, &Refusal{Host: host, Port: port}
}

// byAddr checks the address actually dialled: a public one passes (its
// name was checked), a non-public one or one of self (the machine's own
// addresses) only when an address or range entry holds it.
func (h Hosts) byAddr(host string, a netip.Addr, port int, self []netip.Addr) *Refusal {
	a = plain(a)
	kind := permission.Special(a)
	if kind == "" && isSelf(a, self) {
		kind = selfKind
	}
	if kind == "" {
		return nil
	}
	for _, e := range h.entries {
		if e.prefix.IsValid() && e.prefix.Contains(a) && e.ports(port) {
			return nil
		}
	}
	return &Refusal{Host: host, Port: port, Addr: a.String(), Kind: kind}
}

// String lists the entries as given.
func (h Hosts) String() string {
	if len(h.entries) == 0 {
		return "none"
	}
	out := make([]string, len(h.entries))
	for i, e := range h.entries {
		out[i] = e.raw
	}
	return strings.Join(out, ", ")
}

// plain is a without an IPv6 zone (which netip.Prefix.Contains never
// matches) and IPv4-mapped addresses as IPv4.
func plain(a netip.Addr) netip.Addr { return a.WithZone("").Unmap() }
