package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// exchanges is a run of sequential transfers from A to B, one QP pair per
// transfer, each starting when the one before completed: the exchanges
// of a halving-doubling all-reduce as one host sees them.
type exchanges struct {
	net     *testnet.Net
	qas     []*mrc.QP
	took    []time.Duration
	dataOn  []map[testnet.Path]int // data packets A sent, by QP and path
	probeOn []map[testnet.Path]int // probes A sent, by QP and path
	retired []map[testnet.Path]int // A's EVs retired, by QP and path
}

// exchangeProfile: 2 planes of 8 paths, 8 EVs in service and 8 backups a
// plane (each path twice).
var exchangeProfile = mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 8, PathsPerPlane: 8}

// runExchanges connects n QP pairs over a network of cfg (pair i as two
// hosts under one T0 when oneT0(i)), lets prepare break it, and moves
// size bytes over each pair in turn.
func runExchanges(t *testing.T, cfg testnet.Config, n, size int, oneT0 func(i int) bool, prepare func(x *exchanges)) *exchanges {
	t.Helper()
	net, err := testnet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := &exchanges{net: net}
	index := map[uint32]int{}
	for i := range n {
		connect := net.Connect
		if oneT0 != nil && oneT0(i) {
			connect = net.ConnectUnderOneT0
		}
		qa, _, err := connect(exchangeProfile, mrc.RTSAttr{})
		if err != nil {
			t.Fatal(err)
		}
		index[qa.QPN()] = i
		x.qas = append(x.qas, qa)
		x.dataOn = append(x.dataOn, map[testnet.Path]int{})
		x.probeOn = append(x.probeOn, map[testnet.Path]int{})
		x.retired = append(x.retired, map[testnet.Path]int{})
	}
	src, dst := make([]byte, size), make([]byte, size)
	srcMR, err := net.Endpoint(testnet.A).RegisterMemory(src, verbs.AccessLocal)
	if err != nil {
		t.Fatal(err)
	}
	dstMR, err := net.Endpoint(testnet.B).RegisterMemory(dst, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	done := map[uint64]bool{}
	net.OnEvent = func(s testnet.Side, e verbs.Event) {
		switch {
		case e.Err != nil:
			t.Errorf("side %d: %v", s, e)
		case s == testnet.A && e.Kind == verbs.EventWriteDone:
			done[e.WRID] = true
		case s == testnet.A && e.Kind == verbs.EventEVState && e.To == verbs.EVAssumedBad:
			x.retired[index[e.QPN]][testnet.Path{Plane: e.Plane, Index: wire.EV(e.EV).Path()}]++
		}
	}
	net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		if from != testnet.A {
			return
		}
		i, ok := index[tx.QPN]
		if !ok {
			return
		}
		p := testnet.Path{Plane: tx.Port, Index: tx.EV.Path()}
		switch tx.Kind {
		case verbs.KindData, verbs.KindRetransmit:
			x.dataOn[i][p]++
		case verbs.KindProbe:
			x.probeOn[i][p]++
		}
	}
	if prepare != nil {
		prepare(x)
	}
	for i, qa := range x.qas {
		start := net.Now()
		if err := qa.PostWrite(start, verbs.WriteRequest{ID: uint64(i), Local: srcMR, Remote: dstMR, Length: uint64(size)}); err != nil {
			t.Fatal(err)
		}
		net.Kick(testnet.A)
		if !net.RunUntil(start+mtime.Time(10*time.Millisecond), func() bool { return done[uint64(i)] }) {
			t.Fatalf("transfer %d unfinished", i)
		}
		x.took = append(x.took, time.Duration(net.Now()-start))
	}
	return x
}

// loseOneWay makes every packet side from sends on path p lost (its ICRC
// fails), or only the packets of QP qpn when it is not 0: a fault in one
// direction (a transmit laser gone dark), or beyond the T1 on the way to
// one peer.
func loseOneWay(net *testnet.Net, from testnet.Side, p testnet.Path, qpn uint32) {
	tap := net.Tap
	net.Tap = func(now mtime.Time, s testnet.Side, tx verbs.Transmit, pkt []byte) {
		if tap != nil {
			tap(now, s, tx, pkt)
		}
		if s == from && (qpn == 0 || tx.QPN == qpn) && (testnet.Path{Plane: tx.Port, Index: tx.EV.Path()}) == p {
			pkt[len(pkt)-1] ^= 0xff
		}
	}
}

