package replay

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrDamaged is returned for a file that is damaged or not a replay
	// (a checksum that does not match, a field that does not decode or is
	// out of its bound), and by NewWriter for a header no replay can hold.
	ErrDamaged = errors.New("replay: damaged or not a replay")

	// ErrTruncated is returned when a replay file ends before its end
	// record: the match did not finish, or the file was cut.
	ErrTruncated = errors.New("replay: truncated")
)
