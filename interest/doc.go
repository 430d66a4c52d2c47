// Package interest is tongbu's MMO state-sync mode (seed 000): a world cut
// into square regions, each client kept in sync with the 3x3 regions around
// its character by broadcast commands, client discovery and forced sync,
// with state-sync rates set by policy and a per-client byte budget.
//
// It depends only on codec and is driven by explicit calls (Tick, Deliver).
// The package is laid out but not built yet: it lands with the interest
// issue.
package interest
