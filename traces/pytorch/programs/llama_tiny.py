"""A transformers Llama built from a config (random weights, nothing
downloaded): two layers, hidden size 64, run as a fixed-window decode loop
(16 tokens in, the argmax appended and the oldest dropped) under
reduce-overhead with cudagraph_mark_step_begin() per step. Exits 0 with a
message when transformers is not installed."""
import sys

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    print("llama_tiny: transformers is not installed; nothing to record")
    sys.exit(0)

STEPS, WINDOW = 6, 16

torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
model = LlamaForCausalLM(cfg).cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
ids = torch.randint(0, cfg.vocab_size, (1, WINDOW), device="cuda")
with torch.no_grad():
    for s in range(STEPS):
        torch.compiler.cudagraph_mark_step_begin()
        out = compiled(input_ids=ids, use_cache=False)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        print("step %d next token %d" % (s, nxt.item()))
        ids = torch.cat([ids[:, 1:], nxt], dim=1)
