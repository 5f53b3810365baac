#!/usr/bin/env bash
# Reports, for each adapter, the framework version its go.mod requires and the
# newest release on the Go module proxy, one line per framework module:
#
#   <module path> <required> <newest> <adapter dir> [behind | held: <reason>]
#
# where <newest> is a version of the same path, or <path>@<version> when a
# later major version path (/v2, /v3, ...) has a release.
#
# The proxy's version list (@v/list, @latest) can be stale or refused, so the
# newest release is also found by asking for explicit versions: from the
# newest known one, the next minor (vX.Y+1.0 to vX.Y+1.3) and the next patch
# (vX.Y.Z+1) until neither exists; then the next major path (the path with
# /vN+1 in place of its /vN suffix, or /v2 added) from vN+1.0.0, and so on.
# A version counts only when the proxy serves its source archive (some
# versions are listed with an .info but their .zip is refused). Exits 1 when
# an adapter is behind, unless scripts/versions.txt holds that pin back with a
# reason (a third column). Needs curl.
#
#   bash scripts/versions.sh
set -uo pipefail
cd "$(dirname "$0")/.."
proxy="${GOPROXY_URL:-https://proxy.golang.org}"

# adapter dir, framework module path: scripts/versions.txt
frameworks=$(grep -v '^#' scripts/versions.txt)

# The proxy escapes upper-case letters in module paths as !lower.
escape() { sed 's/[A-Z]/!\L&/g' <<<"$1"; }

exists() { # module version: the proxy serves the version's source archive
  curl -fsS -I -m 20 -o /dev/null "$proxy/$(escape "$1")/@v/$2.zip" 2>/dev/null
}

# the listed release versions of a module, newest last, served ones only
listed() { # module
  { curl -fsS -m 20 "$proxy/$(escape "$1")/@v/list" 2>/dev/null
    curl -fsS -m 20 "$proxy/$(escape "$1")/@latest" 2>/dev/null | sed -n 's/.*"Version":"\([^"]*\)".*/\1/p'
  } | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | sort -uV | tac | while read -r v; do
    if exists "$1" "$v"; then echo "$v"; break; fi
  done
}

# the path of the next major version of a module path
next_major() { # module
  if [[ "$1" =~ ^(.*)/v([0-9]+)$ ]]; then
    echo "${BASH_REMATCH[1]}/v$((BASH_REMATCH[2] + 1))"
  else
    echo "$1/v2"
  fi
}

# the major version a module path's releases have
major_of() { # module
  if [[ "$1" =~ /v([0-9]+)$ ]]; then echo "${BASH_REMATCH[1]}"; else echo 1; fi
}

# the first served release of a major version path: vN.0.0 to vN.0.3,
# vN.1.0, or what its list names
first_of_major() { # module
  local mod=$1 n v
  n=$(major_of "$mod")
  v=$(listed "$mod")
  if [ -n "$v" ]; then echo "$v"; return; fi
  for v in "v$n.0.0" "v$n.0.1" "v$n.0.2" "v$n.0.3" "v$n.1.0"; do
    if exists "$mod" "$v"; then echo "$v"; return; fi
  done
}

newest() { # module known-version
  local mod=$1 best=$2 list v
  list=$( { listed "$mod"; echo "$best"; } | sort -V | tail -1)
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

# the newest release of a module across its major version paths, as
# "version" (same path) or "path@version" (a later major path)
newest_any() { # module known-version
  local mod=$1 top next first
  top=$(newest "$mod" "$2")
  next=$(next_major "$mod")
  for _ in $(seq 20); do
    first=$(first_of_major "$next")
    [ -z "$first" ] && break
    mod=$next
    top="$next@$(newest "$next" "$first")"
    next=$(next_major "$next")
  done
  echo "$top"
}

status=0
while read -r dir mod hold; do
  [ -z "$dir" ] && continue
  have=$(awk -v m="$mod" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$dir/go.mod")
  if [ -z "$have" ]; then
    echo "$mod ? ? $dir not-required"
    status=1
    continue
  fi
  top=$(newest_any "$mod" "$have")
  line="$mod $have $top $dir"
  if [ "$top" != "$have" ] && [ -n "$hold" ]; then
    line="$line held: $hold"
  elif [ "$top" != "$have" ]; then
    line="$line behind"
    status=1
  fi
  echo "$line"
done <<<"$frameworks"
exit $status
