package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openmrc/mrc/udpio/perf"
)

func init() {
	commands["perf"] = command{summary: "measure MRC over UDP sockets: an iperf-style server and client", run: runPerf}
}

const perfUsage = `perf server --addr IP:PORT [--once]
       mrc perf client --addr IP:PORT [--bytes N | --duration D] [--planes P] [--evs N] [--json FILE|-] [flags]`

// runPerf dispatches to the server or the client (package udpio/perf).
func runPerf(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want 'server' or 'client' (mrc perf -h)")
	}
	switch args[0] {
	case "server":
		return runPerfServer(args[1:], stdout, stderr)
	case "client":
		return runPerfClient(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		fmt.Fprintf(stderr, "Usage: mrc %s\n\nRun 'mrc perf server -h' or 'mrc perf client -h' for their flags.\n", perfUsage)
		return errHelp
	}
	return usagef("unknown perf mode %q: want 'server' or 'client'", args[0])
}

// parseAddr parses IP:PORT (an IPv6 address in brackets), or a host name
// and port.
func parseAddr(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, usagef("--addr is required")
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	ta, err := net.ResolveTCPAddr("tcp", s)
	if err != nil || ta.IP == nil {
		return netip.AddrPort{}, usagef("--addr %q: want IP:PORT, e.g. [::1]:5201", s)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// parseSize parses a byte count with an optional K, M, G or T suffix
// (powers of 1024).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s), "B"), "I")
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		case 'T':
			mult, t = 1<<40, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return v * mult, nil
}

// sizeFlag is a flag.Value for byte counts.
type sizeFlag struct{ v *int64 }

func (f sizeFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f sizeFlag) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.v = v
	return nil
}

// setupOrRun maps a perf error to the exit status: setup problems are
// usage errors (exit 2), anything else exit 1.
func setupOrRun(err error) error {
	var se *perf.SetupError
	if errors.As(err, &se) {
		return usagef("%v", se.Err)
	}
	return err
}

