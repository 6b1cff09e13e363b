// Command simperf runs the simulator's performance scenarios by hand and
// prints a summary: the htsim permutation on its leaf-spine, or a large
// multi-plane two-tier Clos carrying a permutation. See docs/sim.md,
// "Performance", for the commands and the measured numbers.
//
//	go run ./sim/internal/simperf -topo leaf_spine_1024.topo -cm perm_1024n_1024c_0u_2000000b.cm
//	go run ./sim/internal/simperf -hosts 131072 -planes 8 -t0down 256 -t0up 256 -size 1048576
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/htsim"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

func main() {
	topoFile := flag.String("topo", "", "htsim .topo file")
	cmFile := flag.String("cm", "", "htsim .cm file")
	hosts := flag.Int("hosts", 0, "hosts of a generated two-tier Clos (instead of -topo)")
	planes := flag.Int("planes", 1, "planes")
	t0down := flag.Int("t0down", 0, "T0 host ports")
	t0up := flag.Int("t0up", 0, "T0 uplinks (T1s per plane)")
	gbps := flag.Float64("gbps", 100, "port speed, Gb/s")
	hostDelay := flag.Duration("hostdelay", 500*time.Nanosecond, "host link delay (generated Clos)")
	fabricDelay := flag.Duration("fabricdelay", time.Microsecond, "T0–T1 link delay (generated Clos)")
	size := flag.Uint64("size", 1<<20, "permutation flow size (generated workload)")
	transport := flag.String("transport", "mrc", "transport")
	seed := flag.Uint64("seed", 1, "seed")
	workers := flag.Int("workers", 2, "worker goroutines")
	groups := flag.Int("hostgroups", 2, "host partitions")
	cpuprof := flag.String("cpuprofile", "", "write a CPU profile")
	memprof := flag.String("memprofile", "", "write a heap profile at the end")
	flows := flag.Bool("flows", false, "print per-flow results too")
	flag.Parse()
	if err := run(*topoFile, *cmFile, *hosts, *planes, *t0down, *t0up, *gbps, *hostDelay, *fabricDelay, *size,
		*transport, *seed, *workers, *groups, *cpuprof, *memprof, *flows); err != nil {
		fmt.Fprintln(os.Stderr, "simperf:", err)
		os.Exit(1)
	}
}

func run(topoFile, cmFile string, hosts, planes, t0down, t0up int, gbps float64, hostDelay, fabricDelay time.Duration,
	size uint64, transport string, seed uint64, workers, groups int, cpuprof, memprof string, flows bool) error {
	start := time.Now()
	var tp *topo.Topology
	var err error
	if topoFile != "" {
		tf, err := htsim.ReadTopoFile(topoFile)
		if err != nil {
			return err
		}
		if tp, err = tf.Build(planes); err != nil {
			return err
		}
	} else {
		tp, err = topo.Clos2(topo.Clos2Config{Hosts: hosts, Planes: planes, T0Down: t0down, T0Up: t0up,
			HostRate: int64(gbps * 1e9), HostDelay: hostDelay, FabricDelay: fabricDelay})
		if err != nil {
			return err
		}
	}
	var wl *workload.Workload
	if cmFile != "" {
		if wl, _, err = htsim.ReadCMFile(cmFile); err != nil {
			return err
		}
	} else if wl, err = workload.Permutation(tp.Hosts, size, seed); err != nil {
		return err
	}
	tr, err := sim.LookupTransport(transport)
	if err != nil {
		return err
	}
	w, err := sim.New(sim.Config{Topology: tp, Workload: wl, Transport: tr, Seed: seed,
		Workers: workers, HostGroups: groups, SeriesFlows: -1,
		Progress: progress()})
	if err != nil {
		return err
	}
	setup := time.Since(start)
	if cpuprof != "" {
		f, err := os.Create(cpuprof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	r, err := w.Run(context.Background())
	if err != nil {
		return err
	}
	var live runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&live)
	if memprof != "" {
		f, err := os.Create(memprof)
		if err != nil {
			return err
		}
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	runtime.KeepAlive(w)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if !flows {
		r.FlowResults = nil
	}
	r.Series = sim.Series{}
	fmt.Fprintf(os.Stderr, "setup %.2fs, run %.2fs, %d events (%.1f M/s), live heap after the run %d MiB, sys %d MiB\n",
		setup.Seconds(), r.WallS, r.Events, float64(r.Events)/r.WallS/1e6, live.HeapAlloc>>20, ms.Sys>>20)
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

func progress() func(sim.Progress) {
	last := time.Now()
	return func(p sim.Progress) {
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "  sim %v, %d events\n", p.Now, p.Events)
		}
	}
}
