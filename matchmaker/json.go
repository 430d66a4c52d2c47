package matchmaker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Modes and Configs read and write JSON in the one schema of tongbu
// serve's config files: round trips in whole milliseconds ("rtt_ms": 80),
// the wait a duration ("timeout": "5m"); unknown keys are refused.

// modeJSON is Mode as JSON.
type modeJSON struct {
	Name             string          `json:"name"`
	Teams            int             `json:"teams"`
	TeamSize         int             `json:"team_size"`
	Skill            float64         `json:"skill,omitempty"`
	SkillWiden       float64         `json:"skill_widen,omitempty"`
	MaxSkill         float64         `json:"max_skill,omitempty"`
	Uncertainty      float64         `json:"uncertainty,omitempty"`
	UncertaintyWiden float64         `json:"uncertainty_widen,omitempty"`
	RTT              int64           `json:"rtt_ms,omitempty"`
	RTTWiden         int64           `json:"rtt_widen_ms,omitempty"`
	MaxRTT           int64           `json:"max_rtt_ms,omitempty"`
	Room             json.RawMessage `json:"room,omitempty"`
}

// MarshalJSON writes m with its round trips in milliseconds.
func (m Mode) MarshalJSON() ([]byte, error) {
	return json.Marshal(modeJSON{m.Name, m.Teams, m.TeamSize, m.Skill, m.SkillWiden, m.MaxSkill, m.Uncertainty, m.UncertaintyWiden,
		m.RTT.Milliseconds(), m.RTTWiden.Milliseconds(), m.MaxRTT.Milliseconds(), m.Room})
}

// UnmarshalJSON reads a mode as a config file writes it.
func (m *Mode) UnmarshalJSON(b []byte) error {
	var j modeJSON
	if err := strict(b, &j); err != nil {
		return fmt.Errorf("matchmaker: mode: %w", err)
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	*m = Mode{Name: j.Name, Teams: j.Teams, TeamSize: j.TeamSize, Skill: j.Skill, SkillWiden: j.SkillWiden, MaxSkill: j.MaxSkill,
		Uncertainty: j.Uncertainty, UncertaintyWiden: j.UncertaintyWiden, RTT: ms(j.RTT), RTTWiden: ms(j.RTTWiden), MaxRTT: ms(j.MaxRTT), Room: j.Room}
	return nil
}

// configJSON is Config as JSON.
type configJSON struct {
	Modes      []Mode `json:"modes"`
	Timeout    string `json:"timeout,omitempty"`
	FirstCome  bool   `json:"first_come,omitempty"`
	MaxScan    int    `json:"max_scan,omitempty"`
	MaxTickets int    `json:"max_tickets,omitempty"`
	Name       string `json:"name,omitempty"`
}

// MarshalJSON writes c with its timeout as a duration ("5m0s").
func (c Config) MarshalJSON() ([]byte, error) {
	j := configJSON{Modes: c.Modes, FirstCome: c.FirstCome, MaxScan: c.MaxScan, MaxTickets: c.MaxTickets, Name: c.Name}
	if c.Timeout != 0 {
		j.Timeout = c.Timeout.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a config as a config file writes it.
func (c *Config) UnmarshalJSON(b []byte) error {
	var j configJSON
	if err := strict(b, &j); err != nil {
		return fmt.Errorf("matchmaker: config: %w", err)
	}
	*c = Config{Modes: j.Modes, FirstCome: j.FirstCome, MaxScan: j.MaxScan, MaxTickets: j.MaxTickets, Name: j.Name}
	if j.Timeout != "" {
		d, err := time.ParseDuration(j.Timeout)
		if err != nil {
			return fmt.Errorf("matchmaker: config: timeout %q: %w", j.Timeout, err)
		}
		c.Timeout = d
	}
	return nil
}

// strict decodes b into v, refusing unknown keys and trailing data.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}
