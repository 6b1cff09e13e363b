package sim

import (
	"math"
	"time"
)

// A second core does not always pay. On a small fabric one core's caches
// hold the whole world, and two cores handing packets, links and queues
// to each other spend more in cache traffic than they share out: htsim's
// 128-host permutation took 1.8 times the CPU and 15% more wall time on
// two workers than on one. On a large fabric the same split is 1.7 times
// faster. So the run times the windows it could run in parallel, both
// ways, and keeps the faster way. Results do not depend on it.

// coreChoice decides, window by window, whether a window whose
// partitions could run on several workers does.
//
// The first settleWindows windows run in parallel, as before there was
// a choice, while the run fills its pools and the fabric its queues:
// their cost per event falls as they do, and would favour whichever way
// ran later. Then the two ways run a turn each, parallel first; then the
// faster runs, and now and then the other runs a turn again, so that a
// change in the run (an incast's phases, the machine's load) is seen:
// first after minReprobe windows, then longer each time the choice
// stands (backoff), up to maxReprobe, so that a clear choice spends
// little on asking again. A turn lasts turnEvents events and at least
// one measured window. A switch moves the world from one core's caches
// to another's, so a turn's windows are measured only once warmEvents
// have run in it, or where a window is so large that the switch is lost
// in it.
//
// A way's cost is the least wall time per event of its windows measured
// lately (those of its latest turn): noise (a collection, another
// process) only ever adds time. Parallel must be faster by parallelGain
// to be chosen, as it keeps a second core busy.
type coreChoice struct {
	recent   [2][2]float64 // ns per event of the latest measured windows: [0] one worker, [1] several
	next     [2]int        // where recent's next measurement goes
	par      bool          // the way the windows run now
	run      int           // windows run that way in a row
	ran      uint64        // events run that way in a row, before the window at hand
	measured int           // windows of this turn measured
	turns    int           // turns of the opening comparison done
	chosen   bool          // the faster way, as last found
	every    int           // windows the chosen way runs between probes of the other
	settled  int           // windows run before the choice began
}

const (
	settleWindows = 16
	warmEvents    = 10_000
	turnEvents    = 20_000
	openingTurns  = 2
	minReprobe    = 64
	maxReprobe    = 1024
	parallelGain  = 0.9 // parallel's cost at most this share of serial's
)

// parallel reports whether the next window runs on several workers.
func (c *coreChoice) parallel() bool {
	if c.settled < settleWindows {
		c.settled++
		c.par = true
		return true
	}
	turnDone := c.ran >= turnEvents && c.measured > 0
	switch {
	case c.turns < openingTurns:
		if !turnDone {
			break
		}
		if c.turns++; c.turns < openingTurns {
			c.turn(!c.par)
			break
		}
		c.chosen = c.best()
		c.every = minReprobe * c.backoff() / 4 // longer where the choice is clear
		c.turn(c.chosen)
	case c.par != c.chosen: // a probe
		if !turnDone {
			break
		}
		if best := c.best(); best != c.chosen {
			c.chosen, c.every = best, minReprobe
		} else {
			c.every = min(c.every*c.backoff(), maxReprobe)
		}
		c.turn(c.chosen)
	case c.run >= c.every:
		c.turn(!c.chosen)
	}
	c.run++
	return c.par
}

// best reports whether parallel is the faster way.
func (c *coreChoice) best() bool {
	return c.cost(1) < parallelGain*c.cost(0)
}

// backoff is how many times longer the chosen way runs before the next
// probe, now that a probe has confirmed it: 4, or 16 where the other
// way cost half as much again, so that probing a clearly worse way costs
// little.
func (c *coreChoice) backoff() int {
	lo, hi := c.cost(0), c.cost(1)
	if c.chosen {
		lo, hi = hi, lo
	}
	if hi >= 1.5*lo {
		return 16
	}
	return 4
}

// cost is way i's least ns per event over its windows measured lately.
func (c *coreChoice) cost(i int) float64 {
	least := math.Inf(1)
	for _, ns := range c.recent[i] {
		if ns > 0 {
			least = min(least, ns)
		}
	}
	return least
}

// turn starts a turn of the way par, forgetting that way's older
// measurements, unless the windows already run that way.
func (c *coreChoice) turn(par bool) {
	if par == c.par {
		return
	}
	i := way(par)
	c.recent[i], c.next[i] = [2]float64{}, 0
	c.par, c.run, c.ran, c.measured = par, 0, 0, 0
}

// record takes the wall time d of the window parallel last decided,
// which held events events.
func (c *coreChoice) record(events uint64, d time.Duration) {
	if c.run == 0 {
		return // a window of the run's start
	}
	warm := c.ran >= warmEvents || events >= 10*warmEvents
	c.ran += events
	if events == 0 || !warm {
		return
	}
	i := way(c.par)
	c.recent[i][c.next[i]] = max(float64(d.Nanoseconds()), 1) / float64(events)
	c.next[i] = (c.next[i] + 1) % len(c.recent[i])
	c.measured++
}

// way indexes coreChoice's measurements: 0 on one worker, 1 on several.
func way(par bool) int {
	if par {
		return 1
	}
	return 0
}