// TestPathFailureFoundOncePerEndpoint: six QPs of one endpoint take turns
// to send across a dead path (one per seed). The first QP to send loses packets there
// and retires the path; the others doubt it at once, probe it (one probe
// each), and retire it before they send: not one of their data packets
// goes into it. When only A's direction is dead, none of their transfers
// waits out a loss timeout either. (When the path is dead both ways, B's
// SACKs sprayed on it may still be lost: B's QPs find that out each for
// itself, since a peer's probes, which tell them, are packets and make no
// news.) Each QP learning alone, every transfer lost packets on the path
// and took a loss timeout longer.
func TestPathFailureFoundOncePerEndpoint(t *testing.T) {
	for _, bothWays := range []bool{false, true} {
		for seed := range uint64(8) {
			dead := testnet.Path{Plane: int(seed % 2), Index: int(seed*3) % 8}
			x := runExchanges(t, testnet.Config{Seed: seed, Planes: 2, Encap: mrc.EncapSRv6}, 6, 256<<10, nil,
				func(x *exchanges) {
					if bothWays {
						x.net.KillPath(dead)
					} else {
						loseOneWay(x.net, testnet.A, dead, 0)
					}
				})
			if x.dataOn[0][dead] == 0 || x.retired[0][dead] == 0 {
				t.Fatalf("both ways %v, seed %d: the first QP sent %d packets into the dead path and retired %d of its EVs; the test needs it to find the path", bothWays, seed, x.dataOn[0][dead], x.retired[0][dead])
			}
			lossTimeout := x.net.Endpoint(testnet.A).Config().LossTimeout
			for i := 1; i < len(x.qas); i++ {
				if n := x.dataOn[i][dead]; n > 0 {
					t.Errorf("both ways %v, seed %d: QP %d sent %d data packets into the path QP 0 found dead", bothWays, seed, i, n)
				}
				if n := x.probeOn[i][dead]; n > 1 {
					t.Errorf("both ways %v, seed %d: QP %d sent %d probes into the dead path, want at most 1", bothWays, seed, i, n)
				}
				if x.retired[i][dead] == 0 {
					t.Errorf("both ways %v, seed %d: QP %d kept the dead path", bothWays, seed, i)
				}
				if s := x.qas[i].Stats(); !bothWays && (s.LossTimeouts > 0 || x.took[i] >= x.took[0]-lossTimeout/2) {
					t.Errorf("seed %d: QP %d had %d loss timeouts and took %v (QP 0, which found the path: %v)", seed, i, s.LossTimeouts, x.took[i], x.took[0])
				}
			}
		}
	}
}

// TestPrivatePathStateKeepsNewsToItself: with Config.PrivatePathState
// each QP finds the dead path of TestPathFailureFoundOncePerEndpoint for
// itself, by losing data packets there, as before path news.
func TestPrivatePathStateKeepsNewsToItself(t *testing.T) {
	dead := testnet.Path{Plane: 1, Index: 3}
	for seed := range uint64(5) {
		x := runExchanges(t, testnet.Config{Seed: seed, Planes: 2, Encap: mrc.EncapSRv6, PrivatePathState: true}, 6, 256<<10, nil,
			func(x *exchanges) { loseOneWay(x.net, testnet.A, dead, 0) })
		lost := 0
		for i := 1; i < len(x.qas); i++ {
			if x.dataOn[i][dead] > 0 && x.qas[i].Stats().LossTimeouts > 0 {
				lost++
			}
			if n := x.probeOn[i][dead]; x.dataOn[i][dead] == 0 && n > 0 {
				t.Errorf("seed %d: QP %d probed the path %d times without losing a packet there", seed, i, n)
			}
		}
		if lost < 3 {
			t.Errorf("seed %d: only %d of 5 QPs lost packets on the dead path; alone, most must", seed, lost)
		}
	}
}

