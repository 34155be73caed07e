"""Inference on requests of many lengths, the way the pool grows without a
word from the program (pytorch#119640, #162696): a small attention model
compiled under reduce-overhead, under inference_mode, mark_step a
request. Its second length recompiles it with the length dynamic, and
the tree then records a graph for every distinct length it meets: 12
lengths here, past PyTorch's warning at 8 (cudagraph_dynamic_shape_warn_limit).
Then the fix users are told of: the same requests padded to three
buckets (16, 32, 64), and a mask: three more graphs, replayed.

    python3 -m cgtrace run -o varlen_infer.cgt.jsonl varlen_infer.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

WIDTH, HEADS, VOCAB = 64, 4, 1000
LENGTHS = [5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49]
BUCKETS = [16, 32, 64]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))
        self.n1, self.n2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)

    def forward(self, x, mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.mlp(self.n2(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, tokens, mask):
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(x.mean(dim=1)).softmax(dim=-1)


torch.manual_seed(0)
model = Model().cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
requests = [torch.randint(0, VOCAB, (2, n), device="cuda") for n in LENGTHS for _ in range(2)]


def serve(tokens, pad):
    n = tokens.shape[1]
    if pad:
        size = next(b for b in BUCKETS if b >= n)
        tokens = F.pad(tokens, (0, size - n))
    keep = torch.arange(tokens.shape[1], device="cuda") < n
    mask = keep.view(1, 1, 1, -1).expand(tokens.shape[0], 1, tokens.shape[1], tokens.shape[1])
    torch.compiler.cudagraph_mark_step_begin()
    return compiled(tokens, mask).cpu()


with torch.inference_mode():
    for pad in (False, True):
        for tokens in requests:
            probs = serve(tokens, pad)
        print("%s: last request %s" % ("padded" if pad else "as they come", probs[0].tolist()))
