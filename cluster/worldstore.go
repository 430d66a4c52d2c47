//go:build !js

package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tongbu/tongbu/internal/seal"
)

// The worlds' checkpoints (SPEC.md §11.5) live in a JetStream key-value
// bucket, <prefix with '.' as '_'>_worlds, one key per world, replicated
// by the NATS cluster (Options.CheckpointReplicas): the store is NATS's.
// A record names the node that owns the world and holds its checkpoint
// (engine.World.Checkpoint), sealed with the cluster's secret and bound
// to its key, so that a NATS client without the secret can neither read
// a world nor plant one. Ownership changes hands only by a compare-and-set
// on the key's revision: a node that takes a world over after a crash,
// or a drain that hands it over, writes the new owner in the revision it
// read, and the old owner's next write, made in the revision it knew,
// fails: it learns that the world went on elsewhere.

// errNoCheckpoint: the store holds no checkpoint of the world.
var errNoCheckpoint = errors.New("cluster: no checkpoint of the world")

// errTakenElsewhere: a write found the world's record changed by another
// node since this one wrote it.
var errTakenElsewhere = errors.New("cluster: the world's record was written by another node")

// worldStore is a node's handle on the checkpoint bucket.
type worldStore struct {
	kv     jetstream.KeyValue
	c      *seal.Conn
	writes atomic.Int64 // checkpoints written
	bytes  atomic.Int64 // their bytes
}

// bucket is the checkpoint bucket's name.
func (o *Options) bucket() string { return strings.ReplaceAll(o.Prefix, ".", "_") + "_worlds" }

// openStore opens (or makes) the checkpoint bucket.
func openStore(ctx context.Context, nc *nats.Conn, c *seal.Conn, o *Options) (*worldStore, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	replicas := max(o.CheckpointReplicas, 1)
	if kv, err := js.KeyValue(ctx, o.bucket()); err == nil { // made by another node
		if st, err := kv.Status(ctx); err == nil {
			if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo().Config.Replicas == replicas {
				return &worldStore{kv: kv, c: c}, nil
			}
		}
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      o.bucket(),
		Description: "tongbu: the checkpoints of the cluster's worlds",
		History:     1,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: checkpoint bucket %s: %w", o.bucket(), err)
	}
	return &worldStore{kv: kv, c: c}, nil
}

// storeKey is world's key: its name in URL-safe base64, which any name
// may take.
func storeKey(world string) string { return "w." + base64.RawURLEncoding.EncodeToString([]byte(world)) }

// storedWorld is one record: the world's owner and its checkpoint.
type storedWorld struct {
	owner string
	cp    []byte
}

const storedVersion = 1

func (r *storedWorld) encode() []byte {
	b := append([]byte{storedVersion}, byte(len(r.owner)))
	b = append(b, r.owner...)
	return append(b, r.cp...)
}

func decodeStored(b []byte) (storedWorld, error) {
	if len(b) < 2 || b[0] != storedVersion || int(b[1]) > len(b)-2 {
		return storedWorld{}, fmt.Errorf("%w: a world record of %d bytes", ErrInvalid, len(b))
	}
	r := storedWorld{owner: string(b[2 : 2+b[1]]), cp: b[2+b[1]:]}
	if err := checkID(r.owner); err != nil {
		return storedWorld{}, fmt.Errorf("%w: a world record's owner: %v", ErrInvalid, err)
	}
	return r, nil
}

// get reads world's record and its revision.
func (st *worldStore) get(ctx context.Context, world string) (storedWorld, uint64, error) {
	key := storeKey(world)
	e, err := st.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return storedWorld{}, 0, errNoCheckpoint
	case err != nil:
		return storedWorld{}, 0, err
	}
	from, _, payload, err := st.c.Keys().OpenStored(key, e.Value())
	if err != nil {
		return storedWorld{}, 0, err
	}
	if from.Role != seal.RoleNode {
		return storedWorld{}, 0, fmt.Errorf("%w: world %q's record sealed by a %v", ErrInvalid, world, from.Role)
	}
	r, err := decodeStored(payload)
	return r, e.Revision(), err
}

// put writes world's record in revision last (0: whatever is there) and
// returns the new revision; errTakenElsewhere when another node wrote
// the key since.
func (st *worldStore) put(ctx context.Context, world string, r storedWorld, last uint64) (uint64, error) {
	key := storeKey(world)
	val := st.c.SealStored(key, r.encode())
	var rev uint64
	var err error
	if last == 0 {
		rev, err = st.kv.Put(ctx, key, val)
	} else {
		rev, err = st.kv.Update(ctx, key, val, last)
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return 0, errTakenElsewhere
	}
	if err != nil {
		return 0, err
	}
	st.writes.Add(1)
	st.bytes.Add(int64(len(val)))
	return rev, nil
}

// create writes world's first record, and errTakenElsewhere when one is
// there (a deleted one is not).
func (st *worldStore) create(ctx context.Context, world string, r storedWorld) (uint64, error) {
	key := storeKey(world)
	val := st.c.SealStored(key, r.encode())
	rev, err := st.kv.Create(ctx, key, val)
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return 0, errTakenElsewhere
	}
	if err != nil {
		return 0, err
	}
	st.writes.Add(1)
	st.bytes.Add(int64(len(val)))
	return rev, nil
}

// drop deletes world's record, written in revision last: a world that
// closed on purpose does not come back.
func (st *worldStore) drop(world string, last uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st.kv.Delete(ctx, storeKey(world), jetstream.LastRevision(last))
}
