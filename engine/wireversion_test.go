//go:build !js

package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// rewriteWire is an http.RoundTripper that announces version instead of
// what the client announced: a client of another wire version.
type rewriteWire struct{ version string }

func (rw rewriteWire) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(WireHeader, rw.version)
	return http.DefaultTransport.RoundTrip(r)
}

// TestWireVersion: the server writes the version a client announces, or
// refuses it at signaling with 426 and the reason wire_version, naming
// both sides' versions, before it reads the ticket or the offer; Dial
// turns that into ErrWireVersion. A client of the previous version is
// refused cleanly, never served something it cannot decode.
func TestWireVersion(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go s.Serve(ctx)
	if _, err := s.CreateRoom("duo", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		announce string
		served   bool
		says     string
	}{
		{"", false, "announces no wire version (so reads version 4), the server writes versions 5 to 10"}, // before announcing was the rule: version 4
		{"5", true, ""},
		{"6", true, ""},
		{"7", true, ""},
		{"8", true, ""},
		{"9", true, ""},
		{"10", true, ""},
		{"11", true, ""}, // a newer client reads version 10 too
		{"4", false, "the client reads wire versions up to 4, the server writes versions 5 to 10"},
		{"0", false, "not a version number"},
		{"four", false, "not a version number"},
		{"+5", false, "not a version number"}, // digits only
		{"-9", false, "not a version number"},
		{"9.0", false, "not a version number"},
		{" 9 ", true, ""},                   // a header's spaces are not its value
		{"100000000000000000000", true, ""}, // past any version: the newest is written
		{"0000000009", true, ""},
	} {
		tk, _ := s.Ticket("ann", "duo", RolePlayer, time.Minute)
		req, _ := http.NewRequest(http.MethodPost, web.URL+ConnectPath, strings.NewReader("not an offer"))
		req.Header.Set("Content-Type", "application/sdp")
		req.Header.Set("Authorization", "Bearer "+tk)
		if tt.announce != "" {
			req.Header.Set(WireHeader, tt.announce)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		reason := resp.Header.Get(transport.RefusalHeader)
		if tt.served {
			// Past the version and the ticket: the offer itself is refused.
			if resp.StatusCode != http.StatusBadRequest || reason != "bad_offer" {
				t.Errorf("announcing %q: %d %s %q, want the offer refused", tt.announce, resp.StatusCode, reason, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusUpgradeRequired || reason != "wire_version" || !strings.Contains(string(body), tt.says) {
			t.Errorf("announcing %q: %d %s %q, want 426 wire_version saying %q", tt.announce, resp.StatusCode, reason, body, tt.says)
		}
	}
	// Dial of a client that reads version 4: ErrWireVersion, naming both.
	tk, _ := s.Ticket("bob", "duo", RolePlayer, time.Minute)
	_, err = Dial(ctx, web.URL, tk, &ClientConfig{HTTPClient: &http.Client{Transport: rewriteWire{"4"}}})
	if !errors.Is(err, ErrWireVersion) || !strings.Contains(err.Error(), "up to 4") || !strings.Contains(err.Error(), "versions 5 to 10") {
		t.Fatalf("a client of version 4: %v, want ErrWireVersion naming versions 4, 5 and 10", err)
	}
	// A client of version 5 is written version 5, which this client
	// reads too.
	tk5, _ := s.Ticket("cy", "duo", RolePlayer, time.Minute)
	c5, err := Dial(ctx, web.URL, tk5, &ClientConfig{HTTPClient: &http.Client{Transport: rewriteWire{"5"}}})
	if err != nil {
		t.Fatalf("a client announcing version 5: %v", err)
	}
	if c5.welcome.version != 5 {
		t.Errorf("a client announcing 5 got a welcome of version %d", c5.welcome.version)
	}
	// Kicked, it is told so in words version 5 has: a refusal.
	if n := s.Kick("cy", "afk"); n != 1 {
		t.Fatalf("the kick ended %d connections, want 1", n)
	}
	var cerr error
	for end := time.Now().Add(5 * time.Second); cerr == nil && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		cerr = c5.Update(time.Now())
	}
	var ce *ClosedError
	if !errors.As(cerr, &ce) || ce.Reason != "refused" || ce.Detail != "kicked: afk" {
		t.Fatalf("a version-5 client kicked: %v", cerr)
	}
	// A strict room refuses a client of version 6 at signaling, and
	// serves one of version 7.
	if _, err := s.CreateRoom("turns", lockstep.Config{Players: 2, Hz: 30, Strict: true}); err != nil {
		t.Fatal(err)
	}
	tk6, _ := s.Ticket("dee", "turns", RolePlayer, time.Minute)
	if _, err = Dial(ctx, web.URL, tk6, &ClientConfig{HTTPClient: &http.Client{Transport: rewriteWire{"6"}}}); !errors.Is(err, ErrWireVersion) || !strings.Contains(err.Error(), "strict") {
		t.Fatalf("a client of version 6 in a strict room: %v, want ErrWireVersion", err)
	}
	tk7, _ := s.Ticket("dee", "turns", RolePlayer, time.Minute)
	c7, err := Dial(ctx, web.URL, tk7, nil)
	if err != nil {
		t.Fatalf("a client of version 7 in a strict room: %v", err)
	}
	if cfg := c7.Lockstep().Config(); !cfg.Strict {
		t.Fatalf("the strict room's client has %+v", cfg)
	}
	c7.Close()
	// A world with field groups refuses a client of version 8; one of
	// version 10 gets the groups in its welcome, and the values.
	groups := interest.Config{Width: 8, Height: 8, Groups: []interest.Group{
		{Name: "guild", Fields: []interest.Field{{Name: "id", Bits: 20}, {Name: "rank", Bits: 3}}},
	}}
	gw, err := s.CreateWorld("guilds", WorldConfig{Interest: groups, Join: func(w *interest.World, player string) (interest.ID, error) {
		return w.Spawn(interest.Player, interest.Logic{Pos: interest.Vec{X: 500, Y: 500}, Life: 100}, interest.Display{Name: player})
	}})
	if err != nil {
		t.Fatal(err)
	}
	spawned := make(chan interest.ID, 1)
	gw.Do(func(w *interest.World) {
		id, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 600, Y: 500}, Life: 100}, interest.Display{Name: "wolf"})
		if err := w.SetGroup(id, 0, 4242, 5); err != nil {
			t.Error(err)
		}
		spawned <- id
	})
	npc := <-spawned
	tk8, _ := s.Ticket("eve", "guilds", RolePlayer, time.Minute)
	if _, err = Dial(ctx, web.URL, tk8, &ClientConfig{HTTPClient: &http.Client{Transport: rewriteWire{"8"}}}); !errors.Is(err, ErrWireVersion) || !strings.Contains(err.Error(), "version 10") {
		t.Fatalf("a client of version 8 in a world with field groups: %v, want ErrWireVersion", err)
	}
	// Every world refuses a client of version 9, whose moves all carry
	// their source (SPEC.md §8, "Moves that go on").
	tk9, _ := s.Ticket("eve", "guilds", RolePlayer, time.Minute)
	if _, err = Dial(ctx, web.URL, tk9, &ClientConfig{HTTPClient: &http.Client{Transport: rewriteWire{"9"}}}); !errors.Is(err, ErrWireVersion) || !strings.Contains(err.Error(), "numbers its entities' moves") || !strings.Contains(err.Error(), "version 10") {
		t.Fatalf("a client of version 9 in a world: %v, want ErrWireVersion", err)
	}
	tk9, _ = s.Ticket("eve", "guilds", RolePlayer, time.Minute)
	c9, err := Dial(ctx, web.URL, tk9, nil)
	if err != nil {
		t.Fatalf("a client of version 10 in a world with field groups: %v", err)
	}
	if g := c9.Interest().Config().Groups; len(g) != 1 || g[0].Name != "guild" || g[0].Fields[1].Bits != 3 {
		t.Fatalf("the client's groups %+v", g)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := c9.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
		c9.Interest().Advance(time.Now())
		if v, ok := c9.Interest().Group(npc, 0); ok && v[0] == 4242 && v[1] == 5 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the client never heard the wolf's guild")
		}
	}
	c9.Close()
	// This client is served, and its welcome is the version it reads.
	c, err := Dial(ctx, web.URL, tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.welcome.version != wireVersion {
		t.Errorf("welcome version %d, want %d", c.welcome.version, wireVersion)
	}
}

