// Package abuse is the benchmark of hostile peers (issue 34): while each
// attack runs against a server, an honest room of ten players plays over
// real WebRTC beside it and honest players join, and the scenario prints
// the honest room's frame gaps and joins beside the same room's with no
// attack, measured first on the same server, with what the server's data
// path held and the longest it took for one datagram. The attackers run
// in a second process (bench/internal/hostile), so that the server's
// memory is its own.
package abuse
