// Package replica is the benchmark of replication between server processes:
// 10,000 guilds, 1% of them changing each second, 8 subscribers, one
// restarted every 10 s; deltas and a ring of them beside sending a full
// snapshot every period.
package replica
