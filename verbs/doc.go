// Package verbs is the vocabulary every transport of this module shares
// with its hosts: memory region descriptors and access flags, work
// requests, completion events, QP states, port masks, the errors the verbs
// return, the Transmit record of a written packet and the counters of
// Stats. The MRC core (package mrc), the RoCE baseline (package roce) and
// future baselines import it, so a host drives any of them with the same
// types and no transport sits above another.
//
// It holds types and constants only: no state machine, no I/O.
package verbs
