// Package churn is the benchmark of players coming and going: joins and
// leaves of one room over real WebRTC on loopback, and what the server
// holds afterwards (goroutines, live heap, descriptors) beside what it
// held before, with the time each join took.
package churn
