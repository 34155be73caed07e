#!/usr/bin/env bash
# Records every program in this folder with cgtrace, one process each, into
# DIR (default: examples/recorded of this repo), and prints each trace's
# summary. Needs a CUDA GPU and PyTorch 2.11 (llama_tiny, gpt2_medium_train,
# llama_1b_decode and gpt2_generate also transformers, resnet_train and
# detection_infer torchvision, vit_infer timm; each records nothing
# without its library; two_gpus needs two CUDA devices and is skipped on a
# machine with fewer).
# gpt2_medium_train (355M parameters) and llama_1b_decode (1.1B) are the
# real-size programs: several minutes of compiling each, and traces that
# go to examples/recorded compressed (gzip -9).
#
#     bash traces/pytorch/programs/record_all.sh [DIR [NAME...]]
#
# static_generate and killed_train are not in the list: the first dies in
# PyTorch 2.11, recorded or not (a segfault at its first decoding step),
# the second kills itself with SIGKILL; tools/gpu/crash-trace.py runs
# each and says what its trace holds (gpu.sh's programs suite).
#
# With NAMEs only those programs are recorded (e.g. to stay within a time
# limit per command). Exit status 1 when any program failed (the others are
# still recorded), 2 for a NAME that is not in the list.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../../examples/recorded}
[ $# -gt 0 ] && shift
only=" $* "
mkdir -p "$out"
export PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}"
status=0
# name, then the script and its arguments
list=$(cat <<'LIST'
seed_checkpoint seed_checkpoint.py
seed_liveness seed_liveness.py
inference_kv inference_kv.py
train_mlp train_mlp.py
graph_break graph_break.py
graph_break_mark_step graph_break.py --mark-step
host_reads host_reads.py
dtypes dtypes.py
dims5 dims5.py
slices slices.py
llama_tiny llama_tiny.py
train_compiled_opt train_compiled_opt.py
sequential_loop sequential_loop.py
two_gpus two_gpus.py
resnet_train resnet_train.py
vit_infer vit_infer.py
train_mistakes train_mistakes.py
gpt2_generate gpt2_generate.py
skips skips.py
gan_train gan_train.py
infer_with_grad infer_with_grad.py
chained_infer chained_infer.py
grad_accum grad_accum.py
varlen_infer varlen_infer.py
ema_swap ema_swap.py
cache_release cache_release.py
no_trees no_trees.py
detection_infer detection_infer.py
gpt2_medium_train gpt2_medium_train.py
llama_1b_decode llama_1b_decode.py
act_checkpoint act_checkpoint.py
loader_train loader_train.py
bert_embed bert_embed.py
prefetch_train prefetch_train.py
diffusion_sample diffusion_sample.py
diffusion_tensor_t diffusion_sample.py --t-tensor
LIST
)
for n in $only; do
  if ! printf '%s\n' "$list" | grep -q "^$n "; then
    echo "record_all: no program named $n" >&2
    exit 2
  fi
done
while read -r name script args; do
  [ -z "$name" ] && continue
  [ "$only" != "  " ] && [[ "$only" != *" $name "* ]] && continue
  if [ "$name" = two_gpus ] && [ "$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)" -lt 2 ]; then
    echo "-- $name skipped: it needs two CUDA devices"
    continue
  fi
  echo "== $name"
  # shellcheck disable=SC2086
  if ! python3 -m cgtrace run -o "$out/$name.cgt.jsonl" --name "recorded: $script${args:+ $args}" "$here/$script" $args; then
    echo "!! $name failed" >&2
    status=1
  fi
  [ -f "$out/$name.cgt.jsonl" ] && python3 -m cgtrace summary "$out/$name.cgt.jsonl"
done <<< "$list"
exit $status
