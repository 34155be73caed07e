"""Inference with a small transformer block (one causal attention layer and
an MLP, d=64) under torch.no_grad(), fed a growing context as a KV cache
would be: each decoding step appends one position, so every sequence
length is a new shape and, in the tree, a new function id. Three requests
of six steps each: the first call of a length warms up, the second records,
the third replays (where the length kept its function id)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, PROMPT, STEPS, REQUESTS = 64, 4, 8, 6, 3


class Block(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        h = d // self.heads
        q = q.view(b, t, self.heads, h).transpose(1, 2)
        k = k.view(b, t, self.heads, h).transpose(1, 2)
        v = v.view(b, t, self.heads, h).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


torch.manual_seed(0)
block = Block().cuda().eval()
step = torch.compile(block, mode="reduce-overhead")

with torch.no_grad():
    for r in range(REQUESTS):
        ctx = torch.randn(1, PROMPT, D, device="cuda")
        for s in range(STEPS):
            out = step(ctx)
            # the new position's state joins the context for the next step
            ctx = torch.cat([ctx, out[:, -1:]], dim=1)
        print("request %d: context %s, last norm %.4f" % (r, tuple(ctx.shape), ctx[0, -1].norm().item()))
