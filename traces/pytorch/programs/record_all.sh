#!/usr/bin/env bash
# Records every program in this folder with cgtrace, one process each, into
# DIR (default: examples/recorded of this repo), and prints each trace's
# summary. Needs a CUDA GPU and PyTorch 2.11.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../../examples/recorded}
mkdir -p "$out"
export PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}"
status=0
for p in seed_checkpoint seed_liveness inference_kv train_mlp; do
  echo "== $p"
  if ! python3 -m cgtrace run -o "$out/$p.cgt.jsonl" --name "recorded: $p.py" "$here/$p.py"; then
    echo "!! $p failed" >&2
    status=1
  fi
  [ -f "$out/$p.cgt.jsonl" ] && python3 -m cgtrace summary "$out/$p.cgt.jsonl"
done
exit $status
