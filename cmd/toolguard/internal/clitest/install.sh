#!/usr/bin/env bash
# Installs the agent CLIs that the end-to-end hook tests of this package run,
# at pinned versions, into DIR (default: $TOOLGUARD_CLITEST_DIR, else
# toolguard/clitest under the user's cache folder, as the tests look):
#
#   DIR/node_modules      npm install of package.json + package-lock.json here
#                         (Claude Code, Codex, Gemini CLI, Copilot CLI,
#                         opencode, Cline)
#   DIR/opencode-config   @opencode-ai/plugin as opencode installs it in its
#                         config folder (opencode-config/); the
#                         tests copy it, so opencode does not spend minutes
#                         installing it at every start
#   DIR/bin/mcphost       github.com/mark3labs/mcphost v0.34.0, built from
#                         the Go module proxy in a throwaway module (its
#                         last release; `go install pkg@version` is refused)
#
# Each part is redone only when its pins change (a stamp file records
# them), so a second run takes a second. The npm and Go parts run side by
# side. (npm install, not npm ci: the lock names the CLIs' native packages
# for every platform, and npm ci refuses a lock whose other-platform
# packages the registry here does not serve.)
#
#   bash cmd/toolguard/internal/clitest/install.sh [DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
dir=${1:-${TOOLGUARD_CLITEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolguard/clitest}}
mcphost_version=v0.34.0
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stamp() { sha256sum "$@" | sha256sum | cut -c1-16; }

npm_part() {
  local want
  want=$(stamp "$src/package-lock.json")
  if [ "$(cat "$dir/.npm-stamp" 2>/dev/null)" != "$want" ] || [ ! -d "$dir/node_modules" ]; then
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
    echo "$want" > "$dir/.npm-stamp"
  fi
  want=$(stamp "$src/opencode-config/package-lock.json")
  if [ "$(cat "$dir/.opencode-stamp" 2>/dev/null)" != "$want" ] || [ ! -d "$dir/opencode-config/node_modules" ]; then
    rm -rf "$dir/opencode-config"
    mkdir -p "$dir/opencode-config"
    cp "$src/opencode-config/package.json" "$src/opencode-config/package-lock.json" "$dir/opencode-config/"
    (cd "$dir/opencode-config" && npm install --no-audit --no-fund --loglevel=error)
    echo "$want" > "$dir/.opencode-stamp"
  fi
}

go_part() {
  if [ "$(cat "$dir/.mcphost-stamp" 2>/dev/null)" = "$mcphost_version" ] && [ -x "$dir/bin/mcphost" ]; then
    return
  fi
  local mod="$dir/mcphost-build"
  rm -rf "$mod"
  mkdir -p "$mod"
  (
    cd "$mod"
    export GOWORK=off GOFLAGS=-mod=mod
    go mod init toolguard-clitest-mcphost >/dev/null 2>&1
    go get "github.com/mark3labs/mcphost@$mcphost_version" 2>&1 | grep -v '^go: added' || true
    GOBIN="$dir/bin" go install github.com/mark3labs/mcphost
  )
  rm -rf "$mod"
  echo "$mcphost_version" > "$dir/.mcphost-stamp"
}

start=$(date +%s)
go_part > "$dir/.mcphost-build.log" 2>&1 &
go_pid=$!
npm_part
if ! wait "$go_pid"; then
  cat "$dir/.mcphost-build.log" >&2
  echo "install.sh: building mcphost failed" >&2
  exit 1
fi
"$dir/bin/mcphost" --version >/dev/null
for bin in claude codex gemini copilot opencode cline; do
  [ -x "$dir/node_modules/.bin/$bin" ] || { echo "install.sh: $bin is missing" >&2; exit 1; }
done
echo "agent CLIs in $dir ($(( $(date +%s) - start )) s)"
