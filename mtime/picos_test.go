package mtime

import (
	"math"
	"testing"
	"time"
)

// TestPicosConversions: nanoseconds and durations scale by 1000 each way,
// the way back truncates toward zero, and times beyond the picosecond
// range (Never among them) saturate instead of wrapping.
func TestPicosConversions(t *testing.T) {
	cases := []struct {
		ns   Time
		want Picos
	}{
		{0, 0}, {1, 1000}, {-3, -3000}, {1_500_000, 1_500_000_000},
		{math.MaxInt64 / 1000, math.MaxInt64 / 1000 * 1000},
		{math.MaxInt64/1000 + 1, math.MaxInt64}, {Never, math.MaxInt64},
	}
	for _, c := range cases {
		if got := c.ns.Picos(); got != c.want {
			t.Errorf("Time(%d).Picos() = %d, want %d", c.ns, got, c.want)
		}
	}
	for _, c := range []struct {
		ps   Picos
		want Time
	}{{0, 0}, {999, 0}, {1000, 1}, {1999, 1}, {-1999, -1}, {7_000_123, 7000}} {
		if got := c.ps.Nanos(); got != c.want {
			t.Errorf("Picos(%d).Nanos() = %d, want %d", c.ps, got, c.want)
		}
		if got := c.ps.Duration(); got != time.Duration(c.want) {
			t.Errorf("Picos(%d).Duration() = %v, want %v", c.ps, got, time.Duration(c.want))
		}
	}
	if got := PicosOf(2 * time.Microsecond); got != 2_000_000 {
		t.Errorf("PicosOf(2µs) = %d, want 2000000", got)
	}
}
