"""A timm ViT-S/16 (22M parameters, random weights, nothing downloaded)
classifying a new batch of 8 images (3x224x224) at each step under
reduce-overhead and inference_mode, with no cudagraph_mark_step_begin()
(each call of the root is a new iteration to the tree). The first loop
makes a user's mistake: it keeps each step's logits in a list and stacks
them afterwards, but each replay overwrote the previous step's logits in
the tree's pool, and reading them raises PyTorch's overwritten error
(printed; the program goes on). The second loop keeps a clone of each
step's logits instead, as the error message advises. Exits 0 with a
message when timm is not installed."""
import sys

import torch

try:
    import timm
except ImportError:
    print("vit_infer: timm is not installed; nothing to record")
    sys.exit(0)

STEPS, BATCH = 5, 8

torch.manual_seed(0)
model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=100).cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")

with torch.inference_mode():
    kept = []
    for s in range(STEPS):
        kept.append(compiled(torch.randn(BATCH, 3, 224, 224, device="cuda")))
    try:
        print("mistake: stacked %s" % (tuple(torch.stack(kept).shape),))
    except RuntimeError as e:
        print("mistake: %s" % str(e).splitlines()[0])
    kept = []
    for s in range(STEPS):
        kept.append(compiled(torch.randn(BATCH, 3, 224, 224, device="cuda")).clone())
    print("fixed: top class of the first image per step %s" % torch.stack(kept)[:, 0].argmax(-1).tolist())
