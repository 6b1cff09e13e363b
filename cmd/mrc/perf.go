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
	"strings"
	"syscall"
	"time"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/perf"
	"github.com/openmrc/mrc/udpio"
)

const perfUsage = `perf server --addr IP:PORT [--once] [--max-sessions N] [--session-memory SIZE] [--native --ports A,B --paths FILE] [--pcap FILE] [--metrics ADDR]
       mrc perf client --addr IP:PORT [--bytes N | --duration D] [--planes P] [--evs N] [--json FILE|-] [flags]`

// runPerf dispatches to the server or the client (package perf).
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

// setupOrRun maps a perf error to the exit status: setup problems are
// usage errors (exit 2), anything else exit 1.
func setupOrRun(err error) error {
	var se *perf.SetupError
	if errors.As(err, &se) {
		return usagef("%v", se.Err)
	}
	return err
}

// framingFlags are the flags both sides take for native framing,
// captures and metrics.
type framingFlags struct {
	addr        *string
	cpuprofile  *string
	native      *bool
	ports       *string
	paths       *string
	pcap        *string
	pcapFilter  *string
	pcapSnaplen *int
	metrics     *string
}

// addFramingFlags defines the flags both sides of mrc perf take; addrUsage
// describes --addr for the side.
func addFramingFlags(fs *flagSet, addrUsage string) *framingFlags {
	return &framingFlags{
		addr:        fs.String("addr", "", addrUsage),
		cpuprofile:  fs.String("cpuprofile", "", "write a CPU profile to FILE"),
		native:      fs.Bool("native", false, "native framing: send the core's packets as they are through raw IPv6 sockets (needs CAP_NET_RAW), receive them on UDP port 4791 of --ports"),
		ports:       fs.String("ports", "", "native framing: this host's NIC port addresses, one per plane, comma-separated"),
		paths:       fs.String("paths", "", "SRv6 path table FILE (usid and srv6 encapsulations; docs/udpio.md)"),
		pcap:        fs.String("pcap", "", "write a pcapng capture of every packet sent and received to FILE"),
		pcapFilter:  fs.String("pcap-filter", "", "capture only packets matching this filter (op=data,nack ev=... plane=... qpn=...)"),
		pcapSnaplen: fs.Int("pcap-snaplen", 0, "keep at most N bytes of each captured packet (0: all)"),
		metrics:     fs.String("metrics", "", "serve Prometheus metrics on ADDR (host:port) at /metrics"),
	}
}

// parsePorts parses comma-separated IPv6 addresses.
func parsePorts(s string) ([]netip.Addr, error) {
	if s == "" {
		return nil, nil
	}
	var out []netip.Addr
	for _, f := range strings.Split(s, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil || !a.Is6() || a.Is4In6() {
			return nil, usagef("--ports: %q is not an IPv6 address", f)
		}
		out = append(out, a)
	}
	return out, nil
}

// start parses args, starts the CPU profile, checks --addr, and opens what
// the framing flags name (see open). stop ends the profile and closes the
// capture.
func (ff *framingFlags) start(fs *flagSet, args []string) (addr netip.AddrPort, ports []netip.Addr, paths *udpio.PathTable, pcapW io.Writer, stop func(), err error) {
	if err = fs.parse(args); err != nil {
		return
	}
	if fs.NArg() > 0 {
		err = usagef("unexpected argument %q", fs.Arg(0))
		return
	}
	if addr, err = parseAddr(*ff.addr); err != nil {
		return
	}
	ports, paths, pcapW, closePcap, err := ff.open()
	if err != nil {
		return
	}
	stopProfile, err := startProfile(*ff.cpuprofile)
	if err != nil {
		closePcap()
		return
	}
	stop = func() {
		stopProfile()
		closePcap()
	}
	return addr, ports, paths, pcapW, stop, nil
}

