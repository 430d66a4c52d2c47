//go:build !js

package bots

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// Child is a scenario's bots' process: this executable started as the
// bots, its tickets written to its stdin. It prints READY once every bot
// has joined and a DONE line when told to stop; the rest of its output
// goes to stderr.
type Child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan error
	ready  chan struct{}
	done   chan string
}

// StartChild starts the bots' process with args and writes input to its
// stdin.
func StartChild(args []string, input string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &Child{cmd: exec.Command(exe, args...), exited: make(chan error, 1), ready: make(chan struct{}), done: make(chan string, 1)}
	c.cmd.Env = append(os.Environ(), harness.BotsEnv+"=1")
	c.cmd.Stderr = os.Stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "READY":
				close(c.ready)
			case strings.HasPrefix(line, "DONE "):
				c.done <- line
			default:
				fmt.Fprintln(os.Stderr, line)
			}
		}
		c.exited <- c.cmd.Wait()
	}()
	go func() { io.WriteString(c.stdin, input) }()
	return c, nil
}

// Launch starts the bots' process with args and tickets (StartChild),
// with "-cpuprofile profile.bots" when profile is set (the bots' profile
// beside the server's), and waits for its players to join: up to two
// minutes and 100 ms a player, on a loaded machine. It returns the
// process and how long the joining took.
func Launch(args []string, tickets string, players int, profile string) (*Child, time.Duration, error) {
	if profile != "" {
		args = append(args, "-cpuprofile", profile+".bots")
	}
	t0 := time.Now()
	child, err := StartChild(args, tickets)
	if err != nil {
		return nil, 0, err
	}
	if err := child.WaitReady(2*time.Minute + time.Duration(players)*100*time.Millisecond); err != nil {
		return nil, 0, err
	}
	return child, time.Since(t0), nil
}

// WaitReady waits up to limit for every bot to join; past it the process
// is killed.
func (c *Child) WaitReady(limit time.Duration) error {
	select {
	case <-c.ready:
		return nil
	case err := <-c.exited:
		return fmt.Errorf("bots exited before joining: %v", err)
	case <-time.After(limit):
		c.Kill()
		return fmt.Errorf("bots did not join within %v", limit)
	}
}

// Say writes line to the bots' stdin: a scenario's mark in its
// window (the battle's MEASURE).
func (c *Child) Say(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// Stop writes s (the scenario's closing lines) to the bots' stdin and
// waits up to two minutes for their DONE line and their exit.
func (c *Child) Stop(s string) (string, error) {
	if _, err := io.WriteString(c.stdin, s); err != nil {
		c.Kill()
		return "", fmt.Errorf("telling the bots to stop: %w", err)
	}
	var line string
	select {
	case line = <-c.done:
	case err := <-c.exited:
		return "", fmt.Errorf("bots exited without a result: %v", err)
	case <-time.After(2 * time.Minute):
		c.Kill()
		return "", errors.New("bots did not finish")
	}
	if err := <-c.exited; err != nil {
		return line, fmt.Errorf("bots: %w", err)
	}
	return line, nil
}

// Kill ends the process and waits for it.
func (c *Child) Kill() {
	c.cmd.Process.Kill()
	<-c.exited
}

// PinApart puts this process, the server's, on one CPU and the bots'
// process on another when the shape pins, for the rest of the run, and
// returns what undoes it and whether it pinned; where pinning is not
// possible it does nothing. Call it once the bots have joined: a
// handshake costs both sides more than play does, and 4000 of them at
// once would not fit a CPU each. (Go reads the CPUs it may use again as
// it runs: the bots' process then runs its goroutines on one thread.)
// With Spill the bots' process has the server's CPU too, at SCHED_IDLE.
func (s Shape) PinApart(child *Child) (undo func(), pinned bool, err error) {
	server, bots, ok := twoCPUs()
	if !s.Pin || !ok {
		return func() {}, false, nil
	}
	undo, err = pinApart(server, bots, child.cmd.Process.Pid, s.Spill)
	return undo, err == nil, err
}
