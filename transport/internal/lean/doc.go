// Package lean is the transport's lean stack (transport.StackLean, the
// default): it serves every peer from one UDP socket with no goroutine
// per peer once the DTLS handshake is done. One reader takes datagrams in
// batches and feeds each to its peer's state machines (ICE-lite, DTLS
// records sealed and opened inline once pion/dtls has done the handshake,
// and the sans-IO SCTP of transport/internal/sctp) in its own goroutine;
// one flusher seals and sends what the peers have queued, in batches.
// See SPEC.md, "The lean stack".
//
// Server is a transport.Server's side of it and Dial its client's; each
// connection is a Peer, which is a transport.Conn and a
// transport.Handler. The signaling (HTTP, origins, tickets, handshake
// slots) stays in the transport package, which hands this one the
// offers and takes back the answers.
package lean
