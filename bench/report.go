package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Report is what `starter bench` prints: the machine and the scenarios
// that ran (nil ones did not).
type Report struct {
	Machine    Machine           `json:"machine"`
	Address    string            `json:"address,omitempty"`
	Started    time.Time         `json:"started"`
	Overhead   *OverheadReport   `json:"overhead,omitempty"`
	Throughput *ThroughputReport `json:"throughput,omitempty"`
	Waiting    *WaitingReport    `json:"waiting,omitempty"`
	Docker     *DockerReport     `json:"docker,omitempty"`
	Long       *LongReport       `json:"long,omitempty"`
}

// WriteTable renders the report as aligned tables, milliseconds unless
// marked otherwise.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	m := r.Machine
	fmt.Fprintf(tw, "machine: %d CPUs, %.0f MB, %s, %s %s, load %s; worker %s\n", m.CPUs, m.MemoryMB, m.OS, m.Kernel, m.GoVersion, m.LoadAvg, r.Address)
	if r.Overhead != nil {
		r.Overhead.writeTable(tw)
	}
	if r.Throughput != nil {
		r.Throughput.writeTable(tw)
	}
	if r.Long != nil {
		r.Long.writeTable(tw)
	}
	if r.Waiting != nil {
		r.Waiting.writeTable(tw)
	}
	if r.Docker != nil {
		r.Docker.writeTable(tw)
	}
	return tw.Flush()
}

// writeTable writes the overhead and sandbox tables.
func (o *OverheadReport) writeTable(tw io.Writer) {
	fmt.Fprintln(tw, "\noverhead (per call, ms; through warden = tool_call→tool_result events)")
	fmt.Fprintln(tw, "VARIANT\tCOMMAND\tMODE\tCALLS\tWARDEN MEDIAN\tWARDEN P95\tSTEP (TURN/N)\tDIRECT MEDIAN\tDIRECT P95\tRATIO\tTOOL ERRORS")
	for _, v := range o.Variants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1fx\t%d\n", v.Name, v.Command, v.Mode, v.Calls,
			v.Call.MedianMS, v.Call.P95MS, v.StepMS, v.Direct.MedianMS, v.Direct.P95MS, v.Ratio, v.ToolErrors)
	}
	fmt.Fprintln(tw, "\nsandbox (per process, ms; the local backend in this process, alternating)")
	fmt.Fprintln(tw, "VARIANT\tCOMMAND\tUNSANDBOXED MEDIAN\tUNSANDBOXED P95\tSANDBOXED MEDIAN\tSANDBOXED P95\tADDED MEDIAN\tADDED P95")
	for _, v := range o.Variants {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%+.2f\t%+.2f\n", v.Name, v.Command, v.Local.MedianMS, v.Local.P95MS,
			v.Sandboxed.MedianMS, v.Sandboxed.P95MS, v.SandboxAdded.MedianMS, v.SandboxAdded.P95MS)
	}
}

// writeTable writes the throughput table.
func (t *ThroughputReport) writeTable(tw io.Writer) {
	fmt.Fprintln(tw, "\nthroughput")
	fmt.Fprintln(tw, "COMMAND\tTURNS\tCALLS/TURN\tCALLS\tWALL s\tCALLS/s\tTURN MEDIAN\tTURN P95\tCALL MEDIAN\tCALL P95\tWORKER RSS MB (before/peak/after)\tSERVER RSS MB")
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%s\t%s\n", t.Command, t.Turns, t.CallsPerTurn, t.Calls, t.WallMS/1000,
		t.CallsPerSec, t.Turn.MedianMS, t.Turn.P95MS, t.Call.MedianMS, t.Call.P95MS, memCell(t.Worker), memCell(deref(t.Server)))
}

// writeTable writes the long session's measures.
func (l *LongReport) writeTable(tw io.Writer) {
	fmt.Fprintln(tw, "\nlong session")
	fmt.Fprintln(tw, "MEASURE\tVALUE")
	fmt.Fprintf(tw, "steps × output\t%d × %d KB (%d runs)\n", l.Steps, l.OutputKB, l.Runs)
	fmt.Fprintf(tw, "history\t%.1f MB, %.0f bytes/step\n", float64(l.HistoryBytes)/(1<<20), l.HistoryBytesPerStep)
	fmt.Fprintf(tw, "model call input, second / last call\t%d / %d bytes\n", l.ModelInputFirst, l.ModelInputLast)
	if l.DataDirGrowth != 0 {
		fmt.Fprintf(tw, "data directory growth\t%.1f MB, %.0f bytes/step\n", float64(l.DataDirGrowth)/(1<<20), l.DataDirPerStep)
	}
	fmt.Fprintf(tw, "step latency, first tenth\tmedian %.1f ms, p95 %.1f ms\n", l.FirstTenth.MedianMS, l.FirstTenth.P95MS)
	fmt.Fprintf(tw, "step latency, last tenth\tmedian %.1f ms, p95 %.1f ms\n", l.LastTenth.MedianMS, l.LastTenth.P95MS)
	fmt.Fprintf(tw, "worker RSS MB before/peak/after\t%s\n", memCell(l.Worker))
	fmt.Fprintf(tw, "wall time\t%.1f s\n", l.WallMS/1000)
}

