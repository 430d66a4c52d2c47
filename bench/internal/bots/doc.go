// Package bots holds the clients of the scenarios over real WebRTC. They run
// in a second process (harness.BotsEnv set), so that the server's CPU time
// is its own: bots.Run is that process's main. The scenario's side starts
// that process and measures its server (Start, Measure, Child).
package bots
