package scenario

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/openmrc/mrc/sim/htsim"
)

// FromHtsim makes a scenario of htsim inputs: connection matrix cm on
// topology topoFile with planes planes (htsim's files describe one
// plane; each plane repeats it). Without a topology file the fabric is
// a full-bisection two-tier Clos (a leaf-spine with one plane) for the
// matrix's nodes, with the largest T0 of at most 32 host ports that
// divides them. Paths are relative to the working directory; those
// under htsim/ that are not there name the samples bundled with mrc
// (scenario/presets/htsim/), as in scenario files.
func FromHtsim(cm, topoFile string, planes int) (*Scenario, error) {
	s := &Scenario{
		Name:     strings.TrimSuffix(filepath.Base(cm), filepath.Ext(cm)),
		Workload: WorkloadParts{{Kind: "htsim", File: cm}},
		Topology: Topology{File: topoFile, Planes: planes},
		src:      source{file: "--tm"},
	}
	if topoFile != "" {
		return s, nil
	}
	f, name, err := s.open(cm)
	if err != nil {
		return nil, &Error{Msg: openError(err)}
	}
	defer f.Close()
	_, nodes, err := htsim.ReadCM(name, f)
	if err != nil {
		var he *htsim.Error
		if errors.As(err, &he) {
			return nil, htsimError(he)
		}
		return nil, &Error{Msg: openError(err)}
	}
	down := 1
	for d := min(32, nodes/2); d >= 1; d-- {
		if nodes%d == 0 {
			down = d
			break
		}
	}
	if down < 2 {
		return nil, &Error{File: cm, Msg: "cannot build a leaf-spine for this node count: give --topo FILE.topo"}
	}
	s.Topology.Kind, s.Topology.T0Down, s.Topology.T0Up = "clos2", down, down
	return s, nil
}
