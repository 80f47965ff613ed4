package local

import (
	"testing"

	"github.com/wardenhq/warden/config"
)

// TestLocalLimits: backend.local.limits goes over DefaultLimits:
// a value set replaces its default, off turns it off, the rest stay.
func TestLocalLimits(t *testing.T) {
	got, err := ConfigLimits(config.LocalLimits{Processes: "512", Memory: "off", CPUs: "1.5"})
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultLimits()
	if got.Processes != 512 || got.Memory != 0 || got.CPUs != 1.5 || got.Tmp != def.Tmp || got.Write != def.Write || got.CPUTime != 0 {
		t.Errorf("limits %+v (defaults %+v)", got, def)
	}
	if def.Processes != 4096 || def.Memory <= 0 || def.Memory > 4<<30 || def.Tmp != 1<<30 || def.Write != 10<<30 {
		t.Errorf("defaults %+v", def)
	}
	if _, err := ConfigLimits(config.LocalLimits{Memory: "lots"}); err == nil {
		t.Error("a bad size was taken")
	}
}
