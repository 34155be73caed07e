"""A training loop with two mistakes users make, on a small CNN whose
forward and loss are compiled together under reduce-overhead (so the loss
is a tree output), cudagraph_mark_step_begin() at each step: a dataset of
100 images in batches of 32, so each epoch ends on a batch of 4 (a new
shape: Dynamo compiles again with the batch dynamic, and the tree
records a graph for each size); and the epoch's losses kept to be
averaged at its end. The first epoch keeps `loss.detach()`, which shares
the output's storage: the stack at the epoch's end raises PyTorch's
overwritten error (printed; the program goes on). The second keeps
`loss.item()`, the fix."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N, BATCH, CLASSES, EPOCHS = 100, 32, 10, 2

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                      nn.Linear(256, CLASSES)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(mode="reduce-overhead")
def loss_of(x, y):
    return F.cross_entropy(model(x), y)


images = torch.randn(N, 3, 16, 16, device="cuda")
labels = torch.randint(0, CLASSES, (N,), device="cuda")
for epoch in range(EPOCHS):
    losses = []
    for i in range(0, N, BATCH):
        torch.compiler.cudagraph_mark_step_begin()
        loss = loss_of(images[i:i + BATCH], labels[i:i + BATCH])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach() if epoch == 0 else loss.item())
    try:
        mean = torch.stack(losses).mean().item() if epoch == 0 else sum(losses) / len(losses)
        print("epoch %d mean loss %.4f" % (epoch, mean))
    except RuntimeError as e:
        print("epoch %d: %s" % (epoch, str(e).splitlines()[0][:90]))
