"""transformers' generate() with the model's forward compiled under
reduce-overhead, as users first try it: a GPT-2 built from a config (4
layers, width 256, random weights, nothing downloaded), greedy decoding
after a prompt of 8 with the default (dynamic) KV cache. It fails, in
PyTorch 2.11 recorded or not: the cache keeps the keys and values the
compiled forward returned, generate() calls the forward again without
cudagraph_mark_step_begin(), and the next call's torch.cat of the cache
raises the overwritten error (printed; the program exits 0). The trace
says which output was read, where it was made and which call freed it.
Exits 0 with a message when transformers is not installed."""
import sys

import torch

try:
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    print("gpt2_generate: transformers is not installed; nothing to record")
    sys.exit(0)

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=512, n_positions=64, n_embd=256, n_layer=4, n_head=4)
model = GPT2LMHeadModel(cfg).cuda().eval()
model.forward = torch.compile(model.forward, mode="reduce-overhead")
prompt = torch.randint(0, cfg.vocab_size, (1, 8), device="cuda")
try:
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=12, do_sample=False, pad_token_id=0)
    print("generated: %s" % out[0, 8:].tolist())
except RuntimeError as e:
    print("generate: %s" % str(e).splitlines()[0][:120])
