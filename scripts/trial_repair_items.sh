#!/usr/bin/env bash
# Repair items from real repositories no one here prepared (toolz, tomli, six) and from the demo
# forge's repairkit: build the items, validate the grader on them (gold ×3, empty, partial gold), then
# grade predictions (gold, empty and deliberately broken patches) and print a table of items,
# validation results and verdicts. Exit status 1 when a verdict differs from the one expected.
#
#   scripts/trial_repair_items.sh [WORK_DIR]       (default runs/repair-trial; emptied first)
#
# Repositories: tomli from its committed bundle (tests/fixtures/repair_real/tomli.bundle); toolz and
# six from local mirrors, TOOLZ_REPO and SIX_REPO (default: the /work/.mirror copies; a project whose
# mirror is missing is skipped, and said so). Needs Docker and the grader image (make grader-image).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${ARGUSIC_BIN:-$ROOT/.venv/bin}
WORK=${1:-$ROOT/runs/repair-trial}
TOOLZ_REPO=${TOOLZ_REPO:-/work/.mirror/pytoolz+toolz/repo}
SIX_REPO=${SIX_REPO:-/work/.mirror/benjaminp+six/repo}
REAL=$ROOT/tests/fixtures/repair_real

rm -rf "$WORK"
mkdir -p "$WORK/repos"
export ARGUSIC_ITEMS_DIR=$WORK/items ARGUSIC_GRADES_DIR=$WORK/grades

echo "== $(date -u +%FT%TZ) on $(hostname), commit $(git rev-parse --short HEAD); grader image" \
  "$(docker image inspect --format '{{.Id}}' "${ARGUSIC_GRADER_IMAGE:-argusic-grader:bookworm}" | cut -c1-19)"

git clone -q --bare "$REAL/tomli.bundle" "$WORK/repos/tomli.git"
"$BIN/python" -c "from pathlib import Path; from argusic.sources.forge import build_repair_forge; build_repair_forge(Path('$WORK/forge'))"
declare -A MANIFEST=(
  [repairkit]=$ROOT/plugins/argusic/repair/manifests/repairkit.toml
  [tomli]=$REAL/tomli.toml [toolz]=$REAL/toolz.toml [six]=$REAL/six.toml
)
declare -A REPO=([repairkit]=$WORK/forge/repos/repairkit.git [tomli]=$WORK/repos/tomli.git)
for name in toolz six; do
  var=${name^^}_REPO
  if git --git-dir="${!var}" rev-parse -q --verify HEAD >/dev/null 2>&1; then
    REPO[$name]=${!var}
  else
    echo "skipped $name: no git repository at ${!var} (set $var)"
  fi
done

map="{"
for name in repairkit tomli toolz six; do
  [ -n "${REPO[$name]:-}" ] || continue
  echo
  echo "\$ argusic items build --manifest ${MANIFEST[$name]#"$ROOT"/} --repository ${REPO[$name]}"
  "$BIN/argusic" items build --manifest "${MANIFEST[$name]}" --repository "${REPO[$name]}" --out "$ARGUSIC_ITEMS_DIR"
  map+="\"$name\": \"${REPO[$name]}\","
done
map="${map%,}}"

echo
echo "\$ argusic items validate"
"$BIN/argusic" items validate --out "$ARGUSIC_ITEMS_DIR" || echo "(some item is not usable: see the table)"

"$BIN/python" scripts/trial_repair_items.py predictions "$ARGUSIC_ITEMS_DIR" "$map" "$WORK/predictions.jsonl"
echo
echo "\$ argusic grade --predictions $WORK/predictions.jsonl"
"$BIN/argusic" grade --predictions "$WORK/predictions.jsonl" --items "$ARGUSIC_ITEMS_DIR" --out "$ARGUSIC_GRADES_DIR"

"$BIN/python" scripts/trial_repair_items.py table "$ARGUSIC_ITEMS_DIR" "$ARGUSIC_GRADES_DIR" "$WORK/predictions.jsonl"
