//go:build !js

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// CreateRoom asks the cluster on nc for a room: the request goes to the
// create queue, where NATS hands it to one of the nodes that have
// capacity; a node that turns out full sends it back and the next attempt
// goes to another (at most opts.Attempts tries, each bounded by
// opts.RequestTimeout and ctx). An empty req.Room is given a random name.
//
// The Placement names the node and the public URL that hold the room, and
// the tickets for req.Players: a client dials that URL with its ticket.
func CreateRoom(ctx context.Context, nc *nats.Conn, req RoomRequest, opts *Options) (Placement, error) {
	p, err := createRoom(ctx, nc, req, opts)
	return p, errstack.With(err)
}

func createRoom(ctx context.Context, nc *nats.Conn, req RoomRequest, opts *Options) (Placement, error) {
	o := opts.withDefaults()
	if req.Room == "" {
		req.Room = randomRoom()
	}
	if err := req.validate(); err != nil {
		return Placement{}, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return Placement{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c, err := clientConn(nc, &o)
	if err != nil {
		return Placement{}, err
	}
	return place(ctx, c, &o, o.subjCreate(), "room", req.Room, data, "no node in the create queue")
}

// CreateRoomOn asks node for a room, as CreateRoom does but on that node
// only (one try, bounded by opts.RequestTimeout and ctx): for a placer
// that chose the node, say for its region (package matchmaker). A node
// that is full, or does not serve req.Builds, answers ErrNoCapacity; one
// that is not there, ErrNoCapacity too.
func CreateRoomOn(ctx context.Context, nc *nats.Conn, node string, req RoomRequest, opts *Options) (Placement, error) {
	o := opts.withDefaults()
	o.Attempts = 1
	if err := checkID(node); err != nil {
		return Placement{}, errstack.With(err)
	}
	if req.Room == "" {
		req.Room = randomRoom()
	}
	if err := req.validate(); err != nil {
		return Placement{}, errstack.With(err)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return Placement{}, errstack.With(fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	c, err := clientConn(nc, &o)
	if err != nil {
		return Placement{}, errstack.With(err)
	}
	p, err := place(ctx, c, &o, o.subjCreateOn(node), "room", req.Room, data, "node "+node+" is not there")
	return p, errstack.With(err)
}

// randomRoom returns a random room name.
func randomRoom() string {
	var b [8]byte
	rand.Read(b[:])
	return "room-" + hex.EncodeToString(b[:])
}

// place sends a create request (data, for the room or world name) to a
// create queue: a node that answers "full", or not within the request
// timeout (it may have died), sends it to another, at most o.Attempts
// times; NATS's "no responders" means no node is in the queue. Only a
// node's reply is taken, and only one that names that node.
func place(ctx context.Context, c *seal.Conn, o *Options, subject, what, name string, data []byte, none string) (Placement, error) {
	var last error
	for range o.Attempts {
		actx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
		msg, err := c.Request(actx, subject, data, anyNode)
		cancel()
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return Placement{}, fmt.Errorf("%w: %s %q: %s", ErrNoCapacity, what, name, none)
		case ctx.Err() != nil:
			return Placement{}, fmt.Errorf("cluster: create %s %q: %w", what, name, ctx.Err())
		case err != nil: // this try timed out: the node may have died; try another
			last = err
			continue
		}
		rep, err := decode[createReply](msg.Data)
		switch {
		case err != nil:
			return Placement{}, fmt.Errorf("cluster: create %s %q: reply: %w", what, name, err)
		case rep.Full:
			last = errors.New(rep.Error)
			continue
		case rep.Error != "":
			return Placement{}, fmt.Errorf("%w: %s %q: %s", ErrRefused, what, name, rep.Error)
		case rep.Room != name:
			return Placement{}, fmt.Errorf("%w: asked for %s %q, placed %q", ErrInvalid, what, name, rep.Room)
		case rep.Node != msg.From.ID:
			return Placement{}, fmt.Errorf("%w: node %s placed %s %q on node %s", ErrInvalid, msg.From.ID, what, name, rep.Node)
		}
		return rep.Placement, nil
	}
	return Placement{}, fmt.Errorf("%w: %s %q after %d attempts: %v", ErrNoCapacity, what, name, o.Attempts, last)
}
