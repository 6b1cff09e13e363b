package cc

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// The unit tests use a network whose UET scaling factors come out round:
// 100 Gb/s × 12 µs is exactly the reference network, so scaling_a = 1.
//
//	BDP         = 100e9/8 B/s × 12e-6 s         = 150,000 B
//	max_cwnd    = 1.5 × BDP                     = 225,000 B
//	target      = 0.75 × 12 µs                  = 9 µs
//	scaling_b   = 9 µs / 12 µs                  = 0.75
//	alpha       = 4 × 3000 × 1 × 0.75 / 9 µs    = 1e9 /s = 1 /ns
//	fi          = 5 × 3000 × 1                  = 15,000 B
//	eta         = 0.15 × 3000 × 1               = 450 B
//	fi_scale    = 0.25 × 1                      = 0.25
//	qa gate     = 225,000 >> 3                  = 28,125 B
const (
	tMTU  = 3000
	tBase = 12 * time.Microsecond
)

func testConfig() NSCCConfig {
	return NSCCConfig{MTU: tMTU, LinkBitsPerSec: 100e9, BaseRTT: tBase}
}

// quietConfig starts at 60,000 B and applies every accumulated increase on
// the ACK that earns it (AdjustBytesThreshold 1), with eta and fast
// increase off, so one ACK's effect can be computed by hand.
func quietConfig() NSCCConfig {
	c := testConfig()
	c.InitialCwndBytes = 60000
	c.AdjustBytesThreshold = 1
	c.EtaBytes = -1
	c.FastIncreaseDelay = -1
	return c
}

func us(n float64) time.Duration { return time.Duration(n * float64(time.Microsecond)) }
func at(n float64) mtime.Time    { return mtime.Time(us(n)) }

// ack is a SACK for one MTU with the given queueing delay.
func ack(delay time.Duration, ecn bool) Ack {
	return Ack{NewlyAcked: tMTU, Inflight: 30000, RTT: tBase + delay, ECN: ecn}
}

func wantWindow(t *testing.T, n *NSCC, want int) {
	t.Helper()
	if got := n.Window(); got != want {
		t.Fatalf("Window() = %d, want %d (stats %+v)", got, want, n.Stats())
	}
}

func TestNSCCDefaults(t *testing.T) {
	c := testConfig().WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := NSCCConfig{
		MTU: tMTU, LinkBitsPerSec: 100e9, BaseRTT: tBase,
		TargetDelay:           9 * time.Microsecond,
		MaxCwndBytes:          225000,
		InitialCwndBytes:      225000,
		MinCwndBytes:          tMTU,
		MinPacedCwndBytes:     tMTU / 16,
		Gamma:                 0.8,
		MaxMDJump:             0.5,
		FIBytes:               15000,
		EtaBytes:              450,
		FIScale:               0.25,
		FastIncreaseDelay:     time.Microsecond,
		AdjustBytesThreshold:  24000,
		AdjustPeriodThreshold: tBase,
		QAGate:                3,
		QAThreshold:           time.Duration(math.MaxInt64),
		DelayEWMA:             0.0125,
	}
	if !approxConfig(c, want) {
		t.Fatalf("WithDefaults:\n got %+v\nwant %+v", c, want)
	}
	if got := c.Alpha(); math.Abs(got-1e9) > 1e-3 {
		t.Errorf("Alpha() = %v, want 1e9", got)
	}
	if again := c.WithDefaults(); again != c {
		t.Errorf("WithDefaults is not idempotent:\n%+v\n%+v", c, again)
	}

	// Without trimming: target = base RTT, qa_threshold = 4 × target.
	nt := testConfig()
	nt.NoTrimming = true
	nt = nt.WithDefaults()
	if nt.TargetDelay != tBase || nt.QAThreshold != 4*tBase {
		t.Errorf("NoTrimming: target %v qa_threshold %v, want %v and %v", nt.TargetDelay, nt.QAThreshold, tBase, 4*tBase)
	}

	// "Negative means zero" fields survive WithDefaults.
	neg := testConfig()
	neg.EtaBytes, neg.FIBytes, neg.FIScale, neg.QAGate = -1, -1, -1, -1
	neg = neg.WithDefaults()
	if neg.EtaBytes != -1 || neg.FIBytes != -1 || neg.FIScale != -1 || neg.QAGate != -1 {
		t.Errorf("negative fields were overwritten: %+v", neg)
	}
}

