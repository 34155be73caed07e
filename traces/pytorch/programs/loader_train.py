"""A training loop fed by a DataLoader, the way most real ones are: a
CPU dataset of 200 samples in batches of 48 with pinned memory, each
batch copied to the GPU with non_blocking=True, so each epoch ends on a
batch of 8 (a new shape: Dynamo compiles again with the batch dynamic,
and the tree records a graph for each size it meets). CUDA graphs are
turned on through the compile's options ({"triton.cudagraphs": True},
what mode="reduce-overhead" sets), not the mode. After each epoch an
evaluation under torch.inference_mode() over the same loader, and the
epoch's loss summed on the GPU and read once at its end. No mark_step:
the tree starts a new generation itself when the forward is called
again after its backward ran.

    python3 -m cgtrace run -o loader_train.cgt.jsonl loader_train.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

EPOCHS, SAMPLES, BATCH, D, HIDDEN, CLASSES = 2, 200, 48, 32, 128, 5

torch.manual_seed(0)
data = TensorDataset(torch.randn(SAMPLES, D), torch.randint(0, CLASSES, (SAMPLES,)))
loader = DataLoader(data, batch_size=BATCH, shuffle=True, pin_memory=True)
model = nn.Sequential(nn.Linear(D, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
compiled = torch.compile(model, options={"triton.cudagraphs": True})

for epoch in range(EPOCHS):
    model.train()
    total = torch.zeros((), device="cuda")
    for x, y in loader:
        x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
        loss = F.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        total += loss.detach()
    print("epoch %d summed loss %.4f" % (epoch, total.item()))
    model.eval()
    correct = 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
            correct += (compiled(x).argmax(dim=-1) == y).sum().item()
    print("epoch %d accuracy %.3f" % (epoch, correct / SAMPLES))
