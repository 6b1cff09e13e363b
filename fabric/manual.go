package fabric

// Fabrics built by hand (`mrc fabric up`): they outlive the process that
// built them, so they have their own prefix, a guide to using them, and
// removal by ID.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// ManualPrefix starts the names of the namespaces of fabrics built by
// hand. Sweep(DefaultPrefix), which the tests run, leaves them alone:
// their creator has exited at once, on purpose.
const ManualPrefix = "mrcman"

// WriteGuide writes each host's path table into f.Dir() and then, to w,
// what a person needs to use the fabric: its ID and namespaces, each
// host's NIC ports, control address and path table, a pair of `mrc perf`
// commands to run across it, a link cut, and downCmd (the command that
// removes the fabric, e.g. "mrc fabric down") followed by the ID.
func (f *Fabric) WriteGuide(w io.Writer, downCmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fabric %s (files in %s)\n", f.ID(), f.Dir())
	for _, ns := range f.Namespaces() {
		fmt.Fprintln(&b, "  namespace", ns)
	}
	for h := range f.cfg.Hosts {
		file, err := f.WritePathTable(h)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "host %d: namespace %s, NIC ports %s, control %v, paths %s\n", h, f.Node(HostName(h)).NS,
			f.portList(h), f.ControlAddr(h), file)
	}
	fmt.Fprintf(&b, "\nip netns exec %s mrc perf server --addr [%v]:5201 --native --ports %s --paths %s/h1.paths\n",
		f.Node("h1").NS, f.ControlAddr(1), f.portList(1), f.Dir())
	fmt.Fprintf(&b, "ip netns exec %s mrc perf client --addr [%v]:5201 --native --encap %s --ports %s --paths %s/h0.paths --duration 5s\n",
		f.Node("h0").NS, f.ControlAddr(1), f.cfg.Encap, f.portList(0), f.Dir())
	fmt.Fprintf(&b, "ip -n %s link set dev u0 down   # cut t0-p0-0 -- t1-p0-0\n", f.Node("t0-p0-0").NS)
	fmt.Fprintf(&b, "%s %s\n", downCmd, f.ID())
	_, err := io.WriteString(w, b.String())
	return err
}

// portList is host h's NIC port addresses, comma-separated.
func (f *Fabric) portList(h int) string {
	var out []string
	for _, a := range f.PortAddrs(h) {
		out = append(out, a.String())
	}
	return strings.Join(out, ",")
}

// Remove deletes the namespaces of the fabric with ID id (what Fabric.ID
// returned; its namespaces are named id-NODE), killing the processes in
// them first. It returns how many it deleted; the error, if any, names
// the namespaces it could not delete.
func Remove(id string) (int, error) {
	ents, err := os.ReadDir(netnsDir)
	if err != nil {
		return 0, err
	}
	n := 0
	var failed []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), id+"-") {
			continue
		}
		killNetnsProcs(e.Name())
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v: %s", e.Name(), err, bytes.TrimSpace(out)))
			continue
		}
		n++
	}
	if len(failed) > 0 {
		return n, fmt.Errorf("could not delete %s", strings.Join(failed, "; "))
	}
	return n, nil
}
