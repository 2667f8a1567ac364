#!/usr/bin/env bash
# Vendor asciinema-player (npm) for `argusic report`: its standalone bundle, stylesheet and licence,
# which the attempt page inlines so that it opens from a file:// URL with no network.
#
# `npm pack` fetches the pinned tarball into build/npm/ (ignored by git); its integrity must be the
# pinned one (npm checks the registry's, we check ours: a re-published tarball is refused). The three
# files and a VERSION file are copied into plugins/argusic/vendor/asciinema-player/ (ignored by git;
# ARGUSIC_PLAYER_ASSETS moves it). Does nothing when that version is there already.
set -euo pipefail

VERSION=3.18.0
INTEGRITY="sha512-5gpt2ipFcy4NKmgkv+c/QXnJ9zMicxqWROCOuJqgwwtiYKM8Qe9hnDOvfqke5bW6M2DW/seO3uQYkQ0xeUUVtw=="

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${ARGUSIC_PLAYER_ASSETS:-$ROOT/plugins/argusic/vendor/asciinema-player}"
WORK="$ROOT/build/npm"
FILES=(asciinema-player.min.js asciinema-player.css LICENSE)

present() {
  [ "$(cat "$DEST/VERSION" 2>/dev/null)" = "$VERSION" ] || return 1
  for f in "${FILES[@]}"; do [ -s "$DEST/$f" ] || return 1; done
}
present && exit 0

if ! command -v npm >/dev/null; then
  echo "vendor_player: installing Debian's npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
fi

rm -rf "$WORK" && mkdir -p "$WORK"
(cd "$WORK" && npm pack --silent --json "asciinema-player@$VERSION" >pack.json)
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["integrity"])' "$WORK/pack.json")
if [ "$got" != "$INTEGRITY" ]; then
  echo "vendor_player: asciinema-player@$VERSION has integrity $got, not the pinned $INTEGRITY: refused" >&2
  exit 1
fi
mkdir -p "$WORK/extract"
tar -xzf "$WORK/asciinema-player-$VERSION.tgz" -C "$WORK/extract" --no-same-owner --no-same-permissions

staged="$DEST.partial"
rm -rf "$staged" && mkdir -p "$staged"
cp "$WORK/extract/package/dist/bundle/asciinema-player.min.js" "$staged/"
cp "$WORK/extract/package/dist/bundle/asciinema-player.css" "$staged/"
cp "$WORK/extract/package/LICENSE" "$staged/"
echo "$VERSION" >"$staged/VERSION"
rm -rf "$DEST" && mv "$staged" "$DEST"
echo "vendor_player: asciinema-player $VERSION (Apache-2.0) in $DEST" >&2
