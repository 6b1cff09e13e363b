package mrc_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/golden"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// TestSACKTranscript replays testdata/sack.txt: two endpoints driven by hand,
// every packet printed, so that SACK/NACK generation and the requester's
// reactions (selective retransmission, EV states) read as a transcript.
//
// Verbs:
//
//	setup planes=N mtu=N active=N backup=N sack=N   new endpoints A and B, one QP each
//	write bytes=N [imm]                             A posts a WRITE (WRITE_IMM) into B
//	tx from=A|B                                     the side sends all it can; packets join the wire
//	deliver [drop=psn,..] [trim=..] [lasthop=..] [ce=..] [dup=..] [reverse]
//	                                                the wire's packets reach the other side
//	run                                             tx and deliver both ways until quiet
//	tick d=DURATION                                 time passes; timers fire
//	events                                          both sides' events
func TestSACKTranscript(t *testing.T) {
	var d *duo
	golden.Run(t, "testdata/sack.txt", func(t *testing.T, c golden.Cmd) string { return d.run(t, c, &d) })
}

// TestTranscripts replays the failure transcripts with the verbs of
// TestSACKTranscript, plus:
//
//	setup ... loss=DURATION linear=N exp=N timeout=N  the loss timer and the retry budget (RTSAttr)
//	setup ... ts sackdelay=DURATION                 TSETH timestamps; the SACK coalescing delay
//	write ... rkey=bad                              A names a key B never registered
//	port side=A|B port=N up|down                    a local port's link state changes
//	advance d=DURATION                              time passes; each timer fires at its deadline
//	deliver ... lose=KIND,..                        packets of these kinds are lost: probe, sack,
//	                                                nack, ack, ep (endpoint ops), data, or pN
//	                                                (every packet sent on port N)
//	clock                                           the virtual time
//	state                                           both QPs' states and EV counts
//	rtt                                             A's smoothed RTT
func TestTranscripts(t *testing.T) {
	for _, name := range []string{"loss", "portdown", "qperror", "probe", "rtt"} {
		t.Run(name, func(t *testing.T) {
			var d *duo
			golden.Run(t, "testdata/"+name+".txt", func(t *testing.T, c golden.Cmd) string { return d.run(t, c, &d) })
		})
	}
}

