// Package sim is a discrete-event, packet-level simulator of MRC fabrics
// that hosts the real transport code: every host runs an *mrc.Endpoint
// (or another transport behind the NIC interface) and every switch the
// vswitch data plane, in virtual time.
//
// # Use
//
//	tp, _ := topo.Clos2(topo.Clos2Config{Hosts: 64, Planes: 4, T0Down: 8, T0Up: 8})
//	wl, _ := workload.Permutation(64, 1<<20, seed)
//	w, err := sim.New(sim.Config{Topology: tp, Workload: wl, Transport: sim.MRC(), Seed: seed})
//	res, err := w.Run(ctx)
//	res.WriteJSON(os.Stdout)
//
// # Model
//
// Time is mtime.Picos, integer picoseconds (the core's nanoseconds are
// derived from it). A link is an egress queue (a switch port, or a NIC
// port that asks its transport for a packet only when it is free), a
// serialiser at the link's rate and a propagation delay; the receiving
// switch's forwarding latency is added on arrival. Packets carry their
// headers only (phantom payloads, mrc.RegisterPhantom); their wire length
// sets serialisation. Runs are deterministic for a Config: ties between
// events at the same time are broken by what the events are (kind and
// target), randomness comes from Config.Seed, and the partitions (planes
// and host groups) advance in lockstep windows no longer than the
// shortest host link's delay, exchanging packets between windows in a
// fixed order, so the number of worker goroutines does not change the
// results. Where every link is at least a window long, a partition runs
// a window node by node (window.go), with the same results.
//
// # Files
//
// world.go builds the World; run.go runs it in windows over the
// partitions (shards), whose event loop and packet ownership are
// shard.go (window.go: a window run node by node), over engine.go's
// calendar queue and packet pool. An event
// then goes to one idea each: link.go (a link's pipe, loss and failure,
// the serialiser), switchport.go (the vswitch adapter), host.go (the NIC
// adapter), pfc.go, flow.go (starting flows, completions, triggers),
// failure.go (scheduled failures and repair) and hits.go (what a failed
// element took). transport.go is the NIC interface and the built-in
// transports; observe.go captures and traces; result.go sums up.
//
// docs/sim.md describes the model, what is and is not modelled, the
// results and how to reproduce the performance numbers.
package sim
