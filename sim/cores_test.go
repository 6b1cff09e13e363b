package sim

import (
	"testing"
	"time"
)

// TestCoreChoice drives coreChoice with made-up costs per event on
// windows of 5,000 events: the first two windows of a turn cost double,
// every seventh window triple (a collection, another process), and the
// costs may change half way. Whatever the noise, the run must settle on the faster way, run
// parallel only where it beats serial by parallelGain, and follow a
// change within one reprobe period.
func TestCoreChoice(t *testing.T) {
	type costs struct{ serial, parallel float64 } // ns per event
	for _, tc := range []struct {
		name          string
		before, after costs
		wantParallel  bool // the way most windows must take after the change
	}{
		{"parallel faster", costs{200, 100}, costs{200, 100}, true},
		{"serial faster", costs{130, 180}, costs{130, 180}, false},
		{"parallel barely faster", costs{100, 95}, costs{100, 95}, false},
		{"parallel turns slow", costs{200, 100}, costs{150, 300}, false},
		{"parallel turns fast", costs{130, 180}, costs{200, 90}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const windows, change, events = 2000, 1000, 5000
			var c coreChoice
			settled, took := 0, 0
			for i := range windows {
				par := c.parallel()
				k := tc.before
				if i >= change {
					k = tc.after
				}
				ns := k.serial
				if par {
					ns = k.parallel
				}
				if c.run <= 2 {
					ns *= 2
				}
				if i%7 == 0 {
					ns *= 3
				}
				c.record(events, time.Duration(ns*events))
				// Judge the windows after the change, once a reprobe
				// period and a probe have passed.
				if i >= change+maxReprobe+4 { // a turn: 4 windows of 5,000 events
					settled++
					if par == tc.wantParallel {
						took++
					}
				}
			}
			if share := float64(took) / float64(settled); share < 0.9 {
				t.Errorf("%d of %d windows (%.0f%%) ran the way wanted (parallel: %v)", took, settled, 100*share, tc.wantParallel)
			}
		})
	}
}

// TestCoreChoiceLargeWindows: where a window holds many events, a turn of
// the slower way is one window, so that the comparison costs a large run
// little (htsim's 8192-host permutation: 200 windows of 200,000 events).
func TestCoreChoiceLargeWindows(t *testing.T) {
	const windows, events = 200, 200_000
	var c coreChoice
	serial := 0
	for range windows {
		par := c.parallel()
		ns := 300.0
		if !par {
			ns, serial = 520, serial+1
		}
		c.record(events, time.Duration(ns*events))
	}
	if serial > 2 {
		t.Errorf("%d of %d windows ran serially, twice as slow; want at most 2 (the opening turn and one probe)", serial, windows)
	}
}
