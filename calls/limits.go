package calls

import (
	"fmt"
	"strings"
	"time"
)

// Limits bound what one call's processes may use together, on the
// local backend (cgroups, rlimits and a sized TMPDIR: backend.local
// .limits). A zero field is no bound.
type Limits struct {
	// Processes bounds the processes and threads alive at once.
	Processes int64 `json:"processes,omitempty"`
	// Memory bounds the memory in bytes (page cache and tmpfs included).
	Memory int64 `json:"memory,omitempty"`
	// CPUTime bounds the CPU time all the call's processes use.
	CPUTime time.Duration `json:"cpu_time,omitempty"`
	// CPUs bounds the share of the machine's CPUs (1.5: one and a half
	// cores).
	CPUs float64 `json:"cpus,omitempty"`
	// Tmp is the size in bytes of the call's private TMPDIR.
	Tmp int64 `json:"tmp,omitempty"`
	// Write bounds the bytes the call may add to the disks it writes
	// (its working directories, the caches).
	Write int64 `json:"write,omitempty"`
}

// String says the limits for approvers and the CLI: "processes 512,
// memory 2 GiB, ...", "" for none.
func (l *Limits) String() string {
	if l == nil {
		return ""
	}
	var parts []string
	if l.Processes > 0 {
		parts = append(parts, fmt.Sprintf("processes %d", l.Processes))
	}
	if l.Memory > 0 {
		parts = append(parts, "memory "+Bytes(l.Memory))
	}
	if l.CPUTime > 0 {
		parts = append(parts, "cpu time "+l.CPUTime.String())
	}
	if l.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("cpus %g", l.CPUs))
	}
	if l.Tmp > 0 {
		parts = append(parts, "tmp "+Bytes(l.Tmp))
	}
	if l.Write > 0 {
		parts = append(parts, "write "+Bytes(l.Write))
	}
	return strings.Join(parts, ", ")
}

// Bytes formats n bytes in binary units: "512 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".") + " " + string("KMGTPE"[i]) + "iB"
}

// Connection is one connection a call's processes asked the egress
// proxy for: evidence of what the call reached, or tried to.
type Connection struct {
	// Host and Port are what the process asked for (a CONNECT's target,
	// a request's host).
	Host string `json:"host"`
	Port int    `json:"port"`
	// Addr is the address the proxy dialled, after resolution (empty
	// when it refused before dialling).
	Addr string `json:"addr,omitempty"`
	// Method is CONNECT for a tunnel, else the HTTP request's method.
	Method string `json:"method,omitempty"`
	// Path is the request's path, for a request the proxy saw (one
	// through a tunnel it terminated to broker a secret).
	Path string `json:"path,omitempty"`
	// Secrets name the brokered secrets whose values the proxy put in
	// the request's headers, comma-separated (never the values; a string
	// keeps Connection comparable).
	Secrets string `json:"secrets,omitempty"`
	// Allowed says the proxy let it through; By names what allowed it
	// (the host entry and what granted the network) or why it was
	// refused.
	Allowed bool   `json:"allowed"`
	By      string `json:"by"`
	// Sent and Received count the bytes to and from the host.
	Sent     int64 `json:"sent,omitempty"`
	Received int64 `json:"received,omitempty"`
	// Error is how an allowed connection failed (the host refused it).
	Error string `json:"error,omitempty"`
}

// String is one line for the audit and the model: "refused
// evil.example:443: ...".
func (c Connection) String() string {
	verb := "refused"
	if c.Allowed {
		verb = "allowed"
	}
	s := fmt.Sprintf("%s %s %s:%d", verb, c.Method, c.Host, c.Port)
	if c.Path != "" {
		s += " " + c.Path
	}
	if c.Addr != "" {
		s += " (" + c.Addr + ")"
	}
	if c.Allowed {
		s += fmt.Sprintf(", %s out, %s in", Bytes(c.Sent), Bytes(c.Received))
	}
	if c.By != "" {
		s += ": " + c.By
	}
	if c.Secrets != "" {
		s += "; secret " + c.Secrets + " used for " + c.Host
	}
	if c.Error != "" {
		s += " (" + c.Error + ")"
	}
	return s
}
