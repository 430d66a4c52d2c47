// Package reconnect is the benchmark of a player's return: one player of a
// 5v5 match drops near its end and rejoins, catching up from the frame log
// while 20 other rooms run on the same worker. Time to live, bytes sent,
// and how late the other rooms cut meanwhile.
package reconnect
