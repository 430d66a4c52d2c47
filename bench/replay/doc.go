// Package replay is the benchmark of replay files: a 20-minute 5v5 match
// recorded with lockstep/replay.Writer, in bytes per minute.
package replay
