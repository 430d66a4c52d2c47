// Package wasm is the browser half of tongbu.
//
// In the browser (js/wasm) it starts the engine's Client in the page and
// exposes a small JavaScript API for pages that are not Ebiten (Expose):
//
//	await tongbu.connect(url, ticket) // join the ticket's room or world
//	await tongbu.connect(url, ticket, {idleTimeoutMs: 5000}) // the server's idle timeout, if not the default
//	await tongbu.connect(url, ticket, {build: "1.4.2"})      // the game build, for a server that checks it
//	tongbu.status()  // {state, mode, target, slot, self, frame, play, depth, known, error, resumes, awayMs}
//	tongbu.stats()   // {rttMs, sentBytes, recvBytes, sentMessages, recvMessages, malformed}
//	tongbu.input(u8) // lockstep: queue this frame's input (a Uint8Array)
//	tongbu.close()
//
// The state is "connecting", "connected", "reconnecting" (the connection
// was lost: the page's network changed or went away, and the client is
// resuming it by itself, for up to 30 s), or "closed" (with the error).
// resumes counts the connections resumed and awayMs says how long the last
// took; after one, a lockstep page catches up from the match's start.
//
// On the server side (native) it builds the browser clients: Build compiles
// a main package for js/wasm with the local Go toolchain and copies
// wasm_exec.js from the same installation beside it, and Page returns the
// loader page that starts a WASM file.
//
// Client logic lives in the mode packages and in engine, shared with native
// clients; this package is only the glue.
package wasm
