//go:build !race

package sctp

const raceEnabled = false