// approxConfig compares configs, allowing rounding in the derived floats.
func approxConfig(a, b NSCCConfig) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	if !near(a.FIBytes, b.FIBytes) || !near(a.EtaBytes, b.EtaBytes) || !near(a.FIScale, b.FIScale) {
		return false
	}
	a.FIBytes, a.EtaBytes, a.FIScale = b.FIBytes, b.EtaBytes, b.FIScale
	return a == b
}

func TestNSCCValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*NSCCConfig)
	}{
		{"zero MTU", func(c *NSCCConfig) { c.MTU = 0 }},
		{"negative MTU", func(c *NSCCConfig) { c.MTU = -1 }},
		{"zero link", func(c *NSCCConfig) { c.LinkBitsPerSec = 0 }},
		{"zero base RTT", func(c *NSCCConfig) { c.BaseRTT = 0 }},
		{"negative target", func(c *NSCCConfig) { c.TargetDelay = -1 }},
		{"min below MTU", func(c *NSCCConfig) { c.MinCwndBytes = tMTU - 1 }},
		{"max below min", func(c *NSCCConfig) { c.MaxCwndBytes = 2 * tMTU; c.MinCwndBytes = 3 * tMTU }},
		{"initial above max", func(c *NSCCConfig) { c.InitialCwndBytes = 300000 }},
		{"gamma above 1", func(c *NSCCConfig) { c.Gamma = 1.5 }},
		{"negative gamma", func(c *NSCCConfig) { c.Gamma = -0.1 }},
		{"md jump above 1", func(c *NSCCConfig) { c.MaxMDJump = 2 }},
		{"NaN fi", func(c *NSCCConfig) { c.FIBytes = math.NaN() }},
		{"negative adjust bytes", func(c *NSCCConfig) { c.AdjustBytesThreshold = -1 }},
		{"negative adjust period", func(c *NSCCConfig) { c.AdjustPeriodThreshold = -1 }},
		{"qa gate above u8", func(c *NSCCConfig) { c.QAGate = 256 }},
		{"negative qa threshold", func(c *NSCCConfig) { c.QAThreshold = -1 }},
		{"ewma above 1", func(c *NSCCConfig) { c.DelayEWMA = 1.01 }},
	} {
		c := testConfig()
		tc.edit(&c)
		err := c.WithDefaults().Validate()
		if !errors.Is(err, ErrNSCCConfig) {
			t.Errorf("%s: Validate() = %v, want an ErrNSCCConfig", tc.name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewNSCC accepted an invalid config")
		}
	}()
	NewNSCC(NSCCConfig{}, 0)
}

// No ECN, delay 3 µs < target 9 µs: proportional increase.
//
//	inc_bytes = alpha × nrb × (target − delay) = 1/ns × 3000 × 6000 ns = 18e6
//	cwnd     += inc_bytes / cwnd               = 18e6 / 60000          = 300
func TestNSCCProportionalIncrease(t *testing.T) {
	n := NewNSCC(quietConfig(), 0)
	n.OnAck(at(1), ack(us(3), false))
	wantWindow(t, n, 60300)
	if s := n.Stats(); s.ProportionalIncreases != 1 || s.Adjustments != 1 {
		t.Errorf("stats %+v", s)
	}
}

