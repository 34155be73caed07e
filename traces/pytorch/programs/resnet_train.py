"""A torchvision ResNet-18 (11.7M parameters, random weights, nothing
downloaded) trained under reduce-overhead: batch norm in training mode
(its running statistics are buffers the compiled forward updates in
place), SGD with momentum stepped eagerly, a new batch of 32 images
(3x96x96) at each step and cudagraph_mark_step_begin() before it; then
evaluated in eval mode (batch norm from its running statistics: the
forward compiled again, another tree function) under no_grad on three
new batches. Exits 0 with a message when torchvision is not installed."""
import sys

import torch
import torch.nn.functional as F

try:
    import torchvision
except ImportError:
    print("resnet_train: torchvision is not installed; nothing to record")
    sys.exit(0)

STEPS, EVALS, BATCH, SIZE, CLASSES = 6, 3, 32, 96, 100

torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=CLASSES).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
compiled = torch.compile(model, mode="reduce-overhead")
# a fixed synthetic task, so the loss visibly falls
images = torch.randn(BATCH, 3, SIZE, SIZE, device="cuda")
labels = torch.randint(0, CLASSES, (BATCH,), device="cuda")

for s in range(STEPS):
    torch.compiler.cudagraph_mark_step_begin()
    x = images + 0.05 * torch.randn_like(images)
    loss = F.cross_entropy(compiled(x), labels)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print("step %d loss %.4f" % (s, loss.item()))

model.eval()
with torch.no_grad():
    for s in range(EVALS):
        torch.compiler.cudagraph_mark_step_begin()
        x = images + 0.05 * torch.randn_like(images)
        agree = (compiled(x).argmax(-1) == labels).float().mean()
        print("eval %d accuracy %.3f" % (s, agree.item()))
