//go:build !linux

package hugepage

func (a *Advisor) advise() (Report, error) { return Report{Huge: -1}, ErrUnsupported }
