package sim

// PFC: pause and resume frames between a switch port and the sender of
// the link that feeds it.

// pfc sends a PFC frame from switch si's port in to the sender of the link
// arriving there.
func (s *shard) pfc(si int32, in int, kind uint32) {
	odl := s.w.swOut(si, in)
	s.sendPFC(odl^1, kind, s.now+s.w.lk[odl].delay)
}

func (s *shard) sendPFC(dl int32, kind uint32, at Time) {
	target := s.w.lk[dl].sendShard
	if int(target) == s.id {
		s.push(at, evPFC, kind&0xFFFFFF, dl)
		return
	}
	s.out[target] = append(s.out[target], xmsg{at: at, dl: dl, h: kind})
}

// pfcArrive pauses or resumes the sender of directed link dl.
func (s *shard) pfcArrive(dl int32, aux uint32) {
	kind := xResume
	if aux == xPause&0xFFFFFF {
		kind = xPause
	}
	w := s.w
	info := &w.lk[dl]
	hosts := int32(w.t.Hosts)
	if info.from < hosts {
		hs := &w.hosts[info.from]
		bit := uint32(1) << info.fromPort
		if kind == xPause {
			hs.paused |= bit
		} else {
			hs.paused &^= bit
			s.afterHost(info.from)
		}
		return
	}
	si := info.from - hosts
	w.sws[si].vs.SetPaused(int(info.fromPort), kind == xPause)
	if kind == xResume {
		s.swKick(si, int(info.fromPort), dl)
	}
}
