"""Models in plain PyTorch for tilesync's torch front end, as their libraries write them.

    LlamaMLP        Hugging Face's LlamaMLP: down(silu(gate(x)) * up(x))
    GPT2Block       a GPT-2/3 block: attention and the MLP (c_fc, tanh GeLU, c_proj)
    NeRFMLP         NeRF's MLP stack: 8 Linear+ReLU layers of width 256 and the heads (the
                    input again before layer `skip`; density from the trunk's output; colour
                    from cat([feature, direction]))
    EdgeMLP         MeshGraphNets' edge MLP: the edge's and its two nodes' latents
                    concatenated, Linear+ReLU, Linear+ReLU, Linear, LayerNorm
    GPT2Attention   GPT-2's causal self-attention: heads viewed and transposed by hand, the
                    scores over sqrt(D), masked_fill of the tril mask with -inf
    CausalSelfAttention  nanoGPT's: the same through F.scaled_dot_product_attention(is_causal=
                    True)
    OneHeadAttention  one head of self-attention over one sequence (tokens x width), its scores
                    unscaled or times `scale` (1 / sqrt(width) as in GPT)
    BasicBlock      ResNet's basic block: conv3x3, BN, ReLU, conv3x3, BN, + x, ReLU
    Conv1D          Hugging Face's (transformers.pytorch_utils): a linear layer whose weight
                    is stored in x out (K x N, nn.Linear's transpose), x · w through addmm
    HFGPT2MLP, HFGPT2Attention, HFGPT2Block   GPT-2 as Hugging Face's modeling_gpt2 writes
                    it: its projections Conv1D (c_fc, c_proj, c_attn), the same pieces as
                    GPT2MLP / GPT2Attention / GPT2Block

    EXAMPLES: name -> (make(), example input shapes, dtype); llama65b_mlp_tp8 is LLaMA-65B's
              MLP split 8 ways, the shapes of `tilesync bench mlp`

Run one against eager PyTorch, with tilesync's choices printed:
    python -m tilesync.examples.torch_models llama_mlp
(on a machine without an NVIDIA GPU every piece stays with torch and says why).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class LlamaMLP(nn.Module):
    def __init__(self, hidden_size: int = 4096, intermediate_size: int = 11008):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class GPT2MLP(nn.Module):
    def __init__(self, n_embd: int = 768):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Attention(nn.Module):
    def __init__(self, n_embd: int = 768, n_head: int = 12):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.n_head)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(b, t, c)
        return self.c_proj(y)


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention (Karpathy's model.py), its flash path: dropout only in training."""

    def __init__(self, n_embd: int = 768, n_head: int = 12, bias: bool = True,
                 dropout: float = 0.0):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()  # nanoGPT's names
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class DecodeAttention(nn.Module):
    """One decoding step of nanoGPT's attention with a KV cache: the new tokens' q, k and v,
    the cached keys and values (batch x heads x cached tokens x head width) before theirs;
    the output only (the cache's update is the caller's: cat's results, kept whole)."""

    def __init__(self, n_embd: int = 768, n_head: int = 12):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor,
                v_cache: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (z.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for z in (q, k, v))
        k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v)  # one new token: no mask
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GPT2Block(nn.Module):
    def __init__(self, n_embd: int = 768, n_head: int = 12):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = GPT2Attention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = GPT2MLP(n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NeRFMLP(nn.Module):
    def __init__(self, depth: int = 8, width: int = 256, in_xyz: int = 64, in_dir: int = 64,
                 skip: int = 4):
        super().__init__()
        self.skip = skip
        self.layers = nn.ModuleList(
            [nn.Linear(in_xyz, width)]
            + [nn.Linear(width + (in_xyz if i == skip else 0), width) for i in range(1, depth)])
        self.sigma = nn.Linear(width, 1)
        self.feature = nn.Linear(width, width)
        self.rgb_hidden = nn.Linear(width + in_dir, width // 2)
        self.rgb = nn.Linear(width // 2, 3)

    def forward(self, xyz: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
        h = xyz
        for i, layer in enumerate(self.layers):
            if i == self.skip:
                h = torch.cat([xyz, h], dim=-1)
            h = F.relu(layer(h))
        sigma = self.sigma(h)
        h = F.relu(self.rgb_hidden(torch.cat([self.feature(h), direction], dim=-1)))
        return torch.cat([torch.sigmoid(self.rgb(h)), sigma], dim=-1)


class EdgeMLP(nn.Module):
    """MeshGraphNets' edge update (Pfaff et al.): an MLP of the edge latent and its sender's
    and receiver's node latents, ending in a LayerNorm, as its code base writes it."""

    def __init__(self, latent: int = 128, layers: int = 2):
        super().__init__()
        widths = [3 * latent] + [latent] * (layers + 1)
        mlp: list[nn.Module] = []
        for i in range(layers + 1):
            mlp.append(nn.Linear(widths[i], widths[i + 1]))
            if i < layers:
                mlp.append(nn.ReLU())
        mlp.append(nn.LayerNorm(latent))
        self.mlp = nn.Sequential(*mlp)

    def forward(self, edges: torch.Tensor, senders: torch.Tensor,
                receivers: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([edges, senders, receivers], dim=-1))


class OneHeadAttention(nn.Module):
    def __init__(self, width: int = 64, bias: bool = True, scale: float | None = None):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width, bias=bias)
        self.proj = nn.Linear(width, width, bias=bias)
        self.width, self.scale = width, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).split(self.width, dim=-1)
        scores = q @ k.transpose(-2, -1)
        if self.scale is not None:
            scores = scores * self.scale
        weights = torch.softmax(scores, dim=-1)
        return self.proj(weights @ v)


class Conv1D(nn.Module):
    """Hugging Face's Conv1D (transformers/pytorch_utils.py), as it is written there: GPT-1's
    and GPT-2's linear layer. Its weight is in x out, nx x nf (nn.Linear's is out x in)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.nx = nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)  # noqa: RUF005 - Hugging Face's code, as written
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class HFGPT2MLP(nn.Module):
    """Hugging Face's GPT2MLP: c_fc, the activation, c_proj, dropout; the activation GPT-2's
    tanh GeLU as F.gelu computes it (Hugging Face's "gelu_pytorch_tanh"; its default
    "gelu_new" spells the same formula out in elementwise ops, which no pattern reads)."""

    def __init__(self, intermediate_size: int = 3072, embed_dim: int = 768,
                 resid_pdrop: float = 0.1):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = nn.GELU(approximate="tanh")
        self.dropout = nn.Dropout(resid_pdrop)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class HFGPT2Attention(nn.Module):
    """Hugging Face's GPT2Attention's projections, names and causal mask buffer (c_attn,
    split_size, c_proj, resid_dropout; `bias`, sliced to the sequence's length) around
    attention whose heads are viewed and masked as GPT2Attention above does (Hugging Face
    masks with torch.where and the dtype's minimum, which no pattern reads as the causal
    mask; masked_fill with -inf is torch's is_causal). Like GPT2Attention, torch.fx's
    symbolic_trace cannot trace it (sizes as slice bounds): Dynamo captures it."""

    def __init__(self, embed_dim: int = 768, num_heads: int = 12, max_positions: int = 1024,
                 resid_pdrop: float = 0.1):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.split_size = embed_dim
        self.c_attn = Conv1D(3 * embed_dim, embed_dim)
        self.c_proj = Conv1D(embed_dim, embed_dim)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        self.register_buffer("bias", torch.ones(max_positions, max_positions,
                                                dtype=torch.bool).tril(), persistent=False)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        b, t, _ = hidden_states.size()
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = (z.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
                             for z in (query, key, value))
        attn_weights = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_dim)
        causal_mask = self.bias[:t, :t]
        attn_weights = attn_weights.masked_fill(~causal_mask, float("-inf")).softmax(dim=-1)
        attn_output = torch.matmul(attn_weights, value).transpose(1, 2)
        attn_output = attn_output.reshape(b, t, self.embed_dim)
        return self.resid_dropout(self.c_proj(attn_output))


class HFGPT2Block(nn.Module):
    """Hugging Face's GPT2Block: ln_1, attention, the residual; ln_2, the MLP, the residual."""

    def __init__(self, embed_dim: int = 768, num_heads: int = 12):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed_dim)
        self.attn = HFGPT2Attention(embed_dim, num_heads)
        self.ln_2 = nn.LayerNorm(embed_dim)
        self.mlp = HFGPT2MLP(4 * embed_dim, embed_dim)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = hidden_states + self.attn(self.ln_1(hidden_states))
        return hidden_states + self.mlp(self.ln_2(hidden_states))


class BasicBlock(nn.Module):
    def __init__(self, channels: int = 64):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


EXAMPLES = {
    "llama_mlp": (lambda: LlamaMLP(1024, 2816), [(4, 64, 1024)], torch.float16),
    # LLaMA-65B's MLP on one of 8 tensor-parallel GPUs (the MLP bench's "llama"), 4 x 256 tokens
    "llama65b_mlp_tp8": (lambda: LlamaMLP(8192, 2816), [(4, 256, 8192)], torch.float16),
    "gpt2_block": (lambda: GPT2Block(768, 12), [(4, 64, 768)], torch.float16),
    # GPT-2 small's causal self-attention on one sequence of 256 tokens: as GPT-2 writes it,
    # and as nanoGPT does through scaled_dot_product_attention
    "gpt2_attention": (lambda: GPT2Attention(768, 12), [(1, 256, 768)], torch.float16),
    "gpt2_sdpa_attention": (lambda: CausalSelfAttention(768, 12), [(1, 256, 768)],
                            torch.float16),
    # the same through Hugging Face's Conv1D projections (weights stored in x out)
    "hf_gpt2_block": (lambda: HFGPT2Block(768, 12), [(4, 64, 768)], torch.float16),
    "hf_gpt2_attention": (lambda: HFGPT2Attention(768, 12), [(1, 256, 768)], torch.float16),
    # a decoding step of GPT-2 small's attention: one new token for 4 sequences after 512
    # cached ones (the fused program's KV-cache form)
    "gpt2_decode": (lambda: DecodeAttention(768, 12),
                    [(4, 1, 768), (4, 12, 512, 64), (4, 12, 512, 64)], torch.float16),
    "nerf_mlp": (lambda: NeRFMLP(), [(4096, 64), (4096, 64)], torch.float16),
    # NeRF as its paper writes it (63-wide position and 27-wide direction encodings, the input
    # again into the sixth layer, 3 colours) on 2^16 samples: `tilesync bench dataflow-mlp`'s
    "nerf_mlp_rays": (lambda: NeRFMLP(in_xyz=63, in_dir=27, skip=5), [(1 << 16, 63), (1 << 16, 27)],
                      torch.float16),
    "resnet_block": (lambda: BasicBlock(64), [(8, 64, 56, 56)], torch.float16),
    # MeshGraphNets' edge MLP on 2^16 edges of 128-wide latents: `bench dataflow-mlp`'s
    "edge_mlp": (lambda: EdgeMLP(128), [(1 << 16, 128)] * 3, torch.float16),
}


SEQUENCE_MODELS = frozenset({"gpt2_block", "gpt2_attention", "gpt2_sdpa_attention",
                             "hf_gpt2_block", "hf_gpt2_attention"})
"""Examples whose forward reads batch x tokens x width (GPT-2's `b, t, c = x.size()`)."""


def input_shapes(name: str, rows: int | None = None) -> list[tuple[int, ...]]:
    """The example's input shapes; `rows`: each input (rows, features) instead (the models on
    token or sample rows, not the ResNet block), one sequence of `rows` tokens for those that
    read a batch of sequences (SEQUENCE_MODELS)."""
    if name not in EXAMPLES:
        raise ValueError(f"no example model {name!r}; the examples: {', '.join(EXAMPLES)}")
    shapes = EXAMPLES[name][1]
    if rows is None:
        return list(shapes)
    if any(len(s) == 4 for s in shapes):
        raise ValueError(f"{name} takes images or KV caches: no rows to set")
    if name in SEQUENCE_MODELS:
        return [(1, rows, s[-1]) for s in shapes]
    return [(rows, s[-1]) for s in shapes]


def example(name: str, device: str = "cpu", seed: int = 0, rows: int | None = None):
    """(model in eval mode on `device` in the example's dtype, example inputs of
    input_shapes(name, rows))."""
    shapes = input_shapes(name, rows)
    make, _, dtype = EXAMPLES[name]
    torch.manual_seed(seed)
    model = make().to(device=device, dtype=dtype).eval()
    inputs = [torch.randn(s, device=device, dtype=dtype) for s in shapes]
    return model, inputs


def main(argv: list[str] | None = None) -> int:
    import argparse

    import tilesync.frontend.torch as tt

    parser = argparse.ArgumentParser(prog="python -m tilesync.examples.torch_models")
    parser.add_argument("name", choices=sorted(EXAMPLES))
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, inputs = example(args.name, device)
    compiled = tt.compile(model, inputs, log=True)
    with torch.no_grad():
        ref, out = model(*inputs), compiled(*inputs)
    error = float((out.float() - ref.float()).norm() / ref.float().norm())
    print(f"{args.name}: relative error against eager {error:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