// open checks the framing flags and opens what they name; closers run at
// exit.
func (ff *framingFlags) open() (ports []netip.Addr, paths *udpio.PathTable, pcapW io.Writer, closer func() error, err error) {
	closer = func() error { return nil }
	if ports, err = parsePorts(*ff.ports); err != nil {
		return
	}
	if len(ports) > 0 && !*ff.native {
		err = usagef("--ports needs --native")
		return
	}
	if *ff.native && len(ports) == 0 {
		err = usagef("--native needs --ports: this host's NIC port addresses")
		return
	}
	if *ff.paths != "" {
		if paths, err = udpio.LoadPathTable(*ff.paths); err != nil {
			err = usagef("--paths: %v", err)
			return
		}
	}
	if *ff.pcapSnaplen < 0 {
		err = usagef("--pcap-snaplen %d: want 0 or more", *ff.pcapSnaplen)
		return
	}
	if _, perr := pcap.ParseFilter(*ff.pcapFilter); perr != nil {
		err = usagef("--pcap-filter: %v", perr)
		return
	}
	if *ff.pcap != "" {
		f, ferr := os.Create(*ff.pcap)
		if ferr != nil {
			err = usagef("--pcap: %v", ferr)
			return
		}
		pcapW, closer = f, f.Close
	} else if *ff.pcapFilter != "" || *ff.pcapSnaplen != 0 {
		err = usagef("--pcap-filter and --pcap-snaplen need --pcap")
	}
	return
}

func runPerfServer(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf server", "--addr IP:PORT [--once] [--max-sessions N] [--session-memory SIZE] [--native --ports A,B] [--paths FILE] [--pcap FILE] [--metrics ADDR]", stderr)
	once := fs.Bool("once", false, "serve one client, then exit (non-zero if its transfer failed)")
	var lim perf.Limits
	fs.IntVar(&lim.MaxSessions, "max-sessions", 16, "sessions served at once; a connection beyond them sheds the oldest idle one")
	var sessionMemory int64 = 256 << 20
	fs.Var(sizeFlag{&sessionMemory}, "session-memory", "most buffer memory one session may take (a size such as 256MiB)")
	ff := addFramingFlags(fs, "TCP control address to listen on; UDP uses free ports on the same IP")
	addr, ports, paths, pcapW, stop, err := ff.start(fs, args)
	if err != nil {
		return err
	}
	defer stop()
	if lim.MaxSessions < 1 {
		return usagef("--max-sessions %d: want 1 or more", lim.MaxSessions)
	}
	if sessionMemory < 1<<20 {
		return usagef("--session-memory %d: want at least 1MiB", sessionMemory)
	}
	lim.SessionMemory = sessionMemory
	srv, err := perf.Listen(perf.ServerConfig{Addr: addr, Limits: lim, Logf: func(format string, a ...any) {
		fmt.Fprintf(stdout, "mrc perf server: "+format+"\n", a...)
	}, Native: *ff.native, Ports: ports, Paths: paths, Pcap: pcapW, PcapFilter: *ff.pcapFilter, PcapSnaplen: *ff.pcapSnaplen,
		MetricsAddr: *ff.metrics})
	if err != nil {
		return setupOrRun(err)
	}
	fmt.Fprintf(stdout, "mrc perf server: listening on %v\n", srv.Addr())
	if a := srv.MetricsAddr(); a != "" {
		fmt.Fprintf(stdout, "mrc perf server: metrics on http://%s/metrics\n", a)
	}
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = srv.Serve(ctx, *once)
	if cerr := srv.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stdout, "mrc perf server: stopped")
	}
	if *ff.pcap != "" {
		fmt.Fprintf(stdout, "mrc perf server: %d packets captured in %s\n", srv.CapturedPackets(), *ff.pcap)
	}
	return err
}