// writeTable writes the waiting scenario's measures.
func (wr *WaitingReport) writeTable(tw io.Writer) {
	fmt.Fprintln(tw, "\nwaiting on approvals")
	fmt.Fprintln(tw, "MEASURE\tVALUE")
	fmt.Fprintf(tw, "turns parked\t%d\n", wr.Turns)
	fmt.Fprintf(tw, "start all (starts/s)\t%.1f s (%.1f/s)\n", wr.StartMS/1000, wr.StartsPerSec)
	fmt.Fprintf(tw, "first start → all pending\t%.1f s\n", wr.AllPendingMS/1000)
	fmt.Fprintf(tw, "worker RSS MB before/peak/all waiting\t%s\n", memCell(wr.Worker))
	if wr.Server != nil {
		fmt.Fprintf(tw, "server RSS MB before/peak/all waiting\t%s\n", memCell(*wr.Server))
	}
	for _, l := range wr.VisibilityList {
		fmt.Fprintf(tw, "visibility list, page size %d (%d listed)\t%.2f s, slowest page %.2f s%s\n",
			l.PageSize, l.Listed, l.MS/1000, l.SlowestPageMS/1000, errNote(l.Err))
	}
	fmt.Fprintf(tw, "ListPending (all, %d entries)\t%.2f s%s\n", wr.ListPendingEntries, wr.ListPendingMS/1000, errNote(wr.ListPendingErr))
	fmt.Fprintf(tw, "ListPendingPage (first 100 turns, %d entries)\t%.0f ms%s\n", wr.FirstPageEntries, wr.FirstPageMS, errNote(wr.FirstPageErr))
	fmt.Fprintf(tw, "approve update round trip (n=%d)\tmedian %.1f ms, p95 %.1f ms\n", wr.Approve.N, wr.Approve.MedianMS, wr.Approve.P95MS)
	fmt.Fprintf(tw, "approve → tool_result\tmedian %.1f ms, p95 %.1f ms\n", wr.ApproveToTool.MedianMS, wr.ApproveToTool.P95MS)
	fmt.Fprintf(tw, "approve → turn result\tmedian %.1f ms, p95 %.1f ms\n", wr.ApproveToResult.MedianMS, wr.ApproveToResult.P95MS)
	fmt.Fprintf(tw, "cleanup: terminated\t%d in %.1f s\n", wr.Terminated, wr.CleanupMS/1000)
}

// writeTable writes the docker backend table, or why it did not run.
func (d *DockerReport) writeTable(tw io.Writer) {
	fmt.Fprintln(tw, "\ndocker backend (`/bin/sh -c true`, ms)")
	if d.Unavailable != "" {
		fmt.Fprintf(tw, "docker backend unavailable: %s\n", d.Unavailable)
		return
	}
	fmt.Fprintln(tw, "MODE\tCALLS\tMEDIAN\tP95\tMEAN")
	for _, row := range []struct {
		name string
		s    Stats
	}{{"plain exec", d.Plain}, {"session", d.Session}, {"host direct", d.Direct}} {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\n", row.name, row.s.N, row.s.MedianMS, row.s.P95MS, row.s.MeanMS)
	}
	fmt.Fprintf(tw, "plain/session median ratio: %.1fx (image %s)\n", d.Ratio, d.Image)
}

func memCell(m Memory) string {
	switch {
	case m.Err != "":
		return "n/a (" + m.Err + ")"
	case m.PID == 0:
		return "-"
	}
	if m.AfterAnon > 0 || m.AfterFile > 0 {
		return fmt.Sprintf("%.0f / %.0f / %.0f (anon %.0f + file %.0f; pid %d)", m.Before, m.Peak, m.After, m.AfterAnon, m.AfterFile, m.PID)
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f (pid %d)", m.Before, m.Peak, m.After, m.PID)
}

func deref(m *Memory) Memory {
	if m == nil {
		return Memory{}
	}
	return *m
}

func errNote(err string) string {
	if err == "" {
		return ""
	}
	return " (failed: " + err + ")"
}
