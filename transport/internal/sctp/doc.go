// Package sctp is a sans-IO SCTP association (RFC 9260) for WebRTC data
// channels: it is fed the SCTP packets DTLS decrypted and the time, and it
// hands back the packets to encrypt and send. It owns no goroutine, no
// socket and no timer; the caller drives it.
//
// It carries what tongbu's two channels need and no more: two
// pre-negotiated streams, one unordered and never retransmitted (partial
// reliability, RFC 3758, with FORWARD-TSN to step over what was given up),
// one ordered and reliable (retransmission and congestion control per RFC
// 9260); INIT with a signed state cookie, so that nothing is kept for a
// peer before its COOKIE-ECHO; SACK with gap blocks, delayed so that it
// rides with the next DATA; HEARTBEAT, ABORT, SHUTDOWN and the stream
// reset of a closing data channel (RFC 6525); zero checksum (RFC 9653)
// when the peer offers it.
//
// Everything it holds for a peer is bounded: the reassembly buffer by the
// receive window, the received-TSN set by a TSN window, the send queue by
// the caller's limit. A peer that breaks the protocol gets an error from
// Handle, and the caller closes the association.
package sctp
