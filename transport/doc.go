// Package transport carries messages between the engine and its clients.
// Everything above it sees one interface, Conn: an unreliable, unordered
// channel ("u": inputs, frames, state) and a reliable, ordered one ("r":
// control, bulk catch-up), a peer id, and statistics.
//
// Two implementations:
//
//   - WebRTC. Server is an http.Handler for signaling (POST the SDP offer,
//     get the answer) that puts every peer on one UDP port with ICE-lite,
//     one DTLS certificate, and the two channels negotiated out of band.
//     Dial connects to it with the same code natively and in the browser
//     (GOOS=js GOARCH=wasm), where the browser's own WebRTC serves. Limits
//     bound every resource a peer can make the server hold.
//
//     Two stacks implement it (ServerConfig.Stack, ClientConfig.Stack).
//     StackLean, the default, serves thousands of peers from one socket
//     with no goroutine per peer: one reader takes datagrams in batches
//     and runs each through its peer's state machines (ICE-lite, DTLS
//     records sealed and opened inline once pion/dtls has done the
//     handshake, and a sans-IO SCTP), and one flusher sends what the peers
//     queued in batches. Its connections implement Handler: a server
//     can take each message in that reader as it arrives, so that no
//     goroutine wakes per message. StackPion runs a pion PeerConnection
//     per peer: the reference and fallback. Browsers and pion clients
//     connect to either; the lean native client drives thousands of peers
//     from one process, for load tests.
//
//   - An in-memory Network with a seeded emulator of latency, jitter, loss
//     (independent or Gilbert-Elliott bursts), duplication, reordering,
//     bandwidth caps and recorded traces. Under testing/synctest a minute of
//     network time takes milliseconds; LinkModel gives the same per-message
//     model to simulators with their own virtual time.
//
// Unreliable messages are never queued to go out late: when the channel is
// backed up a send is dropped and counted. The wire is in SPEC.md, sections
// 6.1 to 6.3. The package depends on codec's framing and pion only, never
// on the modes.
//
// Errors match the package's sentinels (ErrClosed, ErrTooLarge, ...) with
// errors.Is. Those from NewServer, Dial, Accept, ReadTrace and
// NewLinkModel carry the stack of the call that returned them
// (github.com/pkg/errors; print with %+v); a connection's sends and
// receives return the bare sentinels, as they run for every message.
package transport
