"""RETSim's network in PyTorch: load the ONNX weights, fine-tune, export back to ONNX.

The RETSim v1 model ships as an ONNX graph (inside the ``unisim`` package) converted from
TensorFlow; :class:`RETSimTorch` rebuilds that graph as an ``nn.Module`` so it can be
trained, :func:`from_onnx` copies the weights in, and :func:`export_onnx` writes a model
with the original interface, so ``RETSim(model_path=...)`` runs it unchanged.

Architecture (Zhang et al. 2023, sec. 3.1 and table 9; read off the ONNX graph):

* input (batch, 512, 24): one chunk of 512 characters, 24 bits per character;
* plus a scaled sinusoidal absolute position embedding: ``scale * [sin(n f_i), cos(n f_i)]``
  with 12 frequencies, a learned scalar ``scale``;
* a dense layer 24 -> 256 with Swish;
* two Gated Attention Unit blocks (Hua et al. 2022, "Transformer Quality in Linear
  Time"), each ``x + W_o(u * (relu(q k^T / 512 + bias)^2 v))`` where ``h = ScaleNorm(x)``,
  ``[u, v, z] = swish(W_i h)`` splits 640 features into 256 + 256 + 128, and
  ``q = z * gamma_0 + beta_0``, ``k = z * gamma_1 + beta_1``. ScaleNorm is
  ``scale * x / sqrt(mean(x^2) + 1e-6)`` with one learned scalar. ``bias`` is the
  relative position bias: in the ONNX file it is a constant product of two 512 x 512
  RoPE-rotated matrices, which is a Toeplitz matrix (it depends on ``j - i`` only), so
  here it is stored as its 1023 diagonals and expanded on the fly;
* generalized-mean pooling over positions with p = 3, made well defined for negative
  activations by shifting by the per-feature minimum (as the TF layer does):
  ``mean((x - min + 1)^3)^(1/3) + min - 1``;
* a dense projection 256 -> 256 and L2 normalisation.

535,809 trainable parameters (the paper counts 536k), 2 x 1023 of them the bias
diagonals: the TF RoPE bias parameters are not recoverable from the constant-folded graph,
and a free Toeplitz bias is the more general form of the same thing.

Requirements
    ``torch`` (the ``neural`` extra) and ``onnx`` (the ``train`` extra), which reads the
    weights and checks exports; export uses torch's TorchScript-based ONNX exporter.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from neardup.embed.binarizer import CHUNK_SIZE, CODE_BITS

__all__ = ["RETSimTorch", "export_onnx", "from_onnx", "onnx_weights"]

HIDDEN = 256
EMBEDDING = 256
EXPANSION = 2 * HIDDEN  # u and v
QK_DIM = 128
N_BLOCKS = 2
#: Input and output names of the original ONNX model (kept on export).
INPUT_NAME = "input_1"
OUTPUT_NAME = "embedding_model"

_EXTRA = "pip install 'neardup[neural,train]'"


def _torch() -> Any:
    try:
        import torch
    except ImportError as err:
        raise ImportError(
            f"Training RETSim needs 'torch' (neardup's 'neural' extra). Install: {_EXTRA}"
        ) from err
    return torch


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as err:
        raise ImportError(
            f"Reading or writing RETSim ONNX files needs 'onnx' (neardup's 'train' extra). "
            f"Install: {_EXTRA}"
        ) from err
    return onnx


torch = _torch()
nn = torch.nn
F = torch.nn.functional


def toeplitz(diagonals: Any, n: int) -> Any:
    """The n x n matrix ``T[i, j] = diagonals[n - 1 + j - i]`` from 2n - 1 diagonals.

    Built with pad / repeat / reshape / slice only, so it exports to any ONNX opset: a
    row of width 3n - 1 repeated n times and re-cut into rows of width 3n - 2 shifts
    each row one place to the right of the previous one.
    """
    padded = F.pad(diagonals, (0, n))  # length 3n - 1
    tiled = padded.repeat(n)[:-n].reshape(n, 3 * n - 2)
    return tiled[:, n - 1 : 2 * n - 1]


class ScaleNorm(nn.Module):
    """``scale * x / sqrt(mean(x^2, last axis) + eps)`` with one learned scalar."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.eps = eps

    def forward(self, x: Any) -> Any:
        return x * (self.scale * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class GAUBlock(nn.Module):
    """One Gated Attention Unit with a pre-ScaleNorm and a residual connection."""

    def __init__(self, seq_len: int = CHUNK_SIZE) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.norm = ScaleNorm()
        self.dense_in = nn.Linear(HIDDEN, EXPANSION + QK_DIM)
        self.gamma = nn.Parameter(torch.ones(2, QK_DIM))
        self.beta = nn.Parameter(torch.zeros(2, QK_DIM))
        self.rel_bias = nn.Parameter(torch.zeros(2 * seq_len - 1))
        self.dense_out = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x: Any) -> Any:
        hidden = F.silu(self.dense_in(self.norm(x)))
        u, v, z = torch.split(hidden, [HIDDEN, HIDDEN, QK_DIM], dim=-1)
        q = z * self.gamma[0] + self.beta[0]
        k = z * self.gamma[1] + self.beta[1]
        scores = torch.matmul(q, k.transpose(1, 2)) * (1.0 / self.seq_len)
        kernel = F.relu(scores + toeplitz(self.rel_bias, self.seq_len)).square()
        return x + self.dense_out(u * torch.matmul(kernel, v))


