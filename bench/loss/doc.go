// Package loss is the benchmark of lockstep under packet loss: a match of
// 10 players at 15 Hz for 20 simulated minutes on a lossy link, played on a
// simulated clock: how much of play stalls, and the bytes each way.
package loss
