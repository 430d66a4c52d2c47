package hugepage

import (
	"context"
	"errors"
	"time"
)

// ErrUnsupported is returned (wrapped) by Advise where there are no
// transparent huge pages to ask for: on systems other than Linux, on a
// Linux without them or with them set to "never", and when
// GODEBUG=disablethp=1 asks the Go runtime to keep the heap off them.
var ErrUnsupported = errors.New("hugepage: no transparent huge pages to ask for")

// Report says what a call to Advise did.
type Report struct {
	Mode    string // the system's setting, as /sys/kernel/mm/transparent_hugepage/enabled shows it
	Advised int64  // bytes of the heap advised by this call (address space not advised before)
	Huge    int64  // bytes of the process's anonymous memory on huge pages after it; -1 if the kernel does not say
}

// Advisor advises the heap's address space, each part once. The zero
// value is ready; it is not safe for concurrent use.
type Advisor struct {
	done []span // address ranges advised, sorted, not touching
}

type span struct{ start, end uintptr }

// Advise advises the parts of the heap's mappings not yet advised and
// collapses their present pages into huge pages (which can take a few
// hundred milliseconds for a large heap).
func (a *Advisor) Advise() (Report, error) { return a.advise() }

// Keep calls Advise now and then every interval until ctx is done,
// passing each result to report (which may be nil). It returns early when
// Advise returns ErrUnsupported.
func Keep(ctx context.Context, interval time.Duration, report func(Report, error)) {
	var a Advisor
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rep, err := a.Advise()
		if report != nil {
			report(rep, err)
		}
		if errors.Is(err, ErrUnsupported) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