// TestPathFaultBeyondT1KeepsPathForOthers: a failure past the T1, on the
// way to one QP's peer only (here every packet QP 0 sends on one path is
// lost), retires the path for that QP alone. The others doubt it, their
// probes come back, and they go on using it.
func TestPathFaultBeyondT1KeepsPathForOthers(t *testing.T) {
	far := testnet.Path{Plane: 1, Index: 3}
	for seed := range uint64(5) {
		x := runExchanges(t, testnet.Config{Seed: seed, Planes: 2, Encap: mrc.EncapSRv6}, 6, 256<<10, nil,
			func(x *exchanges) { loseOneWay(x.net, testnet.A, far, x.qas[0].QPN()) })
		if x.retired[0][far] == 0 {
			t.Fatalf("seed %d: QP 0 kept the path it cannot use; the test needs it retired", seed)
		}
		used := 0
		for i := 1; i < len(x.qas); i++ {
			if x.probeOn[i][far] == 0 {
				t.Errorf("seed %d: QP %d never asked whether the path QP 0 lost works for it", seed, i)
			}
			if n := x.retired[i][far]; n > 0 {
				t.Errorf("seed %d: QP %d retired %d EVs of a path that works for it", seed, i, n)
			}
			if x.dataOn[i][far] > 0 {
				used++
			}
		}
		if used < 3 {
			t.Errorf("seed %d: only %d of 5 QPs sent on the path after QP 0 lost it", seed, used)
		}
	}
}

// TestPathNewsSkipsAPeerUnderOneT0: a QP whose peer sits under its own T0
// reaches it the same way whatever the path index, so another QP's news
// of a path says nothing about it: it neither probes the path nor stops
// using it.
func TestPathNewsSkipsAPeerUnderOneT0(t *testing.T) {
	lost := testnet.Path{Plane: 1, Index: 3}
	for seed := range uint64(5) {
		x := runExchanges(t, testnet.Config{Seed: seed, Planes: 2, Encap: mrc.EncapSRv6}, 2, 256<<10,
			func(i int) bool { return i == 1 },
			func(x *exchanges) { loseOneWay(x.net, testnet.A, lost, x.qas[0].QPN()) })
		if x.retired[0][lost] == 0 {
			t.Fatalf("seed %d: QP 0 kept the path it cannot use; the test needs it retired", seed)
		}
		if n := x.probeOn[1][lost]; n > 0 {
			t.Errorf("seed %d: the QP to a host under the same T0 probed the path %d times", seed, n)
		}
		if x.dataOn[1][lost] == 0 {
			t.Errorf("seed %d: the QP to a host under the same T0 stopped using the path", seed)
		}
	}
}

// TestForgedProbesMakeNoPathNews: probes naming PSNs B already has make
// B's QP retire the EVs of the SACKs that reported them (the requester
// never got those), and anyone who sees the traffic can forge such a
// probe. Such a retirement stays the QP's own: B's other QP doubts
// nothing and sends no probe.
func TestForgedProbesMakeNoPathNews(t *testing.T) {
	net, err := testnet.New(testnet.Config{Seed: 7, Planes: 2, Encap: mrc.EncapSRv6})
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := net.Connect(exchangeProfile, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := net.Connect(exchangeProfile, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	x := newTransferOn(t, net, qa, qb, 7, 1<<20)
	var last sniffed
	otherProbes := 0
	net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		switch {
		case from == testnet.A && tx.Kind == verbs.KindData:
			last = sniffed{append([]byte(nil), pkt...), tx.Port}
		case from == testnet.B && tx.QPN == other.QPN() && tx.Kind == verbs.KindProbe:
			otherProbes++
		}
	}
	retired := 0
	onEvent := net.OnEvent
	net.OnEvent = func(s testnet.Side, ev verbs.Event) {
		onEvent(s, ev)
		if s == testnet.B && ev.QPN == qb.QPN() && ev.Kind == verbs.EventEVState && ev.To == verbs.EVAssumedBad {
			retired++
		}
	}
	x.postAll(1)
	if !net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatal("unfinished")
	}
	x.check()
	// Each forged probe names the last PSN, which B reported in its last
	// SACK; the probe arrives as if resent after a loss timeout.
	for range 4 {
		p, _ := decode(t, last.pkt)
		p.BTH.Opcode, p.PayloadLen = wire.OpProbe, 0
		p.Probe = wire.Probe{ProbeID: 9, TS: wire.TSETH{FType: wire.TSETHFType}}
		pkt := wire.AppendPacket(nil, p, nil)
		net.Endpoint(testnet.B).HandleDatagram(net.Now(), last.port, pkt, len(pkt))
		net.Kick(testnet.B)
		net.RunUntil(net.Now()+mtime.Time(50*time.Microsecond), func() bool { return false })
	}
	net.RunUntil(net.Now()+mtime.Time(500*time.Microsecond), func() bool { return false })
	if retired == 0 {
		t.Fatal("the forged probes retired none of B's EVs; the test needs them to")
	}
	if otherProbes > 0 {
		t.Errorf("B's other QP sent %d probes after forged packets retired EVs of its neighbour", otherProbes)
	}
}
