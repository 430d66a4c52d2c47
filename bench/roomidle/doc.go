// Package roomidle is the benchmark of a room's memory when nothing
// happens in it: players connected and idle for a simulated hour, the live
// heap the room grew by, beside what the same frames
// take in a replay file.
package roomidle