// run executes one transcript command; setup replaces *dp.
func (d *duo) run(t *testing.T, c golden.Cmd, dp **duo) string {
	switch c.Verb {
	case "setup":
		*dp = newDuo(t, c)
		return ""
	case "write":
		return d.write(t, c.Int(t, "bytes", 1024), c.Has("imm"), c.Str("rkey", "") == "bad")
	case "tx":
		return d.tx(side(c.Str("from", "A")))
	case "run":
		// Exchange packets until both sides are quiet.
		var out []string
		for range 100 {
			a := d.tx(0)
			d.deliver(t, golden.Cmd{})
			b := d.tx(1)
			d.deliver(t, golden.Cmd{})
			if a == "" && b == "" {
				break
			}
			out = append(out, a, b)
		}
		return strings.Join(slices.DeleteFunc(out, func(s string) bool { return s == "" }), "\n")
	case "deliver":
		return d.deliver(t, c)
	case "tick":
		d.now = d.now.Add(c.Duration(t, "d", 0))
		for _, ep := range d.eps {
			ep.HandleTimeout(d.now)
		}
		return ""
	case "advance":
		d.advance(t, d.now.Add(c.Duration(t, "d", 0)))
		return ""
	case "port":
		s := side(c.Str("side", "A"))
		if err := d.eps[s].SetPortUp(d.now, c.Int(t, "port", 0), !c.Has("down")); err != nil {
			return "error: " + err.Error()
		}
		return ""
	case "penalty":
		// A host-set receive penalty (QP.SetReceivePenalty), as a
		// responder whose last hop is overloaded advertises.
		d.qps[side(c.Str("side", "B"))].SetReceivePenalty(uint8(c.Int(t, "pen", 0)))
		return ""
	case "clock":
		return fmt.Sprintf("t=%v", time.Duration(d.now))
	case "state":
		var out []string
		for s, q := range d.qps {
			n := q.EVCounts(d.now)
			line := fmt.Sprintf("%s: %v good=%d skip=%d bad=%d denied=%d", sideName[s], q.State(), n[0], n[1], n[2], n[3])
			if q.Err() != nil {
				line += " err=" + q.Err().Error()
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	case "rtt":
		return fmt.Sprintf("A: srtt=%v", d.qps[0].SmoothedRTT())
	case "events":
		return d.events()
	}
	t.Fatalf("line %d: unknown verb %q", c.Line, c.Verb)
	return ""
}

// advance moves the clock to end, firing each endpoint's timers at their
// own deadlines on the way.
func (d *duo) advance(t *testing.T, end mtime.Time) {
	for i := 0; ; i++ {
		if i == 100000 {
			t.Fatalf("timers keep firing at %v", time.Duration(d.now))
		}
		next := mtime.Min(d.eps[0].NextTimeout(), d.eps[1].NextTimeout())
		if next > end {
			break
		}
		d.now = max(d.now, next)
		for _, ep := range d.eps {
			if ep.NextTimeout() <= d.now {
				ep.HandleTimeout(d.now)
			}
		}
	}
	d.now = end
}

func side(s string) int {
	if s == "B" {
		return 1
	}
	return 0
}

var sideName = [2]string{"A", "B"}

type wirePkt struct {
	from int
	port int
	buf  []byte
}

// duo is two endpoints with one QP each, driven by hand.
type duo struct {
	now  mtime.Time
	eps  [2]*mrc.Endpoint
	qps  [2]*mrc.QP
	src  []byte
	mrs  [2]verbs.MR
	wire []wirePkt
	off  uint64
	buf  []byte
}

func newDuo(t *testing.T, c golden.Cmd) *duo {
	planes := c.Int(t, "planes", 1)
	mtu := c.Int(t, "mtu", 1024)
	d := &duo{buf: make([]byte, mrc.MaxHeaderLen+mtu+16)}
	addr := func(s, p int) netip.Addr {
		return netip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(p), 0, byte(s + 1)})
	}
	for s := range 2 {
		ports := make([]netip.Addr, planes)
		for p := range ports {
			ports[p] = addr(s, p)
		}
		ep, err := mrc.NewEndpoint(mrc.Config{Ports: ports, MTU: mtu, Seed: uint64(s + 1), SackEvery: c.Int(t, "sack", 4),
			LossTimeout: c.Duration(t, "loss", 0), SackDelay: c.Duration(t, "sackdelay", 0), Timestamps: c.Has("ts")})
		if err != nil {
			t.Fatal(err)
		}
		d.eps[s] = ep
		if d.qps[s], err = ep.CreateQP(); err != nil {
			t.Fatal(err)
		}
		err = d.qps[s].Init(0, mrc.InitAttr{EVs: mrc.EVProfile{
			ActivePerPlane: c.Int(t, "active", 2), BackupPerPlane: c.Int(t, "backup", 1), PathsPerPlane: 100,
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for s := range 2 {
		o := 1 - s
		remote := make([]netip.Addr, planes)
		for p := range remote {
			remote[p] = addr(o, p)
		}
		if err := d.qps[s].ReadyToReceive(0, mrc.RTRAttr{RemoteQPN: d.qps[o].QPN(), Remote: remote, RecvPSN: 100}); err != nil {
			t.Fatal(err)
		}
		rts := mrc.RTSAttr{SendPSN: 100, TimeoutExp: c.Int(t, "timeout", 0), RetryLinear: c.Int(t, "linear", 0), RetryExp: c.Int(t, "exp", 0)}
		if err := d.qps[s].ReadyToSend(0, rts); err != nil {
			t.Fatal(err)
		}
	}
	d.src = make([]byte, 1<<20)
	var err error
	if d.mrs[0], err = d.eps[0].RegisterMemory(d.src, verbs.AccessLocal); err != nil {
		t.Fatal(err)
	}
	if d.mrs[1], err = d.eps[1].RegisterMemory(make([]byte, 1<<20), verbs.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *duo) write(t *testing.T, n int, imm, badKey bool) string {
	if imm {
		if err := d.qps[1].PostRecv(d.off); err != nil {
			t.Fatal(err)
		}
	}
	remote := d.mrs[1]
	if badKey {
		remote.Key ^= 0x5a5a
	}
	err := d.qps[0].PostWrite(d.now, verbs.WriteRequest{ID: d.off, Local: d.mrs[0], LocalOffset: d.off,
		Remote: remote, RemoteOffset: d.off, Length: uint64(n), WithImm: imm, Imm: uint32(d.off)})
	if err != nil {
		return "error: " + err.Error()
	}
	d.off += uint64(n)
	return ""
}

func (d *duo) tx(s int) string {
	var out []string
	for {
		tx, ok := d.eps[s].PollTransmit(d.now, verbs.AllPorts, d.buf)
		if !ok {
			break
		}
		pkt := append([]byte(nil), d.buf[:tx.Len]...)
		d.wire = append(d.wire, wirePkt{from: s, port: tx.Port, buf: pkt})
		out = append(out, sideName[s]+"→"+sideName[1-s]+" "+d.describe(s, pkt))
	}
	return strings.Join(out, "\n")
}

// describe renders a packet: its kind, PSNs and EV (as the sender's slot,
// plane and path).
func (d *duo) describe(from int, pkt []byte) string {
	var p wire.Packet
	if err := p.Decode(pkt); err != nil {
		return "undecodable: " + err.Error()
	}
	ev := func(v wire.EV) string {
		return fmt.Sprintf("ev=%d/p%d/%d", uint32(v)>>16&0x3fff, wire.EV(uint32(v)).Plane(), wire.EV(uint32(v)).Path())
	}
	b := &p.BTH
	var s string
	switch op := b.Opcode; {
	case op.IsData():
		s = fmt.Sprintf("%v psn=%d len=%d %s", op, b.PSN, p.PayloadLen, ev(p.EV()))
	case op == wire.OpSACK:
		k := &p.SACK
		s = fmt.Sprintf("SACK cack=%d trig=%d bitmap@%d=%s %s", k.CackPSN, int(k.CackPSN)+int(k.AckPSNOffset),
			int(k.CackPSN)+int(k.SackOffset), bitmapString(k.SackBitmap), ev(k.Entropy))
		if k.M != wire.SackNone {
			s += " M=" + k.M.String()
		}
		if k.PR {
			s += " probe-response"
		}
	case op == wire.OpNACK:
		s = fmt.Sprintf("NACK %v psn=%d %s", p.NACK.Reason, p.NACK.NackPSN, ev(p.NACK.Entropy))
	case op == wire.OpProbe:
		s = fmt.Sprintf("PROBE id=%d psn=%d %s", p.Probe.ProbeID, b.PSN, ev(p.EV()))
	case op == wire.OpAck:
		s = fmt.Sprintf("ACKNOWLEDGE psn=%d syndrome=%#x %s", b.PSN, p.AETH.Syndrome, ev(p.EV()))
	case op == wire.OpEndpointRequest:
		s = fmt.Sprintf("ENDPOINT_REQUEST %v up=%#x %s", p.EPReq.Op, p.EPReq.PortStatusMask, ev(p.EV()))
	case op == wire.OpEndpointResponse:
		s = fmt.Sprintf("ENDPOINT_RESPONSE %v up=%#x %s", p.EPResp.Op, p.EPResp.PortStatusMask, ev(p.EV()))
	default:
		s = op.String()
	}
	if b.Rtx {
		s += " rtx"
	}
	if b.AckReq && b.Opcode != wire.OpProbe {
		s += " A"
	}
	return s
}

// bitmapString shows the bitmap's set bits as PSN offsets from its base.
func bitmapString(bm uint64) string {
	if bm == 0 {
		return "{}"
	}
	var parts []string
	for i := range 64 {
		if bm&(1<<i) != 0 {
			parts = append(parts, strconv.Itoa(i))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func psnList(t *testing.T, c golden.Cmd, key string) []uint32 {
	var out []uint32
	if v := c.Str(key, ""); v != "" {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("line %d: %s: %v", c.Line, key, err)
			}
			out = append(out, uint32(n))
		}
	}
	return out
}

func (d *duo) deliver(t *testing.T, c golden.Cmd) string {
	drop, trim, last, ce, dup := psnList(t, c, "drop"), psnList(t, c, "trim"), psnList(t, c, "lasthop"), psnList(t, c, "ce"), psnList(t, c, "dup")
	lose := strings.Split(c.Str("lose", ""), ",")
	pkts := d.wire
	d.wire = nil
	if c.Has("reverse") {
		slices.Reverse(pkts)
	}
	d.now = d.now.Add(2 * time.Microsecond)
	var out []string
	for _, w := range pkts {
		var p wire.Packet
		if err := p.Decode(w.buf); err != nil {
			t.Fatal(err)
		}
		psn := p.BTH.PSN
		data := p.BTH.Opcode.IsData()
		buf := w.buf
		switch {
		case data && slices.Contains(drop, psn):
			out = append(out, fmt.Sprintf("dropped psn=%d", psn))
			continue
		case slices.Contains(lose, kindOf(p.BTH.Opcode)) || slices.Contains(lose, fmt.Sprintf("p%d", w.port)):
			out = append(out, "lost "+sideName[w.from]+"→"+sideName[1-w.from]+" "+d.describe(w.from, w.buf))
			continue
		case data && slices.Contains(trim, psn):
			buf, _ = wire.Trim(buf, wire.DefaultDSCP.Trimmed)
		case data && slices.Contains(last, psn):
			buf, _ = wire.Trim(buf, wire.DefaultDSCP.TrimmedLastHop)
		}
		if data && slices.Contains(ce, psn) {
			wire.MarkCE(buf)
		}
		to := 1 - w.from
		d.eps[to].HandleDatagram(d.now, w.port, buf, len(buf))
		if data && slices.Contains(dup, psn) {
			d.eps[to].HandleDatagram(d.now, w.port, buf, len(buf))
		}
	}
	return strings.Join(out, "\n")
}

// kindOf names an opcode's kind for deliver's lose=.
func kindOf(op wire.Opcode) string {
	switch {
	case op.IsData():
		return "data"
	case op == wire.OpProbe:
		return "probe"
	case op == wire.OpSACK:
		return "sack"
	case op == wire.OpNACK:
		return "nack"
	case op == wire.OpAck:
		return "ack"
	case op == wire.OpEndpointRequest, op == wire.OpEndpointResponse:
		return "ep"
	}
	return "other"
}

func (d *duo) events() string {
	var out []string
	for s, ep := range d.eps {
		for {
			ev, ok := ep.PollEvent()
			if !ok {
				break
			}
			line := sideName[s] + ": " + ev.Kind.String()
			switch ev.Kind {
			case verbs.EventWriteDone:
				line += fmt.Sprintf(" wr=%d bytes=%d", ev.WRID, ev.Bytes)
			case verbs.EventRecvImm:
				line += fmt.Sprintf(" wr=%d bytes=%d imm=%d", ev.WRID, ev.Bytes, ev.Imm)
			case verbs.EventEVState:
				line += fmt.Sprintf(" ev=%d/p%d/%d %v->%v (%v)", ev.EV>>16&0x3fff, ev.Plane, wire.EV(ev.EV).Path(), ev.From, ev.To, ev.Reason)
			case verbs.EventQPError: // Err follows
			default:
				line = sideName[s] + ": " + ev.String()
			}
			if ev.Err != nil {
				line += " err=" + ev.Err.Error()
			}
			out = append(out, line)
		}
	}
	for s, q := range d.qps {
		st := q.Stats()
		cw, infl := q.Window()
		_ = cw
		out = append(out, fmt.Sprintf("%s: sent=%d rtx=%d lost=%d sacks=%d/%d nacks=%d/%d dups=%d inflight=%d",
			sideName[s], st.DataSent, st.Retransmits, st.LossTimeouts, st.SACKsSent, st.SACKsReceived,
			st.NACKsSent, st.NACKsReceived, st.Duplicates, infl))
	}
	return strings.Join(out, "\n")
}
