package mptcp

// Coupled congestion control: how much a subflow's window grows in
// congestion avoidance, relative to NewReno's one MSS per window of data
// acknowledged (tcp.Owner.Increase). Windows are in bytes and RTTs in
// nanoseconds; every ratio below is free of units. The sums run over the
// subflows that can carry data: on a port that is up, with an RTT sample
// (Linux's mptcp_ccc_sk_can_send and mptcp_olia_sk_can_send also require
// an SRTT).

// increase returns subflow r's increase under the connection's CC.
func (c *Conn) increase(r *subflow) float64 {
	if c.ep.cfg.CC == Uncoupled {
		return 1
	}
	wr, rttr, ok := c.window(r)
	if !ok {
		return 1
	}
	var sum, maxRate float64 // Σ w/rtt and max w/rtt²
	n := 0
	for i := range c.subs {
		w, rtt, ok := c.window(&c.subs[i])
		if !ok {
			continue
		}
		n++
		sum += w / rtt
		maxRate = max(maxRate, w/(rtt*rtt))
	}
	if n <= 1 {
		return 1
	}
	if c.ep.cfg.CC == LIA {
		// RFC 6356 §3: per ACK on subflow r, cwnd_r grows by
		// min(alpha·acked·MSS/cwnd_total, acked·MSS/cwnd_r), with
		// alpha = cwnd_total·max(cwnd_i/rtt_i²)/(Σ cwnd_i/rtt_i)²;
		// relative to NewReno's acked·MSS/cwnd_r that is
		// min(cwnd_r·max(cwnd_i/rtt_i²)/(Σ cwnd_i/rtt_i)², 1).
		return min(wr*maxRate/(sum*sum), 1)
	}
	// OLIA (Khalili et al. 2012, §4; draft-khalili-mptcp-congestion-
	// control-05 §3): per ACK on path r, w_r grows by
	// (w_r/rtt_r²)/(Σ w_p/rtt_p)² + ε_r/w_r packets, that is by
	// (w_r/rtt_r)²/(Σ w_p/rtt_p)² + ε_r relative to NewReno's 1/w_r.
	first := (wr / rttr) * (wr / rttr) / (sum * sum)
	return first + c.epsilon(r, n)
}

// window returns subflow s's window and smoothed RTT, and whether it
// takes part in coupling.
func (c *Conn) window(s *subflow) (w, rtt float64, ok bool) {
	d, sampled := s.q.SRTT()
	if !sampled || d <= 0 || c.ep.up&(1<<s.port) == 0 {
		return 0, 0, false
	}
	return float64(s.q.Cwnd()), float64(d), true
}

// interLoss returns OLIA's l_r for s: the subflow bytes acknowledged
// between its last two losses, or since the last one if that is more.
func (s *subflow) interLoss() float64 {
	return float64(max(s.q.Acked()-s.lossLast, s.lossLast-s.lossPrev))
}

// epsilon returns OLIA's ε_r for r among the n subflows that take part:
// M are the paths with the largest window, B the best paths (the largest
// l_p/rtt_p²). If some best paths are not in M, each of them gets
// 1/(n·|B∖M|) and each path of M gives up 1/(n·|M|): traffic moves to
// the best paths without growing the total. Otherwise ε is 0.
func (c *Conn) epsilon(r *subflow, n int) float64 {
	var maxW, best float64
	for i := range c.subs {
		s := &c.subs[i]
		if w, rtt, ok := c.window(s); ok {
			maxW = max(maxW, w)
			best = max(best, s.interLoss()/(rtt*rtt))
		}
	}
	inM, inBnotM := 0, 0
	rInM, rInBnotM := false, false
	for i := range c.subs {
		s := &c.subs[i]
		w, rtt, ok := c.window(s)
		switch {
		case !ok:
		case w == maxW:
			inM++
			rInM = rInM || s == r
		case s.interLoss()/(rtt*rtt) == best:
			inBnotM++
			rInBnotM = rInBnotM || s == r
		}
	}
	switch {
	case inBnotM == 0:
		return 0
	case rInBnotM:
		return 1 / float64(n*inBnotM)
	case rInM:
		return -1 / float64(n*inM)
	}
	return 0
}
