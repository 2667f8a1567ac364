#!/usr/bin/env bash
# tonegen: write a square-wave tone as an 8-bit mono PCM WAV file, in plain bash.
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: tonegen.sh FREQ_HZ SECONDS OUT.wav" >&2
  exit 2
fi
freq=$1 secs=$2 out=$3
rate=8000
n=$(( rate * secs ))
half=$(( rate / (2 * freq) ))
(( half >= 1 )) || half=1

byte() { printf "\\x$(printf %02x $(( $1 & 255 )))"; }
le16() { byte "$1"; byte $(( $1 >> 8 )); }
le32() { le16 $(( $1 & 65535 )); le16 $(( ($1 >> 16) & 65535 )); }

period=""
for (( i = 0; i < half; i++ )); do period+='\xc0'; done
for (( i = 0; i < half; i++ )); do period+='\x40'; done
plen=$(( 2 * half ))

mkdir -p "$(dirname "$out")"
{
  printf 'RIFF'; le32 $(( 36 + n )); printf 'WAVE'
  printf 'fmt '; le32 16; le16 1; le16 1; le32 "$rate"; le32 "$rate"; le16 1; le16 8
  printf 'data'; le32 "$n"
  for (( i = 0; i < n / plen; i++ )); do printf "$period"; done
  for (( i = 0; i < n % plen; i++ )); do
    if (( i < half )); then printf '\xc0'; else printf '\x40'; fi
  done
} > "$out"
echo "tonegen: wrote $out ($n samples, $(( rate / plen )) Hz square wave at $rate Hz)"
