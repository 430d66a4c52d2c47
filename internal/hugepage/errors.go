package hugepage

import "errors"

// ErrUnsupported is returned (wrapped) by Advise where there are no
// transparent huge pages to ask for: on systems other than Linux, on a
// Linux without them or with them set to "never", and when
// GODEBUG=disablethp=1 asks the Go runtime to keep the heap off them.
var ErrUnsupported = errors.New("hugepage: no transparent huge pages to ask for")
