"""Training with activation checkpointing inside the compiled model, as
memory-bound users write it: a stack of residual MLP blocks, each run
through torch.utils.checkpoint.checkpoint(use_reentrant=False), the
model compiled under reduce-overhead. AOTAutograd traces the
recomputation into the backward graph, so the forward saves fewer
activations for the backward: the tree's forward node holds less, and
its backward recomputes. AdamW outside the compile, gradients clipped
(clip_grad_norm_ returns the total norm, read on the host every few
steps), a new batch each step, mark_step each step. Then three steps
with checkpointing turned off (`model.ckpt = False`): Dynamo guards on
the flag, compiles again, and the tree records the other forward and
backward beside the first.

    python3 -m cgtrace run -o act_checkpoint.cgt.jsonl act_checkpoint.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

STEPS, BATCH, D, HIDDEN, BLOCKS, CLASSES = 8, 64, 128, 512, 4, 10


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.up = nn.Linear(D, HIDDEN)
        self.down = nn.Linear(HIDDEN, D)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.head = nn.Linear(D, CLASSES)
        self.ckpt = True

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.ckpt else b(x)
        return self.head(x)


torch.manual_seed(0)
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model, mode="reduce-overhead")
labels = torch.randint(0, CLASSES, (BATCH,), device="cuda")


def train(steps, what):
    for step in range(steps):
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(BATCH, D, device="cuda")
        loss = F.cross_entropy(compiled(x), labels)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 4 == 3:
            print("%s step %d loss %.4f grad norm %.3f" % (what, step, loss.item(), norm.item()))


train(STEPS, "checkpointed")
model.ckpt = False
train(3, "plain")
print("allocated %d reserved %d" % (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()))
