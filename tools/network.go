package tools

import (
	"encoding/json"
	"slices"
	"strings"
)

// RequestedHosts are the hosts a call asks for in its input
// (BashInput.NetworkHosts, PowerShellInput.NetworkHosts).
func RequestedHosts(name string, input json.RawMessage) []string {
	if name != "Bash" && name != "PowerShell" {
		return nil
	}
	var in struct {
		NetworkHosts []string `json:"network_hosts"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	var out []string
	for _, h := range in.NetworkHosts {
		if h = strings.TrimSpace(h); h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}