class RETSimTorch(nn.Module):
    """The RETSim chunk encoder: (batch, 512, 24) float32 -> (batch, 256) unit vectors.

    Build it with :func:`from_onnx` to get the trained weights; a bare instance has
    PyTorch's default initialisation and a zero position embedding.
    """

    def __init__(self, *, seq_len: int = CHUNK_SIZE, gem_p: float = 3.0) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.gem_p = gem_p
        # Unit sinusoid table (fixed) times a learned scale, as TF's ScaledSinusoidal.
        self.register_buffer("position_table", torch.zeros(seq_len, CODE_BITS))
        self.position_scale = nn.Parameter(torch.ones(()))
        self.encoder_start = nn.Linear(CODE_BITS, HIDDEN)
        self.blocks = nn.ModuleList(GAUBlock(seq_len) for _ in range(N_BLOCKS))
        self.projection = nn.Linear(HIDDEN, EMBEDDING)
        #: Run the GAU blocks under bfloat16 autocast (a training speed-up on CPUs with
        #: native bf16). Only the blocks: the input layer (a 0.027 position signal
        #: on 0/1 bits) and the shifted GeM pooling (a difference of large numbers) lose
        #: everything in bf16, while the blocks' output stays within 1e-4 cosine.
        self.bf16_blocks = False

    def pool(self, x: Any) -> Any:
        """Generalized-mean pooling over positions, shifted so every value is >= 1."""
        low = x.amin(dim=1, keepdim=True)
        shifted = x - low + 1.0
        pooled = shifted.pow(self.gem_p).mean(dim=1).pow(1.0 / self.gem_p)
        return pooled + low.squeeze(1) - 1.0

    def forward(self, inputs: Any) -> Any:
        x = inputs + self.position_scale * self.position_table
        x = F.silu(self.encoder_start(x))
        for block in self.blocks:
            if self.bf16_blocks:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    x = block(x)
                x = x.float()
            else:
                x = block(x)
        x = self.projection(self.pool(x))
        # As tf.math.l2_normalize: divide by sqrt(max(sum of squares, 1e-12)).
        return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True).clamp_min(1e-12))


# -- weights from ONNX -------------------------------------------------------------------


