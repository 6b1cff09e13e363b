package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// maxWindow bounds a window when the lookahead is larger (or infinite), so
// that completion is noticed and samples are taken in good time.
const maxWindow Time = 10_000_000 // 10 µs

// Why a run stopped: Result.StoppedBy.
const (
	StoppedDone        = "done"        // every flow completed or failed
	StoppedDuration    = "duration"    // StopAt came with flows unfinished
	StoppedIdle        = "idle"        // nothing was left to simulate, with flows unfinished
	StoppedInterrupted = "interrupted" // the context was cancelled
)

// Run runs the simulation until every flow has completed, nothing is left
// to do, StopAt passes or ctx is cancelled, and returns the results (also
// when cancelled: then Result.Interrupted is set). Result.StoppedBy says
// which, and Result.SimTimeNs when: StopAt when the run hit it, the end of
// the last window when interrupted, else the last event. A World runs
// once.
//
// The partitions advance in windows no longer than the lookahead (the
// shortest host link's delay): within a window each partition runs alone,
// on one of Workers goroutines; packets crossing to another partition are
// merged at the window's end in a fixed order. The run is therefore the
// same for any number of workers.
func (w *World) Run(ctx context.Context) (*Result, error) {
	if w.ran {
		return nil, errors.New("sim: a World runs once")
	}
	w.ran = true
	wallStart := time.Now()
	stop := mtime.PicosOf(w.cfg.StopAt)
	window := min(w.lookahead, maxWindow)
	w.nodeOrder = !w.timeOrder && w.canRunByNode(window)
	w.scratch = make([]nodeScratch, max(w.cfg.Workers, 1))
	smp := w.newSampler()
	var T Time
	interrupted, hitStop := false, false
	w.flushObservations()                // what the transports traced while being set up
	nexts := make([]Time, len(w.shards)) // each partition's next event
	active := make([]int, 0, len(w.shards))
	var lastEvents uint64 // events in the last window
	for {
		next := never
		for i, s := range w.shards {
			nexts[i] = s.next()
			next = min(next, nexts[i])
		}
		if next == never {
			break
		}
		if next >= stop {
			hitStop = true
			break
		}
		T = max(T, next)
		end := min(T+window, stop)
		// Only partitions with an event in the window run, and only those
		// sent something take it in: an idle partition costs nothing.
		active = active[:0]
		for i, t := range nexts {
			if t < end {
				active = append(active, i)
			}
		}
		lastEvents = w.runWindow(active, end, lastEvents)
		if err := w.shardErr(); err != nil {
			return nil, err
		}
		if len(w.shards) > 1 {
			active = w.ingestAll(active)
		}
		T = end
		smp.maybe(T)
		w.flushObservations()
		if w.cfg.Progress != nil {
			w.cfg.Progress(w.progress(T))
		}
		if w.done() {
			break
		}
		if ctx != nil && ctx.Err() != nil {
			interrupted = true
			break
		}
	}
	smp.final(w.simNow())
	switch {
	case w.done():
		w.stopped, w.stopBy = w.simNow(), StoppedDone
	case interrupted:
		w.stopped, w.stopBy = T, StoppedInterrupted
	case hitStop:
		w.stopped, w.stopBy = stop, StoppedDuration
	default:
		w.stopped, w.stopBy = w.simNow(), StoppedIdle
	}

	r := w.result(smp, time.Since(wallStart))
	r.Interrupted = interrupted
	if w.cfg.Job != nil {
		r.Job = w.cfg.Job.Report(w.jobTimes())
		if st := r.Job.Straggler; st != nil && st.Flow != 0 {
			st.FlowFailures = w.failuresMet(st.Flow)
		}
		if st := r.Job.Straggler; st != nil && st.Critical != nil {
			st.Critical.Failures = w.failuresMet(st.Critical.Flow)
			st.Critical.HotLink = w.hotLink(st.Critical.Flow)
		}
	}
	return r, nil
}

// parallel runs fn(i) for every partition i in active, on up to Workers
// goroutines; on the caller's alone when only one is active. The workers
// take the partitions last first: the host partitions, which come last
// and carry the transports' work, start at once and the switch
// partitions fill in around them (longest first, as in LPT scheduling).
// fn learns which worker (0 to Workers−1) runs it.
func (w *World) parallel(active []int, fn func(worker, i int)) {
	n := len(active)
	workers := min(w.cfg.Workers, n)
	if workers <= 1 {
		for _, i := range active {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func(worker int) {
		for {
			k := int(next.Add(1) - 1)
			if k >= n {
				return
			}
			fn(worker, active[n-1-k])
		}
	}
	wg.Add(workers - 1)
	for i := range workers - 1 {
		go func() {
			defer wg.Done()
			work(i + 1)
		}()
	}
	work(0)
	wg.Wait()
}

// parallelEvents is how many events the last window must have held for
// the next to run its partitions in parallel: waking a worker costs some
// microseconds, more than a window of a few dozen events saves (an
// incast's windows mostly hold fewer). Results are the same either way.
const parallelEvents = 512

// runWindow runs the active partitions up to end and returns how many
// events they handled. It runs them on the caller's goroutine unless
// the last window held at least parallelEvents events and more than one
// partition is active: then w.cores decides, by what each way costs.
func (w *World) runWindow(active []int, end Time, lastEvents uint64) uint64 {
	before := w.events()
	choose := lastEvents >= parallelEvents && len(active) > 1 && w.cfg.Workers > 1
	var start time.Time
	par := choose && w.cores.parallel()
	if choose {
		start = time.Now() // only a window the choice is about is timed
	}
	if par {
		w.parallel(active, func(k, i int) { w.shards[i].run(end, &w.scratch[k]) })
	} else {
		for _, i := range active {
			w.shards[i].run(end, &w.scratch[0])
		}
	}
	n := w.events() - before
	if choose {
		w.cores.record(n, time.Since(start))
	}
	return n
}

// parallelIngest is how many messages the partitions must have to take
// in before ingesting them is worth waking a worker: below it, the
// exchange runs on the caller's goroutine.
const parallelIngest = 4096

// ingestAll has every partition that was sent something take it in
// (ingest); the partitions are independent there, so doing it serially
// or in parallel gives the same result. It returns active, reused.
func (w *World) ingestAll(active []int) []int {
	active = active[:0]
	total := 0
	for i, s := range w.shards {
		if n := s.inbound(); n > 0 {
			active = append(active, i)
			total += n
		}
	}
	if total < parallelIngest {
		for _, i := range active {
			w.shards[i].ingest()
		}
		return active
	}
	w.parallel(active, func(_, i int) { w.shards[i].ingest() })
	return active
}

func (w *World) shardErr() error {
	for _, s := range w.shards {
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

func (w *World) done() bool {
	var send, recv, failed int
	for _, s := range w.shards {
		send += s.sendDone
		recv += s.recvDone
		failed += s.failed
		if s.delayed > 0 {
			return false // a compute phase is still running
		}
	}
	n := len(w.flows)
	return send >= n && recv+failed >= n
}

func (w *World) events() uint64 {
	var n uint64
	for _, s := range w.shards {
		n += s.events
	}
	return n
}

func (w *World) progress(T Time) Progress {
	p := Progress{Now: T.Duration(), Events: w.events(), Flows: len(w.flows), Bytes: w.bytes}
	for _, s := range w.shards {
		p.FlowsDone += s.sendDone
		for _, b := range s.planeRx {
			p.Delivered += b
		}
	}
	return p
}

func (w *World) simNow() Time {
	var t Time
	for _, s := range w.shards {
		t = max(t, s.now)
	}
	return t
}
