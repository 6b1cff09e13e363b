package perf

import (
	"strings"
	"testing"
)

// TestResultWriteText: the text report states the verification outcome,
// the counters, the EV timeline and one line per plane.
func TestResultWriteText(t *testing.T) {
	r := &Result{
		Gbps: 8, Bytes: 1 << 30, Seconds: 1.074, Chunks: 1, Verified: true, Encap: "plain",
		Retransmits: 3, EVsRetired: 1, EVsResurrected: 1,
		EVEvents: []EVEvent{{From: "GOOD", To: "ASSUMED_BAD"}, {From: "ASSUMED_BAD", To: "GOOD"}},
		PerPlane: []PlaneUsage{{Plane: 0, Packets: 10, Share: 0.5, EVs: 4}, {Plane: 1, Packets: 10, Share: 0.5, EVs: 4}},
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"mrc perf: 1073741824 bytes in 1.074 s = 8.00 Gbit/s, verified (1 chunk)\n",
		"  retransmits 3, trims 0,",
		"  EV timeline: 2 state changes (1 retirements, 1 resurrections);",
		"  plane 1: 10 packets (50.0%), 0 retransmitted, over 4 EVs\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r.Verified, r.Chunks = false, 2
	b.Reset()
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "NOT verified (2 chunks)") {
		t.Errorf("an unverified run is not called so:\n%s", b.String())
	}
}
