package interest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// clientPart is the part of a Config that WriteClientConfig carries.
func clientPart(c Config) [10]int {
	return [10]int{c.RegionSize, c.Width, c.Height, c.Hz, c.MaxEntities, int(c.History / time.Millisecond), c.MaxSpeed, c.MaxMove, c.MagicBits, c.MaxCustom}
}

// TestClientConfigWire: what a client needs survives the trip, and the
// server-only settings do not travel.
func TestClientConfigWire(t *testing.T) {
	server := Config{Width: 12, Height: 7, RegionSize: 512, Hz: 20, MaxEntities: 5000, History: 3 * time.Second,
		MaxSpeed: 90, MaxMove: 3000, MagicBits: 0, MaxCustom: 100,
		ForcedSync: 7 * time.Second, Lead: time.Second, Tolerance: 99, MaxAhead: 9, TickBudget: 900, DiscoveryRate: 7, LeaveMessages: true}.WithDefaults()
	var w codec.Writer
	WriteClientConfig(&w, server)
	got, err := ReadClientConfig(codec.NewReader(w.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if clientPart(got) != clientPart(server) {
		t.Fatalf("client part %v, want %v", clientPart(got), clientPart(server))
	}
	def := Config{Hz: got.Hz}.WithDefaults() // the forced sync's default is a frame under 2 s
	if got.ForcedSync != def.ForcedSync || got.Tolerance != def.Tolerance || got.MaxAhead != def.MaxAhead ||
		got.TickBudget != def.TickBudget || got.DiscoveryRate != def.DiscoveryRate || got.LeaveMessages {
		t.Fatalf("server-only settings travelled: %+v", got)
	}
	if a, b := newLayout(got), newLayout(server); a.idBits != b.idBits || a.xBits != b.xBits || a.yBits != b.yBits ||
		a.history != b.history || a.maxX != b.maxX || a.maxY != b.maxY || a.offMax != b.offMax {
		t.Fatal("the client's wire layout differs from the server's")
	}
	var bad codec.Writer
	WriteClientConfig(&bad, Config{RegionSize: 1024, Width: 64, Height: 64, Hz: 16, MaxEntities: 1, History: time.Second, MaxSpeed: 1, MaxMove: 1})
	if _, err := ReadClientConfig(codec.NewReader(bad.Bytes())); !errors.Is(err, ErrConfig) {
		t.Fatalf("one entity: %v, want ErrConfig", err)
	}
}

// FuzzReadClientConfig: what decodes validates and encodes back to the
// same client part.
func FuzzReadClientConfig(f *testing.F) {
	var w codec.Writer
	WriteClientConfig(&w, Config{}.WithDefaults())
	f.Add(w.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadClientConfig(codec.NewReader(b))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded a config that does not validate: %v", err)
		}
		var w codec.Writer
		WriteClientConfig(&w, c)
		again, err := ReadClientConfig(codec.NewReader(w.Bytes()))
		if err != nil || clientPart(again) != clientPart(c) {
			t.Fatalf("round trip %v (%v), want %v", clientPart(again), err, clientPart(c))
		}
	})
}

// FuzzReadClientGroups: the field groups of a world's welcome, as any
// bytes: what decodes validates and encodes back to the same groups.
func FuzzReadClientGroups(f *testing.F) {
	var w codec.Writer
	WriteClientGroups(&w, groupsConfig().Groups)
	f.Add(w.Bytes())
	f.Add([]byte{0})
	base := Config{}.WithDefaults()
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadClientGroups(codec.NewReader(b), base)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded groups that do not validate: %v", err)
		}
		var w codec.Writer
		WriteClientGroups(&w, c.Groups)
		again, err := ReadClientGroups(codec.NewReader(w.Bytes()), base)
		if err != nil || !reflect.DeepEqual(again.Groups, c.Groups) {
			t.Fatalf("round trip %+v (%v), want %+v", again.Groups, err, c.Groups)
		}
	})
}
