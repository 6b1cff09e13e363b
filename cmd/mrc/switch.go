package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/openmrc/mrc/metrics"
	"github.com/openmrc/mrc/swnet"
)

// runSwitch runs `mrc switch` (package swnet; the table file is described
// in docs/switch.md).
func runSwitch(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("switch", "--table FILE [--metrics ADDR] [--json FILE] [--check]", stderr)
	tableFile := fs.String("table", "", "the switch's table file: ports, queues, routes (docs/switch.md)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics on ADDR (host:port) at /metrics")
	jsonOut := fs.String("json", "", "write the final counters as JSON to FILE, or to stdout with -, on exit")
	check := fs.Bool("check", false, "check the table file and print what it configures, then exit")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *tableFile == "" {
		return usagef("--table is required")
	}
	t, err := swnet.LoadTable(*tableFile)
	if err != nil {
		return usagef("%v", err)
	}
	if *check {
		printTable(stdout, t)
		return nil
	}
	jsonW, closeJSON, err := openJSON(*jsonOut, stdout)
	if err != nil {
		return err
	}
	defer closeJSON()
	sw, err := swnet.Open(t)
	if err != nil {
		return usagef("%v", err)
	}
	var outMu sync.Mutex
	sw.SetLogf(func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(stdout, "mrc switch: "+format+"\n", a...)
	})
	if *metricsAddr != "" {
		srv, err := metrics.Listen(*metricsAddr, sw.Handler())
		if err != nil {
			return usagef("--metrics: %v", err)
		}
		defer srv.Close()
		fmt.Fprintf(stdout, "mrc switch: metrics on http://%v/metrics\n", srv.Addr())
	}
	addr := ""
	if t.Switch.Mode.String() == "srv6" {
		addr = ", addr " + netip.AddrFrom16(t.Switch.Addr).String()
	}
	fmt.Fprintf(stdout, "mrc switch: forwarding on %d ports (%s, mode %s%s)\n", len(t.Ports), portNames(t), t.Switch.Mode, addr)
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runErr := sw.Run(ctx)
	st := sw.Stats()
	if jsonW != nil {
		enc := json.NewEncoder(jsonW)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil && runErr == nil {
			runErr = err
		}
	}
	if *jsonOut != "-" {
		fmt.Fprintf(stdout, "mrc switch: %d received, %d sent, %d trimmed (%d last hop), %d ECN marks, %d dropped, %d ignored\n",
			st.Received, st.Sent, st.Trimmed, st.TrimmedLastHop, st.Marked, dropped(st), st.Ignored)
	}
	return runErr
}

func dropped(st swnet.Stats) uint64 {
	var n uint64
	for _, v := range st.Drops {
		n += v
	}
	return n + st.NoBuffer
}

func portNames(t *swnet.Table) string {
	var names []string
	for _, p := range t.Ports {
		names = append(names, p.Name)
	}
	return strings.Join(names, " ")
}

// printTable says what a table configures (--check).
func printTable(w io.Writer, t *swnet.Table) {
	c := t.Switch
	fmt.Fprintf(w, "switch %s: mode %s", c.Name, c.Mode)
	if c.Mode.String() == "srv6" {
		fmt.Fprintf(w, ", addr %v", netip.AddrFrom16(c.Addr))
	}
	if t.ECNInner {
		fmt.Fprint(w, ", ECN marks on inner headers too")
	}
	fmt.Fprintln(w)
	qs := t.Queues()
	for i, p := range t.Ports {
		peer := "learned"
		if p.Peer != nil {
			peer = p.Peer.String()
		}
		rate := "unlimited"
		if p.Rate > 0 {
			rate = fmt.Sprintf("%g Gbit/s", float64(p.Rate)/1e9)
		}
		fmt.Fprintf(w, "port %d %s: peer %s, rate %s, delay %v\n", i, p.Name, peer, rate, p.Delay)
		if i < len(qs) {
			q := qs[i]
			fmt.Fprintf(w, "  queue: buffer %d, header %d, trim %v at %d, ECN %d..%d, last hop %v\n",
				q.Buffer, q.HeaderBuffer, q.Trim, q.TrimAt, q.ECNMin, q.ECNMax, q.LastHop)
		}
	}
	for _, r := range t.Routes {
		fmt.Fprintf(w, "route %v -> %v\n", r.Prefix, r.Ports)
	}
	if len(t.Default) > 0 {
		fmt.Fprintf(w, "default -> %v\n", t.Default)
	}
}
