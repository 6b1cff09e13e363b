package jsonl_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/trace/jsonl"
	"github.com/openmrc/mrc/verbs"
)

var samples = []struct {
	host string
	r    trace.Record
	want string
}{
	{"", trace.Record{Time: 1500, Kind: trace.PacketSent, QPN: 256, PSN: 100, EV: 0xc000001d, Plane: 0, Bytes: 4096},
		`{"t":1500,"kind":"sent","qpn":256,"psn":100,"ev":"0xc000001d","plane":0,"bytes":4096}`},
	{"A", trace.Record{Time: 2674, Kind: trace.PacketNacked, QPN: 256, PSN: 103, EV: 0xc00a1014, Plane: 1, Bytes: 4096, Reason: "TRIMMED"},
		`{"t":2674,"kind":"nacked","host":"A","qpn":256,"psn":103,"ev":"0xc00a1014","plane":1,"bytes":4096,"reason":"TRIMMED"}`},
	{"", trace.Record{Time: 9, Kind: trace.PacketDropped, QPN: 7, Reason: "bad_icrc"},
		`{"t":9,"kind":"dropped","qpn":7,"psn":0,"ev":"0x00000000","plane":0,"bytes":0,"reason":"bad_icrc"}`},
	{"", trace.Record{Time: 40674, Kind: trace.EVState, QPN: 256, EV: 0xc008102f, Plane: 1, From: "GOOD", To: "ASSUMED_BAD", Reason: "loss"},
		`{"t":40674,"kind":"ev_state","qpn":256,"ev":"0xc008102f","plane":1,"from":"GOOD","to":"ASSUMED_BAD","reason":"loss"}`},
	{"B", trace.Record{Time: 2696, Kind: trace.CwndChanged, QPN: 256, Cwnd: 61440, Inflight: 57344},
		`{"t":2696,"kind":"cwnd","host":"B","qpn":256,"cwnd":61440,"inflight":57344}`},
	{"", trace.Record{Time: 0, Kind: trace.QPState, QPN: 256, From: "RTR", To: "RTS"},
		`{"t":0,"kind":"qp_state","qpn":256,"from":"RTR","to":"RTS"}`},
	{"h\"1\"\n", trace.Record{Time: -5, Kind: trace.QPState, QPN: 1, From: "a\\b", To: "\x01é\xff"},
		`{"t":-5,"kind":"qp_state","host":"h\"1\"\n","qpn":1,"from":"a\\b","to":"\u0001é\ufffd"}`},
}

