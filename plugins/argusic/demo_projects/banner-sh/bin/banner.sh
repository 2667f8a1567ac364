#!/usr/bin/env bash
# banner: print TEXT in 3x3 block letters into a file.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: banner.sh TEXT OUT.txt" >&2
  exit 2
fi
text=$1 out=$2
mkdir -p "$(dirname "$out")"
{
  for row in 1 2 3; do
    line=""
    for (( i = 0; i < ${#text}; i++ )); do
      c=${text:i:1}
      if [ "$row" -eq 2 ] && [ "$c" != " " ]; then line+="$c $c "; else line+="$c$c$c "; fi
    done
    echo "${line% }"
  done
} > "$out"
echo "banner: wrote $out"