def _only(names: list[str], pattern: str, what: str) -> str:
    found = [n for n in names if re.search(pattern, n)]
    if len(found) != 1:
        raise ValueError(
            f"from_onnx: expected one tensor for {what} (pattern {pattern!r}), found "
            f"{len(found)}: {found[:4]}. Is this a RETSim v1 model?"
        )
    return found[0]


def _toeplitz_diagonals(matrix: np.ndarray) -> np.ndarray:
    """The 2n - 1 diagonals of a (nearly) Toeplitz matrix, each averaged over its entries;
    index ``n - 1 + d`` holds the diagonal ``j - i = d``."""
    n = matrix.shape[0]
    return np.array(
        [np.diagonal(matrix, offset=d).mean() for d in range(-(n - 1), n)], dtype=np.float32
    )


def onnx_weights(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """:class:`RETSimTorch` state dict (numpy arrays) read from a RETSim ONNX file.

    Reads either the original TF-converted RETSim v1 graph (weights located by their TF
    layer names, the relative position bias recovered from its constant-folded product)
    or a file written by :func:`export_onnx` (initializers named after the state dict).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The file is not a RETSim model.
    """
    onnx = _onnx()
    from onnx import numpy_helper

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"from_onnx: model file {str(path)!r} does not exist.")
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    expected = RETSimTorch().state_dict()
    if all(name in inits for name in expected):  # our own export
        return {name: np.array(inits[name], dtype=np.float32) for name in expected}

    names = list(inits)
    prefix = r"(?:^|/)"

    def get(pattern: str, what: str) -> np.ndarray:
        return np.asarray(inits[_only(names, pattern, what)], dtype=np.float32)

    # The relative position bias of each block is MatMul(A, B) of two folded constants.
    producers = {out: node for node in model.graph.node for out in node.output}

    def bias(block: str) -> np.ndarray:
        pattern = prefix + block + r"/(?:.*/)?einsum_3/Einsum:0$"
        out = _only(list(producers), pattern, f"{block} bias")
        node = producers[out]
        if node.op_type != "MatMul" or not all(i in inits for i in node.input):
            raise ValueError(f"from_onnx: {out} is not a product of two constants.")
        a, b = (np.asarray(inits[i], np.float64) for i in node.input)
        return _toeplitz_diagonals(a @ b)

    position = get(r"scaled_sinusoidal_positional_embedding/.*mul_3:0$", "position embedding")
    # Row 0 is [sin 0, ..., cos 0, ...] * scale: the cosine half holds the scale.
    scale = float(position[0, CODE_BITS // 2])
    state = {
        "position_table": position / scale,
        "position_scale": np.array(scale, np.float32),
        "encoder_start.weight": get(r"encoder_start/Tensordot/ReadVariableOp:0$", "input layer").T,
        "encoder_start.bias": get(r"encoder_start/BiasAdd/ReadVariableOp:0$", "input bias"),
        "projection.weight": get(r"similarity/.*MatMul/ReadVariableOp:0$", "projection").T,
        "projection.bias": get(r"similarity/.*BiasAdd/ReadVariableOp:0$", "projection bias"),
    }
    # TF names the two blocks gau / gau_1 and numbers their layers on: dense, dense_1 in
    # the first, dense_2, dense_3 in the second; scaled_norm, scaled_norm_1.
    for i, block in enumerate(("gau", "gau_1")):
        d_in, d_out = f"dense_{2 * i}" if i else "dense", f"dense_{2 * i + 1}"
        norm = "scaled_norm_1" if i else "scaled_norm"
        at = prefix + block + "/(?:.*/)?"
        state.update({
            f"blocks.{i}.norm.scale": get(at + rf"{norm}/mul_1/ReadVariableOp:0$", "norm scale"),
            f"blocks.{i}.dense_in.weight": get(at + rf"{d_in}/Tensordot/ReadVariableOp:0$", "GAU in").T,
            f"blocks.{i}.dense_in.bias": get(at + rf"{d_in}/BiasAdd/ReadVariableOp:0$", "GAU in bias"),
            f"blocks.{i}.gamma": get(at + r"mul/ReadVariableOp:0$", "GAU gamma"),
            f"blocks.{i}.beta": get(at + r"add/ReadVariableOp:0$", "GAU beta"),
            f"blocks.{i}.rel_bias": bias(block),
            f"blocks.{i}.dense_out.weight": get(at + rf"{d_out}/Tensordot/ReadVariableOp:0$", "GAU out").T,
            f"blocks.{i}.dense_out.bias": get(at + rf"{d_out}/BiasAdd/ReadVariableOp:0$", "GAU out bias"),
        })  # fmt: skip
    for name, value in expected.items():
        if tuple(state[name].shape) != tuple(value.shape):
            raise ValueError(
                f"from_onnx: {name} has shape {state[name].shape} in {path}, expected "
                f"{tuple(value.shape)}."
            )
    return {k: np.ascontiguousarray(v, np.float32) for k, v in state.items()}


def from_onnx(path: str | os.PathLike | None = None) -> RETSimTorch:
    """A :class:`RETSimTorch` holding the weights of a RETSim ONNX model.

    Parameters
    ----------
    path : str, os.PathLike or None, default None
        The ONNX file: the original RETSim v1 or one written by :func:`export_onnx`.
        None: the v1 model inside the installed unisim package
        (:func:`neardup.embed.retsim.default_model_path`).

    Returns
    -------
    RETSimTorch
        In eval mode (RETSim has no dropout, so train and eval mode compute the same).
    """
    if path is None:
        from neardup.embed.retsim import default_model_path

        path = default_model_path()
    module = RETSimTorch()
    state = {k: torch.from_numpy(np.array(v)) for k, v in onnx_weights(path).items()}
    module.load_state_dict(state)
    return module.eval()


def export_onnx(module: RETSimTorch, path: str | os.PathLike, *, opset: int = 17) -> Path:
    """Write ``module`` as an ONNX file with RETSim's interface.

    The file has one input ``input_1``, float32 (batch, 512, 24), and one output
    ``embedding_model``, float32 (batch, 256), the batch axis dynamic, like the original;
    :class:`neardup.embed.RETSim` runs it with ``model_path=path``. Weights are stored in
    the file (no external data), under their state-dict names so that :func:`from_onnx`
    can read it back.

    Parameters
    ----------
    module : RETSimTorch
    path : str or os.PathLike
        Output file; its directory is created. Written atomically.
    opset : int, default 17

    Returns
    -------
    Path
    """
    if not isinstance(module, RETSimTorch):
        raise ValueError(
            f"export_onnx: parameter 'module' must be a RETSimTorch; got {type(module).__name__}."
        )
    from neardup.errors import check_int
    from neardup.io.writers import atomic_path

    opset = check_int("export_onnx", "opset", opset, low=13, hint="RETSim needs opset 13+.")
    onnx = _onnx()

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    was_training, was_bf16 = module.training, module.bf16_blocks
    module.eval()
    module.bf16_blocks = False
    example = torch.zeros(2, module.seq_len, CODE_BITS)
    try:
        with atomic_path(path) as tmp, torch.no_grad(), warnings.catch_warnings():
            # The exporter notes it cannot fold the Toeplitz slices; they stay in the graph.
            warnings.filterwarnings("ignore", message=".*[Cc]onstant folding.*")
            # The TorchScript exporter is deprecated in favour of torch.export, which
            # works too but takes 40x longer and renames and transposes the weights.
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            # The TorchScript exporter keeps parameter names as initializer names and
            # needs no extra package; dynamic_axes makes the batch axis symbolic.
            torch.onnx.export(
                module,
                (example,),
                str(tmp),
                input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
                opset_version=opset,
                do_constant_folding=False,
                dynamo=False,
            )
            onnx.checker.check_model(str(tmp))
    finally:
        module.train(was_training)
        module.bf16_blocks = was_bf16
    return path
