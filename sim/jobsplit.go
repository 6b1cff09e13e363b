package sim

// Triggers across host partitions. A trigger acts at once: it starts
// flows and activates other triggers. A training job's triggers each
// belong to a host (job.Plan.TriggerHosts), and wait on another host only
// through a delay: a rank's readiness reaching its peer, a transfer over
// the scale-up domain, a collective inside a server. When every such
// delay is at least a window, an activation from another partition can
// wait for the end of the window (a message, like a packet) and still
// fire the trigger at the right time, so the hosts can run in several
// partitions. Results depend on the partitions (as they do for flows
// without triggers), never on the number of workers.

import "github.com/openmrc/mrc/sim/workload"

// trigHosts returns the host each trigger of the workload belongs to,
// or nil when they do not all belong to one (only a training job's
// triggers do, when no other part of the workload has triggers).
func (w *World) trigHosts() []int {
	p := w.cfg.Job
	if p == nil || p.TriggerOffset != 0 || len(p.TriggerHosts) != len(w.wl.Triggers) {
		return nil
	}
	return p.TriggerHosts
}

// trigShard returns the partition that holds trigger i: its host's, or
// host 0's when triggers belong to no host (then there is one host
// partition).
func (w *World) trigShard(i int) int32 {
	if hs := w.trigHosts(); hs != nil {
		return w.hosts[hs[i]].shard
	}
	return w.hosts[0].shard
}

// splits reports whether the workload's triggers allow its hosts to run
// in groups partitions (host h in partition h·groups/hosts) with windows
// of window: a trigger starts only flows from hosts of its own partition,
// and every activation from another partition (a trigger's or a flow's
// completion) is of a barrier whose delay is at least a window.
func (w *World) splits(groups int, window Time) bool {
	wl := w.wl
	if len(wl.Triggers) == 0 {
		return true // receives of shared connections cross as messages
	}
	homes := w.trigHosts()
	if homes == nil {
		return false
	}
	part := func(h int) int { return h * groups / w.t.Hosts }
	index := make(map[int]int, len(wl.Triggers))
	for i, tr := range wl.Triggers {
		index[tr.ID] = i
	}
	// into reports whether an activation from host h's partition of
	// trigger ID id may cross.
	into := func(h, id int) bool {
		i := index[id]
		tr := &wl.Triggers[i]
		return part(h) == part(homes[i]) || tr.Kind == workload.Barrier && tr.Delay >= window
	}
	for i, tr := range wl.Triggers {
		for _, a := range tr.Activates {
			if !into(homes[i], a) {
				return false
			}
		}
	}
	for _, f := range wl.Flows {
		switch {
		case f.Trigger != 0 && part(f.Src) != part(homes[index[f.Trigger]]),
			f.SendDoneTrigger != 0 && !into(f.Src, f.SendDoneTrigger),
			f.RecvDoneTrigger != 0 && !into(f.Dst, f.RecvDoneTrigger):
			return false
		}
	}
	return true
}
