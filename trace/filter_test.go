package trace_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/wire"
)

func TestFilterMatch(t *testing.T) {
	sent := trace.Record{Time: 100, Kind: trace.PacketSent, QPN: 5, PSN: 1, EV: 0xc0001001, Plane: 1}
	cwnd := trace.Record{Time: 100, Kind: trace.CwndChanged, QPN: 5}
	evs := trace.Record{Time: 100, Kind: trace.EVState, QPN: 5, EV: 0xc0001001, Plane: 1}
	qps := trace.Record{Time: 100, Kind: trace.QPState, QPN: 5}
	for _, c := range []struct {
		f    trace.Filter
		r    trace.Record
		want bool
	}{
		{trace.Filter{}, sent, true},
		{trace.Filter{Kinds: trace.Kinds(trace.PacketSent)}, sent, true},
		{trace.Filter{Kinds: trace.Kinds(trace.PacketAcked, trace.CwndChanged)}, sent, false},
		{trace.Filter{QPNs: []uint32{4, 5}}, sent, true},
		{trace.Filter{QPNs: []uint32{4}}, sent, false},
		{trace.Filter{From: 100, To: 101}, sent, true},
		{trace.Filter{From: 101}, sent, false},
		{trace.Filter{To: 100}, sent, false},
		{trace.Filter{EVs: []wire.EV{0xc0001001}}, sent, true},
		{trace.Filter{EVs: []wire.EV{0xc0001001}}, evs, true},
		{trace.Filter{EVs: []wire.EV{0xc0001002}}, sent, false},
		{trace.Filter{EVs: []wire.EV{0xc0001001}}, cwnd, false},
		{trace.Filter{Planes: []int{1}}, sent, true},
		{trace.Filter{Planes: []int{0}}, sent, false},
		{trace.Filter{Planes: []int{1}}, qps, false},
		{trace.Filter{Sample: 1 << 30}, evs, true},
		{trace.Filter{Sample: 1 << 30}, qps, true},
	} {
		if got := c.f.Match(&c.r); got != c.want {
			t.Errorf("%+v on %v: %v, want %v", c.f, c.r.Kind, got, c.want)
		}
	}
}

// TestFilterSample checks that sampling keeps about one packet in N, and
// every record of each packet it keeps.
func TestFilterSample(t *testing.T) {
	f := trace.Filter{Sample: 10}
	var kept, whole int
	for psn := range uint32(10000) {
		n := 0
		for _, k := range []trace.Kind{trace.PacketSent, trace.PacketNacked, trace.PacketRetransmitted, trace.PacketAcked} {
			r := trace.Record{Kind: k, QPN: 3, PSN: psn, Time: mtime.Time(psn)}
			if f.Match(&r) {
				n++
			}
		}
		if n != 0 && n != 4 {
			t.Fatalf("psn %d: %d of its 4 records kept", psn, n)
		}
		if n == 4 {
			kept++
		}
		whole++
	}
	if kept < 800 || kept > 1200 {
		t.Errorf("kept %d packets of %d with sample=10", kept, whole)
	}
}

func TestParseFilter(t *testing.T) {
	f, err := trace.ParseFilter("kind=sent,nacked qpn=256,0x101 t=10us..2ms ev=0xc008102f plane=0,1 sample=100")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Kinds.Has(trace.PacketSent) || !f.Kinds.Has(trace.PacketNacked) || f.Kinds.Has(trace.PacketAcked) ||
		len(f.QPNs) != 2 || f.QPNs[1] != 0x101 || f.From != mtime.Time(10*time.Microsecond) || f.To != mtime.Time(2*time.Millisecond) ||
		len(f.EVs) != 1 || f.EVs[0] != 0xc008102f || len(f.Planes) != 2 || f.Sample != 100 {
		t.Errorf("parsed %+v", f)
	}
	if f, err := trace.ParseFilter("t=1ms.."); err != nil || f.From != mtime.Time(time.Millisecond) || f.To != 0 {
		t.Errorf("open window: %+v %v", f, err)
	}
	if f, err := trace.ParseFilter(""); err != nil || f.Kinds != 0 || f.Sample != 0 {
		t.Errorf("empty: %+v %v", f, err)
	}
	for _, bad := range []string{"kind=nope", "qpn=x", "qpn=0x1000000", "t=1ms", "t=2ms..1ms", "t=x..", "plane=-1",
		"sample=0", "color=red", "kind", "ev=0x1ffffffff"} {
		if _, err := trace.ParseFilter(bad); err == nil || !strings.HasPrefix(err.Error(), "trace filter: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestFilterTracerAndMulti(t *testing.T) {
	var a, b []trace.Kind
	ta := trace.Func(func(r *trace.Record) { a = append(a, r.Kind) })
	tb := trace.Func(func(r *trace.Record) { b = append(b, r.Kind) })
	tr := trace.Multi(trace.Filter{Kinds: trace.Kinds(trace.PacketLost)}.Tracer(ta), tb)
	for _, k := range []trace.Kind{trace.PacketSent, trace.PacketLost, trace.CwndChanged} {
		tr.Trace(&trace.Record{Kind: k})
	}
	if len(a) != 1 || a[0] != trace.PacketLost || len(b) != 3 {
		t.Errorf("filtered %v, all %v", a, b)
	}
	f := trace.Filter{QPNs: []uint32{1}, Planes: []int{1}}
	r := trace.Record{Kind: trace.PacketSent, QPN: 1, Plane: 1}
	if allocs := testing.AllocsPerRun(100, func() { f.Match(&r) }); allocs != 0 {
		t.Errorf("Match allocates %v", allocs)
	}
}
