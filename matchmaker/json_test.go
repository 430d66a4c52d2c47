package matchmaker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestModeJSON: a Mode and a Config read and write the config files' one
// schema (round trips in milliseconds, the timeout a duration), refusing
// unknown keys, so that Go and tongbu serve's "matchmaker" object agree.
func TestModeJSON(t *testing.T) {
	const file = `{"modes":[{"name":"5v5","teams":2,"team_size":5,"skill":4.2,"rtt_ms":80,"rtt_widen_ms":20,"max_rtt_ms":250,"room":{"players":10,"hz":30}}],"timeout":"5m0s"}`
	var c Config
	if err := json.Unmarshal([]byte(file), &c); err != nil {
		t.Fatal(err)
	}
	m := c.Modes[0]
	if m.Name != "5v5" || m.Teams != 2 || m.TeamSize != 5 || m.Skill != 4.2 || m.RTT != 80*time.Millisecond ||
		m.RTTWiden != 20*time.Millisecond || m.MaxRTT != 250*time.Millisecond || string(m.Room) != `{"players":10,"hz":30}` ||
		c.Timeout != 5*time.Minute {
		t.Fatalf("read %+v from %s", c, file)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != file {
		t.Errorf("wrote\n%s\nwant\n%s", b, file)
	}
	for _, tt := range []struct{ name, in, want string }{
		{"the old nanoseconds", `{"name":"duel","teams":2,"team_size":1,"rtt_ns":80000000}`, "rtt_ns"},
		{"a misspelt key", `{"name":"duel","teams":2,"team_size":1,"rtt":80}`, `"rtt"`},
		{"not an object", `[1]`, "mode"},
	} {
		var m Mode
		if err := json.Unmarshal([]byte(tt.in), &m); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %s read with error %v, want one naming %s", tt.name, tt.in, err, tt.want)
		}
	}
	var bad Config
	if err := json.Unmarshal([]byte(`{"modes":[],"timeout":"soon"}`), &bad); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Errorf("a bad timeout read with error %v", err)
	}
}

// FuzzModeJSON: any bytes read as a Config or a Mode give one, or an
// error, never a panic; what reads writes back to what reads the same.
func FuzzModeJSON(f *testing.F) {
	f.Add([]byte(`{"modes":[{"name":"5v5","teams":2,"team_size":5,"rtt_ms":80,"room":{"players":10}}],"timeout":"5m"}`))
	f.Add([]byte(`{"name":"duel","teams":2,"team_size":1,"max_rtt_ms":-1}`))
	f.Add([]byte(`{"modes":null,"timeout":"1h","first_come":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Config
		if c.UnmarshalJSON(b) == nil {
			out, err := c.MarshalJSON()
			if err != nil {
				t.Fatalf("%q read, but does not write: %v", b, err)
			}
			var again Config
			if err := again.UnmarshalJSON(out); err != nil || len(again.Modes) != len(c.Modes) || again.Timeout != c.Timeout.Truncate(0) {
				t.Fatalf("%q wrote %s, which reads as %+v (%v)", b, out, again, err)
			}
		}
		var m Mode
		if m.UnmarshalJSON(b) == nil {
			out, err := m.MarshalJSON()
			if err != nil {
				t.Fatalf("%q read, but does not write: %v", b, err)
			}
			var again Mode
			if err := again.UnmarshalJSON(out); err != nil || again.Name != m.Name || again.RTT != m.RTT {
				t.Fatalf("%q wrote %s, which reads as %+v (%v)", b, out, again, err)
			}
		}
	})
}
