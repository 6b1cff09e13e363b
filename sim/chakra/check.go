package chakra

import "fmt"

// Check reports the first reason the trace cannot run, as a rank of a
// network simulation: a node type it cannot run (INVALID, MEM_LOAD,
// MEM_STORE), a node ID used twice, a dependency on a node the trace does
// not have, a dependency cycle, or a communication node missing what it
// needs (a collective's comm_type and comm_size, a send's comm_dst, a
// receive's comm_src, a size on either). Errors wrap ErrFormat and name the
// node.
func (t *Trace) Check() error {
	index := make(map[uint64]int, len(t.Nodes))
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		if _, dup := index[nd.ID]; dup {
			return nd.errorf("the id is used by another node too")
		}
		index[nd.ID] = i
		if err := nd.check(); err != nil {
			return err
		}
	}
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		for _, d := range nd.Deps {
			if _, ok := index[d]; !ok {
				return nd.errorf("depends on node %d, which the trace does not have", d)
			}
		}
	}
	return t.checkAcyclic(index)
}

func (nd *Node) check() error {
	switch nd.Type {
	case Metadata, Comp:
	case CommColl:
		if nd.has&hasCommType == 0 || nd.has&hasCommSize == 0 {
			return nd.errorf("a collective needs comm_type and comm_size attributes")
		}
	case CommSend:
		if nd.has&hasCommDst == 0 || nd.has&hasCommSize == 0 {
			return nd.errorf("a send needs comm_dst and comm_size attributes")
		}
	case CommRecv:
		if nd.has&hasCommSrc == 0 || nd.has&hasCommSize == 0 {
			return nd.errorf("a receive needs comm_src and comm_size attributes")
		}
	default:
		return nd.errorf("node type %v cannot run in a network simulation (supported: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, METADATA_NODE)", nd.Type)
	}
	return nil
}

// checkAcyclic finds a dependency cycle by depth-first search.
func (t *Trace) checkAcyclic(index map[uint64]int) error {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(t.Nodes))
	type frame struct{ node, dep int }
	var stack []frame
	for start := range t.Nodes {
		if state[start] != unseen {
			continue
		}
		stack = append(stack[:0], frame{start, 0})
		state[start] = onPath
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			nd := &t.Nodes[top.node]
			if top.dep == len(nd.Deps) {
				state[top.node] = done
				stack = stack[:len(stack)-1]
				continue
			}
			next := index[nd.Deps[top.dep]]
			top.dep++
			switch state[next] {
			case onPath:
				return nd.errorf("dependency cycle through node %d", t.Nodes[next].ID)
			case unseen:
				state[next] = onPath
				stack = append(stack, frame{next, 0})
			}
		}
	}
	return nil
}

func (nd *Node) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: node %d (%s): %s", ErrFormat, nd.ID, nd.Name, fmt.Sprintf(format, args...))
}
