package metrics_test

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/metrics"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := metrics.NewWriter(&b)
	w.Family("x_total", metrics.Counter, "Things, with a \\ and a\nnewline.")
	w.SampleUint("x_total", 18446744073709551615, metrics.Label{Name: "a", Value: "q\"uo\\te\n"}, metrics.Label{Name: "b", Value: "é"})
	w.Family("y", metrics.Gauge, "Y.")
	w.Sample("y", 1.5)
	w.Sample("y", math.NaN(), metrics.Label{Name: "k", Value: "nan"})
	w.Sample("y", math.Inf(1), metrics.Label{Name: "k", Value: "inf"})
	w.Sample("y", math.Inf(-1), metrics.Label{Name: "k", Value: "-inf"})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	want := `# HELP x_total Things, with a \\ and a\nnewline.
# TYPE x_total counter
x_total{a="q\"uo\\te\n",b="é"} 18446744073709551615
# HELP y Y.
# TYPE y gauge
y 1.5
y{k="nan"} NaN
y{k="inf"} +Inf
y{k="-inf"} -Inf
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	w.Family("x_total", metrics.Counter, "again")
	if w.Err() != metrics.ErrFamily {
		t.Errorf("family twice: %v", w.Err())
	}
	w = metrics.NewWriter(io.Discard)
	w.Family("a", metrics.Gauge, "")
	w.Sample("b", 1)
	if w.Err() != metrics.ErrFamily {
		t.Errorf("sample outside its family: %v", w.Err())
	}
	for name, ok := range map[string]bool{"mrc_qp_x_total": true, "a:b": true, "_x": true, "": false, "1x": false, "a-b": false, "é": false} {
		if metrics.ValidName(name) != ok {
			t.Errorf("ValidName(%q) = %v", name, !ok)
		}
	}
}

// sample is one parsed line of an exposition.
var sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// parseExposition parses the text format strictly enough to catch what
// Prometheus would reject: every sample belongs to the family declared
// (HELP, then TYPE) right before it, families appear once, and no sample
// repeats. It returns the samples keyed by name{label="value",...} with
// labels sorted.
func parseExposition(t *testing.T, text string) map[string]string {
	t.Helper()
	samples := map[string]string{}
	families := map[string]bool{}
	var family string
	var help bool
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name := strings.Fields(line)[2]
			if families[name] {
				t.Fatalf("line %d: family %s declared twice", n, name)
			}
			families[name], family, help = true, name, true
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if !help || f[2] != family || (f[3] != "counter" && f[3] != "gauge") {
				t.Fatalf("line %d: %q", n, line)
			}
			help = false
		default:
			m := sampleRE.FindStringSubmatch(line)
			if m == nil || m[1] != family || help {
				t.Fatalf("line %d: not a sample of family %s: %q", n, family, line)
			}
			if _, err := strconv.ParseFloat(m[4], 64); err != nil {
				t.Fatalf("line %d: value %q", n, m[4])
			}
			var labels []string
			for _, l := range labelRE.FindAllStringSubmatch(m[3], -1) {
				labels = append(labels, l[1]+"="+l[2])
			}
			sort.Strings(labels)
			key := m[1] + "{" + strings.Join(labels, ",") + "}"
			if _, dup := samples[key]; dup {
				t.Fatalf("line %d: sample %s repeated", n, key)
			}
			samples[key] = m[4]
		}
	}
	return samples
}

// TestScrape runs a lossy transfer, serves its metrics over loopback, scrapes
// them as Prometheus would and compares every value with the counters.
func TestScrape(t *testing.T) {
	n, err := testnet.New(testnet.Config{Seed: 9, Planes: 2, Loss: 0.005, Trim: 0.03, TrimLastHop: 0.01, ECN: 0.05, Corrupt: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := n.Connect(mrc.EVProfile{}, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	epA, epB := n.Endpoint(testnet.A), n.Endpoint(testnet.B)
	src := make([]byte, 2<<20)
	dst := make([]byte, len(src))
	smr, _ := epA.RegisterMemory(src, verbs.AccessLocal)
	dmr, _ := epB.RegisterMemory(dst, verbs.AccessRemoteWrite)
	// Per-port counters, as a host's datapath would keep them.
	ports := map[[2]int]*metrics.Port{}
	n.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		k := [2]int{int(from), tx.Port}
		p := ports[k]
		if p == nil {
			p = &metrics.Port{Node: string(rune('A' + from)), Port: fmt.Sprint("eth", tx.Port), Plane: tx.Port}
			ports[k] = p
		}
		p.TxPackets++
		p.TxBytes += uint64(tx.WireLen)
	}
	done := 0
	n.OnEvent = func(_ testnet.Side, ev verbs.Event) {
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
	ports[[2]int{0, 0}].Drops, ports[[2]int{0, 1}].ECNMarks, ports[[2]int{1, 0}].Trims = 7, 11, 13
	ports[[2]int{1, 1}].RxPackets, ports[[2]int{1, 1}].RxBytes = 17, 1<<40

	now := n.Now()
	collect := func() *metrics.Snapshot {
		s := &metrics.Snapshot{
			QPs:       []metrics.QP{metrics.QPOf("B", qb, now), metrics.QPOf("A", qa, now)},
			Endpoints: []metrics.Endpoint{metrics.EndpointOf("A", epA), metrics.EndpointOf("B", epB)},
		}
		for _, p := range ports {
			s.Ports = append(s.Ports, *p)
		}
		return s
	}
	srv, err := metrics.Listen("127.0.0.1:0", metrics.Handler(collect))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	got := parseExposition(t, string(body))

	a, b := qa.Stats(), qb.Stats()
	if a.TrimNACKs == 0 || a.LastHopNACKs == 0 || a.Retransmits == 0 || a.EVRetired == 0 || epA.Stats().Dropped()+epB.Stats().Dropped() == 0 {
		t.Fatalf("the run lacks trims, retransmits, retirements or drops: %+v", a)
	}
	check := func(key string, want uint64) {
		t.Helper()
		if v, ok := got[key]; !ok {
			t.Errorf("%s missing", key)
		} else if v != strconv.FormatUint(want, 10) {
			t.Errorf("%s = %s, counters say %d", key, v, want)
		}
	}
	for _, q := range []struct {
		host string
		qp   *mrc.QP
		s    verbs.Stats
	}{{"A", qa, a}, {"B", qb, b}} {
		l := fmt.Sprintf("host=%s,qpn=%d", q.host, q.qp.QPN())
		check("mrc_qp_payload_bytes_sent_total{"+l+"}", q.s.PayloadSent)
		check("mrc_qp_payload_bytes_received_total{"+l+"}", q.s.PayloadReceived)
		check("mrc_qp_data_packets_sent_total{"+l+"}", q.s.DataSent)
		check("mrc_qp_data_packets_received_total{"+l+"}", q.s.DataReceived)
		check("mrc_qp_retransmits_total{"+l+"}", q.s.Retransmits)
		check("mrc_qp_nacks_received_total{"+l+",reason=TRIMMED}", q.s.TrimNACKs)
		check("mrc_qp_nacks_received_total{"+l+",reason=TRIMMED_LASTHOP}", q.s.LastHopNACKs)
		check("mrc_qp_nacks_received_total{"+l+",reason=other}", q.s.NACKsReceived-q.s.TrimNACKs-q.s.LastHopNACKs)
		check("mrc_qp_nacks_sent_total{"+l+"}", q.s.NACKsSent)
		check("mrc_qp_sacks_sent_total{"+l+"}", q.s.SACKsSent)
		check("mrc_qp_ev_retired_total{"+l+"}", q.s.EVRetired)
		check("mrc_qp_ev_skips_total{"+l+"}", q.s.EVSkips)
		check("mrc_qp_loss_timeouts_total{"+l+"}", q.s.LossTimeouts)
		cwnd, inflight := q.qp.Window()
		check("mrc_qp_cwnd_bytes{"+l+"}", uint64(cwnd))
		check("mrc_qp_inflight_bytes{"+l+"}", uint64(inflight))
		evs := q.qp.EVCounts(now)
		for i, st := range []verbs.EVState{verbs.EVGood, verbs.EVSkip, verbs.EVAssumedBad, verbs.EVDenied} {
			check("mrc_qp_evs{"+l+",state="+st.String()+"}", uint64(evs[i]))
		}
		check("mrc_qp_state{"+l+",state=RTS}", 1)
		check("mrc_qp_state{"+l+",state=ERROR}", 0)
	}
	for _, e := range []struct {
		host string
		ep   *mrc.Endpoint
	}{{"A", epA}, {"B", epB}} {
		s := e.ep.Stats()
		for r := range len(s.Drops) {
			check(fmt.Sprintf("mrc_endpoint_drops_total{host=%s,reason=%v}", e.host, verbs.DropReason(r)), s.Drops[r])
		}
	}
	for k, p := range ports {
		l := fmt.Sprintf("node=%s,plane=%d,port=eth%d", p.Node, k[1], k[1])
		check("mrc_port_packets_total{dir=tx,"+l+"}", p.TxPackets)
		check("mrc_port_bytes_total{dir=tx,"+l+"}", p.TxBytes)
		check("mrc_port_packets_total{dir=rx,"+l+"}", p.RxPackets)
		check("mrc_port_bytes_total{dir=rx,"+l+"}", p.RxBytes)
		check("mrc_port_trims_total{"+l+"}", p.Trims)
		check("mrc_port_ecn_marks_total{"+l+"}", p.ECNMarks)
		check("mrc_port_drops_total{"+l+"}", p.Drops)
	}

	// Only GET and HEAD.
	resp, err = http.Post("http://"+srv.Addr().String()+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

func TestListenError(t *testing.T) {
	srv, err := metrics.Listen("127.0.0.1:0", metrics.Handler(func() *metrics.Snapshot { return &metrics.Snapshot{} }))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := metrics.Listen(srv.Addr().String(), nil); err == nil {
		t.Error("a second listener on the same port succeeded")
	}
	resp, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("empty snapshot: %d %q", resp.StatusCode, body)
	}
}
