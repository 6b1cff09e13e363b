package perf

import (
	"bufio"
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/udpio"
	"github.com/openmrc/mrc/wire"
)

// TestAttackSoakLoopback is issue 10's soak test over real sockets: a
// 1 GiB `mrc perf` transfer between a server and a client on [::1],
// through a TCP relay that reads the control connection, while an
// attacker goroutine sends 100,000 forged datagrams from its own UDP
// socket to the server's and the client's data sockets. With -short (CI's
// race run) it moves 64 MiB under 25,000 forgeries.
//
// The attacker sniffs what an on-path attacker sees in clear text: the
// hello and ready (core port addresses, socket addresses, QPNs, start
// PSNs, the server's R_Key, VA and length) from the relay, and the
// current data packets and SACKs from the client's packet capture
// (ClientConfig.Pcap, read back with package pcap). It forges with
// package wire, from the sniffed packets, so QPN, R_Key, EVs and PSNs are
// right wherever an attack needs them, and mixes the classes of issue
// 10's table at random. forgeries lists each class and the counter that
// must count it.
//
// What reaches the core: the datapath checks that a datagram's core
// source address belongs to a peer and that it comes from that peer's
// socket IP (udpio's source checking). On one host every socket has the
// IP ::1, so a forger that writes a peer's core address into its packets
// passes that check: every class that does reaches the core, which drops
// it under its reason (fatal_nack, port_status, wimm_limit, bad_rkey,
// bounds, out_of_window, stale, bad_ev, unknown_qp, bad_icrc or
// bad_checksum), counts it (duplicates, trimmed_received) or bounds its
// answers (answers_withheld). Stopped at the driver, before the core:
// datagrams too short to hold a packet (rx_junk), truncated ones whose
// IPv6 length disagrees with what the socket returned (rx_malformed), and
// ones from a core address no peer has (rx_unknown_peer), and, when the
// host has a second IPv6 address for the attacker to send from (the
// datagrams still travel over the loopback device), a peer's core address
// from the wrong IP (rx_spoofed; the class is skipped, and says so,
// without one).
//
// Every forged data packet that passes the window, key and bounds checks
// is an exact replay of a sniffed one (same PSN, VA and payload): a
// forgery with a fresh in-window PSN, the right key and a credible
// payload would be placed, and that is what docs/security.md says cannot
// be stopped without cryptography. Likewise the fatal NACKs and SACKs
// fail at least one check (a PSN not in flight, or a foreign EV), and the
// WRITEs with a wrong key or VA carry a PSN the sniffed SACK acknowledges,
// which the responder has: one at a PSN it has not received yet is answered
// with a RoCE NAK that the requester takes as a protection error (issue
// 11), so a forger who reads the traffic and wins that race twice ends the
// QP, as it could with a credible fatal NACK.
//
// The test asserts that every session completes and is verified
// byte-exact at the server (so no QP left RTS: a QP error fails the run;
// and the client's source buffer was not written, since the server
// checks what arrives against its own copy of the pattern),
// that each class was counted under its reason, and that the heap stays
// bounded. If the transfer ends before the forgeries are out (a
// fast machine), another session runs under the rest of the attack; the
// whole is bounded by a deadline.
func TestAttackSoakLoopback(t *testing.T) {
	size, total := int64(1<<30), 100_000
	if testing.Short() {
		size, total = 64<<20, 25_000
	}
	// A bound for a stalled transfer, not a duration: the soak takes
	// 1 to 3 s on a loaded 2-core machine (10 to 30 s with -race).
	deadline := time.Now().Add(90 * time.Second)
	addr, stopServer := serve(t)
	relay := newCtlRelay(t, addr)
	stop := sync.OnceFunc(func() {
		stopServer() // returns once every session has ended
		relay.close()
	})
	defer stop()
	base := heapAfterGC()
	mem := watchHeap()
	at := &attacker{r: rand.New(rand.NewPCG(10, 1)), sent: map[string]int{}}
	at.bind, at.spoofIP = attackerBind(t)
	defer at.bind.Close()
	if !at.spoofIP.IsValid() {
		t.Log("no second local IPv6 address: class spoofed_source skipped")
	}
	counts := map[string]uint64{}
	cfg := ClientConfig{Addr: relay.addr(), Bytes: size, Planes: 2, Retries: 20}
	sessions := 0
	for at.total < total {
		if time.Now().After(deadline) {
			t.Fatalf("deadline: %d of %d forgeries sent in %d sessions", at.total, total, sessions)
		}
		sessions++
		res := at.session(t, relay, cfg, deadline, total)
		addCounts(counts, res)
	}
	stop()
	peakInuse, peakSys := mem.stop()
	after := heapAfterGC()

	t.Logf("%d forgeries (%d failed sends) in %d sessions of %d MiB; heap in use %d MiB before, peak %d MiB (%d MiB from the OS), %d MiB after",
		at.total, at.errors, sessions, size>>20, base>>20, peakInuse>>20, peakSys>>20, after>>20)
	logCounts(t, at, counts)
	checkCounted(t, at, counts)
	// The buffers of a session: the server's region and pattern, the
	// client's pattern and both datapaths' batches. The garbage collector
	// lets the heap grow to twice what is live, and the previous
	// session's buffers may not be collected yet; the rest of the bound
	// is for the capture, the relay and the attacker. Keeping what the
	// full attack sends (100,000 datagrams, about 200 MiB) would exceed it.
	chunks := int64(16 + 1) // the default ring of 1 MiB chunks, and the pattern's extra slot
	buffers := uint64(3*chunks<<20 + 2*udpio.DriverMemory(cfg.Planes, 4096, udpio.Options{}))
	if bound := base + 3*buffers + 32<<20; peakInuse > bound {
		t.Errorf("heap in use peaked at %d MiB, bound %d MiB (%d MiB of session buffers)", peakInuse>>20, bound>>20, buffers>>20)
	}
	if after > base+16<<20 {
		t.Errorf("heap in use %d MiB after the sessions, %d MiB before: the attack left memory behind", after>>20, base>>20)
	}
}

