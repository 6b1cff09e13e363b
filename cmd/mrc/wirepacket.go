package main

import "github.com/openmrc/mrc/wire"

// wirePacket decodes a packet and reads the EV it carries, from the outer
// header when encapsulated.
type wirePacket struct{ wire.Packet }

func (p *wirePacket) ev() wire.EV {
	if p.Encap {
		return wire.JoinEV(p.UDP.SrcPort, p.Outer.FlowLabel)
	}
	return p.EV()
}