// No ECN, delay 9 µs = target: fair increase.
//
//	inc_bytes = fi × nrb = 15000 × 3000 = 45e6
//	cwnd     += 45e6 / 60000            = 750
func TestNSCCFairIncrease(t *testing.T) {
	n := NewNSCC(quietConfig(), 0)
	n.OnAck(at(1), ack(us(9), false))
	wantWindow(t, n, 60750)
	if s := n.Stats(); s.FairIncreases != 1 || s.ProportionalIncreases != 0 {
		t.Errorf("stats %+v", s)
	}
}

// ECN with delay below target: the window does not move.
func TestNSCCECNLowDelayNoChange(t *testing.T) {
	n := NewNSCC(quietConfig(), 0)
	n.OnAck(at(20), ack(us(3), true))
	wantWindow(t, n, 60000)
	if s := n.Stats(); s.ECNNoChange != 1 || s.MultiplicativeDecreases != 0 {
		t.Errorf("stats %+v", s)
	}
}

// ECN with delay ≥ target: multiplicative decrease from the average delay,
// at most once per base RTT (12 µs), floored at max_md_jump and at MTU
// (UET's floor, with windows below one packet turned off; with them, at
// MinPacedCwndBytes). DelayEWMA 1 makes the average the last sample.
func TestNSCCMultiplicativeDecrease(t *testing.T) {
	c := quietConfig()
	c.DelayEWMA = 1
	c.MinPacedCwndBytes = -1
	n := NewNSCC(c, 0)

	// Within one base RTT of creation: suppressed.
	n.OnAck(at(12), ack(us(18), true))
	wantWindow(t, n, 60000)

	// avg 18 µs: factor = 1 − 0.8 × (18 − 9)/18 = 0.6; 60000 × 0.6 = 36000.
	n.OnAck(at(13), ack(us(18), true))
	wantWindow(t, n, 36000)

	// 12 µs after the decrease is not more than a base RTT: suppressed.
	n.OnAck(at(20), ack(us(18), true))
	n.OnAck(at(25), ack(us(18), true))
	wantWindow(t, n, 36000)

	// avg 90 µs: 1 − 0.8 × 81/90 = 0.28, floored at max_md_jump 0.5.
	n.OnAck(at(25.001), ack(us(90), true))
	wantWindow(t, n, 18000)

	// Repeated halvings stop at one MTU.
	for i := range 10 {
		n.OnAck(at(40+13*float64(i)), ack(us(90), true))
	}
	wantWindow(t, n, tMTU)
	// 2 decreases above, then 18000→9000→4500→3000 and 7 more at the floor.
	if got := n.Stats().MultiplicativeDecreases; got != 12 {
		t.Errorf("MultiplicativeDecreases = %d, want 12", got)
	}

	// Below one packet the same halvings go on to the paced floor:
	// 18000 → … → 2250 → 1125 → 562.5 → 281.25 → 187.
	c.MinPacedCwndBytes = 0
	n = NewNSCC(c, 0)
	n.OnAck(at(13), ack(us(90), true))
	for i := range 10 {
		n.OnAck(at(40+13*float64(i)), ack(us(90), true))
	}
	wantWindow(t, n, tMTU/16)
}

// The decrease uses the EWMA, not the packet's delay: one 18 µs sample
// moves the default average only to 0.0125 × 18 µs = 225 ns < target.
func TestNSCCDecreaseUsesAverageDelay(t *testing.T) {
	c := quietConfig()
	n := NewNSCC(c, 0)
	n.OnAck(at(13), ack(us(18), true))
	wantWindow(t, n, 60000)
	if got := n.Stats().AvgDelay; got != 225*time.Nanosecond {
		t.Errorf("AvgDelay = %v, want 225ns", got)
	}
	// Second sample: 225 + 0.0125 × (18000 − 225) = 447.1875 ns.
	n.OnAck(at(14), ack(us(18), true))
	if got := n.Stats().AvgDelay; got != 447*time.Nanosecond {
		t.Errorf("AvgDelay = %v, want 447ns", got)
	}
}

