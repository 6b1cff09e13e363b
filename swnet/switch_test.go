package swnet

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/wire"
)

var block = [16]byte{0xfc, 0xbb, 0xbb, 0}

func usid(ids ...uint32) [16]byte { return wire.F3216.Container(block, ids...) }

// dataPacket builds a whole IPv6-in-IPv6 WRITE packet with payload bytes,
// the outer destination dst, ECN-capable, DSCP 10.
func dataPacket(t testing.TB, dst [16]byte, payload int, psn uint32) []byte {
	t.Helper()
	var p wire.Packet
	src := [16]byte{0xfd, 1, 15: 1}
	final := [16]byte{0xfd, 2, 15: 1}
	tc := uint8(10<<2) | uint8(wire.ECT0)
	p.Encap = true
	p.Outer = wire.IPv6{TrafficClass: tc, NextHeader: wire.ProtoIPv6, HopLimit: 64, Src: src, Dst: dst}
	p.IP = wire.IPv6{TrafficClass: tc, NextHeader: wire.ProtoUDP, HopLimit: 64, Src: src, Dst: final}
	p.UDP = wire.UDP{DstPort: wire.UDPPortRoCEv2}
	p.SetEV(0xc0001234)
	p.BTH = wire.BTH{Opcode: wire.OpWriteMiddle, DestQP: 0x100, PSN: psn}
	p.RETH = wire.RETH{VA: 1 << 32, RKey: 1, DMALen: 1 << 20}
	return wire.AppendPacket(nil, &p, make([]byte, payload))
}

func goroutineLeakCheck(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}

// rig is a switch with two in-memory ports; a and b are the far ends.
type rig struct {
	s      *Switch
	a, b   *Pipe // the test's ends of ports 0 and 1
	pa, pb *Pipe // the switch's ends
	stop   func()
}

func newRig(t *testing.T, table string) *rig {
	t.Helper()
	goroutineLeakCheck(t)
	tb, err := ParseTable(strings.NewReader(table), "test.table")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{}
	r.pa, r.a = NewPipe(4096)
	r.pb, r.b = NewPipe(4096)
	r.s, err = New(tb, []Link{r.pa, r.pb})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.s.Run(ctx) }()
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if r.stop != nil {
			r.stop()
		}
	})
	return r
}

// recv waits for n packets on p, up to limit, and returns them with their
// arrival times.
func recv(t *testing.T, p *Pipe, n int, limit time.Duration) ([][]byte, []time.Time) {
	t.Helper()
	var pkts [][]byte
	var at []time.Time
	deadline := time.After(limit)
	for len(pkts) < n {
		select {
		case pkt := <-p.in:
			pkts = append(pkts, pkt)
			at = append(at, time.Now())
		case <-deadline:
			t.Fatalf("%d of %d packets arrived within %v", len(pkts), n, limit)
		}
	}
	return pkts, at
}

const table2 = `
# a T1 of plane 0 with two T0s
switch name t1 mode srv6 addr fcbb:bb00:201:: ecn-inner
port p0 peer 02:00:00:00:00:01
port p1 peer 02:00:00:00:00:02 %s
queue %s
route fcbb:bb00:101::/48 p0
route fcbb:bb00:102::/48 p1
`

func tableWith(port, queue string) string {
	return strings.Replace(strings.Replace(table2, "%s", port, 1), "%s", queue, 1)
}

