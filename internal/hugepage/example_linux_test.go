//go:build linux

package hugepage_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/internal/hugepage"
)

// A server asks for huge pages at start and for the heap's new mappings
// every minute until it stops.
func ExampleKeep() {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hugepage.Keep(ctx, time.Minute, func(r hugepage.Report, err error) {
			if err == nil && r.Advised > 0 {
				fmt.Println("heap advised")
			}
		})
	}()
	stop()
	<-done
	// Output: heap advised
}
