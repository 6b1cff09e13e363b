package perf

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes r as the few lines `mrc perf client` prints: the
// goodput and whether the data was verified, the recovery counters, the
// datapath, the EV timeline and the share of each plane.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	r.text(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Result) text(w io.Writer) {
	v := "verified"
	switch {
	case r.Interrupted:
		v = "interrupted: partial statistics"
	case r.Config.Phantom:
		v = "not verified (phantom payloads)"
	case !r.Verified:
		v = "NOT verified"
	}
	if r.Config.TCP {
		fmt.Fprintf(w, "mrc perf (kernel TCP baseline): %d bytes in %.3f s = %.2f Gbit/s, %s (%s)\n", r.Bytes, r.Seconds, r.Gbps, v, plural(r.Chunks, "chunk"))
		return
	}
	fmt.Fprintf(w, "mrc perf: %d bytes in %.3f s = %.2f Gbit/s, %s (%s)\n", r.Bytes, r.Seconds, r.Gbps, v, plural(r.Chunks, "chunk"))
	fmt.Fprintf(w, "  retransmits %d, trims %d, NACKs %d, loss timeouts %d, EVs retired %d / resurrected %d\n",
		r.Retransmits, r.Trims, r.NACKs, r.LossTimeouts, r.EVsRetired, r.EVsResurrected)
	framing := "overlay (UDP)"
	if r.Native {
		framing = "native"
	}
	fmt.Fprintf(w, "  datapath: %s framing, %s encapsulation, GSO %v, GRO %v; receive-buffer overflows: client %d, server %d\n",
		framing, r.Encap, r.GSO, r.GRO, r.RxOverflows, r.Server.Overflows)
	if r.SendErrors != "" {
		fmt.Fprintf(w, "  datapath: %s\n", r.SendErrors)
	}
	retire, resurrect := 0, 0
	for _, e := range r.EVEvents {
		switch {
		case e.To == "ASSUMED_BAD":
			retire++
		case e.From == "ASSUMED_BAD" && e.To == "GOOD":
			resurrect++
		}
	}
	fmt.Fprintf(w, "  EV timeline: %d state changes (%d retirements, %d resurrections); longest wait between completions %.1f ms, at %.3f s\n",
		len(r.EVEvents), retire, resurrect, 1000*r.MaxStall, r.StallAt)
	if r.PcapPackets > 0 {
		fmt.Fprintf(w, "  captured %d packets\n", r.PcapPackets)
	}
	for _, p := range r.PerPlane {
		fmt.Fprintf(w, "  plane %d: %d packets (%.1f%%), %d retransmitted, over %d EVs\n", p.Plane, p.Packets, 100*p.Share, p.Retransmits, p.EVs)
	}
}
