//go:build !js

package main

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/tongbu/tongbu/matchmaker"
)

// Account errors, which the lobby turns into HTTP statuses.
var (
	errTaken    = errors.New("that name is taken")
	errLogin    = errors.New("wrong name or password")
	errBadName  = errors.New("a name is 2 to 16 letters, digits, '-' or '_'")
	errPassword = errors.New("a password is 8 to 128 bytes")
)

// account is one player's record: what a game keeps in its database.
// This tutorial keeps them in one JSON file; a game swaps the file for
// its database and keeps the rest.
type account struct {
	Salt   []byte            `json:"salt"`
	Hash   []byte            `json:"hash"`   // PBKDF2-SHA256 of the password
	Rounds int               `json:"rounds"` // PBKDF2's, when the hash was made
	Rating matchmaker.Rating `json:"rating"`
	Wins   int               `json:"wins"`
	Losses int               `json:"losses"`
}

// accounts holds every account, written to its file after each change.
type accounts struct {
	mu     sync.Mutex
	path   string
	rounds int // PBKDF2's for new passwords
	byID   map[string]*account
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{2,16}$`)

// pbkdf2Rounds is OWASP's figure for PBKDF2-HMAC-SHA256 (2023).
const pbkdf2Rounds = 600_000

// openAccounts reads the accounts file at path; a missing file is an
// empty set of accounts. New passwords are hashed with rounds of PBKDF2
// (0: pbkdf2Rounds); each account keeps its own, so that raising them
// later keeps old passwords valid.
func openAccounts(path string, rounds int) (*accounts, error) {
	if rounds == 0 {
		rounds = pbkdf2Rounds
	}
	a := &accounts{path: path, rounds: rounds, byID: map[string]*account{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return a, nil
	case err != nil:
		return nil, err
	}
	if err := json.Unmarshal(b, &a.byID); err != nil {
		return nil, fmt.Errorf("accounts %s: %w", path, err)
	}
	return a, nil
}

// signUp creates the account name, rated as a new player.
func (a *accounts) signUp(name, password string) error {
	if !validName.MatchString(name) {
		return errBadName
	}
	if len(password) < 8 || len(password) > 128 {
		return errPassword
	}
	salt := make([]byte, 16)
	rand.Read(salt)
	hash, err := pbkdf2.Key(sha256.New, password, salt, a.rounds, 32)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID[name] != nil {
		return errTaken
	}
	a.byID[name] = &account{Salt: salt, Hash: hash, Rounds: a.rounds, Rating: matchmaker.NewRating()}
	return a.save()
}

// logIn checks name's password.
func (a *accounts) logIn(name, password string) error {
	a.mu.Lock()
	acc := a.byID[name]
	a.mu.Unlock()
	if acc == nil {
		// The same work as a real check, so that a name's existence
		// cannot be timed.
		pbkdf2.Key(sha256.New, password, make([]byte, 16), a.rounds, 32)
		return errLogin
	}
	hash, err := pbkdf2.Key(sha256.New, password, acc.Salt, acc.Rounds, 32)
	if err != nil || !hmac.Equal(hash, acc.Hash) {
		return errLogin
	}
	return nil
}

// get returns a copy of name's account.
func (a *accounts) get(name string) (account, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc := a.byID[name]
	if acc == nil {
		return account{}, false
	}
	return *acc, true
}

// TUTORIAL:store
// rate stores a match's result: the players' new ratings and their
// records, from a match's teams (as matchmaker.Match.Teams lists them)
// and the winning team (-1: a draw).
func (a *accounts) rate(teams [][]matchmaker.Player, winner int) error {
	ranks := make([]int, len(teams)) // the winner's place 0, everyone else's 1
	for i := range ranks {
		if winner >= 0 && i != winner {
			ranks[i] = 1
		}
	}
	rated, err := matchmaker.RateMatch(teams, ranks)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for team, players := range rated {
		for _, p := range players {
			acc := a.byID[p.ID]
			if acc == nil {
				continue // the account was deleted meanwhile
			}
			acc.Rating = p.Rating
			switch {
			case team == winner:
				acc.Wins++
			case winner >= 0:
				acc.Losses++
			}
		}
	}
	return a.save()
}

// TUTORIAL:end

// save writes every account to the file, atomically: a crash leaves the
// old file or the new one, never half of one. a.mu is held.
func (a *accounts) save() error {
	b, err := json.MarshalIndent(a.byID, "", "\t")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(a.path), ".accounts-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), a.path)
}

// sessions are the lobby's logins: a random token per logged-in player.
type sessions struct {
	mu     sync.Mutex
	player map[string]string // by token
}

// open returns a new session token for player.
func (s *sessions) open(player string) string {
	b := make([]byte, 24)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.player == nil {
		s.player = map[string]string{}
	}
	s.player[tok] = player
	return tok
}

// who returns the player of token.
func (s *sessions) who(token string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.player[token]
	return p, ok
}
