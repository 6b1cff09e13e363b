package trace_test

import (
	"strings"
	"testing"

	"github.com/openmrc/mrc/trace"
)

// FuzzParseFilter: any filter string either fails with a "trace filter:"
// error, or gives a filter that keeps the same records when its clauses
// are repeated.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "kind=sent,nacked qpn=256,0x101", "t=10us..2ms ev=0xc008102f plane=0,1", "sample=100", "t=..5us", "bogus=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := trace.ParseFilter(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace filter: ") {
				t.Fatalf("error %q lacks the prefix", err)
			}
			return
		}
		twice, err := trace.ParseFilter(s + " " + s)
		if err != nil {
			t.Fatalf("%q parses but twice gives %v", s, err)
		}
		for _, r := range records {
			if flt.Match(&r) != twice.Match(&r) {
				t.Fatalf("%q on %+v: Match %v, repeated %v", s, r, flt.Match(&r), twice.Match(&r))
			}
		}
	})
}

// records are one record of each shape the filter tells apart.
var records = []trace.Record{
	{Time: 1500, Kind: trace.PacketSent, QPN: 256, PSN: 100, EV: 0xc000001d, Plane: 0, Bytes: 4096},
	{Time: 2674, Kind: trace.PacketNacked, QPN: 256, PSN: 103, EV: 0xc00a1014, Plane: 1, Bytes: 4096, Reason: "TRIMMED"},
	{Time: 9, Kind: trace.PacketDropped, QPN: 7, Reason: "bad_icrc"},
	{Time: 40674, Kind: trace.EVState, QPN: 256, EV: 0xc008102f, Plane: 1, From: "GOOD", To: "ASSUMED_BAD", Reason: "loss"},
	{Time: 2696, Kind: trace.CwndChanged, QPN: 256, Cwnd: 61440, Inflight: 57344},
	{Time: 0, Kind: trace.QPState, QPN: 256, From: "RTR", To: "RTS"},
	{Time: -5, Kind: trace.QPState, QPN: 1, From: "a\\b", To: "\x01é\xff"},
}
