package roce

import (
	"math"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

const line = 100e9

func at(d time.Duration) mtime.Time { return mtime.Time(d) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1 }

// TestDCQCNCut checks the cut on a CNP (paper eq. 1): the target takes
// the current rate, the rate is cut by alpha/2 using alpha from before the
// CNP, and alpha moves towards 1.
func TestDCQCNCut(t *testing.T) {
	c := DCQCNPaper
	d := NewDCQCN(c, line, 0)
	if d.Rate(0) != line || d.Alpha(0) != 1 {
		t.Fatalf("start: rate %d alpha %v", d.Rate(0), d.Alpha(0))
	}
	// Before any CNP alpha does not decay: the first cut halves.
	now := at(time.Millisecond)
	if !d.OnCNP(now) {
		t.Fatal("first CNP did not cut")
	}
	if d.Rate(now) != line/2 || d.Target(now) != line {
		t.Fatalf("after the first CNP: rate %d target %d", d.Rate(now), d.Target(now))
	}
	if a := d.Alpha(now); a != 1 { // (1-g)·1 + g
		t.Fatalf("alpha %v", a)
	}
	// A second CNP 3K later: alpha has decayed three times, then cuts.
	now2 := now.Add(3*c.AlphaPeriod + time.Microsecond)
	alpha := math.Pow(1-c.G, 3)
	if a := d.Alpha(now2); !near(a, alpha) {
		t.Fatalf("alpha after 3K: %v, want %v", a, alpha)
	}
	rc := float64(d.Rate(now2)) // the timer has raised it meanwhile
	d.OnCNP(now2)
	if got, want := float64(d.Rate(now2)), rc*(1-alpha/2); !near(got, want) {
		t.Fatalf("second cut: rate %v, want %v", got, want)
	}
	if got := float64(d.Target(now2)); !near(got, rc) {
		t.Fatalf("target %v, want the rate before the cut %v", got, rc)
	}
	if got, want := d.Alpha(now2), (1-c.G)*alpha+c.G; !near(got, want) {
		t.Fatalf("alpha after the CNP %v, want %v", got, want)
	}
	if d.Cuts() != 2 {
		t.Fatalf("%d cuts", d.Cuts())
	}
}

// TestDCQCNAlphaConverges feeds one CNP per K and checks alpha's fixed
// point and its decay without CNPs.
func TestDCQCNAlphaConverges(t *testing.T) {
	c := DCQCNPaper
	c.InitialAlpha = 0.5
	d := NewDCQCN(c, line, 0)
	now := mtime.Time(0)
	for range 4000 {
		now = now.Add(c.AlphaPeriod / 2)
		d.OnCNP(now)
	}
	a0 := d.Alpha(now)
	if a0 < 0.999 {
		t.Fatalf("alpha under constant CNPs: %v", a0)
	}
	later := now.Add(100 * c.AlphaPeriod)
	if got, want := d.Alpha(later), a0*math.Pow(1-c.G, 100); !near(got, want) {
		t.Fatalf("alpha after 100 K without CNPs: %v, want %v", got, want)
	}
}

// TestDCQCNRecoveryStages walks the timer through fast recovery (F steps
// halving the gap to the target), additive increase (target + R_AI), and
// checks hyper increase once the byte counter has also passed F.
func TestDCQCNRecoveryStages(t *testing.T) {
	c := DCQCNPaper
	d := NewDCQCN(c, line, 0)
	d.OnCNP(0) // rate 50G, target 100G
	rc, rt := float64(line/2), float64(line)
	for i := 1; i <= c.Threshold; i++ {
		now := at(time.Duration(i) * c.RateTimer)
		rc = (rt + rc) / 2
		if got := float64(d.Rate(now)); !near(got, rc) || d.Target(now) != line {
			t.Fatalf("fast recovery step %d: rate %v target %d, want %v %v", i, got, d.Target(now), rc, rt)
		}
		if ts, _ := d.Stages(); ts != i {
			t.Fatalf("timer stage %d, want %d", ts, i)
		}
	}
	// Cut again from below line so that additive increase has room.
	now := at(time.Duration(c.Threshold) * c.RateTimer)
	d = NewDCQCN(c, line, 0)
	d.OnCNP(0)
	d.OnCNP(at(time.Nanosecond)) // alpha ~1: rate 25G, target 50G
	rc, rt = float64(d.Rate(1)), float64(d.Target(1))
	for i := 1; i <= c.Threshold+3; i++ {
		now = at(time.Nanosecond).Add(time.Duration(i) * c.RateTimer)
		if i > c.Threshold {
			rt += float64(c.AIRate)
		}
		rc = (rt + rc) / 2
		if got, tg := float64(d.Rate(now)), float64(d.Target(now)); !near(got, rc) || !near(tg, rt) {
			t.Fatalf("step %d: rate %v target %v, want %v %v", i, got, tg, rc, rt)
		}
	}
	// The byte counter: F+1 chunks of B bytes push it past F too, and
	// the next increase is hyper.
	for range c.Threshold + 1 {
		d.OnSent(now, int(c.ByteCounter))
	}
	ts, bs := d.Stages()
	if bs != c.Threshold+1 || ts != c.Threshold+3 {
		t.Fatalf("stages %d/%d", ts, bs)
	}
	before := float64(d.Target(now))
	d.OnSent(now, int(c.ByteCounter))
	if got := float64(d.Target(now)); !near(got, min(before+float64(c.HAIRate), line)) {
		t.Fatalf("hyper increase: target %v, want %v", got, before+float64(c.HAIRate))
	}
}

// TestDCQCNRecoversToLine checks that without CNPs the rate returns to
// line rate and the timer stops, and the floor holds under many CNPs.
func TestDCQCNRecoversToLine(t *testing.T) {
	c := DCQCNPaper
	d := NewDCQCN(c, line, 0)
	for i := range 200 {
		d.OnCNP(at(time.Duration(i) * time.Nanosecond))
	}
	if r := d.Rate(200); r != c.MinRate {
		t.Fatalf("rate after 200 CNPs %d, want the floor %d", r, c.MinRate)
	}
	if d.NextIncrease() != at(199*time.Nanosecond).Add(c.RateTimer) {
		t.Fatalf("next increase %v", d.NextIncrease())
	}
	late := at(2 * time.Second)
	if r := d.Rate(late); r != line || d.NextIncrease() != mtime.Never {
		t.Fatalf("after 2 s: rate %d, next increase %v", r, d.NextIncrease())
	}
}

// TestDCQCNHoldoff checks NVIDIA's rate_reduce_monitor_period: CNPs within
// it update alpha but do not cut.
func TestDCQCNHoldoff(t *testing.T) {
	c := DCQCNNVIDIA
	d := NewDCQCN(c, line, 0)
	d.OnCNP(0)
	r := d.Rate(0)
	if d.OnCNP(at(time.Microsecond)) || d.Rate(at(time.Microsecond)) != r {
		t.Fatal("a CNP within the holdoff cut the rate")
	}
	if !d.OnCNP(at(c.CutHoldoff)) || d.Rate(at(c.CutHoldoff)) >= r {
		t.Fatal("a CNP after the holdoff did not cut")
	}
}

// TestNotificationPointRateLimit feeds a responder CE-marked packets
// every microsecond: it sends a CNP at the first and then at most one per
// CNP interval, and none with congestion control off.
func TestNotificationPointRateLimit(t *testing.T) {
	for _, cc := range []CCMode{CCDCQCN, CCNone} {
		n := newTnet(t, tnetConfig{Seed: 1, CC: cc})
		qa, qb := n.connect(0, 1, ConnectAttr{}, ConnectAttr{})
		src, _ := n.eps[0].RegisterPhantom(1 << 20)
		dst, _ := n.eps[1].RegisterPhantom(1 << 20)
		// Capture A's packets instead of delivering them.
		var pkts [][]byte
		var wl []int
		for i := range 600 {
			if err := qa.PostWrite(0, verbs.WriteRequest{ID: uint64(i), Local: src, Remote: dst, Length: 1024}); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 9000)
		for now := mtime.Time(0); len(pkts) < 600; now += 10 {
			tx, ok := n.eps[0].PollTransmit(now, 1, buf)
			if ok {
				b := append([]byte(nil), buf[:tx.Len]...)
				if !wire.MarkCE(b) {
					t.Fatal("a data packet is not ECN-capable")
				}
				pkts, wl = append(pkts, b), append(wl, tx.WireLen)
			}
		}
		var cnps []mtime.Time
		for i, p := range pkts {
			now := at(time.Duration(i) * time.Microsecond)
			n.eps[1].HandleDatagram(now, 0, p, wl[i])
			for {
				tx, ok := n.eps[1].PollTransmit(now, 1, buf)
				if !ok {
					break
				}
				if tx.Kind == KindCNP {
					var d Packet
					if err := d.Decode(buf[:tx.Len]); err != nil || d.Verify(buf[:tx.Len]) != nil ||
						d.BTH.DestQP != qa.QPN() || d.IP.DSCP() != 48 || d.BTH.Resv8a != becn {
						t.Fatalf("bad CNP %+v: %v", d, err)
					}
					cnps = append(cnps, now)
				}
			}
		}
		s := qb.Stats()
		if cc == CCNone {
			if len(cnps) != 0 || s.CEReceived != 600 {
				t.Fatalf("no CC: %d CNPs, %d CE", len(cnps), s.CEReceived)
			}
			continue
		}
		// 600 µs of marks at one CNP per 50 µs: at 0, 50, …, 550.
		if len(cnps) != 12 || cnps[0] != 0 || s.CNPsSent != 12 || s.CNPsSuppressed != 600-12 {
			t.Fatalf("%d CNPs at %v (stats %d sent, %d suppressed)", len(cnps), cnps, s.CNPsSent, s.CNPsSuppressed)
		}
		for i := 1; i < len(cnps); i++ {
			if cnps[i].Sub(cnps[i-1]) < DCQCNPaper.CNPInterval {
				t.Fatalf("CNPs %v apart", cnps[i].Sub(cnps[i-1]))
			}
		}
	}
}

// TestPacer cuts a QP's rate with CNPs and checks that PollTransmit holds
// data back until the pacer allows, that NextTimeout names that instant,
// and that the packets go at the cut rate.
func TestPacer(t *testing.T) {
	// Freeze the increases so that the rate stays where the cuts put it.
	n := newTnet(t, tnetConfig{Seed: 1, DCQCN: DCQCNConfig{RateTimer: time.Hour, ByteCounter: 1 << 50}})
	qa, _ := n.connect(0, 1, ConnectAttr{}, ConnectAttr{})
	ep := n.eps[0]
	src, _ := ep.RegisterPhantom(1 << 30)
	if err := qa.PostWrite(0, verbs.WriteRequest{Local: src, Remote: verbs.MR{Key: 1, Addr: 1 << 32, Len: 1 << 30}, Length: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	// Two CNPs: alpha 1 cuts to 50G, then ~25G.
	qa.onCNP(0)
	qa.onCNP(1)
	rate := qa.Rate(1)
	if rate < 24e9 || rate > 26e9 {
		t.Fatalf("rate %d", rate)
	}
	buf := make([]byte, 9000)
	now := mtime.Time(1)
	var sent []mtime.Time
	var bits, last int64
	for len(sent) < 100 {
		tx, ok := ep.PollTransmit(now, 1, buf)
		if !ok {
			next := ep.NextTimeout()
			if next <= now {
				t.Fatalf("nothing to send at %v and next timeout %v", now, next)
			}
			// Just before next the pacer must still say no.
			if _, ok := ep.PollTransmit(next-1, 1, buf); ok {
				t.Fatalf("sent at %v before the pacer's %v", next-1, next)
			}
			now = next
			ep.HandleTimeout(now)
			continue
		}
		sent = append(sent, now)
		last = int64(tx.WireLen) * 8
		bits += last
	}
	// 99 gaps, each the packet before it at the rate, to the nanosecond.
	span := sent[len(sent)-1].Sub(sent[0])
	got := float64(bits-last) / span.Seconds()
	if got < float64(rate)*0.999 || got > float64(rate)*1.001 {
		t.Fatalf("paced at %.3g b/s, want about %d", got, rate)
	}
}
