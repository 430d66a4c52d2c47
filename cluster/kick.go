//go:build !js

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// maxReason bounds a kick's reason, as the engine's bye text.
const maxReason = 200

// kickMsg asks a node, on P.kick.<id>, to end a player's connections
// there and refuse its credentials (engine.Server.Kick).
type kickMsg struct {
	Player string `json:"player"`
	Reason string `json:"reason,omitempty"`
}

func (k *kickMsg) validate() error {
	if err := checkRoom(k.Player); err != nil {
		return fmt.Errorf("%w: kick: player: %v", ErrInvalid, err)
	}
	if len(k.Reason) > maxReason || !utf8.ValidString(k.Reason) {
		return fmt.Errorf("%w: kick: a reason of %d bytes, at most %d of UTF-8", ErrInvalid, len(k.Reason), maxReason)
	}
	return nil
}

// kickReply answers it: the connections the node ended.
type kickReply struct {
	Kicked int    `json:"kicked"`
	Error  string `json:"error,omitempty"`
}

func (r *kickReply) validate() error {
	if r.Kicked < 0 || r.Kicked > 1<<20 {
		return fmt.Errorf("%w: kicked %d", ErrInvalid, r.Kicked)
	}
	if len(r.Error) > 1024 {
		r.Error = r.Error[:1024]
	}
	return nil
}

func (o *Options) subjKick(id string) string { return o.Prefix + ".kick." + id }

// OnKick sets what the node does when the cluster kicks a player
// (Kick): f ends the player's connections on this process and refuses
// its credentials (tongbu serve passes engine.Server.Kick), and returns
// how many it ended. A node without one answers that it kicks no one.
func (n *Node) OnKick(f func(player, reason string) (kicked int)) {
	n.mu.Lock()
	n.kick = f
	n.mu.Unlock()
}

// onKick answers a kick: from a node, a lobby or a matchmaker.
func (n *Node) onKick(m *seal.Msg) {
	if !placer(m) {
		n.c.Refuse(m, "a kick from a "+m.From.Role.String())
		return
	}
	k, err := decode[kickMsg](m.Data)
	if err != nil {
		n.respond(m, kickReply{Error: err.Error()})
		return
	}
	n.mu.Lock()
	f := n.kick
	n.mu.Unlock()
	if f == nil {
		n.respond(m, kickReply{Error: fmt.Sprintf("node %s kicks no one (Node.OnKick)", n.info.ID)})
		return
	}
	kicked := f(k.Player, k.Reason)
	n.opts.Logger.Info("cluster: player kicked", "player", k.Player, "reason", k.Reason, "connections", kicked, "by", m.From.ID)
	n.respond(m, kickReply{Kicked: kicked})
}

// Kick ends player's connections on every live node of the cluster that
// dir knows, and makes each refuse the player's credentials (a resume
// after the kick is refused), with reason for its client (at most 200
// bytes). It returns how many connections were ended in all; a node
// that did not answer within opts.RequestTimeout makes it fail, with the
// count of the others.
func Kick(ctx context.Context, nc *nats.Conn, dir *Directory, player, reason string, opts *Options) (int, error) {
	n, err := kick(ctx, nc, dir, player, reason, opts)
	return n, errstack.With(err)
}

func kick(ctx context.Context, nc *nats.Conn, dir *Directory, player, reason string, opts *Options) (int, error) {
	o := opts.withDefaults()
	k := kickMsg{Player: player, Reason: reason}
	if err := k.validate(); err != nil {
		return 0, err
	}
	c, err := clientConn(nc, &o)
	if err != nil {
		return 0, err
	}
	data, _ := json.Marshal(k)
	var (
		mu     sync.Mutex
		total  int
		failed []string
		wg     sync.WaitGroup
	)
	for _, node := range dir.Nodes() {
		if !node.Alive {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
			defer cancel()
			var rep *kickReply
			msg, err := c.Request(rctx, o.subjKick(node.ID), data, fromNode(node.ID))
			if err == nil {
				rep, err = decode[kickReply](msg.Data)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, node.ID+": "+err.Error())
			case rep.Error != "":
				failed = append(failed, node.ID+": "+rep.Error)
			default:
				total += rep.Kicked
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		return total, fmt.Errorf("%w: kick of %q: %d nodes did not: %v", ErrRefused, player, len(failed), failed)
	}
	return total, nil
}