// heapAfterGC returns the heap in use after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// logCounts logs what was sent per class and counted per counter.
func logCounts(t *testing.T, at *attacker, counts map[string]uint64) {
	for _, f := range forgeries {
		t.Logf("sent %6d %-20s counted under %v", at.sent[f.name], f.name, f.counters)
	}
	keys := slices.Sorted(maps.Keys(counts))
	for _, k := range keys {
		t.Logf("counted %-28s %d", k, counts[k])
	}
}

// checkCounted checks that every class was sent and counted under one of
// its counters, and that the forgeries were accounted for: the counters
// of the classes that get no answer (all but the probes, whose answers
// within their bound are not counted), with what the kernel dropped for
// want of socket buffer, must reach 90% of what those classes sent (the
// rest: forgeries in flight when a session's counters were read).
func checkCounted(t *testing.T, at *attacker, counts map[string]uint64) {
	t.Helper()
	counted := map[string]bool{}
	sent := 0
	for _, f := range forgeries {
		if f.spoof && !at.spoofIP.IsValid() {
			continue
		}
		n := uint64(0)
		for _, c := range f.counters {
			n += counts[c]
		}
		switch {
		case at.sent[f.name] == 0:
			t.Errorf("class %s was never sent", f.name)
		case n == 0:
			t.Errorf("class %s: %d sent, none counted under %v", f.name, at.sent[f.name], f.counters)
		}
		if f.name == "probe_burst" {
			continue
		}
		sent += at.sent[f.name]
		for _, c := range f.counters {
			counted[c] = true
		}
	}
	n := counts["server:rx_overflows"] + counts["client:rx_overflows"]
	for c := range counted {
		n += counts[c]
	}
	if n < uint64(sent)*9/10 {
		t.Errorf("%d forgeries of the unanswered classes sent, %d counted", sent, n)
	}
}

// session runs one verified transfer through relay while at forges into
// it, until the transfer ends or at has sent total; it returns the
// client's result.
func (at *attacker) session(t *testing.T, relay *ctlRelay, cfg ClientConfig, deadline time.Time, total int) *Result {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	sn := newSniffer()
	cfg.Pcap = sn
	forged := make(chan struct{})
	go func() {
		defer close(forged)
		at.forge(ctx, relay, sn, total)
	}()
	res, err := Run(ctx, cfg)
	cancel()
	<-forged
	sn.close()
	if err != nil {
		t.Fatalf("transfer under attack: %v", err)
	}
	if !res.Verified || res.Bytes != cfg.Bytes || !res.Server.Verified {
		t.Fatalf("transfer under attack: %d of %d bytes, verified %v (server: %d chunks, %d mismatched)",
			res.Bytes, cfg.Bytes, res.Verified, res.Server.Chunks, res.Server.Mismatch)
	}
	return res
}

