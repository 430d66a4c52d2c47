#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
# Needs only Go; it installs anything else the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"

# Chromium and Firefox ESR for the browser tests; iproute2 and nftables
# for the tests that put a browser on a network of its own (a namespace
# whose firewall drops UDP, say; Firefox gathers no loopback candidate).
need=()
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then need+=(chromium); fi
[ -x /usr/bin/firefox-esr ] || need+=(firefox-esr)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || need+=(iproute2)
command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || need+=(nftables)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]} for the browser tests"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin:/sbin"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard -- '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

# The library is the root module; the examples (with the demo), the
# benchmarks and the tests against outside programs (Chromium, a NATS
# server) are modules of their own, tied together by go.work. The pattern
# below names the packages of all four.
all=github.com/tongbu/tongbu/...

echo "== go vet (host and js/wasm)"
go vet "$all"
GOOS=js GOARCH=wasm go vet "$all"

echo "== the library's go.mod carries only what a game server needs"
(cd . && GOWORK=off GOFLAGS=-mod=mod go mod tidy -diff) || { echo "go.mod is not tidy: run go mod tidy"; exit 1; }

echo "== every benchmark, one iteration (so none rots)"
log=$(mktemp)
if ! go test -run '^$' -bench . -benchtime 1x "$all" >"$log" 2>&1; then
  cat "$log"; exit 1
fi
rm -f "$log"

# The browser tests build their WASM clients; compiled here once, with the
# flags they use, they only link them from the build cache, instead of
# several test binaries compiling Ebiten at the same time.
echo "== the browser clients, compiled once"
GOOS=js GOARCH=wasm go build -trimpath \
  github.com/tongbu/tongbu/examples/arena/web github.com/tongbu/tongbu/examples/mmo/web \
  github.com/tongbu/tongbu/examples/duel/web github.com/tongbu/tongbu/examples/worlds/web \
  github.com/tongbu/tongbu/wasm/jsclient
GOOS=js GOARCH=wasm go build -o /dev/null github.com/tongbu/tongbu/transport/internal/wasmecho

echo "== tests, shuffled, with the race detector"
go test -race -shuffle=on -count=1 "$all"