func runPerfClient(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf client", "--addr IP:PORT [flags]", stderr)
	var cfg perf.ClientConfig
	fs.Var(sizeFlag{&cfg.Bytes}, "bytes", "bytes to transfer, e.g. 1GiB or 500MB (default 1GiB unless --duration)")
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
	fs.StringVar(&cfg.Encap, "encap", "", "encapsulation: plain, usid or srv6 (default srv6 with --native, else plain)")
	fs.BoolVar(&cfg.NoPoll, "no-poll", false, "do not read the sockets without blocking before loss timers fire (to measure what that prevents)")
	traceFile := fs.String("trace", "", "write the client endpoint's trace (JSON lines, docs/trace.md) to FILE")
	fs.StringVar(&cfg.TraceFilter, "trace-filter", "", "trace only records matching this filter (kind=... ev=... plane=... t=...)")
	ff := addFramingFlags(fs, "the server's control address")
	addr, ports, paths, pcapW, stop, err := ff.start(fs, args)
	if err != nil {
		return err
	}
	defer stop()
	cfg.Native, cfg.Ports, cfg.Paths, cfg.PathsFile = *ff.native, ports, paths, *ff.paths
	cfg.Pcap, cfg.PcapFilter, cfg.PcapSnaplen, cfg.MetricsAddr = pcapW, *ff.pcapFilter, *ff.pcapSnaplen, *ff.metrics
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return usagef("--trace: %v", err)
		}
		defer f.Close()
		cfg.Trace = f
	} else if cfg.TraceFilter != "" {
		return usagef("--trace-filter needs --trace")
	}
	if cfg.Native {
		if fs.given()["planes"] && cfg.Planes != len(ports) {
			return usagef("--planes %d but %d --ports", cfg.Planes, len(ports))
		}
		cfg.Planes = len(ports)
	}
	if chunk < 1 || chunk > 256<<20 {
		return usagef("--chunk %d: want 1..256MiB", chunk)
	}
	cfg.Addr, cfg.Chunk = addr, int(chunk)
	if cfg.Bytes > 0 && cfg.Duration > 0 {
		return usagef("--bytes and --duration are exclusive")
	}
	if cfg.Duration < 0 {
		return usagef("--duration %v: want a positive duration", cfg.Duration)
	}
	jsonW, closeJSON, err := openJSON(*jsonOut, stdout)
	if err != nil {
		return err
	}
	defer closeJSON()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pg := perfProgress(stderr)
	cfg.Progress = pg.show
	res, err := perf.Run(ctx, cfg)
	pg.clear()
	if res != nil && jsonW != nil {
		enc := json.NewEncoder(jsonW)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil && err == nil {
			err = jerr
		}
	}
	if errors.Is(err, context.Canceled) && res != nil {
		if *jsonOut != "-" {
			res.WriteText(stdout) // the exit status says it was interrupted, whatever stdout says
		}
		return exitError{code: 130, msg: fmt.Sprintf("interrupted after %d bytes in %.3f s; the statistics are partial", res.Bytes, res.Seconds)}
	}
	if err != nil {
		return setupOrRun(err)
	}
	if *jsonOut != "-" {
		return res.WriteText(stdout)
	}
	return nil
}

// perfProgressLine shows a running transfer once per second on stderr
// when it is a terminal.
type perfProgressLine struct {
	w     io.Writer
	shown bool
}

// perfProgress returns the progress display for stderr (silent unless
// stderr is a terminal).
func perfProgress(stderr io.Writer) *perfProgressLine {
	if !isTerminal(stderr) {
		return &perfProgressLine{}
	}
	return &perfProgressLine{w: stderr}
}

func (p *perfProgressLine) show(pr perf.Progress) {
	if p.w == nil {
		return
	}
	fmt.Fprint(p.w, "\r\033[K"+progressText(pr))
	p.shown = true
}

func (p *perfProgressLine) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// progressText is one progress line: bytes moved (of the total), rate and
// retransmissions so far.
func progressText(pr perf.Progress) string {
	s := fmt.Sprintf("mrc perf: %s", mib(pr.Bytes))
	if pr.Total > 0 {
		s += fmt.Sprintf(" of %s (%.0f%%)", mib(pr.Total), 100*float64(pr.Bytes)/float64(pr.Total))
	}
	gbps := 0.0
	if sec := pr.Elapsed.Seconds(); sec > 0 {
		gbps = float64(pr.Bytes) * 8 / sec / 1e9
	}
	return s + fmt.Sprintf(" in %.0f s, %.2f Gbit/s, %d retransmits", pr.Elapsed.Seconds(), gbps, pr.Retransmits)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

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