// addCounts adds a run's receive counters, by side and reason, to counts.
func addCounts(counts map[string]uint64, res *Result) {
	s := &res.Server
	for k, v := range s.DropReasons {
		counts["server:"+k] += v
	}
	for k, v := range res.DropReasons {
		counts["client:"+k] += v
	}
	for k, v := range map[string]uint64{
		"server:rx_junk": s.Junk, "server:rx_malformed": s.Malformed, "server:rx_unknown_peer": s.UnknownPeer,
		"server:rx_spoofed": s.Spoofed, "server:duplicates": s.Dups, "server:trimmed_received": s.TrimmedReceived,
		"server:answers_withheld": s.AnswersWithheld, "server:rx_overflows": s.Overflows,
		"client:rx_junk": res.RxJunk, "client:rx_malformed": res.RxMalformed, "client:rx_unknown_peer": res.RxUnknownPeer,
		"client:rx_spoofed": res.RxSpoofed, "client:rx_overflows": res.RxOverflows,
	} {
		if v > 0 {
			counts[k] += v
		}
	}
}

// ctlSniff is what the relay read of one control connection.
type ctlSniff struct {
	h hello
	r ready
}

// ctlRelay is a TCP relay in front of the perf server that reads the
// first message each way, as an attacker on the path of the control
// connection would.
type ctlRelay struct {
	ln       *net.TCPListener
	sessions chan ctlSniff
	wg       sync.WaitGroup
}

func newCtlRelay(t *testing.T, server netip.AddrPort) *ctlRelay {
	t.Helper()
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.MustParseAddrPort("[::1]:0")))
	if err != nil {
		t.Fatal(err)
	}
	rl := &ctlRelay{ln: ln, sessions: make(chan ctlSniff, 16)}
	rl.wg.Add(1)
	go func() {
		defer rl.wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			rl.wg.Add(1)
			go func() {
				defer rl.wg.Done()
				rl.serve(c, server)
			}()
		}
	}()
	return rl
}

func (rl *ctlRelay) addr() netip.AddrPort { return rl.ln.Addr().(*net.TCPAddr).AddrPort() }

func (rl *ctlRelay) close() {
	rl.ln.Close()
	rl.wg.Wait()
}

// serve relays one connection, reading its hello and ready on the way.
func (rl *ctlRelay) serve(client *net.TCPConn, server netip.AddrPort) {
	defer client.Close()
	srv, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(server))
	if err != nil {
		return
	}
	defer srv.Close()
	var sn ctlSniff
	fromClient, fromServer := bufio.NewReaderSize(client, MaxLine), bufio.NewReaderSize(srv, MaxLine)
	if readRelayed(fromClient, srv, &sn.h) != nil || readRelayed(fromServer, client, &sn.r) != nil {
		return
	}
	select {
	case rl.sessions <- sn:
	default:
	}
	done := make(chan struct{})
	go func() {
		io.Copy(srv, fromClient)
		srv.CloseWrite()
		close(done)
	}()
	io.Copy(client, fromServer)
	client.CloseWrite()
	<-done
}

// readRelayed reads one control message from r into v and passes it on
// to w.
func readRelayed(r *bufio.Reader, w io.Writer, v any) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if _, err := w.Write(line); err != nil {
		return err
	}
	return parseMessage(line, v)
}

// sniffer reads the client's packet capture as it is written (it is the
// capture's io.Writer) and keeps the latest data packet the client sent
// and the latest SACK it received, with their planes.
type sniffer struct {
	pw   *io.PipeWriter
	done chan struct{}

	mu        sync.Mutex
	data      []byte
	sack      []byte
	dataPlane int
	sackPlane int
	dataPSN   uint32 // of the latest data packet
}

