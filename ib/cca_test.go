package ib

import (
	"errors"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

const line = 100e9

// TestCCAIndex: each BECN raises the CCT index by CCTI_Increase up to the
// table's last index; from the first BECN a timer lowers it by one every
// CCTI_Timer, down to CCTI_Min and no further, and then stops.
func TestCCAIndex(t *testing.T) {
	cfg := CCAConfig{CCTIIncrease: 2, CCTITimer: 10 * time.Microsecond, CCTIMin: 1, CCT: DefaultCCT[:8]}.WithDefaults()
	c := NewCCA(cfg, line, MaxPacket(4096))
	at := func(us float64) mtime.Time { return mtime.Time(us * 1000) }
	if c.Index(0) != 1 || c.NextChange(0) != mtime.Never {
		t.Fatalf("fresh: index %d, next change %v", c.Index(0), c.NextChange(0))
	}
	for i, want := range []int{3, 5, 7, 7} {
		rose := c.OnBECN(at(1))
		if got := c.Index(at(1)); got != want || rose != (i < 3) {
			t.Fatalf("BECN %d: index %d (rose %v), want %d", i+1, got, rose, want)
		}
	}
	if nc := c.NextChange(at(1)); nc != at(11) {
		t.Fatalf("first decrement at %v, want 11 µs", nc)
	}
	for _, tc := range []struct {
		us   float64
		want int
	}{{10.9, 7}, {11, 6}, {30.9, 5}, {31, 4}, {61, 1}, {1000, 1}} {
		if got := c.Index(at(tc.us)); got != tc.want {
			t.Errorf("at %v µs: index %d, want %d", tc.us, got, tc.want)
		}
	}
	if c.NextChange(at(1000)) != mtime.Never {
		t.Error("timer runs at the floor")
	}
	// A BECN later restarts the timer from then.
	c.OnBECN(at(2000))
	if c.Index(at(2000)) != 3 || c.NextChange(at(2000)) != at(2010) {
		t.Errorf("restart: index %d, next %v", c.Index(at(2000)), c.NextChange(at(2000)))
	}
}

// TestCCAPacing: the inter-packet delay is the CCT entry at the index,
// multiplier × MTU packet time / 2^shift (the default table: i/4 packet
// times), added after each packet's own serialisation; at index 0 the QP
// goes at line rate.
func TestCCAPacing(t *testing.T) {
	c := NewCCA(DefaultCCA, line, MaxPacket(4096))
	pkt := ser(MaxPacket(4096), line)
	c.OnSent(1000, MaxPacket(4096))
	if got := c.SendAt(1000); got != 0 {
		t.Fatalf("index 0: send at %v, want no wait", got)
	}
	for range 8 {
		c.OnBECN(1000)
	}
	if got, want := c.IPD(1000), pkt>>2*8; got != want {
		t.Fatalf("index 8: IPD %v, want 2 packet times %v", got, want)
	}
	if got, want := c.SendAt(1000), mtime.Time(1000).Add(pkt+pkt>>2*8); got != want {
		t.Errorf("send at %v, want %v (serialisation + IPD)", got, want)
	}
	// At index 8 a saturating QP sends one packet per 3 packet times.
	if frac := float64(pkt) / float64(pkt+c.IPD(1000)); frac < 0.33 || frac > 0.34 {
		t.Errorf("rate fraction %.3f at index 8, want 1/3", frac)
	}
}

// TestCheck: bad parameters are errors that name them.
func TestCheck(t *testing.T) {
	for _, c := range []Config{
		{CC: 7}, {TimeoutExp: 32}, {RetryCount: 8}, {ReorderWindow: -1},
		{CCA: CCAConfig{CCTITimer: time.Nanosecond}}, {CCA: CCAConfig{CCTIMin: 200}}, {CCA: CCAConfig{CCTIIncrease: 300}},
		{CCA: CCAConfig{Threshold: -1}},
	} {
		if err := Check(c); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := Check(Config{}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
