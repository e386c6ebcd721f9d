#!/usr/bin/env bash
# Refreshes registry/registry.json, the copy of the ACP agent registry that
# `:Acp agents` falls back to when it is offline and has no cached copy.
# Run it before a release; it needs the network (curl).
set -euo pipefail
cd "$(dirname "$0")/.."
url="${1:-https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json}"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
curl --fail --silent --show-error --location --max-time 60 "$url" -o "$tmp"
# Only a document with an `agents` list replaces the snapshot.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d.get("agents"), list), "no agents list"; print(len(d["agents"]), "agents")' "$tmp"
mv "$tmp" registry/registry.json
trap - EXIT
echo "registry/registry.json updated from $url"
