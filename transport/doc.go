// Package transport carries messages between the engine and its clients.
// Everything above it sees one interface, Conn: an unreliable, unordered
// channel ("u": inputs, frames, state) and a reliable, ordered one ("r":
// control, bulk catch-up), a peer id, and statistics.
//
// Two implementations:
//
//   - WebRTC, on pion. Server is an http.Handler for signaling (POST the SDP
//     offer, get the answer) that puts every peer on one UDP port with
//     ICE-lite, one DTLS certificate, and the two channels negotiated out of
//     band and detached. Dial connects to it with the same code natively and
//     in the browser (GOOS=js GOARCH=wasm). Limits bound every resource a
//     peer can make the server hold.
//   - An in-memory Network with a seeded emulator of latency, jitter, loss
//     (independent or Gilbert-Elliott bursts), duplication, reordering,
//     bandwidth caps and recorded traces. Under testing/synctest a minute of
//     network time takes milliseconds; LinkModel gives the same per-message
//     model to simulators with their own virtual time.
//
// Unreliable messages are never queued to go out late: when the channel is
// backed up a send is dropped and counted. The wire is in SPEC.md, sections
// 6.1 and 6.2. The package depends on codec's framing and pion only, never
// on the modes.
//
// Errors match the package's sentinels (ErrClosed, ErrTooLarge, ...) with
// errors.Is. Those from NewServer, Dial, Accept, ReadTrace and
// NewLinkModel carry the stack of the call that returned them
// (github.com/pkg/errors; print with %+v); a connection's sends and
// receives return the bare sentinels, as they run for every message.
package transport
