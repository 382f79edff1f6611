"""torch.nn drop-ins whose forward and backward run through clnorm.

LayerNorm, GroupNorm and InstanceNorm1d/2d/3d subclass torch's own (same constructor,
parameters, buffers, state_dict keys, repr; isinstance checks keep working) and only replace
forward. RMSNorm subclasses
torch.nn.RMSNorm where torch has it (2.4 and later); on older torch (Debian 12's 1.13) it is a
Module with the same constructor and state_dict. Gradients come from the library's backward
through one autograd Function (second derivatives through torch: _torch_graph).
"""
import inspect

import torch

from . import functional as F

_TorchRMSNorm = getattr(torch.nn, "RMSNorm", None)
_LN_HAS_BIAS = "bias" in inspect.signature(torch.nn.LayerNorm.__init__).parameters


class LayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
    device=None, dtype=None), through clnorm. (bias=False also on torch versions whose
    LayerNorm lacks the argument.)"""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        if _LN_HAS_BIAS:
            super().__init__(normalized_shape, eps, elementwise_affine, bias=bias,
                             device=device, dtype=dtype)
        else:
            super().__init__(normalized_shape, eps, elementwise_affine, device=device,
                             dtype=dtype)
            if elementwise_affine and not bias:
                self.bias = None  # a registered parameter set to None: absent from state_dict

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class GroupNorm(torch.nn.GroupNorm):
    """torch.nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True, device=None,
    dtype=None), through clnorm. A channels_last input is read in place."""

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNormForward:
    """The forward of torch.nn.InstanceNorm1d/2d/3d through clnorm (GroupNorm with a group per
    channel), the running statistics updated as torch updates them; in eval mode with
    track_running_stats=True normalized by them (F.instance_norm's use_input_stats=False:
    GroupNorm with precomputed statistics)."""

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.dim() == self._get_no_batch_dim()
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            use_input_stats, self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNormForward, torch.nn.InstanceNorm1d):
    """torch.nn.InstanceNorm1d(num_features, eps=1e-5, momentum=0.1, affine=False,
    track_running_stats=False, device=None, dtype=None), through clnorm: x of shape (N, C, L)
    or (C, L)."""


class InstanceNorm2d(_InstanceNormForward, torch.nn.InstanceNorm2d):
    """torch.nn.InstanceNorm2d(num_features, eps=1e-5, momentum=0.1, affine=False,
    track_running_stats=False, device=None, dtype=None), through clnorm: x of shape
    (N, C, H, W) or (C, H, W); a channels_last input is read in place."""


class InstanceNorm3d(_InstanceNormForward, torch.nn.InstanceNorm3d):
    """torch.nn.InstanceNorm3d(num_features, eps=1e-5, momentum=0.1, affine=False,
    track_running_stats=False, device=None, dtype=None), through clnorm: x of shape
    (N, C, D, H, W) or (C, D, H, W)."""


if _TorchRMSNorm is not None:
    class RMSNorm(_TorchRMSNorm):
        """torch.nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True, device=None,
        dtype=None), through clnorm."""

        def forward(self, x):
            return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)
else:
    class RMSNorm(torch.nn.Module):
        """RMSNorm(normalized_shape, eps=None, elementwise_affine=True, device=None,
        dtype=None), through clnorm: torch.nn.RMSNorm's constructor and state_dict (one
        `weight`), for torch versions that lack it. eps None is the input dtype's machine
        epsilon, as in torch."""

        def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                     dtype=None):
            super().__init__()
            if isinstance(normalized_shape, int):
                normalized_shape = (normalized_shape,)
            self.normalized_shape = tuple(normalized_shape)
            self.eps = eps
            self.elementwise_affine = elementwise_affine
            if elementwise_affine:
                self.weight = torch.nn.Parameter(
                    torch.empty(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("weight", None)
            self.reset_parameters()

        def reset_parameters(self):
            if self.weight is not None:
                torch.nn.init.ones_(self.weight)

        def forward(self, x):
            return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

        def extra_repr(self):
            return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}" \
                .format(**self.__dict__)


def _from_layer_norm(m):
    kwargs = {}
    if m.elementwise_affine:
        kwargs["bias"] = m.bias is not None
    new = LayerNorm(m.normalized_shape, m.eps, m.elementwise_affine, device="meta", **kwargs)
    return _adopt(new, m, ("weight", "bias"))


def _from_group_norm(m):
    new = GroupNorm(m.num_groups, m.num_channels, m.eps, m.affine, device="meta")
    return _adopt(new, m, ("weight", "bias"))


def _from_instance_norm(m):
    new = _INSTANCE[type(m)](m.num_features, m.eps, m.momentum, m.affine,
                             m.track_running_stats, device="meta")
    return _adopt(new, m, ("weight", "bias", "running_mean", "running_var",
                           "num_batches_tracked"))


def _from_rms_norm(m):
    new = RMSNorm(m.normalized_shape, m.eps, m.elementwise_affine, device="meta")
    return _adopt(new, m, ("weight",))


def _adopt(new, old, names):
    # The very Parameter objects move over (not copies): optimizers holding them, and weights
    # tied elsewhere in the model, keep working.
    for name in names:
        setattr(new, name, getattr(old, name, None))
    new.train(old.training)
    return new


_INSTANCE = {torch.nn.InstanceNorm1d: InstanceNorm1d, torch.nn.InstanceNorm2d: InstanceNorm2d,
             torch.nn.InstanceNorm3d: InstanceNorm3d}
_SWAPS = {torch.nn.LayerNorm: _from_layer_norm, torch.nn.GroupNorm: _from_group_norm}
_SWAPS.update({t: _from_instance_norm for t in _INSTANCE})
if _TorchRMSNorm is not None:
    _SWAPS[_TorchRMSNorm] = _from_rms_norm


def replace_norms(model):
    """Swaps, in place, every torch.nn.LayerNorm, torch.nn.GroupNorm,
    torch.nn.InstanceNorm1d/2d/3d and (where torch has it) torch.nn.RMSNorm inside model for
    clnorm's, sharing their parameters (and InstanceNorm's running statistics). Only modules
    of exactly those types are swapped (a subclass may have a forward of its own); hooks
    registered on a swapped module stay on the old one. Returns model (or, when model itself
    is such a norm, its replacement)."""
    swapped = {}

    def swap(m):
        new = swapped.get(id(m))
        if new is None:
            new = swapped[id(m)] = _SWAPS[type(m)](m)
        return new

    if type(model) in _SWAPS:
        return swap(model)
    for parent in list(model.modules()):
        # _modules, not named_children(): that skips a module's second name (one norm
        # registered twice), which must be swapped too.
        for name, child in list(parent._modules.items()):
            if type(child) in _SWAPS:
                setattr(parent, name, swap(child))
    return model


__all__ = ["LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "replace_norms"]
