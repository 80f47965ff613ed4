package local

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

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
	// Processes: 256 per CPU within [512, 4096], no more than one per
	// 4 MiB of RAM.
	wantProcs := min(max(256*int64(runtime.NumCPU()), 512), 4096)
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		wantProcs = min(wantProcs, int64(si.Totalram)*int64(si.Unit)>>22)
	}
	if def.Processes != wantProcs || def.Memory <= 0 || def.Memory > 4<<30 || def.Tmp != 1<<30 || def.Write != 10<<30 {
		t.Errorf("defaults %+v", def)
	}
	if _, err := ConfigLimits(config.LocalLimits{Memory: "lots"}); err == nil {
		t.Error("a bad size was taken")
	}
}

// TestLocalShares: cpu_share and disk_reserve default on (share, the
// default reserve), off turns each off, a size sets the reserve, and a
// bad value is an error.
func TestLocalShares(t *testing.T) {
	for _, c := range []struct {
		in          config.LocalLimits
		noShare     bool
		reserve     int64
		wantErr     bool
		description string
	}{
		{config.LocalLimits{}, false, 0, false, "defaults"},
		{config.LocalLimits{CPUShare: "off", DiskReserve: "off"}, true, -1, false, "both off"},
		{config.LocalLimits{CPUShare: "on", DiskReserve: "256MiB"}, false, 256 << 20, false, "a reserve"},
		{config.LocalLimits{CPUShare: "half"}, false, 0, true, "a bad share"},
		{config.LocalLimits{DiskReserve: "lots"}, false, 0, true, "a bad reserve"},
	} {
		noShare, reserve, err := ConfigShares(c.in)
		if (err != nil) != c.wantErr || err == nil && (noShare != c.noShare || reserve != c.reserve) {
			t.Errorf("%s: %+v gives no share %v, reserve %d, error %v", c.description, c.in, noShare, reserve, err)
		}
	}
	if b := (&Backend{}); b.diskReserve() != DefaultDiskReserve {
		t.Errorf("the zero Backend's reserve is %d", b.diskReserve())
	}
}