func runPerfServer(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf server", "--addr IP:PORT [--once]", stderr)
	addrFlag := fs.String("addr", "", "TCP control address to listen on; UDP uses free ports on the same IP")
	once := fs.Bool("once", false, "serve one client, then exit (non-zero if its transfer failed)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to FILE")
	if err := fs.parse(args); err != nil {
		return err
	}
	if stop, err := startProfile(*cpuprofile); err != nil {
		return err
	} else {
		defer stop()
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	addr, err := parseAddr(*addrFlag)
	if err != nil {
		return err
	}
	srv, err := perf.Listen(perf.ServerConfig{Addr: addr, Logf: func(format string, a ...any) {
		fmt.Fprintf(stdout, "mrc perf server: "+format+"\n", a...)
	}})
	if err != nil {
		return setupOrRun(err)
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "mrc perf server: listening on %v\n", srv.Addr())
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Serve(ctx, *once)
}

func runPerfClient(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf client", "--addr IP:PORT [flags]", stderr)
	var cfg perf.ClientConfig
	addrFlag := fs.String("addr", "", "the server's control address")
	fs.Var(sizeFlag{&cfg.Bytes}, "bytes", "bytes to transfer, with an optional K/M/G suffix (default 1G unless --duration)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "transfer for this long instead of a fixed size")
	fs.IntVar(&cfg.Planes, "planes", 1, "planes: UDP sockets (NIC ports) per side")
	fs.IntVar(&cfg.EVs, "evs", 16, "active EVs per plane")
	jsonOut := fs.String("json", "", "write the result as JSON to FILE, or to stdout with -")
	fs.IntVar(&cfg.MTU, "mtu", 4096, "MRC payload bytes per packet (256..9000)")
	var chunk int64 = 1 << 20
	fs.Var(sizeFlag{&chunk}, "chunk", "bytes per WRITE_IMM")
	fs.IntVar(&cfg.RingChunks, "ring", 16, "chunks in the server's buffer (at most ring-1 outstanding)")
	fs.IntVar(&cfg.SourcePorts, "source-ports", 1, "UDP source ports per plane: EVs are spread over them")
	fs.BoolVar(&cfg.FlowLabels, "flow-labels", false, "carry each packet's EV in its IPv6 flow label (no GSO runs)")
	fs.BoolVar(&cfg.NoGSO, "no-gso", false, "do not use UDP GSO")
	fs.BoolVar(&cfg.NoGRO, "no-gro", false, "do not use UDP GRO")
	fs.BoolVar(&cfg.Phantom, "phantom", false, "send no payload bytes (nothing is verified)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the byte pattern and the endpoints")
	fs.DurationVar(&cfg.BaseRTT, "base-rtt", 100*time.Microsecond, "base RTT the endpoints assume")
	fs.DurationVar(&cfg.LossTimeout, "loss-timeout", 20*time.Millisecond, "per-packet loss timer (floor)")
	fs.DurationVar(&cfg.RetryTimeout, "retry-timeout", 64*time.Millisecond, "QP timeout per retry")
	fs.IntVar(&cfg.Retries, "retries", 9, "retries without progress before the QP gives up")
	fs.Float64Var(&cfg.Drop, "drop", 0, "drop this fraction of received packets on both sides (testing)")
	fs.BoolVar(&cfg.SkipICRC, "skip-icrc", false, "receivers skip the inner UDP checksum and ICRC (the kernel checked the outer UDP checksum)")
	fs.BoolVar(&cfg.TCP, "tcp", false, "baseline: the same transfer and checks over one kernel TCP connection")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to FILE")
	if err := fs.parse(args); err != nil {
		return err
	}
	if stop, err := startProfile(*cpuprofile); err != nil {
		return err
	} else {
		defer stop()
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	addr, err := parseAddr(*addrFlag)
	if err != nil {
		return err
	}
	if chunk < 1 || chunk > 256<<20 {
		return usagef("--chunk %d: want 1..256M", chunk)
	}
	cfg.Addr, cfg.Chunk = addr, int(chunk)
	if cfg.Bytes > 0 && cfg.Duration > 0 {
		return usagef("--bytes and --duration are exclusive")
	}
	if cfg.Duration < 0 {
		return usagef("--duration %v: want a positive duration", cfg.Duration)
	}
	var jsonW io.Writer
	switch *jsonOut {
	case "":
	case "-":
		jsonW = stdout
	default:
		f, err := os.Create(*jsonOut)
		if err != nil {
			return usagef("--json: %v", err)
		}
		defer f.Close()
		jsonW = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := perf.Run(ctx, cfg)
	if res != nil && jsonW != nil {
		enc := json.NewEncoder(jsonW)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil {
		return setupOrRun(err)
	}
	if *jsonOut != "-" {
		printPerf(stdout, res)
	}
	return nil
}

func printPerf(w io.Writer, r *perf.Result) {
	v := "verified"
	switch {
	case r.Config.Phantom:
		v = "not verified (phantom payloads)"
	case !r.Verified:
		v = "NOT verified"
	}
	if r.Config.TCP {
		fmt.Fprintf(w, "mrc perf (kernel TCP baseline): %d bytes in %.3f s = %.2f Gbit/s, %s (%d chunks)\n", r.Bytes, r.Seconds, r.Gbps, v, r.Chunks)
		return
	}
	fmt.Fprintf(w, "mrc perf: %d bytes in %.3f s = %.2f Gbit/s, %s (%d chunks)\n", r.Bytes, r.Seconds, r.Gbps, v, r.Chunks)
	fmt.Fprintf(w, "  retransmits %d, trims %d, NACKs %d, loss timeouts %d, EVs retired %d / resurrected %d\n",
		r.Retransmits, r.Trims, r.NACKs, r.LossTimeouts, r.EVsRetired, r.EVsResurrected)
	fmt.Fprintf(w, "  datapath: GSO %v, GRO %v; receive-buffer overflows: client %d, server %d\n", r.GSO, r.GRO, r.RxOverflows, r.Server.Overflows)
	for _, p := range r.PerPlane {
		fmt.Fprintf(w, "  plane %d: %d packets (%.1f%%), %d retransmitted, over %d EVs\n", p.Plane, p.Packets, 100*p.Share, p.Retransmits, p.EVs)
	}
}

// startProfile starts a CPU profile into file, if one is named.
func startProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, usagef("--cpuprofile: %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
