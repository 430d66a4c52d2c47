// Package transport carries messages between the engine and its clients:
// WebRTC data channels on pion (one unreliable, unordered channel "u" and one
// reliable, ordered channel "r" per peer), and an in-memory network with
// seeded latency, jitter, loss and reordering for tests and scenarios.
//
// It depends only on codec (for framing) and pion, never on the modes. The
// package is laid out but not built yet: it lands with the transport issue.
package transport