func TestForwardSRv6(t *testing.T) {
	r := newRig(t, tableWith("", "buffer 1MiB"))
	pkt := dataPacket(t, usid(0x201, 0x102, 0xe01), 1000, 1)
	r.a.Send([][]byte{pkt})
	got, _ := recv(t, r.b, 1, 5*time.Second)
	if d := *wire.OuterDst(got[0]); d != usid(0x102, 0xe01) {
		t.Errorf("destination %x, want the container shifted", d)
	}
	if got[0][7] != 63 || len(got[0]) != len(pkt) {
		t.Errorf("hop limit %d, length %d (sent %d)", got[0][7], len(got[0]), len(pkt))
	}
	var p wire.Packet
	if err := p.Decode(got[0]); err != nil || p.Verify(got[0]) != nil {
		t.Errorf("forwarded packet: decode %v, verify %v", err, p.Verify(got[0]))
	}
	// No route; a link-local packet is ignored.
	r.a.Send([][]byte{dataPacket(t, usid(0x201, 0x999), 100, 2)})
	ll := dataPacket(t, [16]byte{0xfe, 0x80, 15: 1}, 10, 3)
	r.a.Send([][]byte{ll})
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := r.s.Stats()
		if st.Drops["no_route"] == 1 && st.Ignored == 1 {
			if st.Ports[0].RxPackets != 3 || st.Ports[1].TxPackets != 1 || st.Sent != 1 {
				t.Errorf("stats %+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTrimTo: with trim-to the switch trims real packets as fixed-size
// trimming switches do: cut to that many bytes, lengths left as they
// were, only the outer DSCP rewritten (docs/spec-gaps.md row 22).
func TestTrimTo(t *testing.T) {
	r := newRig(t, tableWith("rate 100M delay 1ms", "buffer 256KiB header 64KiB trim-at 16KiB trim-to 238B"))
	const n, size = 40, 2000
	var pkts [][]byte
	for i := range n {
		pkts = append(pkts, dataPacket(t, usid(0x201, 0x102, 0xe01), size, uint32(i)))
	}
	r.a.Send(pkts)
	got, _ := recv(t, r.b, n, 10*time.Second)
	cut := 0
	for _, g := range got {
		var p wire.Packet
		if err := p.Decode(g); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(g) == len(pkts[0]) {
			continue
		}
		cut++
		if len(g) != 238 || p.Trimmed || p.Len() != len(pkts[0]) || p.Outer.DSCP() != 48 || p.IP.DSCP() == 48 {
			t.Errorf("a %d-byte packet (length fields %d, outer DSCP %d, inner %d, trimmed %v), want cut to 238 bytes, lengths as sent, the outer DSCP 48 only",
				len(g), p.Len(), p.Outer.DSCP(), p.IP.DSCP(), p.Trimmed)
		}
	}
	if st := r.s.Stats(); cut == 0 || st.Trimmed != uint64(cut) {
		t.Errorf("%d packets cut, the switch trimmed %d", cut, st.Trimmed)
	}
}

// TestRateTrimECN sends a burst into a slow port: the serialiser spaces
// the packets at the port's rate, the queue trims what finds it past
// trim-at and marks CE (inner header too) past the ECN threshold.
func TestRateTrimECN(t *testing.T) {
	const rate = 100e6 // bit/s
	r := newRig(t, tableWith("rate 100M delay 5ms", "buffer 256KiB header 64KiB trim-at 32KiB ecn 8KiB 16KiB"))
	const n, size = 60, 2000
	var pkts [][]byte
	for i := range n {
		pkts = append(pkts, dataPacket(t, usid(0x201, 0x102, 0xe01), size, uint32(i)))
	}
	start := time.Now()
	r.a.Send(pkts)
	got, at := recv(t, r.b, n, 10*time.Second)
	trimmed, marked, inner := 0, 0, 0
	var whole int
	for _, g := range got {
		var p wire.Packet
		if err := p.Decode(g); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if p.Trimmed {
			trimmed++
			if p.Outer.DSCP() != 48 || p.IP.DSCP() != 48 {
				t.Errorf("trimmed packet DSCP outer %d inner %d, want 48", p.Outer.DSCP(), p.IP.DSCP())
			}
		} else {
			whole += len(g) + 38
			if p.Verify(g) != nil {
				t.Errorf("whole packet fails its checks: %v", p.Verify(g))
			}
		}
		if p.Outer.ECN() == wire.CE {
			marked++
			if p.IP.ECN() == wire.CE {
				inner++
			}
		}
	}
	// The delay: nothing before 5 ms.
	if first := at[0].Sub(start); first < 5*time.Millisecond {
		t.Errorf("first packet after %v, want at least the 5 ms delay", first)
	}
	// The rate: the whole packets took at least their serialisation time.
	span := at[len(at)-1].Sub(start) - 5*time.Millisecond
	want := time.Duration(float64(whole*8) / rate * float64(time.Second))
	if span < want*9/10 {
		t.Errorf("%d whole bytes on the wire in %v, want at least %v at 100 Mbit/s", whole, span, want)
	}
	st := r.s.Stats()
	t.Logf("%d trimmed, %d marked (%d inner), span %v (min %v); stats %+v", trimmed, marked, inner, span, want, st)
	if trimmed == 0 || st.Trimmed != uint64(trimmed) || marked == 0 || inner != marked || st.MarkedInner != uint64(inner) {
		t.Errorf("trimmed %d (switch %d), marked %d, inner %d (switch %d)", trimmed, st.Trimmed, marked, inner, st.MarkedInner)
	}
	// Metrics.
	rec := httptest.NewRecorder()
	r.s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`mrc_port_trims_total{node="t1",port="p1",plane="0"} ` + strconv.Itoa(trimmed),
		`mrc_switch_packets_total{node="t1",event="ecn_marked_inner"} ` + strconv.Itoa(inner),
		`mrc_switch_port_up{node="t1",port="p1",plane="0"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

// TestLinkDown takes a port's link down: the switch flushes its queue,
// counts what it cannot send, and forwards again once the link is back.
func TestLinkDown(t *testing.T) {
	r := newRig(t, tableWith("rate 10M", "buffer 1MiB"))
	r.pb.SetUp(false)
	deadline := time.Now().Add(5 * time.Second)
	for r.s.Stats().Ports[1].Up {
		if time.Now().After(deadline) {
			t.Fatal("the switch did not see the link go down")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.a.Send([][]byte{dataPacket(t, usid(0x201, 0x102, 0xe01), 1000, 1)})
	for r.s.Stats().Drops["link_down"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no link_down drop: %+v", r.s.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.pb.SetUp(true)
	for !r.s.Stats().Ports[1].Up {
		if time.Now().After(deadline) {
			t.Fatal("the switch did not see the link come back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.a.Send([][]byte{dataPacket(t, usid(0x201, 0x102, 0xe01), 1000, 2)})
	recv(t, r.b, 1, 5*time.Second)
}

func TestParseTableErrors(t *testing.T) {
	for _, tc := range []struct{ table, want string }{
		{"", "no ports"},
		{"port p0\n", "needs the switch's own uN address"},
		{"switch mode srv6 addr fcbb::\nport p0\nroute fcbb::/48 p9\n", ":3: no port \"p9\""},
		{"switch mode bogus\n", ":1: switch: mode \"bogus\""},
		{"switch mode ecmp\nport p0 rate fast\n", "bad rate"},
		{"switch mode ecmp\nport p0\nqueue ecn 9KiB 1KiB\n", "ECN thresholds"},
		{"switch mode ecmp\nport p0\nqueue ecn-k\n", "ecn-k needs a size"},
		{"switch mode ecmp\nport p0\nport p0\n", "listed twice"},
		{"frobnicate\n", "unknown directive"},
		{"switch mode ecmp\nport p0 peer zz\n", "want a MAC"},
	} {
		_, err := ParseTable(strings.NewReader(tc.table), "t")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.table, err, tc.want)
		}
	}
	tb, err := ParseTable(strings.NewReader(`switch name s mode ecmp seed 7
port a rate 2.5G delay 10us lasthop
port b
queue buffer 512KiB trim-at 64KiB ecn 16KiB 48KiB
queue port b buffer 1MiB ecn-k 30KiB trim-to 238B
route 2001:db8::/32 a b
default 1
`), "t")
	if err != nil {
		t.Fatal(err)
	}
	if tb.Ports[0].Rate != 2_500_000_000 || tb.Ports[0].Delay != 10*time.Microsecond || !tb.Ports[0].Queue.LastHop ||
		tb.Ports[1].Queue.Buffer != 1<<20 || !tb.Ports[1].Queue.Trim || tb.Ports[1].Queue.ECNK != 30<<10 || tb.Ports[0].Queue.ECNK != 0 || tb.Switch.Queue.TrimAt != 64<<10 ||
		tb.Ports[1].Queue.TrimTo != 238 || tb.Ports[0].Queue.TrimTo != 0 ||
		len(tb.Routes) != 1 || len(tb.Routes[0].Ports) != 2 || len(tb.Default) != 1 || tb.Default[0] != 1 {
		t.Errorf("table %+v", tb)
	}
}

// TestECMPAndTailDrop: in ECMP mode a route's next-hop group spreads
// flows (flow labels) over its ports; without trimming, a full data queue
// tail-drops.
func TestECMPAndTailDrop(t *testing.T) {
	goroutineLeakCheck(t)
	tb, err := ParseTable(strings.NewReader(`switch name leaf mode ecmp seed 3
port in
port a rate 10M
port b rate 10M
queue buffer 16KiB
route fcbb:bb00:102::/48 a b
`), "ecmp.table")
	if err != nil {
		t.Fatal(err)
	}
	pin, tin := NewPipe(4096)
	pa, ta := NewPipe(4096)
	pb, tb2 := NewPipe(4096)
	s, err := New(tb, []Link{pin, pa, pb})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var pkts [][]byte
	for i := range 64 {
		p := dataPacket(t, usid(0x102, 0xe01), 1000, uint32(i))
		p[1], p[2], p[3] = p[1]&0xf0, byte(i*37), byte(i*101) // vary the outer flow label
		pkts = append(pkts, p)
	}
	tin.Send(pkts)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		if st.Sent+st.Drops["queue_full"] == 64 {
			t.Logf("sent %d (port a %d, port b %d), tail-dropped %d", st.Sent, st.Ports[1].TxPackets, st.Ports[2].TxPackets, st.Drops["queue_full"])
			if st.Ports[1].TxPackets == 0 || st.Ports[2].TxPackets == 0 {
				t.Errorf("ECMP used one port only: %+v", st.Ports)
			}
			if st.Drops["queue_full"] == 0 || st.Trimmed != 0 {
				t.Errorf("a 16 KiB queue at 10 Mbit/s took 64 KB at once: %d tail drops, %d trims", st.Drops["queue_full"], st.Trimmed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, _ = ta, tb2
}