// TestOldWorldWelcomeRefused: a world's welcome of version 9 (a server
// from before moves were numbered) is refused by name, not misread; a
// room's of version 9 still reads.
func TestOldWorldWelcomeRefused(t *testing.T) {
	world := appendWelcome(nil, &welcome{version: 9, mode: Interest, target: "field", self: 1, interest: interest.Config{Width: 8, Height: 8}.WithDefaults()})
	if _, err := readWelcome(world); !errors.Is(err, ErrWireVersion) || !strings.Contains(err.Error(), "version 9") || !strings.Contains(err.Error(), "from version 10") {
		t.Fatalf("a world's welcome of version 9: %v, want ErrWireVersion naming 9 and 10", err)
	}
	room := appendWelcome(nil, &welcome{version: 9, mode: Lockstep, target: "duo", slot: 1, lockstep: lockstep.Config{Players: 2}.WithDefaults()})
	if m, err := readWelcome(room); err != nil || m.version != 9 {
		t.Fatalf("a room's welcome of version 9: %+v, %v", m, err)
	}
}

// TestUnknownEngineTypes: engine messages of types this client does not
// know, which a newer server may send, are counted and ignored, before
// the welcome and after it; the connection goes on.
func TestUnknownEngineTypes(t *testing.T) {
	net := memnet.New(1)
	c, s := net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	defer c.Close()
	defer s.Close()
	unknown := func(typ int, extra ...byte) []byte { return append([]byte{byte(kindEngine | typ<<kindBits)}, extra...) }
	s.SendReliable(unknown(7, 1, 2, 3))
	s.SendReliable(appendWelcome(nil, &welcome{mode: Lockstep, target: "r", slot: 1, lockstep: lockstep.Config{Players: 2}.WithDefaults()}))
	s.SendReliable(unknown(7))
	s.SendReliable(unknown(7, 0xff))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := NewClient(ctx, c)
	if err != nil {
		t.Fatalf("an unknown engine message before the welcome: %v", err)
	}
	for end := time.Now().Add(2 * time.Second); cl.Stats().Unknown < 3 && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if err := cl.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if st := cl.Stats(); st.Unknown != 3 || st.Malformed != 0 {
		t.Fatalf("unknown %d, malformed %d; want 3 and 0", st.Unknown, st.Malformed)
	}
	s.SendReliable(appendBye(nil, byeClosed, "done"))
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if err := cl.Update(time.Now()); err != nil {
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("closed with %v, want the bye's ErrClosed", err)
			}
			return
		}
	}
	t.Fatal("the bye after the unknown messages was not taken")
}
