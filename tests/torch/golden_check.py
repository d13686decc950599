#!/usr/bin/python3
"""Golden check of encbench's vision tower against PyTorch.

Runs tests/torch/export_golden.cpp's exporter (weights, pixels and the device's per-layer outputs
of a tiny preset, format in docs/encoder.md) and recomputes the tower in PyTorch, fp32, written
from the structure of Hugging Face transformers' Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision code:
Conv3d patch embedding, rot_pos_emb (2-D rotary), get_window_index, cu_seqlens and the
cu_seqlens-masked eager attention, the blocks, PatchMerger / Qwen2_5_VLPatchMerger /
Qwen3VLVisionPatchMerger (+ deepstack mergers at deepstack_visual_indexes) and, for Qwen2.5-VL,
hidden_states[reverse_indices] after the merger. Nothing here comes from encbench's code.

Two comparisons, relative error ||encbench - torch|| / ||torch|| per output:
  free-running: torch runs the whole tower from the pixels; every layer's output, the merger
                output and the deepstack outputs are compared;
  per-layer:    each torch block runs on encbench's own input to that block (teacher forcing),
                so an error shows at the layer that made it.
--expect pass (default): all below --tolerance (1e-4).
--expect full-attention-fail: the per-layer errors exceed the tolerance exactly at the model's
                full-attention layers and stay below it everywhere else (the pr6448 bug).

Exit 0 = as expected, 1 = not, 2 = bad input, 77 = skipped (no PyTorch for /usr/bin/python3).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the ctest maps 77 to SKIP
    print(f"SKIP: PyTorch is not importable by {sys.executable} ({e}); "
          "install Debian's python3-torch (scripts/install-deps.sh --test)")
    sys.exit(77)

torch.set_num_threads(2)
DT = torch.float32


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name + ".npy"))).to(DT)


# ---- Hugging Face structure -------------------------------------------------------------------

def rot_pos_ids(grid_thw, merge):
    """Qwen2VisionTransformerPretrainedModel.rot_pos_emb's position ids."""
    pos_ids = []
    for t, h, w in grid_thw:
        hpos = torch.arange(h).unsqueeze(1).expand(-1, w)
        hpos = hpos.reshape(h // merge, merge, w // merge, merge).permute(0, 2, 1, 3).flatten()
        wpos = torch.arange(w).unsqueeze(0).expand(h, -1)
        wpos = wpos.reshape(h // merge, merge, w // merge, merge).permute(0, 2, 1, 3).flatten()
        pos_ids.append(torch.stack([hpos, wpos], dim=-1).repeat(t, 1))
    return torch.cat(pos_ids, dim=0)


def rotary_pos_emb(grid_thw, merge, head_dim, theta=10000.0):
    """VisionRotaryEmbedding(head_dim // 2) indexed by the (h, w) position ids."""
    dim = head_dim // 2
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
    max_grid = max(max(h, w) for _, h, w in grid_thw)
    seq = torch.arange(max_grid, dtype=inv_freq.dtype)
    freqs = torch.outer(seq, inv_freq)
    return freqs[rot_pos_ids(grid_thw, merge)].flatten(1)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb_vision(q, k, cos, sin):
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()
    q_embed = (q.float() * cos) + (rotate_half(q.float()) * sin)
    k_embed = (k.float() * cos) + (rotate_half(k.float()) * sin)
    return q_embed.to(q.dtype), k_embed.to(k.dtype)


def get_window_index(grid_thw, window_size, merge, patch):
    """Qwen2_5_VisionTransformerPretrainedModel.get_window_index."""
    window_index, cu_window_seqlens = [], [0]
    window_index_id = 0
    vit_merger_window_size = window_size // merge // patch
    unit = merge * merge
    for grid_t, grid_h, grid_w in grid_thw:
        llm_h, llm_w = grid_h // merge, grid_w // merge
        index = torch.arange(grid_t * llm_h * llm_w).reshape(grid_t, llm_h, llm_w)
        pad_h = vit_merger_window_size - llm_h % vit_merger_window_size
        pad_w = vit_merger_window_size - llm_w % vit_merger_window_size
        num_windows_h = (llm_h + pad_h) // vit_merger_window_size
        num_windows_w = (llm_w + pad_w) // vit_merger_window_size
        index_padded = F.pad(index, (0, pad_w, 0, pad_h), "constant", -100)
        index_padded = index_padded.reshape(grid_t, num_windows_h, vit_merger_window_size,
                                            num_windows_w, vit_merger_window_size)
        index_padded = index_padded.permute(0, 1, 3, 2, 4).reshape(
            grid_t, num_windows_h * num_windows_w, vit_merger_window_size, vit_merger_window_size)
        seqlens = (index_padded != -100).sum([2, 3]).reshape(-1)
        index_padded = index_padded.reshape(-1)
        index_new = index_padded[index_padded != -100]
        window_index.append(index_new + window_index_id)
        cu_seqlens_tmp = seqlens.cumsum(0) * unit + cu_window_seqlens[-1]
        cu_window_seqlens.extend(cu_seqlens_tmp.tolist())
        window_index_id += (grid_t * llm_h * llm_w)
    window_index = torch.cat(window_index, dim=0)
    cu = torch.unique_consecutive(torch.tensor(cu_window_seqlens, dtype=torch.int32))
    return window_index, cu


def full_cu_seqlens(grid_thw):
    g = torch.tensor(grid_thw)
    cu = torch.repeat_interleave(g[:, 1] * g[:, 2], g[:, 0]).cumsum(dim=0, dtype=torch.int32)
    return F.pad(cu, (1, 0), value=0)


def rms_norm(x, weight, eps=1e-6):  # Qwen2RMSNorm
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x.float() * torch.rsqrt(variance + eps))


def layer_norm(x, weight, bias, eps=1e-6):  # nn.LayerNorm(eps=1e-6)
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


class Tower:
    def __init__(self, d, manifest):
        self.d = d
        self.m = manifest["model"]
        self.grid = [tuple(g) for g in manifest["grid_thw"]]
        m = self.m
        self.hidden = m["hidden_size"]
        self.heads = m["num_heads"]
        self.head_dim = self.hidden // self.heads
        self.merge = m["spatial_merge_size"]
        self.unit = self.merge ** 2
        self.family = m["family"]
        self.windows = m["window_size"] > 0
        self.fullatt = set(m["fullatt_block_indexes"])
        self.deepstack_indexes = m["deepstack_visual_indexes"]
        self.depth = m["depth"]
        self.w = {}

    def W(self, name):
        if name not in self.w:
            self.w[name] = load(self.d, name)
        return self.w[name]

    def norm(self, x, prefix):
        if self.m["norm"] == "rms":
            return rms_norm(x, self.W(prefix + ".weight"))
        return layer_norm(x, self.W(prefix + ".weight"), self.W(prefix + ".bias"))

    def linear(self, x, prefix):
        return F.linear(x, self.W(prefix + ".weight"), self.W(prefix + ".bias"))

    def patch_embed(self, pixels):
        # Conv3d(3, hidden, kernel=stride=(tp, p, p), bias=False) on the processor's flattened patches.
        tp, p = self.m["temporal_patch_size"], self.m["patch_size"]
        x = pixels.view(-1, 3, tp, p, p)
        weight = self.W("patch_embed.weight").view(self.hidden, 3, tp, p, p)
        return F.conv3d(x, weight, stride=(tp, p, p)).view(-1, self.hidden)

    def attention(self, x, l, cu_seqlens, cos, sin):
        seq = x.shape[0]
        q, k, v = self.linear(x, f"blocks.{l}.attn.qkv").reshape(seq, 3, self.heads, -1).permute(1, 0, 2, 3).unbind(0)
        q, k = apply_rotary_pos_emb_vision(q, k, cos, sin)
        # eager attention over a block-diagonal mask built from cu_seqlens
        mask = torch.full([1, seq, seq], torch.finfo(q.dtype).min, dtype=q.dtype)
        for i in range(1, len(cu_seqlens)):
            a, b = int(cu_seqlens[i - 1]), int(cu_seqlens[i])
            mask[..., a:b, a:b] = 0
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        w = torch.matmul(q, k.transpose(1, 2)) / (self.head_dim ** 0.5) + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(0, 1).reshape(seq, -1)
        return self.linear(out, f"blocks.{l}.attn.proj")

    def mlp(self, x, l):
        p = f"blocks.{l}.mlp"
        kind = self.m["mlp_kind"]
        if kind == "silu-gated":  # Qwen2_5_VLMLP: down(silu(gate(x)) * up(x))
            fc1_w, fc1_b = self.W(p + ".fc1.weight"), self.W(p + ".fc1.bias")
            inter = fc1_w.shape[0] // 2
            gate = F.linear(x, fc1_w[:inter], fc1_b[:inter])
            up = F.linear(x, fc1_w[inter:], fc1_b[inter:])
            return self.linear(F.silu(gate) * up, p + ".fc2")
        h = self.linear(x, p + ".fc1")
        h = h * torch.sigmoid(1.702 * h) if kind == "quick-gelu" else F.gelu(h, approximate="tanh")
        return self.linear(h, p + ".fc2")

    def block(self, x, l, cu_seqlens, cos, sin):
        x = x + self.attention(self.norm(x, f"blocks.{l}.norm1"), l, cu_seqlens, cos, sin)
        return x + self.mlp(self.norm(x, f"blocks.{l}.norm2"), l)

    def merger(self, x, prefix, post_shuffle):
        # PatchMerger (ln_q then view) / Qwen3VLVisionPatchMerger (use_postshuffle_norm: view then norm)
        merged = self.hidden * self.unit
        x = self.norm(x.view(-1, merged), prefix + ".norm") if post_shuffle else self.norm(x, prefix + ".norm")
        x = x.view(-1, merged)
        return self.linear(F.gelu(self.linear(x, prefix + ".fc1")), prefix + ".fc2")

    def prepare(self):
        """Per-forward metadata as the HF forward builds it (window order for Qwen2.5-VL)."""
        rpe = rotary_pos_emb(self.grid, self.merge, self.head_dim)
        cu = full_cu_seqlens(self.grid)
        seq = rpe.shape[0]
        if self.windows:
            self.window_index, self.cu_window = get_window_index(
                self.grid, self.m["window_size"], self.merge, self.m["patch_size"])
            rpe = rpe.reshape(seq // self.unit, self.unit, -1)[self.window_index].reshape(seq, -1)
            self.reverse_indices = torch.argsort(self.window_index)
        emb = torch.cat((rpe, rpe), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.cu = cu

    def cu_for(self, l):
        return self.cu if (not self.windows or l in self.fullatt) else self.cu_window

    def to_window(self, x):
        if not self.windows:
            return x
        seq = x.shape[0]
        return x.reshape(seq // self.unit, self.unit, -1)[self.window_index].reshape(seq, -1)

    def to_original(self, x):
        if not self.windows:
            return x
        seq = x.shape[0]
        return x.reshape(seq // self.unit, self.unit, -1)[self.reverse_indices].reshape(seq, -1)

    def forward(self, pixels):
        """Free-running tower; returns per-layer outputs (original order), merged, deepstack."""
        x = self.to_window(self.patch_embed(pixels))
        layers, deepstack = [self.to_original(x)], []
        for l in range(self.depth):
            x = self.block(x, l, self.cu_for(l), self.cos, self.sin)
            layers.append(self.to_original(x))
            if l in self.deepstack_indexes:
                k = self.deepstack_indexes.index(l)
                deepstack.append(self.merger(x, f"deepstack.{k}", True))
        merged = self.merger(x, "merger", False)
        if self.windows:
            merged = merged[self.reverse_indices, :]
        return layers, merged, deepstack

    def one_layer(self, x_original, l):
        return self.to_original(self.block(self.to_window(x_original), l, self.cu_for(l), self.cos, self.sin))


def rel(a, b):
    return float(torch.linalg.norm((a.double() - b.double()).flatten()) / torch.linalg.norm(b.double().flatten()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exporter", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--image", action="append", default=[])
    ap.add_argument("--video", action="append", default=[])
    ap.add_argument("--preset", default="optimized")
    ap.add_argument("--expect", choices=["pass", "full-attention-fail"], default="pass")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--keep", help="export into this folder and keep it")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="encbench-golden-") as tmp:
        d = args.keep or tmp
        cmd = [args.exporter, "--model", args.model, "--preset", args.preset, "--out", d]
        for i in args.image:
            cmd += ["--image", i]
        for v in args.video:
            cmd += ["--video", v]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            return 2 if r.returncode == 2 else 1
        with open(os.path.join(d, "manifest.json")) as f:
            manifest = json.load(f)
        tower = Tower(d, manifest)
        tower.prepare()
        device = [load(d, f"hidden.{s}") for s in range(tower.depth + 1)]
        with torch.no_grad():
            layers, merged, deepstack = tower.forward(load(d, "pixels"))
            forced = [tower.one_layer(device[l], l) for l in range(tower.depth)]
        m = tower.m
        print(f"{m['name']} ({manifest['preset']}: {manifest['toggles']}), grid_thw {manifest['grid_thw']}, "
              f"{manifest['num_patches']} patches -> {manifest['output_tokens']} tokens; "
              f"full-attention layers {sorted(tower.fullatt) if tower.windows else 'all'}; "
              f"deepstack {tower.deepstack_indexes or '-'}")
        if tower.windows:
            print(f"  window index: {len(tower.cu_window) - 1} windows, cu_window_seqlens {tower.cu_window.tolist()}")
        print(f"  cu_seqlens {tower.cu.tolist()}")
        tol = args.tolerance
        free = {"patch_embed": rel(device[0], layers[0])}
        for l in range(tower.depth):
            free[f"layer {l}"] = rel(device[l + 1], layers[l + 1])
        free["merger"] = rel(load(d, "merged"), merged)
        for k, out in enumerate(deepstack):
            free[f"deepstack {k} (after layer {tower.deepstack_indexes[k]})"] = rel(load(d, f"deepstack_out.{k}"), out)
        per_layer = [rel(device[l + 1], forced[l]) for l in range(tower.depth)]
        print(f"  {'output':<34} {'free-running':>13} {'per-layer':>13}")
        for name, e in free.items():
            pl = ""
            if name.startswith("layer "):
                l = int(name.split()[1])
                kind = "full" if (not tower.windows or l in tower.fullatt) else "window"
                name = f"{name} ({kind})"
                pl = f"{per_layer[l]:.3e}"
            print(f"  {name:<34} {e:>13.3e} {pl:>13}")

        if args.expect == "pass":
            bad = [n for n, e in free.items() if not e < tol] + \
                  [f"layer {l} (per-layer)" for l, e in enumerate(per_layer) if not e < tol]
            if bad:
                print(f"FAIL: above {tol:g}: {', '.join(bad)}")
                return 1
            print(f"PASS: every output within {tol:g} of PyTorch "
                  f"(max free-running {max(free.values()):.3e}, max per-layer {max(per_layer):.3e})")
            return 0
        full = sorted(tower.fullatt) if tower.windows else list(range(tower.depth))
        differs = [l for l, e in enumerate(per_layer) if not e < tol]
        if differs == full:
            print(f"PASS (as expected): the per-layer output differs from PyTorch exactly at the "
                  f"full-attention layers {full} (min there {min(per_layer[l] for l in full):.3e}; "
                  f"max elsewhere {max([e for l, e in enumerate(per_layer) if l not in full] or [0]):.3e})")
            return 0
        print(f"FAIL: expected differences exactly at layers {full}, got {differs}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
