"""Decoding with a 1.1B-parameter Llama-shaped model in bf16 at real size,
with a static KV cache written by hand (as gpt-fast does): 16 layers, width
2048, 32 query heads and 8 key/value heads of 64, an MLP of 8192, a vocabulary
of 32,000 (random weights, nothing downloaded). The cache is a buffer of each
layer, written in place at the position by index_copy_ inside the compiled
step, so one graph is recorded and then replayed for every token: a static
input the graph mutates. Two requests of 8 prompt tokens fed one at a time
and 24 generated; between them the cache is zeroed eagerly. The next token
is cloned out of the graph's output (a replay overwrites it), and the
position is a tensor bumped in place on the host side.

transformers' generate() with a static cache segfaults inside PyTorch 2.11's
Triton launcher, recorded or not, so the cache and the loop are our own.

    python3 -m cgtrace run -o llama_1b_decode.cgt.jsonl llama_1b_decode.py [--layers N]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--layers", type=int, default=16)
ap.add_argument("--prompt", type=int, default=8)
ap.add_argument("--new", type=int, default=24)
ap.add_argument("--requests", type=int, default=2)
args = ap.parse_args()

DIM, HEADS, KV_HEADS, HEAD, FFN, VOCAB, MAX_SEQ = 2048, 32, 8, 64, 8192, 32000, 256


def rope(x, pos, cos, sin):
    # x: [1, heads, 1, HEAD]; rotate pairs by the position's angle.
    c, s = cos[pos].view(1, 1, 1, -1), sin[pos].view(1, 1, 1, -1)
    x1, x2 = x[..., : HEAD // 2], x[..., HEAD // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = nn.RMSNorm(DIM)
        self.wq = nn.Linear(DIM, HEADS * HEAD, bias=False)
        self.wk = nn.Linear(DIM, KV_HEADS * HEAD, bias=False)
        self.wv = nn.Linear(DIM, KV_HEADS * HEAD, bias=False)
        self.wo = nn.Linear(HEADS * HEAD, DIM, bias=False)
        self.ffn_norm = nn.RMSNorm(DIM)
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w3 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)
        # The static KV cache: [1, kv heads, max positions, head dim].
        self.register_buffer("k_cache", torch.zeros(1, KV_HEADS, MAX_SEQ, HEAD))
        self.register_buffer("v_cache", torch.zeros(1, KV_HEADS, MAX_SEQ, HEAD))

    def forward(self, x, pos, cos, sin, mask):
        h = self.attn_norm(x)
        q = self.wq(h).view(1, 1, HEADS, HEAD).transpose(1, 2)
        k = self.wk(h).view(1, 1, KV_HEADS, HEAD).transpose(1, 2)
        v = self.wv(h).view(1, 1, KV_HEADS, HEAD).transpose(1, 2)
        q, k = rope(q, pos, cos, sin), rope(k, pos, cos, sin)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache.index_copy_(2, pos, v)
        a = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=mask, enable_gqa=True)
        x = x + self.wo(a.transpose(1, 2).reshape(1, 1, DIM))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Model(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Layer() for _ in range(layers))
        self.norm = nn.RMSNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, HEAD // 2).float() / (HEAD // 2)))
        ang = torch.outer(torch.arange(MAX_SEQ).float(), inv)
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())
        self.register_buffer("causal", torch.tril(torch.ones(MAX_SEQ, MAX_SEQ, dtype=torch.bool)))

    def forward(self, token, pos):
        x = self.embed(token)  # [1, 1, DIM]
        mask = self.causal[pos].view(1, 1, 1, MAX_SEQ)
        for layer in self.layers:
            x = layer(x, pos, self.cos, self.sin, mask)
        return self.head(self.norm(x))[:, -1].argmax(-1, keepdim=True)


torch.manual_seed(0)
model = Model(args.layers).to(device="cuda", dtype=torch.bfloat16).eval()
print("parameters: %.2fB" % (sum(p.numel() for p in model.parameters()) / 1e9))
step = torch.compile(model, mode="reduce-overhead", fullgraph=True)

with torch.no_grad():
    for r in range(args.requests):
        for layer in model.layers:
            layer.k_cache.zero_()
            layer.v_cache.zero_()
        prompt = torch.randint(0, VOCAB, (args.prompt,), device="cuda")
        pos = torch.zeros(1, dtype=torch.long, device="cuda")
        tok = prompt[:1].view(1, 1).clone()
        out = []
        for i in range(args.prompt + args.new - 1):
            torch.compiler.cudagraph_mark_step_begin()
            nxt = step(tok, pos).clone()
            pos += 1
            tok = prompt[i + 1:i + 2].view(1, 1).clone() if i + 1 < args.prompt else nxt
            if i + 1 >= args.prompt:
                out.append(nxt)
        print("request %d: %d tokens, last %d" % (r, len(out), out[-1].item()))
