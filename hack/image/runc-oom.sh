#!/usr/bin/env bash
# runc for the test node's containerd (tests/image/realnode.py): the kubelet gives every pod
# sandbox oom_score_adj -998, and lowering it needs CAP_SYS_RESOURCE, which this machine's processes
# lack (runc then fails with "can't get final child's PID from pipe: EOF"). A negative
# process.oomScoreAdj in the bundle's config.json is raised to 0; everything else is runc's.
set -euo pipefail
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ ${args[i]} == --bundle || ${args[i]} == -b ]] && [[ -f ${args[i + 1]}/config.json ]]; then
    python3 - "${args[i + 1]}/config.json" <<'PY'
import json
import sys

path = sys.argv[1]
with open(path) as stream:
    spec = json.load(stream)
process = spec.get("process") or {}
if process.get("oomScoreAdj", 0) < 0:
    process["oomScoreAdj"] = 0
    with open(path, "w") as stream:
        json.dump(spec, stream)
PY
  fi
done
exec "$(command -v runc || echo /usr/sbin/runc)" "$@"
