package scenario

import (
	"strings"

	"github.com/openmrc/mrc/ib"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
)

// ibTransport applies a variant's ib: block to t, a transport that runs
// package ib.
func (s *Scenario) ibTransport(key, base string, t sim.Transport, p *IBParams) (sim.Transport, error) {
	if t.IB == nil {
		return t, s.errorf(key, "%s does not run InfiniBand (ib applies to %s)", base, strings.Join(namesWhere(func(t sim.Transport) bool { return t.IB != nil }), ", "))
	}
	cfg := *t.IB
	routing := t.Fabric
	switch p.Routing {
	case "":
	case "static":
		routing = vswitch.ModeDest
	case "adaptive":
		routing = vswitch.ModeAdaptive
	default:
		return t, s.errorf(key+".routing", "unknown routing %q (want static or adaptive)", p.Routing)
	}
	switch p.CC {
	case "":
	case "none":
		cfg.CC = ib.CCNone
	case "fecn":
		cfg.CC = ib.CCCCA
	default:
		return t, s.errorf(key+".cc", "unknown congestion control %q (want none or fecn)", p.CC)
	}
	for _, c := range []struct {
		k string
		v int
	}{{"ccti_increase", p.CCTIIncrease}, {"ccti_min", p.CCTIMin}, {"timeout", p.Timeout}, {"reorder_window", p.ReorderWindow}} {
		if c.v < 0 {
			return t, s.errorf(key+"."+c.k, "%d: want a positive number", c.v)
		}
	}
	for _, c := range []struct {
		k string
		v Duration
	}{{"ccti_timer", p.CCTITimer}, {"reroute", p.Reroute}} {
		if c.v < 0 {
			return t, s.errorf(key+"."+c.k, "%v: want a positive duration", c.v.D())
		}
	}
	for _, c := range []struct {
		k string
		v Size
	}{{"fecn_threshold", p.FECNThreshold}, {"buffer", p.Buffer}} {
		if c.v > 1<<30 {
			return t, s.errorf(key+"."+c.k, "%d bytes is more than any switch has", c.v)
		}
	}
	if cfg.CC != ib.CCCCA {
		for _, c := range []struct {
			k   string
			set bool
		}{{"fecn_threshold", p.FECNThreshold != 0}, {"ccti_increase", p.CCTIIncrease != 0}, {"ccti_timer", p.CCTITimer != 0}, {"ccti_min", p.CCTIMin != 0}} {
			if c.set {
				return t, s.errorf(key+"."+c.k, "applies to congestion control fecn (cc: fecn)")
			}
		}
	}
	mtu := s.Sim.MTU
	if mtu == 0 {
		mtu = 4096
	}
	if p.Buffer != 0 && vswitch.CreditBytes(int(p.Buffer)) < vswitch.CreditBytes(mtu+128) {
		return t, s.errorf(key+".buffer", "%d bytes holds no packet of the %d-byte MTU", p.Buffer, mtu)
	}
	if p.FECNThreshold != 0 {
		cfg.CCA.Threshold = int(p.FECNThreshold)
	}
	if p.CCTIIncrease != 0 {
		cfg.CCA.CCTIIncrease = p.CCTIIncrease
	}
	if p.CCTITimer != 0 {
		cfg.CCA.CCTITimer = p.CCTITimer.D()
	}
	if p.CCTIMin != 0 {
		cfg.CCA.CCTIMin = p.CCTIMin
	}
	if p.Timeout != 0 {
		cfg.TimeoutExp = p.Timeout
	}
	if p.RetryCount != nil {
		cfg.RetryCount = *p.RetryCount
		if cfg.RetryCount == 0 {
			cfg.RetryCount = -1 // package ib: negative means none
		}
	}
	if p.ReorderWindow != 0 {
		cfg.ReorderWindow = p.ReorderWindow
	}
	if err := ib.Check(cfg); err != nil {
		return t, s.errorf(key, "%s", strings.TrimPrefix(err.Error(), verbs.ErrInvalidAttr.Error()+": "))
	}
	nt := sim.IB(t.Name, routing, cfg)
	nt.CreditBuffer = int(p.Buffer)
	if p.Reroute != 0 {
		nt.Reroute = p.Reroute.D()
	}
	return nt, nil
}