func newSniffer() *sniffer {
	pr, pw := io.Pipe()
	s := &sniffer{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer io.Copy(io.Discard, pr) // never block the capture
		r, err := pcap.NewReader(pr)
		if err != nil {
			return
		}
		var p wire.Packet
		for {
			c, err := r.Next()
			if err != nil {
				return
			}
			ifc, _ := r.Interface(c.Interface)
			plane := int(ifc.Name[len(ifc.Name)-1] - '0') // "client:port<p>"
			if len(c.Data) < pcap.EthernetLen || p.Decode(c.Data[pcap.EthernetLen:]) != nil {
				continue
			}
			s.see(&p, c.Data[pcap.EthernetLen:], c.Dir, plane)
		}
	}()
	return s
}

func (s *sniffer) see(p *wire.Packet, pkt []byte, dir pcap.Direction, plane int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case dir == pcap.DirOutbound && p.BTH.Opcode.IsData() && !p.Trimmed:
		s.data, s.dataPlane = append(s.data[:0], pkt...), plane
		s.dataPSN = p.BTH.PSN
	case dir == pcap.DirInbound && p.BTH.Opcode == wire.OpSACK && !s.forged(&p.SACK):
		s.sack, s.sackPlane = append(s.sack[:0], pkt...), plane
	}
}

// forged reports whether an inbound SACK is one of the attacker's own
// (the capture sees what reaches the client's endpoint, forgeries
// included): one reflecting foreignEV, or acknowledging PSNs the client
// has not sent.
func (s *sniffer) forged(sk *wire.SACK) bool {
	ahead := (sk.CackPSN - s.dataPSN) & wire.PSNMask
	return sk.Entropy == foreignEV || ahead != 0 && ahead < wire.PSNMask/2
}

func (s *sniffer) Write(b []byte) (int, error) { return s.pw.Write(b) }

// close ends the capture's stream (after Run has flushed it).
func (s *sniffer) close() {
	s.pw.Close()
	<-s.done
}

// latest returns copies of the latest data packet and SACK, decoded, or
// ok false before there are both.
func (s *sniffer) latest() (data, sack sniffedPkt, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.data == nil || s.sack == nil {
		return data, sack, false
	}
	return decodeCopy(s.data, s.dataPlane), decodeCopy(s.sack, s.sackPlane), true
}

// sniffedPkt is a sniffed packet, decoded for editing, with its payload
// and raw bytes (copies) and the plane it travelled on.
type sniffedPkt struct {
	p       wire.Packet
	payload []byte
	raw     []byte
	plane   int
}

func decodeCopy(b []byte, plane int) sniffedPkt {
	s := sniffedPkt{raw: slices.Clone(b), plane: plane}
	if s.p.Decode(s.raw) == nil {
		s.payload = slices.Clone(s.p.Payload)
	}
	return s
}

// attacker forges datagrams from its own socket.
type attacker struct {
	r       *rand.Rand
	bind    *udpio.StdBind // [::1] (plane 0), and spoofIP if valid (plane 1)
	spoofIP netip.Addr
	out     []udpio.Burst
	sent    map[string]int // per class
	total   int
	errors  int // sends that failed
	ctl     ctlSniff
}

// attackerBind opens the attacker's sockets: one on [::1], and one on
// another local IPv6 address of the host if it has one (spoof, else the
// zero Addr). It sends with the datapath's Bind, so a burst of equal
// datagrams (the probes) leaves in one system call and arrives at once,
// as a flood does.
func attackerBind(t *testing.T) (b *udpio.StdBind, spoof netip.Addr) {
	t.Helper()
	planes := []netip.AddrPort{netip.MustParseAddrPort("[::1]:0")}
	if spoof = otherIPv6(); spoof.IsValid() {
		planes = append(planes, netip.AddrPortFrom(spoof, 0))
	}
	b, err := udpio.NewStdBind(udpio.StdConfig{Planes: planes, NoGRO: true, RecvBuffer: 1 << 16})
	if err == nil {
		_, err = b.Open() // nothing reads what it receives
	}
	if err != nil && spoof.IsValid() {
		t.Logf("no socket on %v (%v): sending from [::1] only", spoof, err)
		b, spoof = nil, netip.Addr{}
		b, err = udpio.NewStdBind(udpio.StdConfig{Planes: planes[:1], NoGRO: true, RecvBuffer: 1 << 16})
		if err == nil {
			_, err = b.Open()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, spoof
}

// otherIPv6 returns a global unicast IPv6 address of this host, or the
// zero Addr.
func otherIPv6() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(n.IP)
			if ip.Is6() && !ip.Is4In6() && ip.IsGlobalUnicast() {
				return ip
			}
		}
	}
	return netip.Addr{}
}

