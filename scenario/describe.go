package scenario

import (
	"fmt"
	"path"
	"strings"

	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// describeFabric says what the fabric is in one line.
func describeFabric(s *Scenario, tp *topo.Topology) string {
	tiers := [3]int{}
	for _, sw := range tp.Switches {
		tiers[sw.Tier]++
	}
	var b strings.Builder
	if s.Topology.File != "" {
		fmt.Fprintf(&b, "htsim %s: ", path.Base(s.Topology.File))
	}
	if c, ok := tp.Clos2Config(); ok {
		shape := "two-tier Clos"
		if tp.Planes == 1 {
			shape = "leaf-spine"
		}
		fmt.Fprintf(&b, "%s hosts × %d plane%s, %s: %d T0 + %d T1 per plane (%s switches), %s ports, links %s (host) / %s (fabric)",
			report.Count(tp.Hosts), tp.Planes, plural(tp.Planes), shape, tiers[0]/tp.Planes, tiers[1]/tp.Planes,
			report.Count(len(tp.Switches)), report.Rate(c.HostRate), report.Dur(c.HostDelay), report.Dur(c.FabricDelay))
		return b.String()
	}
	c, _ := tp.Clos3Config()
	fmt.Fprintf(&b, "%s hosts, three-tier fat tree: %d T0, %d T1, %d T2, %s ports, links %s (host) / %s (fabric)",
		report.Count(tp.Hosts), tiers[0], tiers[1], tiers[2], report.Rate(c.HostRate), report.Dur(c.HostDelay), report.Dur(c.FabricDelay))
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// describeWorkload says what the hosts send in one line.
func describeWorkload(s *Scenario, wl *workload.Workload) string {
	var parts []string
	for _, p := range s.Workload {
		size := report.Bytes(uint64(p.Size))
		var d string
		switch p.Kind {
		case "permutation":
			d = "permutation, " + size + " per host"
		case "all_to_all":
			d = "all-to-all, " + size + " per pair"
			if p.Parallel != nil && !*p.Parallel {
				d = "serial " + d
			}
		case "incast":
			d = "incast of " + size + " per sender"
			if p.Victim != nil {
				d += ", with a victim flow"
			}
		case "ring_allreduce":
			d = "ring all-reduce of " + size
		case "training":
			d = fmt.Sprintf("training job of %d operations per step", len(p.Ops))
		case "simai":
			d = "SimAI " + path.Base(p.File)
		case "chakra":
			d = "Chakra traces " + path.Base(p.File)
		case "flows":
			d = fmt.Sprintf("%d flows", len(p.Flows))
		case "htsim":
			d = "htsim " + path.Base(p.File)
		}
		if p.Tag != "" && !strings.HasPrefix(d, p.Tag) {
			d = p.Tag + ": " + d
		}
		if p.Start != 0 {
			d += " from " + report.Dur(p.Start.D())
		}
		parts = append(parts, d)
	}
	return fmt.Sprintf("%s: %s flows, %s", strings.Join(parts, " + "), report.Count(len(wl.Flows)), report.Bytes(wl.Bytes()))
}

// describeFailure says what a failure does in one line.
func describeFailure(f Failure) string {
	n := max(f.Count, 1)
	var what string
	if sel, ok := strings.CutPrefix(f.Element, "random:"); ok {
		noun := map[string]string{"t0-t1": "T0–T1 link", "t1-t2": "T1–T2 link", "host-link": "host link",
			"t0": "T0 switch", "t1": "T1 switch", "t2": "T2 switch"}[sel]
		suffix := plural(n)
		if suffix != "" && strings.HasSuffix(noun, "switch") {
			suffix = "es"
		}
		what = fmt.Sprintf("%d random %s%s", n, noun, suffix)
		if n == 1 {
			what = "a random " + noun
		}
	} else {
		what = f.Element
	}
	// The verb agrees with the subject: "a random T1 switch drops", "4
	// random T1–T2 links drop".
	verb := func(plural string) string {
		if n == 1 {
			return plural + "s"
		}
		return plural
	}
	at := report.Dur(f.At.D())
	until := ""
	if f.Until != 0 {
		until = ", until " + report.Dur(f.Until.D())
	}
	switch f.Kind {
	case "link_down":
		return fmt.Sprintf("%s down at %s%s", what, at, until)
	case "link_flap":
		down := f.DownFor.D()
		if down == 0 {
			down = 10e3
		}
		return fmt.Sprintf("%s %s %g times/s, down %s each time, from %s%s", what, verb("flap"), f.FlapRate, report.Dur(down), at, until)
	case "lossy_link":
		return fmt.Sprintf("%s %s %g%% of packets from %s%s", what, verb("drop"), f.Loss*100, at, until)
	case "switch_down":
		return fmt.Sprintf("%s down at %s%s", what, at, until)
	case "switch_reboot":
		return fmt.Sprintf("%s %s at %s%s", what, verb("reboot"), at, until)
	case "switch_blackhole":
		return fmt.Sprintf("%s silently %s everything (links and routes up) from %s%s", what, verb("drop"), at, until)
	case "nic_port_down":
		return fmt.Sprintf("NIC port %s down at %s%s", what, at, until)
	}
	return f.Kind + " " + what
}