// Fast increase: once more than a window of ACKs arrive at delay below
// FastIncreaseDelay (1 µs), every such ACK adds nrb × fi_scale directly.
func TestNSCCFastIncrease(t *testing.T) {
	c := testConfig()
	c.InitialCwndBytes = 6000
	c.AdjustBytesThreshold = 1 << 40 // never fulfill: only fast increase moves cwnd
	c.AdjustPeriodThreshold = time.Second
	n := NewNSCC(c, 0)
	n.OnAck(at(1), ack(0, false)) // fi_count 3000
	n.OnAck(at(2), ack(0, false)) // fi_count 6000, not > cwnd 6000
	wantWindow(t, n, 6000)
	n.OnAck(at(3), ack(0, false)) // 9000 > 6000: cwnd = 6000 + 3000 × 0.25
	wantWindow(t, n, 6750)
	n.OnAck(at(4), ack(0, false)) // in increase mode: + 750
	wantWindow(t, n, 7500)
	if !n.Stats().FastIncrease {
		t.Error("not in fast-increase mode")
	}
	// A 2 µs delay ends fast increase and goes back to proportional.
	n.OnAck(at(5), ack(us(2), false))
	wantWindow(t, n, 7500)
	s := n.Stats()
	if s.FastIncrease || s.FastIncreases != 2 || s.ProportionalIncreases != 3 {
		t.Errorf("stats %+v", s)
	}
}

// fulfill_adjustment runs when more than adjust_bytes_threshold bytes were
// acked or adjust_period_threshold passed; eta comes only with the period.
func TestNSCCFulfillAdjustment(t *testing.T) {
	c := testConfig()
	c.InitialCwndBytes = 60000
	c.AdjustBytesThreshold = 6000
	c.FastIncreaseDelay = -1
	n := NewNSCC(c, 0)
	// Each ACK at delay 0: inc_bytes += 1 × 3000 × 9000 = 27e6.
	n.OnAck(at(1), ack(0, false)) // received 3000
	n.OnAck(at(2), ack(0, false)) // received 6000, not > 6000
	wantWindow(t, n, 60000)
	n.OnAck(at(3), ack(0, false)) // 9000 > 6000: cwnd += 81e6/60000 = 1350
	wantWindow(t, n, 61350)
	// At 12 µs the period (12 µs) has passed: cwnd += 27e6/61350 + eta
	// = 61350 + 440.098 + 450 = 62240.098.
	n.OnAck(at(12), ack(0, false))
	wantWindow(t, n, 62240)
	if s := n.Stats(); s.Adjustments != 2 {
		t.Errorf("Adjustments = %d, want 2", s.Adjustments)
	}
}

// Increases stop at max_cwnd (225,000) and every reduction at one MTU.
func TestNSCCBounds(t *testing.T) {
	c := testConfig()
	c.AdjustBytesThreshold = 1
	n := NewNSCC(c, 0)
	for i := range 100 {
		n.OnAck(at(float64(i)), ack(0, false))
	}
	wantWindow(t, n, 225000)

	c = testConfig()
	c.InitialCwndBytes = 2 * tMTU
	c.DisableQA = true
	n = NewNSCC(c, 0)
	n.OnNack(at(1), Nack{Bytes: tMTU})
	wantWindow(t, n, tMTU)
	n.OnNack(at(2), Nack{Bytes: tMTU})
	n.OnLoss(at(3), tMTU)
	wantWindow(t, n, tMTU)
}