// forge waits for the session's control messages and sniffed packets,
// then sends forgeries until ctx ends or total have been sent.
func (at *attacker) forge(ctx context.Context, relay *ctlRelay, sn *sniffer, total int) {
	select {
	case at.ctl = <-relay.sessions:
	case <-ctx.Done():
		return
	}
	for at.total < total && ctx.Err() == nil {
		data, sack, ok := sn.latest()
		if !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		// A few forgeries per sniff: the templates stay current.
		for range 8 {
			f := at.next()
			w := forgeWork{at: at, data: data, sack: sack}
			at.queue(f.build(&w), w.toClient, w.plane, f.spoof)
			at.sent[f.name] += w.n
			at.total += w.n
		}
		if err := at.bind.Send(at.out); err != nil {
			at.errors++
		}
		at.out = at.out[:0]
	}
}

// next picks the class to forge next: one of those with the fewest
// datagrams sent, so every class gets its share whatever its burst.
func (at *attacker) next() *forgery {
	var best *forgery
	for _, i := range at.r.Perm(len(forgeries)) {
		f := &forgeries[i]
		if f.spoof && !at.spoofIP.IsValid() {
			continue
		}
		if best == nil || at.sent[f.name] < at.sent[best.name] {
			best = f
		}
	}
	return best
}

// queue adds a burst of datagrams (all of one length but the last, which
// is no longer) for the client's or the server's socket of plane.
func (at *attacker) queue(pkts [][]byte, toClient bool, plane int, spoof bool) {
	socks := at.ctl.r.Sockets
	if toClient {
		socks = at.ctl.h.Sockets
	}
	for len(pkts) > 0 {
		n := min(len(pkts), udpio.MaxSegments)
		b := udpio.Burst{Segs: pkts[:n], To: socks[plane]}
		if spoof {
			b.Plane = 1
		}
		at.out = append(at.out, b)
		pkts = pkts[n:]
	}
}

// forgeWork is one forgery in the making: the templates, and where it
// goes.
type forgeWork struct {
	at         *attacker
	data, sack sniffedPkt
	toClient   bool
	plane      int
	n          int // datagrams built
}

// toServer edits a copy of the sniffed data packet (client to server).
func (w *forgeWork) toServer(edit func(p *wire.Packet)) []byte {
	w.plane, w.n = w.data.plane, w.n+1
	p := w.data.p
	edit(&p)
	return wire.AppendPacket(nil, &p, w.data.payload)
}

// fromServer edits a copy of the sniffed SACK (server to client).
func (w *forgeWork) fromServer(edit func(p *wire.Packet)) []byte {
	w.toClient, w.plane, w.n = true, w.sack.plane, w.n+1
	p := w.sack.p
	edit(&p)
	return wire.AppendPacket(nil, &p, nil)
}

// foreignEV is an EV no QP has: the core's EVs carry the slot mark in
// their top bits (docs/spec-gaps.md, EV layout).
const foreignEV = wire.EV(1)

// forgery is one class of hostile datagrams, and the counters (side:name,
// as addCounts names them) that must count it. A spoof class is sent from
// the attacker's second address.
type forgery struct {
	name     string
	counters []string
	build    func(w *forgeWork) [][]byte
	spoof    bool
}

