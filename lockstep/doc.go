// Package lockstep is tongbu's frame-sync mode (seeds 001-003): a relay room
// that cuts frames at a fixed rate, fills in input for late players, and
// delivers every frame reliably over the unreliable channel with
// redundancy and retransmission; and the client half with its adaptive
// jitter buffer.
//
// It depends only on codec and is driven by explicit calls (Tick, Deliver),
// so tests run it with no network and no real clock. The package is laid
// out but not built yet: it lands with the lockstep issue.
package lockstep
