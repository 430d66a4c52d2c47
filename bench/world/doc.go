// Package world is the benchmark of interest mode at MMO scale: the seed's
// world of 6,400 players and 28,800 NPCs at 16 Hz, its tick time and each
// client's bandwidth and discovery time, beside JX1's state sync in the
// same run.
package world