var forgeries = []forgery{
	{"fatal_nack_stale", []string{"client:fatal_nack"}, func(w *forgeWork) [][]byte { // row 2: a PSN not in flight
		return [][]byte{w.fromServer(func(p *wire.Packet) {
			p.BTH.Opcode = wire.OpNACK
			p.NACK = wire.NACK{Reason: wire.NackUnexpEvent, NackPSN: (p.SACK.CackPSN + 1<<20) & wire.PSNMask, Entropy: p.SACK.Entropy}
		})}
	}, false},
	{"fatal_nack_in_flight", []string{"client:fatal_nack"}, func(w *forgeWork) [][]byte { // row 2: in flight, foreign EV
		psn := w.data.p.BTH.PSN
		return [][]byte{w.fromServer(func(p *wire.Packet) {
			p.BTH.Opcode = wire.OpNACK
			p.NACK = wire.NACK{Reason: wire.NackWImmLimit, NackPSN: psn, Entropy: foreignEV}
		})}
	}, false},
	{"port_status_all_down", []string{"client:port_status"}, func(w *forgeWork) [][]byte { // row 3
		return [][]byte{w.fromServer(func(p *wire.Packet) {
			p.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointRequest, DestQP: wire.QPNEndpoint}
			p.EPReq = wire.EPRequest{Op: wire.EPPortStatusUpdate, TS: wire.TSETH{FType: wire.TSETHFType}}
		})}
	}, false},
	{"wimm_bad_rqmsn", []string{"server:wimm_limit", "server:duplicates"}, func(w *forgeWork) [][]byte { // row 4
		return [][]byte{w.toServer(func(p *wire.Packet) {
			// Ahead of the sniffed PSN (the capture lags a few packets behind).
			p.BTH.Opcode, p.BTH.PSN, p.METH.RQMSN = wire.OpWriteOnlyImm, (p.BTH.PSN+1+uint32(w.at.r.IntN(64)))&wire.PSNMask, 0x4000
		})}
	}, false},
	{"write_guessed_key", []string{"server:bad_rkey", "server:duplicates"}, func(w *forgeWork) [][]byte { // rows 5, 6
		return [][]byte{w.toServer(func(p *wire.Packet) {
			// A PSN the sniffed SACK acknowledges: see the doc comment.
			p.BTH.PSN, p.RETH.RKey = w.sack.p.SACK.CackPSN, p.RETH.RKey^uint32(1+w.at.r.IntN(1<<20-1))
		})}
	}, false},
	{"write_out_of_bounds", []string{"server:bounds", "server:duplicates"}, func(w *forgeWork) [][]byte { // sniffed key, VA past the region
		mr := w.at.ctl.r.MR
		return [][]byte{w.toServer(func(p *wire.Packet) {
			p.BTH.PSN, p.RETH.VA = w.sack.p.SACK.CackPSN, mr.Addr+mr.Len-uint64(w.at.r.IntN(len(w.data.payload)/2+1))
		})}
	}, false},
	{"write_client_source", []string{"client:bad_rkey"}, func(w *forgeWork) [][]byte { // row 6: the sniffed key, into the client
		h, r := &w.at.ctl.h, &w.at.ctl.r
		w.toClient, w.plane, w.n = true, w.data.plane, 1
		p := w.data.p
		p.IP.Src, p.IP.Dst = p.IP.Dst, p.IP.Src
		p.BTH.DestQP, p.BTH.PSN = h.QPN, (r.PSN+uint32(w.at.r.IntN(64)))&wire.PSNMask
		p.RETH.RKey, p.RETH.VA = r.MR.Key, r.MR.Addr
		return [][]byte{wire.AppendPacket(nil, &p, w.data.payload)}
	}, false},
	{"sack_foreign_ev", []string{"client:bad_ev"}, func(w *forgeWork) [][]byte { // row 7
		psn := w.data.p.BTH.PSN
		return [][]byte{w.fromServer(func(p *wire.Packet) { p.SACK.CackPSN, p.SACK.SackBitmap, p.SACK.Entropy = psn, 0, foreignEV })}
	}, false},
	{"sack_unsent", []string{"client:stale"}, func(w *forgeWork) [][]byte { // row 7: a real EV, PSNs never sent
		psn := w.data.p.BTH.PSN
		return [][]byte{w.fromServer(func(p *wire.Packet) { p.SACK.CackPSN, p.SACK.SackBitmap = (psn+50_000)&wire.PSNMask, 0 })}
	}, false},
	{"truncated", []string{"server:rx_malformed", "client:rx_malformed"}, func(w *forgeWork) [][]byte { // row 8
		if w.at.r.IntN(2) == 0 {
			w.toClient, w.plane, w.n = true, w.sack.plane, 1
			return [][]byte{w.sack.raw[:len(w.sack.raw)-4]}
		}
		w.plane, w.n = w.data.plane, 1
		return [][]byte{w.data.raw[:len(w.data.raw)/2]}
	}, false},
	{"trimmed_unsent", []string{"server:trimmed_received"}, func(w *forgeWork) [][]byte { // row 11
		b := w.toServer(func(p *wire.Packet) { p.BTH.PSN = (p.BTH.PSN + 1 + uint32(w.at.r.IntN(256))) & wire.PSNMask })
		t, _ := wire.Trim(b, wire.DefaultDSCP.Trimmed)
		return [][]byte{t}
	}, false},
	{"replay_ack_req", []string{"server:duplicates"}, func(w *forgeWork) [][]byte { // row 11: the same packet again
		return [][]byte{w.toServer(func(p *wire.Packet) { p.BTH.AckReq = true })}
	}, false},
	{"probe_burst", []string{"server:answers_withheld"}, func(w *forgeWork) [][]byte { // row 11: 256 at once, more than the QP's EVs
		w.data.payload = nil
		b := w.toServer(func(p *wire.Packet) {
			p.BTH.Opcode, p.PayloadLen = wire.OpProbe, 0
			p.Probe = wire.Probe{ProbeID: 9, TS: wire.TSETH{FType: wire.TSETHFType}}
		})
		out := [][]byte{b}
		for range 255 {
			out = append(out, b)
		}
		w.n = len(out)
		return out
	}, false},
	{"out_of_window", []string{"server:out_of_window"}, func(w *forgeWork) [][]byte {
		return [][]byte{w.toServer(func(p *wire.Packet) { p.BTH.PSN = (p.BTH.PSN + 1<<22) & wire.PSNMask })}
	}, false},
	{"unknown_qp", []string{"server:unknown_qp"}, func(w *forgeWork) [][]byte {
		return [][]byte{w.toServer(func(p *wire.Packet) { p.BTH.DestQP ^= 0x5a5a })}
	}, false},
	{"bad_icrc", []string{"server:bad_icrc", "server:bad_checksum"}, func(w *forgeWork) [][]byte { // a payload bit flipped, CRCs kept
		w.plane, w.n = w.data.plane, 1
		b := slices.Clone(w.data.raw)
		b[len(b)-8] ^= 0x10
		return [][]byte{b}
	}, false},
	{"unknown_source", []string{"server:rx_unknown_peer"}, func(w *forgeWork) [][]byte { // a core address no peer has
		return [][]byte{w.toServer(func(p *wire.Packet) { p.IP.Src[15] ^= 0xf0 })}
	}, false},
	{"spoofed_source", []string{"server:rx_spoofed", "client:rx_spoofed"}, func(w *forgeWork) [][]byte { // a peer's address, from another IP
		if w.at.r.IntN(2) == 0 {
			return [][]byte{w.fromServer(func(*wire.Packet) {})}
		}
		return [][]byte{w.toServer(func(p *wire.Packet) { p.BTH.AckReq = true })}
	}, true},
	{"garbage", []string{"server:rx_junk", "client:rx_junk"}, func(w *forgeWork) [][]byte { // shorter than IPv6 + UDP
		b := make([]byte, 1+w.at.r.IntN(wire.IPv6Len+wire.UDPLen-1))
		for i := range b {
			b[i] = byte(w.at.r.Uint32())
		}
		w.toClient, w.n = w.at.r.IntN(2) == 0, 1
		w.plane = w.at.r.IntN(2)
		return [][]byte{b}
	}, false},
}

// heapWatch samples the heap until stopped and keeps the peaks.
type heapWatch struct {
	stopc chan struct{}
	done  chan struct{}
	inuse uint64
	sys   uint64
}

func watchHeap() *heapWatch {
	h := &heapWatch{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			h.inuse, h.sys = max(h.inuse, m.HeapInuse), max(h.sys, m.HeapSys)
			select {
			case <-tick.C:
			case <-h.stopc:
				return
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak heap in use and obtained
// from the OS.
func (h *heapWatch) stop() (inuse, sys uint64) {
	close(h.stopc)
	<-h.done
	return h.inuse, h.sys
}
