// Port picking: free ports outside the kernel's ephemeral range.

package devserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

func freePort(ip string) (int, error) { return FreePort(ip) }

// FreePort returns a TCP port on ip that is free now and that the kernel
// does not hand out by itself: the server binds its ports a moment after
// they are chosen, and a port from the ephemeral range (the one a
// listen on port 0 returns) can be taken in between by any outgoing
// connection of any process. So the port is picked at random below the
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), and checked
// by listening on it; a listen on port 0 is the fallback.
func FreePort(ip string) (int, error) {
	low := ephemeralLow()
	for range 50 {
		if low <= minPickedPort {
			break
		}
		port := minPickedPort + rand.IntN(low-minPickedPort)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("devserver: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// minPickedPort is the lowest port FreePort picks.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux;
// 32768, the usual value, when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
