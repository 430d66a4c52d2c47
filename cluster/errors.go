//go:build !js

package cluster

import "errors"

// Errors of the cluster. They are wrapped with detail; test with errors.Is.
var (
	// ErrNoCapacity: no node took the room (none is up, or every one is
	// full).
	ErrNoCapacity = errors.New("cluster: no node has capacity")
	// ErrFull is what a Host returns when its node can take no more rooms;
	// the requester then tries another node.
	ErrFull = errors.New("cluster: node full")
	// ErrRefused: the node that took the request refused it (a name in
	// use, a configuration its Host rejects).
	ErrRefused = errors.New("cluster: room refused")
	// ErrInvalid: a message or argument breaks the formats of SPEC.md §11.
	ErrInvalid = errors.New("cluster: invalid")
	// ErrClosed: the node has left or the directory is closed.
	ErrClosed = errors.New("cluster: closed")
)
