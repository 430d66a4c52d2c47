//go:build linux

package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/tongbu/tongbu/internal/netns"
)

// ErrNoFirefox is returned when no Firefox is installed.
var ErrNoFirefox = errors.New("browser: no firefox found (apt-get install firefox-esr)")

// FirefoxPath returns the Firefox executable (Debian's firefox-esr).
func FirefoxPath() (string, error) {
	for _, p := range []string{os.Getenv("TONGBU_FIREFOX"), "/usr/bin/firefox-esr", "/usr/bin/firefox"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNoFirefox
}

// firefoxPrefs keep a test's Firefox quiet on a closed network, and let
// WebRTC offer plain host addresses (no mDNS names, which the servers
// cannot resolve).
const firefoxPrefs = `
user_pref("media.peerconnection.ice.obfuscate_host_addresses", false);
user_pref("media.peerconnection.ice.loopback", true);
user_pref("media.navigator.permission.disabled", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("browser.aboutwelcome.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("datareporting.healthreport.uploadEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("app.update.enabled", false);
user_pref("app.update.auto", false);
user_pref("app.normandy.enabled", false);
user_pref("extensions.update.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("browser.safebrowsing.downloads.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("browser.newtabpage.enabled", false);
user_pref("dom.min_background_timeout_value", 4);
`

// Reporter returns a script for a test page opened in Firefox, which no
// driver reads: once the page sets window.tongbuResult, it posts it to
// /result on the page's own server, for the test to take, until a post
// goes through; then, when next is not empty, it opens next (the test's
// next page, in the same browser).
func Reporter(next string) string {
	return fmt.Sprintf(`<script>
(function report() {
  if (window.tongbuResult === undefined) {
    setTimeout(report, 100);
    return;
  }
  fetch("/result", {method: "POST", body: String(window.tongbuResult)})
    .then(r => {
      if (!r.ok) throw new Error(r.status);
      const next = %q;
      if (next) location.href = next;
    })
    .catch(() => setTimeout(report, 500)); // a lossy path: again
})();
</script>`, next)
}

// Firefox opens url in headless Firefox with a fresh profile, inside the
// network namespace ns (Firefox gathers no loopback candidate: a page
// that uses WebRTC needs a server on another address, such as ns.Host).
// No driver is used: the page reports what the test needs itself
// (Reporter). Stop ends Firefox and removes its profile.
func Firefox(ctx context.Context, ns *netns.NS, url string) (stop func(), err error) {
	exe, err := FirefoxPath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tongbu-firefox-")
	if err != nil {
		return nil, err
	}
	profile := filepath.Join(dir, "profile")
	if err := os.MkdirAll(profile, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{exe, "--headless", "--no-remote", "--profile", profile, url}
	if ns != nil {
		args = append([]string{"ip", "netns", "exec", ns.Name}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "MOZ_HEADLESS=1", "MOZ_CRASHREPORTER_DISABLE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its content processes go with it
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("browser: starting %s: %w", exe, err)
	}
	return func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		removeProfile(dir)
	}, nil
}
