// Package replica replicates shared data between server processes: a
// world server (the Publisher) keeps collections of records such as
// guilds and teams, and game servers (Subscribers) hold a copy of
// each, kept current by full and incremental sync over a Bus. SPEC.md,
// "Replica protocol", describes every message and file.
//
// # Versions
//
// Every collection has a 64-bit version. The publisher's starts at 0 and
// each commit of pending changes closes a delta numbered version+1. The
// publisher keeps the last K deltas in a ring (the delta of version v in
// slot v mod K) and the latest full snapshot. A snapshot taken while
// changes are pending first closes them into a delta at version+1, so that the snapshot and the delta of one version describe
// the same state.
//
// A delta lists, per changed record, its ID, a deleted bit, and the record
// encoded by its codec.Record methods: a dirty mask with one bit per field
// and the fields that changed, or the whole record
// when the receiver has none. Snapshots and catch-up are compressed with
// snappy (codec.Compress) and split into bus-sized parts with codec
// framing; subscribers merge them with a codec.Reassembler within a byte
// budget and a timeout.
//
// # The version protocol
//
// A subscriber's copy has version -1 when it holds nothing. It reports its
// versions when it starts and whenever a delta does not follow them. The
// publisher answers a report of version r:
//
//   - r = -1 and no snapshot, or a snapshot the ring has outrun: a new
//     snapshot.
//   - r = -1 and a snapshot whose later deltas the ring still holds: that
//     snapshot and the deltas after it.
//   - r older than the ring (a delta after r has been overwritten): a new
//     snapshot.
//   - otherwise: the deltas r+1 to the current version (nothing when r is
//     current).
//
// The subscriber loads a snapshot newer than its copy, clearing the copy
// first so that records deleted at the publisher are gone; ignores a delta
// while it has no copy, and reports -1; applies the delta that follows its
// version; reports its version when a delta skips ahead; and ignores a
// delta at or below its version, which on an unordered bus is a late or
// duplicated copy. A report is not repeated within ReportTimeout, however
// far behind the copy is; after it, reports are retried at a doubling
// interval up to MaxReportInterval. The publisher announces every
// collection's version each HeartbeatInterval, so a subscriber that lost
// the last delta learns that it is behind.
//
// Two cases the seed leaves to its reliable transport are made explicit.
// Each publisher history has a random 64-bit epoch, kept in its file: a
// copy of another epoch (the publisher lost its file, or started without
// one) counts as no copy, which is how the seed's "delta at or below the
// local version" case, a publisher whose versions went backwards, is
// detected here. A subscriber that reports a version ahead of the
// publisher gets a snapshot marked reset, which it loads whatever its
// version.
//
// # Restarts
//
// With a Path, the publisher writes its records, versions, epoch and rings
// at every commit, before it publishes the new versions, and the
// subscriber writes its copy every SaveInterval; files are written to a
// temporary file, synced and renamed, and carry a CRC-32C. A restarted
// subscriber loads its copy and reports its version, so it is sent only
// the deltas it missed; a restarted publisher continues the same history.
// A file that does not load is logged and the process starts afresh (a
// publisher with a new epoch, a subscriber empty).
//
// # Buses and time
//
// Bus is a small subject-addressed interface, unordered and lossy;
// LocalBus is its in-process implementation, with seeded loss, reordering
// and duplication for tests. Publisher and Subscriber take the time as a
// parameter of Start and Tick; nothing in the package reads the clock, so
// tests drive them with a fake clock or testing/synctest.
//
// The package depends on codec, snappy (through codec) and the standard
// library only.
package replica
