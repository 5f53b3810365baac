#!/usr/bin/env bash
# The release check: publishes the repository as a stranger meets it and
# uses every module from there.
#
#  1. clones the repository (its committed HEAD) and tags it for the version
#     the nested modules require, with the documented scheme
#     (scripts/release.sh tag: vX.Y.Z for the root, <folder>/vX.Y.Z for each
#     nested module), into a bare git repository in a temporary folder;
#  2. points https://github.com/toolguard/toolguard at that repository (a git
#     url.insteadOf in a private git config; GOPRIVATE so the go command asks
#     git, not the module proxy; git may use only file://), so no toolguard
#     module comes from the network;
#  3. with an empty module cache, for every module of the repository (found
#     by scripts/release.sh, so new modules are covered): in an empty folder,
#     `go mod init`, `go get module@version`, and builds a program importing
#     every public package of the module, and every package of the module
#     (its examples among them);
#  4. `go install`s the CLI at the version and at @latest and runs it; builds
#     the CLI's release binary for this machine (scripts/release.sh
#     build-cli, with the release toolchain) in the clone, checks that it
#     names that toolchain and that it writes the HTML report;
#  5. runs the README's first command, and the core's quickstart at the
#     version, with the Go version the root go.mod states as the minimum.
#
# Third-party modules come from the module proxy (GOPROXY, after the local
# module cache's download folder when there is one).
#
#   bash scripts/release-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
repo=github.com/toolguard/toolguard

step() { printf '\n--- %s\n' "$*"; }

version=$(bash scripts/release.sh version)
[ -n "$version" ] || { echo "no nested module requires an in-repository module" >&2; exit 1; }
if ! git diff --quiet HEAD --; then
  echo "note: the working tree differs from HEAD; the check publishes HEAD" >&2
fi

