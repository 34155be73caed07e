"""transformers' generate() with a static KV cache and the model's forward
compiled under reduce-overhead, the recipe transformers gives for fast
decoding: a Llama built from a config (4 layers, hidden size 256, random
weights, nothing downloaded), greedy decoding of 24 tokens after a prompt
of 8, three requests in turn. Issue 33 item 1: in PyTorch 2.11 (with
transformers 5.17, on an H100) the process dies of a segfault at the first
decoding step, recorded or not, right after the prefill's call (a warmup),
and a recorder that wrote its trace at the end left nothing. Run it with
tools/gpu/crash-trace.py, which says how it ended unrecorded and recorded
and what the trace holds. With --score N a scorer compiled on its own
(the mean embedding norm of a batch of 4 prompts of 16 tokens) runs N
times on new batches first, a cudagraph_mark_step_begin() before each;
after it the same generation does not die (172 calls with --score 100:
the scorer's warmup, recording and replays, then the three requests'
graphs recorded and replayed). What it prints is flushed (a segfault
loses what stdout buffers). Exits 0 with a message when transformers is
not installed.

    python3 -m cgtrace run -o static_generate.cgt.jsonl static_generate.py [--score N] [--requests N]
"""
import argparse
import sys

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    print("static_generate: transformers is not installed; nothing to record")
    sys.exit(0)

ap = argparse.ArgumentParser()
ap.add_argument("--score", type=int, default=0)
ap.add_argument("--requests", type=int, default=3)
ap.add_argument("--new", type=int, default=24)
args = ap.parse_args()

torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
model = LlamaForCausalLM(cfg).cuda().eval()
model.generation_config.cache_implementation = "static"
model.forward = torch.compile(model.forward, mode="reduce-overhead")
emb = model.model.embed_tokens.weight


@torch.compile(mode="reduce-overhead")
def score(ids):
    return emb[ids].norm(dim=-1).mean(dim=1)


total = torch.zeros((), device="cuda")
with torch.no_grad():
    for i in range(args.score):
        torch.compiler.cudagraph_mark_step_begin()
        batch = torch.randint(0, cfg.vocab_size, (4, 16), device="cuda")
        total += score(batch).sum()  # (on the GPU: read once, at the end)
print("scored %d batches: %.3f" % (args.score, total.item()), flush=True)
for r in range(args.requests):
    prompt = torch.randint(0, cfg.vocab_size, (1, 8), device="cuda")
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=args.new, do_sample=False, pad_token_id=0)
    print("request %d: %s" % (r, out[0, 8:].tolist()), flush=True)
