"""Training a GPT-2-medium-sized model at real size: transformers'
GPT2LMHeadModel built from a config (24 layers, width 1024, 16 heads: 355M
parameters, random weights, nothing downloaded), float32 weights under bf16
autocast, fused AdamW stepped eagerly, reduce-overhead on the model, ten
training steps each begun with cudagraph_mark_step_begin(), then three eval
calls under no_grad (a second compiled graph: grad mode is a guard).
The loss is read on the host each step. Exits 0 with a message when
transformers is not installed.

    python3 -m cgtrace run -o gpt2_medium_train.cgt.jsonl gpt2_medium_train.py [--layers N]
"""
import argparse
import sys

import torch

try:
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    print("gpt2_medium_train: transformers is not installed; nothing to record")
    sys.exit(0)

ap = argparse.ArgumentParser()
ap.add_argument("--layers", type=int, default=24)
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--seq", type=int, default=256)
args = ap.parse_args()

torch.manual_seed(0)
cfg = GPT2Config(n_layer=args.layers, n_embd=1024, n_head=16, n_positions=1024)
model = GPT2LMHeadModel(cfg).cuda()
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
compiled = torch.compile(model, mode="reduce-overhead")

model.train()
for step in range(args.steps):
    torch.compiler.cudagraph_mark_step_begin()
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = compiled(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print("step %d loss %.4f" % (step, out.loss.item()))

model.eval()
ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    for i in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        logits = compiled(input_ids=ids).logits
        print("eval %d mean logit %.4f" % (i, logits.float().mean().item()))