// A smaller RTT sample lowers the base RTT and scales max_cwnd with it:
// 225,000 × 8/12 = 150,000; the window follows it down.
func TestNSCCBaseRTTTracking(t *testing.T) {
	n := NewNSCC(testConfig(), 0)
	n.OnAck(at(1), Ack{NewlyAcked: tMTU, RTT: us(8)})
	s := n.Stats()
	if s.BaseRTT != us(8) || s.MaxCwndBytes != 150000 || s.CwndBytes != 150000 {
		t.Errorf("stats %+v", s)
	}
	n.OnAck(at(2), Ack{NewlyAcked: tMTU, RTT: us(20)})
	if got := n.Stats().BaseRTT; got != us(8) {
		t.Errorf("BaseRTT rose to %v", got)
	}

	// A base-RTT probe's reply reaches the controller as a SACK that
	// acknowledges nothing: it lowers the base RTT but increases nothing.
	n = NewNSCC(quietConfig(), 0)
	n.OnAck(at(1), Ack{Inflight: 30000, RTT: us(11)})
	s = n.Stats()
	if s.BaseRTT != us(11) || s.CwndBytes != 60000 || s.ProportionalIncreases != 0 {
		t.Errorf("probe: stats %+v", s)
	}
}

// A SACK without an RTT sample changes nothing but the counters.
func TestNSCCInvalidRTT(t *testing.T) {
	n := NewNSCC(quietConfig(), 0)
	n.OnAck(at(20), Ack{NewlyAcked: tMTU, ECN: true})
	wantWindow(t, n, 60000)
	if s := n.Stats(); s.Adjustments != 0 || s.ECNNoChange != 0 {
		t.Errorf("stats %+v", s)
	}
}

// Trims: the first one falls inside the quick-adapt window and costs a
// packet; the next ACK after the window (base_rtt + target = 21 µs) finds
// the trigger set and few bytes achieved, and quick adapt sets the window
// to them. Until inflight bytes have been acked after that, ECN and trims
// are ignored.
func TestNSCCTrimAndQuickAdapt(t *testing.T) {
	n := NewNSCC(testConfig(), 0)
	n.OnAck(at(1), ack(0, false)) // arms the window: ends at 1 + 12 + 9 = 22 µs
	wantWindow(t, n, 225000)
	n.OnAck(at(5), ack(0, false)) // achieved 3000
	n.OnNack(at(10), Nack{Bytes: tMTU, Inflight: 90000})
	wantWindow(t, n, 222000) // 225000 − 3000; quick adapt waits for the window
	// The trim is a delay sample of one configured base RTT:
	// avg = 0.0125 × 12 µs = 150 ns (the ACKs so far had zero delay).
	if got := n.Stats().AvgDelay; got != 150*time.Nanosecond {
		t.Errorf("AvgDelay after a trim = %v, want 150ns", got)
	}
	n.OnAck(at(22), Ack{NewlyAcked: tMTU, Inflight: 90000, RTT: tBase})
	// achieved 6000 < 225000 >> 3 = 28125: cwnd = 6000.
	wantWindow(t, n, 6000)
	if got := n.Stats().QuickAdapts; got != 1 {
		t.Fatalf("QuickAdapts = %d, want 1", got)
	}

	// The next 90000 bytes are old news: ECN does not decrease, trims do
	// not cost a packet.
	n.OnAck(at(40), Ack{NewlyAcked: tMTU, Inflight: 80000, RTT: tBase + us(30), ECN: true})
	n.OnNack(at(41), Nack{Bytes: tMTU, LastHop: true})
	wantWindow(t, n, 6000)
	s := n.Stats()
	if s.ECNIgnored != 2 || s.MultiplicativeDecreases != 0 || s.Trims != 1 || s.LastHopTrims != 1 {
		t.Errorf("stats %+v", s)
	}
}

