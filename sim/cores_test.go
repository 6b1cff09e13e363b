package sim

import (
	"testing"
	"time"
)

// TestCoreChoice drives coreChoice with made-up costs per event: the
// first warmWindows windows of a turn cost double, every seventh window
// triple (a collection, another process), and the costs may change half
// way. Whatever the noise, the run must settle on the faster way, run
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
				if c.run <= warmWindows {
					ns *= 2
				}
				if i%7 == 0 {
					ns *= 3
				}
				c.record(events, time.Duration(ns*events))
				// Judge the windows after the change, once a reprobe
				// period and a probe have passed.
				if i >= change+maxReprobe+probeWindows {
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
