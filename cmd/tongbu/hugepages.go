//go:build !js

package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tongbu/tongbu/internal/hugepage"
)

// keepHugePages asks Linux to back the Go heap with transparent huge
// pages, now and every minute for the heap's new mappings, until the
// returned function is called (it waits for the last advice). A large
// interest world reads tens of megabytes scattered over the heap every
// tick: in one paired run of bench world its ticks were about a tenth
// faster on huge pages, at the cost of a larger resident heap. It acts on
// the whole process, which is why the program decides, not the library.
// It logs what the first advice got, and then each that advised anything;
// where there are no huge pages to ask for (other systems, mode "never",
// GODEBUG=disablethp=1) it says so once and stops.
func keepHugePages(log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		hugepage.Keep(ctx, time.Minute, func(r hugepage.Report, err error) {
			switch {
			case errors.Is(err, hugepage.ErrUnsupported):
				log.Info("huge pages for the heap: none to ask for", "err", err)
			case err != nil:
				log.Warn("huge pages for the heap", "err", err)
			case r.Advised > 0 || first:
				log.Info("huge pages for the heap", "thp", r.Mode, "advised_bytes", r.Advised, "huge_bytes", r.Huge)
			}
			first = false
		})
	}()
	return func() {
		cancel()
		<-done
	}
}
