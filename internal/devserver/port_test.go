package devserver

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortOutsideEphemeralRange: the ports FreePort picks are ones the
// kernel does not hand to outgoing connections, and can be bound.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 20 {
		port, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port < minPickedPort || port >= low {
			t.Fatalf("port %d outside [%d, %d)", port, minPickedPort, low)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d cannot be bound: %v", port, err)
		}
		_ = l.Close()
		seen[port] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 picks gave only %d distinct ports", len(seen))
	}
}
