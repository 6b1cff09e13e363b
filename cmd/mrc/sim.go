package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testnet"
	"github.com/openmrc/mrc/mtime"
)

func init() {
	commands["sim"] = command{summary: "run a transfer through a simulated lossy multi-path fabric", run: runSim}
}

// runSim runs two MRC endpoints through the in-memory multi-plane network
// of package testnet: a WRITE_IMM stream with trims, ECN marks and random
// loss, and paths that fail partway through. It prints what MRC did.
func runSim(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim", "[flags]", stderr)
	seed := fs.Uint64("seed", 1, "random seed; a run is a function of its flags")
	planes := fs.Int("planes", 8, "network planes (NIC ports)")
	mib := fs.Int("mib", 32, "MiB to transfer")
	fail := fs.Int("fail", 8, "paths that fail partway through the transfer")
	trim := fs.Float64("trim", 0.01, "probability a data packet is trimmed")
	loss := fs.Float64("loss", 0.0005, "probability a packet is silently lost")
	ecn := fs.Float64("ecn", 0.02, "probability a data packet is ECN-marked")
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case *planes < 1 || *planes > mrc.MaxPlanes:
		return usagef("--planes %d: want 1..%d", *planes, mrc.MaxPlanes)
	case *mib < 1 || *mib > 1024:
		return usagef("--mib %d: want 1..1024", *mib)
	case *fail < 0:
		return usagef("--fail %d: want 0 or more", *fail)
	case !prob(*trim) || !prob(*loss) || !prob(*ecn):
		return usagef("--trim, --loss and --ecn are probabilities in [0,1]")
	}
	return simDemo(stdout, *seed, *planes, *mib<<20, *fail, *trim, *loss, *ecn)
}

func prob(p float64) bool { return p >= 0 && p <= 1 }