// Quick adapt fires at most once per base_rtt + target window; outside the
// ignore phase a loss in the window costs one packet instead.
func TestNSCCQuickAdaptOncePerWindow(t *testing.T) {
	n := NewNSCC(testConfig(), 0)
	n.OnAck(at(0), ack(0, false))  // arms the window: ends at 21 µs
	n.OnAck(at(10), ack(0, false)) // achieved 3000
	n.OnLoss(at(21), tMTU)         // window over and a loss: quick adapt
	wantWindow(t, n, 3000)         // max(achieved 3000, MTU)
	n.OnAck(at(22), ack(0, false)) // next window ends at 42 µs
	n.OnLoss(at(30), tMTU)         // inside it: costs a packet, no quick adapt
	if got := n.Stats().QuickAdapts; got != 1 {
		t.Fatalf("QuickAdapts = %d, want 1", got)
	}
	n.OnLoss(at(42), tMTU) // new window: fires again
	if got := n.Stats().QuickAdapts; got != 2 {
		t.Fatalf("QuickAdapts = %d, want 2", got)
	}
}

// Quick adapt never raises the window: with 9000 bytes achieved and a
// 6000-byte window, a quick adapt leaves 6000 (UET's max(achieved, MTU)
// would raise it to 9000).
func TestNSCCQuickAdaptNeverRaises(t *testing.T) {
	c := testConfig()
	c.InitialCwndBytes = 6000
	c.FastIncreaseDelay = -1
	n := NewNSCC(c, 0)
	for i := range 4 { // the first arms the window (to 21 µs); 9000 achieved
		n.OnAck(at(float64(i)), ack(us(2), false))
	}
	wantWindow(t, n, 6000)
	n.OnNack(at(21), Nack{Bytes: tMTU})
	wantWindow(t, n, 6000) // quick adapt fired, so no packet is taken either
	if got := n.Stats().QuickAdapts; got != 1 {
		t.Fatalf("QuickAdapts = %d, want 1", got)
	}
}

// Quick adapt is gated: when the bytes achieved in the window are not
// below max_cwnd >> qa_gate, a trim costs one packet and nothing more.
func TestNSCCQuickAdaptGate(t *testing.T) {
	n := NewNSCC(testConfig(), 0)
	n.OnAck(at(0), ack(0, false))
	for i := range 10 { // achieved 30000 ≥ 28125
		n.OnAck(at(float64(1+i)), ack(0, false))
	}
	n.OnNack(at(21), Nack{Bytes: tMTU})
	wantWindow(t, n, 222000)
	if got := n.Stats().QuickAdapts; got != 0 {
		t.Fatalf("QuickAdapts = %d, want 0", got)
	}

	c := testConfig()
	c.DisableQA = true
	n = NewNSCC(c, 0)
	n.OnAck(at(0), ack(0, false))
	n.OnNack(at(5), Nack{Bytes: tMTU})
	n.OnAck(at(30), ack(0, false))
	if got := n.Stats().QuickAdapts; got != 0 {
		t.Fatalf("DisableQA: QuickAdapts = %d", got)
	}
}

// Without trimming, a delay above qa_threshold (4 × 12 µs) triggers quick
// adapt by itself.
func TestNSCCQuickAdaptOnDelay(t *testing.T) {
	c := testConfig()
	c.NoTrimming = true
	n := NewNSCC(c, 0)
	n.OnAck(at(0), ack(0, false)) // window ends at 24 µs (target = 12 µs)
	n.OnAck(at(24), ack(us(48), false))
	if got := n.Stats().QuickAdapts; got != 0 {
		t.Fatalf("delay = threshold fired quick adapt")
	}
	n.OnAck(at(50), ack(us(49), false))
	if s := n.Stats(); s.QuickAdapts != 1 || s.CwndBytes != tMTU { // achieved 3000
		t.Fatalf("stats %+v", s)
	}
}

