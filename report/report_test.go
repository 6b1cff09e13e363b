package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/openmrc/mrc/sim"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Duration(850), "850 ns"}, {Duration(42_300), "42.3 µs"}, {Duration(40_000), "40 µs"}, {Duration(1_270_000), "1.27 ms"},
		{Duration(537_000_000), "537 ms"}, {Duration(2_000_000_000), "2 s"},
		{Bytes(512), "512 B"}, {Bytes(256 << 10), "256 KiB"}, {Bytes(3 << 19), "1.5 MiB"}, {Bytes(3213885440), "2.99 GiB"},
		{Rate(100e9), "100 Gb/s"}, {Rate(1.6e12), "1.6 Tb/s"},
		{Count(16384), "16,384"}, {Count(-1234567), "-1,234,567"}, {Count(12), "12"},
		{percent(0.73), "73%"}, {percent(0.042), "4.2%"}, {percent(0.0009), "0.09%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestTable checks the table of a report with an incomplete transport
// and tagged flows.
func TestTable(t *testing.T) {
	bp := int64(30_000)
	flows := []sim.FlowResult{
		{ID: 1, Tag: "victim", StartNs: 0, FCTNs: 10_000, RecvNs: 9_000},
		{ID: 2, StartNs: 0, FCTNs: 20_000, RecvNs: 19_000},
	}
	r := &Report{Scenario: "t", Seed: 1, Fabric: "f", Traffic: "w", FailureSchedule: []string{"x down at 1 µs"}, Notes: "look here"}
	r.Add(&sim.Result{Transport: "mrc", Flows: 2, FlowsCompleted: 2, CompletionNs: 20_000, GoodputFractionOfIdeal: 0.5,
		FCT: sim.FCTStats{Min: 10_000, P50: 10_000, P99: 20_000, Max: 20_000}, BypassNs: &bp, FlowResults: flows,
		BypassQP: &sim.BypassStats{QPs: 3, P50: 12_000, P99: 30_000, Max: 30_000, ReactP50: 0, ReactP99: 9_500, ReactMax: 9_500},
		Failures: []sim.FailureResult{{DataPackets: 7, ControlPackets: 5, ControlBypassNs: 41_000}, {ControlPackets: 2, ControlBypassNs: 8_000}}}, false)
	r.Add(&sim.Result{Transport: "roce", Flows: 2, FlowsCompleted: 1, FlowsFailed: 1, CompletionNs: 50_000,
		FCT: sim.FCTStats{P50: 50_000, P99: 50_000}, BypassNs: &bp, FlowResults: flows[1:]}, true)
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	squeeze := regexp.MustCompile(` +`)
	out := squeeze.ReplaceAllString(b.String(), " ")
	for _, want := range []string{"flows completed          2/2     1/2 (1 failed)", "completion time          20 µs   not done",
		"FCT p50                  10 µs   50 µs*", "bypass time              30 µs   30 µs", "data pkts into failures  7       0",
		"bypass p50 / p99 per QP  12 µs / 30 µs  —", "QP reaction p50 / p99  0 ns / 9.5 µs  —", "ACK bypass time  41 µs  —", "ACK pkts into failures  7  0",
		"victim FCT p99           10 µs   —", "* over the flows that completed", "roce did not finish (1 of 2 flows done, 1 failed", "look here"} {
		if want = squeeze.ReplaceAllString(want, " "); !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if r.Results[0].FlowResults != nil || r.Results[1].FlowResults == nil || len(r.Results[0].PerFlow()) != 2 {
		t.Error("flow results kept or dropped wrongly")
	}
}

// TestStopNoteCutOff: a run stopped at its duration says that a longer
// run goes further, unless some of its unfinished flows had no path left,
// which a longer run finishes only if a failed part comes back: then it
// says how many.
func TestStopNoteCutOff(t *testing.T) {
	for _, cut := range []int{0, 2} {
		r := &Report{}
		r.Add(&sim.Result{Transport: "mrc", Flows: 10, FlowsCompleted: 7, SimTimeNs: 20_000_000, StoppedBy: sim.StoppedDuration,
			CapacityRemoved: &sim.CapacityRemoved{FlowsCutOff: cut}}, false)
		note := r.stopNote()
		if !strings.HasPrefix(note, "mrc hit the 20 ms duration limit with 3 of 10 flows unfinished") {
			t.Errorf("cut off %d: note %q", cut, note)
		}
		longer, said := strings.Contains(note, "a longer --stop"), strings.Contains(note, "2 of them had no path left")
		if longer != (cut == 0) || said != (cut > 0) {
			t.Errorf("cut off %d: note %q", cut, note)
		}
	}
}

// TestCompare checks the verdict's wording against the ratio of two
// completion times, on both sides of each boundary.
func TestCompare(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		want  string
	}{
		{3.2, "3.2× as fast as x"},
		{1.1, "1.1× as fast as x"},
		{1.032, "3.2% faster than x"},
		{1.0004, "as fast as x"},
		{1 / 1.0004, "as fast as x"},
		{1 / 1.005, "0.5% slower than x"},
		{1 / 1.2, "1.2× as slow as x"},
	} {
		if got := compare(c.ratio, "x"); got != c.want {
			t.Errorf("compare(%v) = %q, want %q", c.ratio, got, c.want)
		}
	}
}
