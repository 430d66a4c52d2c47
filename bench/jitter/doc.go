// Package jitter is the benchmark of the lockstep client's jitter buffer:
// on seeded delay traces (clean, 4g, wifi and others), how long frames wait
// and how often play stalls, beside three baselines (a quantile, RFC 3550's
// estimator, a fixed two frames) and the hindsight oracle.
package jitter