func simDemo(w io.Writer, seed uint64, planes, size, fail int, trim, loss, ecn float64) error {
	const pathsPerPlane = 256
	net, err := testnet.New(testnet.Config{
		Seed: seed, Planes: planes, Jitter: time.Microsecond,
		Encap: mrc.EncapSRv6, Trim: trim, Loss: loss, ECN: ecn,
	})
	if err != nil {
		return err
	}
	qa, qb, err := net.Connect(mrc.EVProfile{PathsPerPlane: pathsPerPlane}, mrc.RTSAttr{})
	if err != nil {
		return err
	}
	epA, epB := net.Endpoint(testnet.A), net.Endpoint(testnet.B)
	src := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst := make([]byte, size)
	srcMR, _ := epA.RegisterMemory(src)
	dstMR, _ := epB.RegisterMemory(dst)

	usedPaths := map[testnet.Path]bool{}
	net.Tap = func(_ mtime.Time, from testnet.Side, tx mrc.Transmit, pkt []byte) {
		if from == testnet.A && (tx.Kind == mrc.KindData || tx.Kind == mrc.KindRetransmit) {
			usedPaths[pathOf(pkt, tx.Port)] = true
		}
	}
	type entry struct {
		at   mtime.Time
		text string
	}
	var timeline []entry
	var done, imms int
	var qpErr error
	net.OnEvent = func(s testnet.Side, ev mrc.Event) {
		switch ev.Kind {
		case mrc.EventWriteDone:
			done++
		case mrc.EventRecvImm:
			imms++
		case mrc.EventQPError:
			qpErr = ev.Err
		case mrc.EventEVState:
			side := "A"
			if s == testnet.B {
				side = "B"
			}
			timeline = append(timeline, entry{ev.Time, fmt.Sprintf("%s EV %#08x (plane %d, path %d) %v -> %v (%v)",
				side, ev.EV, ev.Plane, mrc.EVPath(ev.EV), ev.From, ev.To, ev.Reason)})
		}
	}

	// Post the transfer as 1 MiB WRITE_IMMs.
	const chunk = 1 << 20
	msgs := 0
	for off := 0; off < size; off += chunk {
		n := min(chunk, size-off)
		if err := qb.PostRecv(uint64(msgs)); err != nil {
			return err
		}
		err := qa.PostWrite(0, mrc.WriteRequest{ID: uint64(msgs), Local: srcMR, LocalOffset: uint64(off),
			Remote: dstMR, RemoteOffset: uint64(off), Length: uint64(n), WithImm: true, Imm: uint32(msgs)})
		if err != nil {
			return err
		}
		msgs++
	}
	net.Kick(testnet.A)

	// Fail paths that A's EVs use once a quarter of the data is out.
	finished := func() bool { return done == msgs && imms == msgs || qpErr != nil }
	quarter := mtime.Time(float64(size*8) / (float64(planes) * 100e9) / 4 * 1e9)
	net.RunUntil(quarter, finished)
	failed := pickPaths(qa.EVs(), fail, r)
	for _, p := range failed {
		net.KillPath(p)
		timeline = append(timeline, entry{net.Now(), fmt.Sprintf("fabric: path %d of plane %d fails (black hole, both directions)",
			p.Index, p.Plane)})
	}
	start := time.Now()
	net.RunUntil(mtime.Time(10*time.Second), finished)
	wall := time.Since(start)
	sort.SliceStable(timeline, func(i, j int) bool { return timeline[i].at < timeline[j].at })

	sa, sb := qa.Stats(), qb.Stats()
	elapsed := time.Duration(net.Now())
	fmt.Fprintf(w, "mrc sim: %d MiB as %d WRITE_IMMs from A to B over %d planes × %d paths, seed %d\n",
		size>>20, msgs, planes, pathsPerPlane, seed)
	fmt.Fprintf(w, "fabric: trim %.2g, loss %.2g, ECN %.2g per packet; %d paths fail at %v\n\n",
		trim, loss, ecn, len(failed), time.Duration(quarter))
	fmt.Fprintln(w, "timeline (EV state changes the controller API reports):")
	for i, l := range timeline {
		if i == 20 {
			fmt.Fprintf(w, "  ... %d more\n", len(timeline)-20)
			break
		}
		fmt.Fprintf(w, "  %10v  %s\n", time.Duration(l.at), l.text)
	}
	fmt.Fprintln(w)
	if qpErr != nil {
		return fmt.Errorf("QP failed: %v", qpErr)
	}
	if done != msgs || imms != msgs {
		return fmt.Errorf("transfer unfinished after %v: %d of %d completions", elapsed, done, msgs)
	}
	exact := bytes.Equal(src, dst)
	gbps := float64(size*8) / elapsed.Seconds() / 1e9
	fmt.Fprintf(w, "delivered      %d bytes in %v (%.0f Gb/s of %d), byte-exact: %v\n", size, elapsed, gbps, planes*100, exact)
	fmt.Fprintf(w, "paths used     %d distinct (plane, path) pairs by data packets\n", len(usedPaths))
	fmt.Fprintf(w, "data packets   %d sent, %d retransmitted (%.2f%%)\n", sa.DataSent, sa.Retransmits, 100*float64(sa.Retransmits)/float64(sa.DataSent))
	fmt.Fprintf(w, "trims          %d NACKed mid-fabric, %d at the last hop; %d ECN echoes\n", sa.TrimNACKs, sa.LastHopNACKs, sa.ECNEchoes)
	fmt.Fprintf(w, "losses         %d declared by the per-packet timer\n", sa.LossTimeouts)
	fmt.Fprintf(w, "EVs            A: %d retired, %d resurrected, %d SKIPs; B (reverse path): %d retired\n",
		sa.EVRetired, sa.EVResurrected, sa.EVSkips, sb.EVRetired)
	fmt.Fprintf(w, "control        %d SACKs and %d NACKs sent by B, %d probes by A\n", sb.SACKsSent, sb.NACKsSent, sa.ProbesSent)
	fmt.Fprintf(w, "simulated      %v of network time in %v of wall time\n", elapsed, wall.Round(time.Millisecond))
	if !exact {
		return fmt.Errorf("remote memory differs from the source")
	}
	return nil
}

// pathOf returns the fabric path a packet takes (its plane and the path
// index of its EV).
func pathOf(pkt []byte, plane int) testnet.Path {
	var p wirePacket
	if err := p.Decode(pkt); err != nil {
		return testnet.Path{Plane: plane, Index: -1}
	}
	return testnet.Path{Plane: plane, Index: mrc.EVPath(uint32(p.ev()))}
}

// pickPaths chooses n distinct paths that the EVs use.
func pickPaths(evs []uint32, n int, r *rand.Rand) []testnet.Path {
	seen := map[testnet.Path]bool{}
	var all []testnet.Path
	for _, ev := range evs {
		p := testnet.Path{Plane: mrc.EVPlane(ev), Index: mrc.EVPath(ev)}
		if !seen[p] {
			seen[p] = true
			all = append(all, p)
		}
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(n, len(all))]
}
