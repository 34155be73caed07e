"""A bf16 model fed int64 tokens: an embedding and a projection in bfloat16
return bf16 logits, the int64 argmax and a bool mask; the argmax (a tree
output) is the next step's input, as a decoding loop feeds its tokens back.
Allocation sizes follow the element size (2 bytes bf16, 8 int64, 1 bool)."""
import torch
import torch.nn as nn

VOCAB, D, SEQ, STEPS = 128, 64, 16, 6


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.fc = nn.Linear(D, D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens):
        h = torch.relu(self.fc(self.emb(tokens)))
        logits = self.head(h)
        return logits, logits.argmax(-1), tokens > VOCAB // 2


torch.manual_seed(0)
model = TinyLM().cuda().to(torch.bfloat16).eval()
compiled = torch.compile(model, mode="reduce-overhead")
tokens = torch.randint(0, VOCAB, (2, SEQ), device="cuda")
with torch.no_grad():
    for s in range(STEPS):
        torch.compiler.cudagraph_mark_step_begin()
        logits, nxt, mask = compiled(tokens)
        print("step %d logits %s %s, tokens %s, mask true %d" % (
            s, tuple(logits.shape), logits.dtype, nxt.dtype, int(mask.sum())))
        tokens = nxt.clone()  # the next input, out of the tree's pool
