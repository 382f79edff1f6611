"""A real architecture with its norms swapped by clnorm.nn.replace_norms: outputs and one
training step's gradients match the original within 1e-4.

GPT-2 small from transformers' config (random weights) when transformers is installed, else
torch.nn.TransformerEncoder of GPT-2 small's size (12 layers of width 768, 12 heads, 3072;
pre-LN like GPT-2, with a final norm: 25 norms).
Both run in training mode with dropout 0: in inference PyTorch's TransformerEncoderLayer may
take a fused fast path that reads a norm's weights itself, bypassing any norm module.
"""
import copy
import importlib.util

import pytest
import torch

import clnorm
import clnorm.nn as cnn

SEQ, BATCH = 16, 2


def gpt2_small():
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)
    model = GPT2Model(cfg)
    ids = torch.randint(0, cfg.vocab_size, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    return model, (lambda m: m(input_ids=ids).last_hidden_state)


def transformer_encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True,
                                             norm_first=True, activation="gelu")
    model = torch.nn.TransformerEncoder(layer, 12, norm=torch.nn.LayerNorm(768),
                                        enable_nested_tensor=False)
    x = torch.randn(BATCH, SEQ, 768, generator=torch.Generator().manual_seed(1))
    return model, (lambda m: m(x))


def count(model, types):
    return sum(type(m) in types for m in model.modules())


def test_replace_norms_in_a_transformer():
    has_hf = importlib.util.find_spec("transformers") is not None
    model, run = gpt2_small() if has_hf else transformer_encoder()
    model.train()
    ours = copy.deepcopy(model)
    n_norms = count(model, (torch.nn.LayerNorm,))
    assert n_norms >= 7
    assert cnn.replace_norms(ours) is ours
    assert count(ours, (torch.nn.LayerNorm,)) == 0 and count(ours, (cnn.LayerNorm,)) == n_norms
    assert list(ours.state_dict()) == list(model.state_dict())

    calls = []
    for m in ours.modules():
        if type(m) is cnn.LayerNorm:
            m.register_forward_hook(lambda *_: calls.append(1))
    out_ref, out = run(model), run(ours)
    assert len(calls) == n_norms  # every norm ran through clnorm (no fused fast path)
    scale = max(1.0, out_ref.abs().max().item())
    assert (out - out_ref).abs().max().item() <= 1e-4 * scale

    (out_ref.pow(2).sum() / BATCH).backward()
    (out.pow(2).sum() / BATCH).backward()
    worst = 0.0
    for (name, p_ref), (_, p) in zip(model.named_parameters(), ours.named_parameters()):
        assert p.grad is not None, name
        g_scale = max(1.0, p_ref.grad.abs().max().item())
        worst = max(worst, (p.grad - p_ref.grad).abs().max().item() / g_scale)
    print("max output error %.3g, max gradient error %.3g (relative to max(1, |grad|))"
          % ((out - out_ref).abs().max().item(), worst))
    assert worst <= 1e-4, worst


def test_replace_norms_keeps_parameters_and_types():
    class MyNorm(torch.nn.LayerNorm):  # a subclass may have a forward of its own: left alone
        pass

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GroupNorm(4, 8), torch.nn.SiLU(),
        torch.nn.Flatten(2), torch.nn.LayerNorm(16, elementwise_affine=False), MyNorm(16))
    shared = torch.nn.LayerNorm(16)
    model.append(shared)
    model.append(shared)  # one module used twice stays one module
    gn_weight = model[1].weight
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(2))
    ref = model(x)
    cnn.replace_norms(model)
    assert type(model[1]) is cnn.GroupNorm and model[1].weight is gn_weight
    assert type(model[4]) is cnn.LayerNorm and model[4].weight is None
    assert type(model[5]) is MyNorm
    assert model[6] is model[7] and type(model[6]) is cnn.LayerNorm
    y = model(x)
    assert (y - ref).abs().max().item() < 1e-4
    y.sum().backward()
    opt.step()  # the optimizer holds the very parameters the swapped modules use
    assert gn_weight.grad is not None
    single = cnn.replace_norms(torch.nn.LayerNorm(8))
    assert type(single) is cnn.LayerNorm


def _same_step(net, ours, x):
    """One training step of torch's model and of its clnorm copy: the same outputs and
    parameter gradients, within 1e-4."""
    y_ref, y = net(x), ours(x)
    assert (y - y_ref).abs().max().item() < 1e-4
    y_ref.square().mean().backward()
    y.square().mean().backward()
    for p_ref, p in zip(net.parameters(), ours.parameters()):
        assert (p.grad - p_ref.grad).abs().max().item() < 1e-4


@pytest.mark.parametrize("track", [False, True])
def test_replace_norms_instance_norm(track):
    torch.manual_seed(4)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.InstanceNorm2d(4, affine=True,
                              track_running_stats=track), torch.nn.ReLU(), torch.nn.Flatten(2),
                              torch.nn.InstanceNorm1d(4, momentum=0.2, track_running_stats=track))
    ours = cnn.replace_norms(copy.deepcopy(net))
    assert type(ours[1]) is cnn.InstanceNorm2d and type(ours[4]) is cnn.InstanceNorm1d
    assert isinstance(ours[1], torch.nn.InstanceNorm2d) and ours[4].momentum == 0.2
    assert list(ours.state_dict()) == list(net.state_dict())
    x = torch.randn(2, 3, 6, 5)
    for _ in range(2):  # training: the running statistics move as torch's do
        _same_step(net, ours, x)
    for b_ref, b in zip(net.buffers(), ours.buffers()):
        assert (b.double() - b_ref.double()).abs().max().item() < 1e-5
    net.eval()
    ours.eval()  # with running statistics: normalized by them (torch's elementwise path)
    assert (ours(x) - net(x)).abs().max().item() < 1e-4
    single = torch.nn.InstanceNorm3d(2, track_running_stats=True)
    swapped = cnn.replace_norms(single)
    assert type(swapped) is cnn.InstanceNorm3d and swapped.running_mean is single.running_mean


def test_modules_match_torch_constructors():
    ln = cnn.LayerNorm((4, 6), eps=1e-6, elementwise_affine=True, bias=False)
    assert list(ln.state_dict()) == ["weight"] and ln.bias is None
    assert list(cnn.GroupNorm(2, 6).state_dict()) == list(torch.nn.GroupNorm(2, 6).state_dict())
    rms = cnn.RMSNorm(6, eps=1e-6, dtype=torch.float64)
    assert list(rms.state_dict()) == ["weight"] and rms.weight.dtype == torch.float64
    x = torch.randn(3, 4, 6, dtype=torch.float64)
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert (rms(x) - ref).abs().max().item() < 1e-12
    if hasattr(torch.nn, "RMSNorm"):
        assert isinstance(rms, torch.nn.RMSNorm)


def test_group_norm_module_in_channels_last_convnet():
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.GroupNorm(2, 8),
                              torch.nn.SiLU(), torch.nn.Conv2d(8, 4, 1))
    ours = cnn.replace_norms(copy.deepcopy(net))
    x = torch.randn(2, 4, 6, 6).contiguous(memory_format=torch.channels_last)
    _same_step(net, ours, x)


@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_module_in_low_precision(dtype):
    m = cnn.LayerNorm(32).to(dtype)
    x = torch.randn(4, 32, dtype=dtype, requires_grad=True)
    y = m(x)
    assert y.dtype == dtype
    y.float().sum().backward()
    assert x.grad.dtype == dtype and m.weight.grad.dtype == dtype
    assert clnorm.current_context() is not None