func TestAppendJSON(t *testing.T) {
	for _, s := range samples {
		got := string(jsonl.Append(nil, &s.r, s.host))
		if got != s.want {
			t.Errorf("%v:\n got %s\nwant %s", s.r.Kind, got, s.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%v: invalid JSON %s", s.r.Kind, got)
		}
	}
	r := trace.Record{Kind: trace.Kind(99)}
	if got := string(jsonl.Append(nil, &r, "")); !json.Valid([]byte(got)) || !strings.Contains(got, `"kind":"Kind(99)"`) {
		t.Errorf("unknown kind: %s", got)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	for _, s := range samples[:6] {
		r := s.r
		if s.host == "" {
			w.Trace(&r)
		} else {
			w.Host(s.host).Trace(&r)
		}
	}
	if err := w.Flush(); err != nil || w.Records() != 6 {
		t.Fatalf("flush %v, %d records", err, w.Records())
	}
	rd := jsonl.NewReader(&buf)
	for _, s := range samples[:6] {
		got, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got.Record != s.r || got.Host != s.host {
			t.Errorf("read back %+v host %q, want %+v host %q", got.Record, got.Host, s.r, s.host)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
	for _, bad := range []string{`{"kind":"sent"}`, `{"t":1,"kind":"nope"}`, `{"t":1,"kind":"sent","ev":"zz"}`, `not json`} {
		if _, err := jsonl.NewReader(strings.NewReader("\n" + bad + "\n")).Next(); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestWriterDoesNotAllocate(t *testing.T) {
	w := jsonl.NewWriter(io.Discard)
	h := w.Host("A")
	r := samples[1].r
	if a := testing.AllocsPerRun(1000, func() { w.Trace(&r); h.Trace(&r) }); a != 0 {
		t.Errorf("%v allocations per record", a/2)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterError(t *testing.T) {
	w := jsonl.NewWriter(failWriter{})
	r := samples[0].r
	for range 10000 {
		w.Trace(&r)
	}
	if err := w.Flush(); err == nil || w.Err() == nil {
		t.Error("write error lost")
	}
}

// TestJSONTraceOfTransfer traces a lossy transfer as JSON lines, reads it
// back, and checks the records per kind against the endpoints' counters.
func TestJSONTraceOfTransfer(t *testing.T) {
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	n, err := testnet.New(testnet.Config{Seed: 5, Planes: 2, Loss: 0.01, Trim: 0.03, ECN: 0.05,
		Tracers: [2]trace.Tracer{w.Host("A"), w.Host("B")}})
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := n.Connect(mrc.EVProfile{}, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 1<<20)
	dst := make([]byte, len(src))
	smr, _ := n.Endpoint(testnet.A).RegisterMemory(src, verbs.AccessLocal)
	dmr, _ := n.Endpoint(testnet.B).RegisterMemory(dst, verbs.AccessRemoteWrite)
	done := 0
	n.OnEvent = func(s testnet.Side, ev verbs.Event) {
		if ev.Kind == verbs.EventWriteDone {
			done++
		}
	}
	if err := qa.PostWrite(0, verbs.WriteRequest{Local: smr, Remote: dmr, Length: uint64(len(src))}); err != nil {
		t.Fatal(err)
	}
	n.Kick(testnet.A)
	if !n.RunUntil(mtime.Time(time.Second), func() bool { return done == 1 }) {
		t.Fatal("unfinished")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[trace.Kind]uint64{"A": {}, "B": {}}
	rd := jsonl.NewReader(&buf)
	var last mtime.Time
	for {
		r, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Time < last {
			t.Fatalf("time went backwards: %v", r)
		}
		last = r.Time
		counts[r.Host][r.Kind]++
	}
	a, b := qa.Stats(), qb.Stats()
	for _, c := range []struct {
		host  string
		kind  trace.Kind
		count uint64
	}{
		{"A", trace.PacketSent, a.DataSent},
		{"A", trace.PacketRetransmitted, a.Retransmits},
		{"A", trace.PacketNacked, a.NACKsReceived},
		{"A", trace.PacketLost, a.LossTimeouts},
		{"B", trace.PacketReceived, b.DataReceived},
		{"B", trace.PacketTrimmed, b.TrimmedReceived},
		{"B", trace.SACKSent, b.SACKsSent},
	} {
		if got := counts[c.host][c.kind]; got != c.count {
			t.Errorf("%s %v: %d records, counters say %d", c.host, c.kind, got, c.count)
		}
	}
	if counts["A"][trace.PacketNacked] == 0 || counts["A"][trace.EVState] == 0 || counts["A"][trace.CwndChanged] == 0 {
		t.Errorf("a lossy run traced no NACKs, EV changes or window changes: %v", counts["A"])
	}
}

// FuzzJSONReader: the reader never panics, and whatever it accepts, the
// writer writes in a form the reader reads back to the same line: reading
// is the inverse of writing.
func FuzzJSONReader(f *testing.F) {
	for _, s := range samples {
		f.Add(jsonl.Append(nil, &s.r, s.host))
	}
	f.Add([]byte(`{"t":1,"kind":"sent","ev":"7"}` + "\n\n" + `{"t":2,"kind":"cwnd","cwnd":-1}`))
	f.Add([]byte(`{"t":1,"kind":"nope"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		jr := jsonl.NewReader(bytes.NewReader(in))
		for range 100 {
			rec, err := jr.Next()
			if err != nil {
				return
			}
			line := jsonl.Append(nil, &rec.Record, rec.Host)
			again, err := jsonl.NewReader(bytes.NewReader(line)).Next()
			if err != nil {
				t.Fatalf("the reader rejects the writer's %s: %v", line, err)
			}
			if back := jsonl.Append(nil, &again.Record, again.Host); !bytes.Equal(back, line) {
				t.Fatalf("written %s, read back and written again %s", line, back)
			}
		}
	})
}