work=$(mktemp -d)
cleanup() {
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step "publish $(git rev-parse --short HEAD) as $version"
git clone -q --no-local "$root" "$work/src"
(cd "$work/src" && GIT_COMMITTER_NAME=release-check GIT_COMMITTER_EMAIL=release-check@toolguard.invalid \
  GIT_CONFIG_PARAMETERS="'tag.gpgSign=false'" bash scripts/release.sh tag "$version" | sed 's/^/  /')
git clone -q --bare "$work/src" "$work/remote/toolguard.git"
git -C "$work/src" push -q --tags "$work/remote/toolguard.git"
echo "  $(git -C "$work/remote/toolguard.git" tag | wc -l) tags in $work/remote/toolguard.git"

# The stranger: an empty module cache and home, the tags on "github.com".
dev_cache=$(go env GOMODCACHE)/cache/download
mkdir -p "$work/home" "$work/bin"
cat > "$work/gitconfig" <<EOF
[url "file://$work/remote/toolguard.git"]
	insteadOf = https://$repo
EOF
proxy=$(go env GOPROXY)
[ -d "$dev_cache" ] && proxy="file://$dev_cache,$proxy"
stranger=(env -u GOFLAGS -u GOWORK
  HOME="$work/home" GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_CONFIG_NOSYSTEM=1
  GIT_ALLOW_PROTOCOL=file GOPRIVATE=$repo GOPROXY="$proxy" GOWORK=off
  GOMODCACHE="$work/modcache" GOFLAGS="-modcacherw -trimpath" GOBIN="$work/bin" GOTOOLCHAIN=local)

modules=$(bash scripts/release.sh modules | awk '{ print $1 " " $2 }')
failed=0
results=()
while read -r dir path; do
  name=$(echo "$dir" | tr / _)
  app="$work/use/$name"
  mkdir -p "$app"
  log="$work/use/$name.log"
  start=$SECONDS
  if (
    cd "$app"
    "${stranger[@]}" go mod init example.com/stranger
    "${stranger[@]}" go get "$path@$version"
    # every public package of the module, imported by one program
    pkgs=$("${stranger[@]}" go list -f '{{if and (ne .Name "main") (not .Incomplete)}}{{.ImportPath}}{{end}}' "$path/..." |
      grep -v -e '/internal/' -e '/internal$' || true)
    {
      echo "package main"
      echo
      echo "import ("
      for p in $pkgs; do echo "	_ \"$p\""; done
      echo ")"
      echo
      echo "func main() {}"
    } > main.go
    "${stranger[@]}" go mod tidy
    "${stranger[@]}" go build -o /dev/null .
    # and every package of the module, its commands and examples among them
    "${stranger[@]}" go build "$path/..."
    "${stranger[@]}" go vet .
    echo "packages: $(echo "$pkgs" | grep -c . || true) imported"
  ) > "$log" 2>&1; then
    results+=("ok    $path@$version ($(tail -1 "$log"), $((SECONDS - start)) s)")
  else
    results+=("FAIL  $path@$version (log below)")
    failed=1
    sed 's/^/      /' "$log" | tail -40
  fi
done <<< "$modules"
step "go get and build, each module in an empty folder, clean module cache"
printf '  %s\n' "${results[@]}"

step "go install the CLI"
for at in "$version" latest; do
  (cd "$work" && "${stranger[@]}" go install "$repo/cmd/toolguard@$at" > "$work/install.log" 2>&1) || {
    echo "  FAIL go install $repo/cmd/toolguard@$at"; cat "$work/install.log"; failed=1; continue; }
  echo "  ok    go install $repo/cmd/toolguard@$at"
done
if [ -x "$work/bin/toolguard" ]; then
  if "$work/bin/toolguard" audit "$root"/testdata/traces/*.jsonl > "$work/audit.out" 2>&1; then
    echo "  ok    toolguard audit testdata/traces/*.jsonl: $(wc -l < "$work/audit.out") lines"
  else
    echo "  FAIL  toolguard audit"; tail -20 "$work/audit.out"; failed=1
  fi
fi

step "the release binary with the release toolchain"
toolchain=$(bash scripts/release.sh toolchain)
# the toolchain comes from the module proxy (or the local module cache)
if (cd "$work/src" && GOPROXY="$proxy" GOFLAGS=-modcacherw bash scripts/release.sh build-cli "$work/dist" "$(go env GOHOSTOS)/$(go env GOHOSTARCH)") > "$work/dist.log" 2> "$work/dist.err"; then
  host="$work/dist/toolguard-$(go env GOHOSTOS)-$(go env GOHOSTARCH)"
  if ! grep -q ": $toolchain\$" "$work/dist.log" || grep -v ": $toolchain\$" "$work/dist.log" | grep -q .; then
    echo "  FAIL  not every binary was built with $toolchain:"; sed 's/^/      /' "$work/dist.log"; failed=1
  elif "$host" audit --format html "$root"/testdata/traces/*.jsonl > "$work/report.html" 2> "$work/report.err"; then
    echo "  ok    $(basename "$host") built with $toolchain writes the HTML report ($(wc -c < "$work/report.html") bytes)"
  else
    echo "  FAIL  $host audit --format html"; tail -20 "$work/report.err"; failed=1
  fi
else
  echo "  FAIL  scripts/release.sh build-cli"; tail -20 "$work/dist.err"; failed=1
fi

step "the core with the minimum Go version"
min=$(awk '$1 == "go" { print $2; exit }' go.mod)
[[ "$min" =~ ^[0-9]+\.[0-9]+$ ]] && min="$min.0"
# the toolchain comes from the module proxy (or the local module cache)
oldgo=(env GOTOOLCHAIN="go$min" GOFLAGS=-modcacherw GOPROXY="$proxy")
if (cd "$work/src" && "${oldgo[@]}" GOWORK=off go run ./examples/quickstart > "$work/qs.out" 2>&1); then
  echo "  ok    GOWORK=off go run ./examples/quickstart with go$min, in the clone: $(wc -l < "$work/qs.out") lines"
else
  echo "  FAIL  quickstart with go$min"; tail -20 "$work/qs.out"; failed=1
fi
if (cd "$work" && "${stranger[@]}" GOTOOLCHAIN="go$min" go run "$repo/examples/quickstart@$version" > "$work/qs2.out" 2>&1); then
  echo "  ok    go run $repo/examples/quickstart@$version with go$min, outside any module"
else
  echo "  FAIL  go run quickstart@$version with go$min"; tail -20 "$work/qs2.out"; failed=1
fi

if [ $failed -ne 0 ]; then
  echo; echo "release check FAILED"; exit 1
fi
echo; echo "release check passed: $(echo "$modules" | wc -l) modules at $version"
