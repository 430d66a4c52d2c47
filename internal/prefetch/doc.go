// Package prefetch asks the CPU to bring memory into its cache before it
// is read.
//
// A server touches each connection's state once a packet, and with
// thousands of connections that state has left the cache since the last
// packet: each first touch waits on memory. A loop that knows which
// connections its next packets are for can ask for their state first,
// so the waits overlap with each other and with the work on the packets
// before them. It is a hint: it changes no value and cannot fault, and
// where the architecture has no such instruction (or Go's assembler is
// not used) it does nothing.
package prefetch
