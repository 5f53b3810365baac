#!/usr/bin/env bash
# Reports, for each adapter, the framework version its go.mod requires and the
# newest release on the Go module proxy, one line per framework module:
#
#   <module path> <required> <newest> <adapter dir> [behind]
#
# The proxy's version list (@v/list, @latest) can be stale, so the newest
# release is also found by asking for explicit versions: from the newest
# known one, the next minor (vX.Y+1.0 to vX.Y+1.3) and the next patch
# (vX.Y.Z+1) until neither exists. Major versions (/v2) are not probed. Exits 1 when an adapter is behind. Needs curl.
#
#   bash scripts/versions.sh
set -uo pipefail
cd "$(dirname "$0")/.."
proxy="${GOPROXY_URL:-https://proxy.golang.org}"

# adapter dir, framework module path: scripts/versions.txt
frameworks=$(grep -v '^#' scripts/versions.txt)

# The proxy escapes upper-case letters in module paths as !lower.
escape() { sed 's/[A-Z]/!\L&/g' <<<"$1"; }

exists() { # module version
  curl -fsS -m 20 -o /dev/null "$proxy/$(escape "$1")/@v/$2.info" 2>/dev/null
}

newest() { # module known-version
  local mod=$1 best=$2 list v
  list=$( { curl -fsS -m 20 "$proxy/$(escape "$mod")/@v/list" 2>/dev/null
            curl -fsS -m 20 "$proxy/$(escape "$mod")/@latest" 2>/dev/null | sed -n 's/.*"Version":"\([^"]*\)".*/\1/p'
            echo "$best"; } | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -1)
  best=${list:-$best}
  for _ in $(seq 100); do
    IFS=. read -r major minor patch <<<"${best#v}"
    v=""
    for p in 0 1 2 3; do # a minor release may start at a patch (v1.13.0 withdrawn, v1.13.1 out)
      if exists "$mod" "v$major.$((minor + 1)).$p"; then v="v$major.$((minor + 1)).$p"; break; fi
    done
    if [ -z "$v" ] && exists "$mod" "v$major.$minor.$((patch + 1))"; then
      v="v$major.$minor.$((patch + 1))"
    fi
    [ -z "$v" ] && break
    best=$v
  done
  echo "$best"
}

status=0
while read -r dir mod; do
  [ -z "$dir" ] && continue
  have=$(awk -v m="$mod" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$dir/go.mod")
  if [ -z "$have" ]; then
    echo "$mod ? ? $dir not-required"
    status=1
    continue
  fi
  top=$(newest "$mod" "$have")
  line="$mod $have $top $dir"
  if [ "$top" != "$have" ]; then
    line="$line behind"
    status=1
  fi
  echo "$line"
done <<<"$frameworks"
exit $status