// Responder flow control: a penalty of 64 on every SACK for one RTT halves
// a full window; r_c restores it.
//
// cwnd 150,000 = 50 packets in flight. The first penalized SACK clamps the
// window to the 150,000 bytes in flight before it; every SACK then takes
// (64 × 3000) >> 7 = 1500 bytes; the 50 SACKs of the RTT take 75,000.
func TestNSCCResponderPenalty(t *testing.T) {
	c := testConfig()
	c.InitialCwndBytes = 150000
	c.EtaBytes = -1
	n := NewNSCC(c, 0)
	inflight := 0
	send := func(now mtime.Time) int {
		sent := 0
		for inflight+tMTU <= n.Window() {
			n.OnSent(now, tMTU, false)
			inflight += tMTU
			sent++
		}
		return sent
	}
	send(0)
	if inflight != 150000 {
		t.Fatalf("inflight %d", inflight)
	}
	sentDuring := 0
	for i := range 50 {
		now := at(12 + 0.2*float64(i))
		inflight -= tMTU
		n.OnAck(now, Ack{NewlyAcked: tMTU, Inflight: inflight, RTT: tBase, RcvCwndPen: 64})
		sentDuring += send(now)
	}
	wantWindow(t, n, 75000)
	s := n.Stats()
	if s.SavedCwndBytes != 150000 || s.PenalizedAcks != 50 || sentDuring == 0 {
		t.Errorf("stats %+v, sent %d during the RTT", s, sentDuring)
	}

	// The penalty ends without r_c: nothing is restored.
	n.OnAck(at(30), Ack{NewlyAcked: tMTU, Inflight: inflight, RTT: tBase + us(9)})
	if n.Window() > 80000 {
		t.Fatalf("window jumped to %d without r_c", n.Window())
	}
	// r_c restores the saved window.
	n.OnAck(at(31), Ack{NewlyAcked: tMTU, Inflight: inflight, RTT: tBase + us(9), RestoreCwnd: true})
	if got := n.Window(); got < 150000 || got > 151000 { // plus at most one fair increase
		t.Fatalf("after restore Window() = %d, want ≈150000", got)
	}
	if s := n.Stats(); s.Restores != 1 || s.SavedCwndBytes != 0 {
		t.Errorf("stats %+v", s)
	}
}

// An application-limited sender loses its unused window when the penalty
// begins: min(cwnd 150,000, in flight 33,000) − 1500 = 31,500. Increases are
// blocked while penalized.
func TestNSCCPenaltyAppLimited(t *testing.T) {
	c := quietConfig()
	c.InitialCwndBytes = 150000
	n := NewNSCC(c, 0)
	n.OnAck(at(1), Ack{NewlyAcked: tMTU, Inflight: 30000, RTT: tBase, RcvCwndPen: 64})
	wantWindow(t, n, 31500)
	n.OnAck(at(2), Ack{NewlyAcked: tMTU, Inflight: 30000, RTT: tBase, RcvCwndPen: 1})
	// (1 × 3000) >> 7 = 23; no proportional increase.
	wantWindow(t, n, 31477)
	if s := n.Stats(); s.ProportionalIncreases != 0 {
		t.Errorf("increase while penalized: %+v", s)
	}
}

func TestNSCCZeroAllocs(t *testing.T) {
	n := NewNSCC(testConfig(), 0)
	now := mtime.Time(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += mtime.Time(time.Microsecond)
		n.OnSent(now, tMTU, false)
		n.OnAck(now, Ack{NewlyAcked: tMTU, Inflight: 30000, RTT: tBase + us(5), ECN: now%3 == 0, RcvCwndPen: uint8(now % 2)})
		n.OnNack(now, Nack{Bytes: tMTU, Inflight: 27000})
		n.OnLoss(now, tMTU)
		_ = n.Window()
		_ = n.Stats()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per event round", allocs)
	}
}

func BenchmarkNSCCOnAck(b *testing.B) {
	n := NewNSCC(testConfig(), 0)
	now := mtime.Time(0)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		now += 100
		// Cycle through the table: low delay, high delay, ECN.
		delay := time.Duration(i%16) * time.Microsecond
		n.OnAck(now, Ack{NewlyAcked: 4096, Inflight: 100000, RTT: tBase + delay, ECN: i%5 == 0})
	}
}
