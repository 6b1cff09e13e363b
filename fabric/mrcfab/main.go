// Command mrcfab builds an emulated MRC fabric (package fabric) and
// leaves it up for hand experiments, or removes fabrics:
//
//	go run ./fabric/mrcfab up [--planes 2] [--hosts 2] [--t1s 2] [--encap srv6|usid] [--mrc t1-p1-0 --mrc-bin PATH]
//	go run ./fabric/mrcfab down PREFIX-PID-SEQ   # one fabric, by the ID up printed
//	go run ./fabric/mrcfab sweep                 # the tests' leftovers, and every fabric built by hand
//
// up prints the fabric's ID, its namespaces, each host's NIC and control
// addresses and path table, and a pair of `mrc perf` commands to run
// across it; docs/fabric.md walks through them. It needs root.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/openmrc/mrc/fabric"
)

// ManualPrefix starts the names of the namespaces of fabrics built by
// hand; sweep removes them all.
const ManualPrefix = "mrcman"

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mrcfab up [flags] | down ID | sweep")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "up":
		up(os.Args[2:])
	case "down":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: mrcfab down ID")
			os.Exit(2)
		}
		down(os.Args[2])
	case "sweep":
		gone, err := fabric.Sweep(fabric.DefaultPrefix)
		if err == nil {
			var more []string
			more, err = fabric.Sweep(ManualPrefix)
			gone = append(gone, more...)
		}
		for _, g := range gone {
			fmt.Println("deleted", g)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mrcfab:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "mrcfab: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

func up(args []string) {
	fs := flag.NewFlagSet("mrcfab up", flag.ExitOnError)
	var cfg fabric.Config
	var mrc list
	fs.IntVar(&cfg.Planes, "planes", 2, "planes")
	fs.IntVar(&cfg.Hosts, "hosts", 2, "hosts")
	fs.IntVar(&cfg.T1s, "t1s", 2, "T1 switches per plane")
	fs.StringVar(&cfg.Encap, "encap", "srv6", "srv6 or usid")
	fs.Var(&mrc, "mrc", "a switch to run as `mrc switch` (repeatable), e.g. t1-p1-0")
	fs.StringVar(&cfg.MRCBinary, "mrc-bin", "", "the mrc binary (with --mrc)")
	fs.StringVar(&cfg.MRCPort, "mrc-port", "", `port options of the mrc switches, e.g. "rate 1G delay 50us"`)
	fs.StringVar(&cfg.MRCQueue, "mrc-queue", "", `queue options of the mrc switches, e.g. "buffer 512KiB trim-at 64KiB ecn 16KiB 48KiB"`)
	dir := fs.String("dir", "", "directory for the fabric's files (default: a new temporary one)")
	fs.Parse(args)
	cfg.MRC = mrc
	cfg.Dir = *dir
	// Its own prefix: the tests' sweeper removes fabrics whose creator
	// has exited, and this one exits at once.
	cfg.Prefix = ManualPrefix
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "mrcfab:", err)
			os.Exit(1)
		}
	} else {
		d, err := os.MkdirTemp("", "mrcfab-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "mrcfab:", err)
			os.Exit(1)
		}
		cfg.Dir = d
	}
	f, err := fabric.Build(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mrcfab:", err)
		os.Exit(1)
	}
	// Leave it up: the `mrc switch` processes run on, detached.
	fmt.Printf("fabric %s (files in %s)\n", f.ID(), f.Dir())
	for _, ns := range f.Namespaces() {
		fmt.Println("  namespace", ns)
	}
	for h := range cfg.Hosts {
		file, err := f.WritePathTable(h)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mrcfab:", err)
			os.Exit(1)
		}
		var ports []string
		for _, a := range f.PortAddrs(h) {
			ports = append(ports, a.String())
		}
		fmt.Printf("host %d: namespace %s, NIC ports %s, control %v, paths %s\n", h, f.Node(fabric.HostName(h)).NS,
			strings.Join(ports, ","), f.ControlAddr(h), file)
	}
	p0, p1 := strings.Join(addrs(f, 0), ","), strings.Join(addrs(f, 1), ",")
	fmt.Printf("\nip netns exec %s mrc perf server --addr [%v]:5201 --native --ports %s --paths %s/h1.paths\n",
		f.Node("h1").NS, f.ControlAddr(1), p1, f.Dir())
	fmt.Printf("ip netns exec %s mrc perf client --addr [%v]:5201 --native --encap %s --ports %s --paths %s/h0.paths --duration 5s\n",
		f.Node("h0").NS, f.ControlAddr(1), cfg.Encap, p0, f.Dir())
	fmt.Printf("ip -n %s link set dev u0 down   # cut t0-p0-0 -- t1-p0-0\n", f.Node("t0-p0-0").NS)
	fmt.Printf("go run ./fabric/mrcfab down %s\n", f.ID())
}

func addrs(f *fabric.Fabric, h int) []string {
	var out []string
	for _, a := range f.PortAddrs(h) {
		out = append(out, a.String())
	}
	return out
}

func down(id string) {
	ents, err := os.ReadDir("/var/run/netns")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mrcfab:", err)
		os.Exit(1)
	}
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), id+"-") {
			continue
		}
		if out, _ := exec.Command("ip", "netns", "pids", e.Name()).Output(); len(out) > 0 {
			for _, p := range strings.Fields(string(out)) {
				exec.Command("kill", "-9", p).Run()
			}
		}
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "mrcfab: %s: %v: %s\n", e.Name(), err, out)
			continue
		}
		n++
	}
	fmt.Printf("deleted %d namespaces of %s\n", n, id)
}
