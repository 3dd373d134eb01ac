"""Honest MFU: achieved model FLOPs / (peak dense FLOPs of the device x time).

    from exporter.mfu import MFUMeter
    mfu = MFUMeter(rlx, "Qwen/Qwen2.5-3B/config.json", dtype="bf16")   # device from the GPU sampler
    mfu.record(role="actor", phase="train", tokens=n_tok, seconds=t_update,
               world_size=8, seq_len=mean_len)           # -> rl_mfu_ratio{source="exporter"}

Model FLOPs (the PaLM/torchtitan/AReaL convention, seed 003): a multiply-add is
2 FLOPs; per token the forward pass costs 2 x (active matmul parameters) plus
causal attention, 2 x heads x head_dim x (L+1) per layer for a sequence of
length L (AReaL: 2*h*d*L*(L+1) per sequence). Training is 3 x forward
(backward ~ 2 x forward); inference (rollout, old-log-prob/ref scoring) is 1 x.
Matmul parameters are the attention projections, the MLP (gated: gate, up,
down), for MoE only the routed experts a token uses (num_experts_per_tok) plus
router and shared experts, and the LM head; the embedding lookup is not a
matmul and is not counted. Activation recomputation, optimizer math, softmax and
norms are not model FLOPs and are not counted (so MFU <= HFU).

Peak: the dense (non-sparse) tensor-core FLOP/s of ONE device for the dtype, from
PEAKS keyed by NVML's device name, or the user's override. An unknown device
yields no MFU value, a counted rl_exporter_mfu_skipped_total{reason="unknown_gpu"}
and one log line: never a fallback peak (torchtitan's silent A100 fallback
reported 152 % and 563 % MFU on newer GPUs).
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
from dataclasses import dataclass

log = logging.getLogger("rl_exporter")

DTYPES = ("bf16", "fp16", "fp8", "tf32")
PHASES = {"train": 3, "inference": 1}

# ------------------------------------------------------------------ peak table
# Dense tensor FLOP/s per device (vendor datasheets' sparse figures halved). None: the device
# has no such mode, or no dense figure is published: MFU is then not computed for that dtype.
# Order matters: the first regex that matches the NVML/amdsmi device name wins.
T = 1e12
_HOPPER_SXM = {"bf16": 989.5 * T, "fp8": 1979 * T, "tf32": 494.5 * T}
_HOPPER_NVL = {"bf16": 835.5 * T, "fp8": 1670.5 * T, "tf32": 417.5 * T}
PEAKS: list[tuple[str, str, dict[str, float | None]]] = [
    # (regex on the device name, table key, peaks)
    (r"\bGB200\b", "GB200", {"bf16": 2500 * T, "fp8": 5000 * T, "tf32": 1250 * T}),
    (r"\bGB300\b", "GB300", {"bf16": 2500 * T, "fp8": 5000 * T, "tf32": None}),
    (r"\bB200\b", "B200", {"bf16": 2250 * T, "fp8": 4500 * T, "tf32": 1125 * T}),
    (r"\bB300\b", "B300", {"bf16": 2250 * T, "fp8": 4500 * T, "tf32": None}),
    (r"\bGB10\b", "GB10", {"bf16": None, "fp8": None, "tf32": None}),  # only 1 PFLOP FP4 sparse published
    (r"\bH100\b.*\bNVL\b", "H100 NVL", _HOPPER_NVL),
    (r"\bH100\b.*\bPCIe\b", "H100 PCIe", {"bf16": 756.5 * T, "fp8": 1513 * T, "tf32": 378 * T}),
    (r"\bH100\b.*\b(SXM|HBM3)", "H100 SXM", _HOPPER_SXM),
    (r"\bH800\b.*\bPCIe\b", "H800 PCIe", {"bf16": 756.5 * T, "fp8": 1513 * T, "tf32": 378 * T}),
    (r"\bH800\b", "H800 SXM", _HOPPER_SXM),
    (r"\bGH200\b", "GH200", _HOPPER_SXM),
    (r"\bH200 NVL\b", "H200 NVL", _HOPPER_NVL),
    (r"\bH200\b", "H200 SXM", _HOPPER_SXM),
    (r"\bH20\b", "H20", {"bf16": 148 * T, "fp8": 296 * T, "tf32": 74 * T}),
    (r"\bA100\b", "A100", {"bf16": 312 * T, "fp8": None, "tf32": 156 * T}),
    (r"\bA800\b", "A800", {"bf16": 312 * T, "fp8": None, "tf32": 156 * T}),
    (r"\bL40S\b", "L40S", {"bf16": 362.05 * T, "fp8": 733 * T, "tf32": 183 * T}),
    (r"\bL40\b", "L40", {"bf16": 181.05 * T, "fp8": 362 * T, "tf32": 90.5 * T}),
    (r"\bL4\b", "L4", {"bf16": 121 * T, "fp8": 242.5 * T, "tf32": 60 * T}),
    (r"\bA10\b", "A10", {"bf16": 125 * T, "fp8": None, "tf32": 62.5 * T}),
    (r"\bRTX 4090\b", "RTX 4090", {"bf16": 165.2 * T, "fp8": 330.3 * T, "tf32": 82.6 * T}),  # FP32 accum.
    (r"\bRTX A6000\b", "RTX A6000", {"bf16": 154.8 * T, "fp8": None, "tf32": 77.4 * T}),
    (r"\bMI355X\b", "MI355X", {"bf16": 2500 * T, "fp8": 5000 * T, "tf32": None}),
    (r"\bMI325X\b", "MI325X", {"bf16": 1307.4 * T, "fp8": 2614.9 * T, "tf32": 653.7 * T}),
    (r"\bMI300X\b", "MI300X", {"bf16": 1307.4 * T, "fp8": 2614.9 * T, "tf32": 653.7 * T}),
    (r"\bMI250X\b", "MI250X (per GCD)", {"bf16": 191.5 * T, "fp8": None, "tf32": None}),
]
_COMPILED = [(re.compile(rx, re.I), key, peaks) for rx, key, peaks in PEAKS]


class UnknownGPU(LookupError):
    pass


def lookup_peak(device_name: str, dtype: str = "bf16",
                overrides: dict[str, dict[str, float] | float] | None = None) -> tuple[str, float | None]:
    """(table key, dense peak FLOP/s or None) for a device name. Raises UnknownGPU.

    `overrides` maps a device name (or any case-insensitive substring of it) to a
    peak, or to {dtype: peak}; it is consulted before the built-in table."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    table_dtype = "bf16" if dtype == "fp16" else dtype
    for key, val in (overrides or {}).items():
        if key.lower() in device_name.lower():
            if isinstance(val, dict):
                v = val.get(dtype, val.get(table_dtype))
                if v is not None or dtype in val or table_dtype in val:
                    return key, v
            else:
                return key, float(val)
    for rx, key, peaks in _COMPILED:
        if rx.search(device_name):
            return key, peaks.get(table_dtype)
    raise UnknownGPU(device_name)


# ------------------------------------------------------------------ model FLOPs
@dataclass(frozen=True)
class ModelFlops:
    """The two numbers model FLOPs need, from an HF config or given directly."""

    matmul_params: int      # active matmul parameters per token (incl. LM head, excl. embedding)
    attn_layers: int        # layers with full causal attention
    heads: int              # query heads
    head_dim: int
    total_params: int = 0   # all parameters (MoE: all experts), for information

    @classmethod
    def from_config(cls, config: dict | str | os.PathLike) -> "ModelFlops":
        return model_flops(config)

    def forward_per_token(self, seq_len: float) -> float:
        """Forward FLOPs per token for sequences of length seq_len (0: no attention term)."""
        return 2.0 * self.matmul_params + 2.0 * self.attn_layers * self.heads * self.head_dim * (
            seq_len + 1 if seq_len else 0)

    def per_token(self, seq_len: float, phase: str = "train") -> float:
        return PHASES[phase] * self.forward_per_token(seq_len)

    def per_sequences(self, seq_lens, phase: str = "train") -> float:
        """Exact total for a batch of sequences (packed batches: sum per sequence, AReaL)."""
        n = sum(seq_lens)
        attn = sum(L * (L + 1) for L in seq_lens)
        return PHASES[phase] * (2.0 * self.matmul_params * n
                                + 2.0 * self.attn_layers * self.heads * self.head_dim * attn)


def _load(config) -> dict:
    if isinstance(config, dict):
        cfg = config
    else:
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path) as f:
            cfg = json.load(f)
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers: the language model
        cfg = {**cfg, **cfg["text_config"]}
    return cfg


def _first(cfg, *names, default=None):
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def model_flops(config) -> ModelFlops:
    """ModelFlops from an HF config dict (or a config.json path / model directory).

    Supports Llama/Qwen2/Qwen3/Mistral-style dense models and Qwen2-MoE/Qwen3-MoE/
    Mixtral/DeepSeek-style MoE FFNs with standard multi-head/grouped-query attention.
    Raises ValueError for what it cannot count honestly (MLA attention, missing fields)."""
    cfg = _load(config)
    try:
        h = int(_first(cfg, "hidden_size", "n_embd", "d_model"))
        layers = int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
        heads = int(_first(cfg, "num_attention_heads", "n_head"))
        vocab = int(cfg["vocab_size"])
    except (TypeError, KeyError) as e:
        raise ValueError(f"model config lacks a required field ({e}); need hidden_size, "
                         "num_hidden_layers, num_attention_heads, vocab_size") from None
    if cfg.get("kv_lora_rank") or cfg.get("q_lora_rank"):
        raise ValueError("multi-head latent attention (kv_lora_rank) is not counted by this "
                         "formula; pass ModelFlops(...) with your own matmul_params")
    kv = int(_first(cfg, "num_key_value_heads", default=heads))
    d = int(_first(cfg, "head_dim", default=h // heads))
    inter = _first(cfg, "intermediate_size", "n_inner", "ffn_dim")
    attn = h * heads * d + 2 * h * kv * d + heads * d * h          # q, k, v, o
    experts = int(_first(cfg, "num_experts", "num_local_experts", "n_routed_experts", default=0) or 0)
    top_k = int(_first(cfg, "num_experts_per_tok", "num_experts_per_token", "top_k", default=0) or 0)

    dense_mlp = 3 * h * int(inter) if inter is not None else None
    active_moe = total_moe = 0
    sparse_layers: set[int] = set()
    if experts and top_k:
        moe_inter = int(_first(cfg, "moe_intermediate_size", "intermediate_size"))
        expert = 3 * h * moe_inter
        shared = 0
        if cfg.get("shared_expert_intermediate_size"):                  # Qwen2-MoE
            shared = 3 * h * int(cfg["shared_expert_intermediate_size"]) + h  # + shared-expert gate
        elif cfg.get("n_shared_experts"):                                 # DeepSeek-MoE
            shared = int(cfg["n_shared_experts"]) * expert
        router = h * experts
        active_moe = top_k * expert + shared + router
        total_moe = experts * expert + shared + router
        only = set(cfg.get("mlp_only_layers") or ())
        step = int(_first(cfg, "decoder_sparse_step", "moe_layer_freq", default=1) or 1)
        first_dense = int(cfg.get("first_k_dense_replace") or 0)
        sparse_layers = {i for i in range(layers)
                         if i not in only and i >= first_dense and (i + 1) % step == 0}
    if dense_mlp is None and len(sparse_layers) < layers:
        raise ValueError("model config lacks intermediate_size for its dense MLP layers")
    n_dense = layers - len(sparse_layers)
    active = layers * attn + n_dense * (dense_mlp or 0) + len(sparse_layers) * active_moe
    total = layers * attn + n_dense * (dense_mlp or 0) + len(sparse_layers) * total_moe
    lm_head = h * vocab
    embed = 0 if cfg.get("tie_word_embeddings") else h * vocab
    return ModelFlops(matmul_params=active + lm_head, attn_layers=layers, heads=heads, head_dim=d,
                      total_params=total + lm_head + embed)


# ------------------------------------------------------------------ MFU
def mfu(flops: float, seconds: float, world_size: int, peak_per_device: float) -> float:
    """achieved FLOPs / (devices x peak x seconds)."""
    return flops / (seconds * world_size * peak_per_device)


class MFUMeter:
    """Computes MFU from tokens and durations and writes rl_mfu_ratio{source="exporter"}.

    `exporter` may be None (then record() only returns the value). The device is
    `gpu` (an NVML-style name), else the exporter's GPU sampler's model (all
    sampled GPUs must be the same model). `peak_flops` fixes the per-device peak;
    `peaks` overrides table entries ({"H100": {"bf16": 9e14}})."""

    def __init__(self, exporter, model_config, *, dtype: str = "bf16", gpu: str | None = None,
                 peak_flops: float | None = None, peaks: dict | None = None):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
        self.exporter = exporter
        self.model = model_config if isinstance(model_config, ModelFlops) else model_flops(model_config)
        self.dtype = dtype
        self.gpu = gpu
        self.peak_flops = peak_flops
        self.peaks = peaks
        self.skipped: dict[str, int] = {}
        self._logged: set[str] = set()

    # ------------------------------------------------------------ device and peak
    def device(self) -> str | None:
        if self.gpu:
            return self.gpu
        sampler = self.exporter.gpu_sampler if self.exporter is not None else None
        models = sorted(set(sampler.models)) if sampler is not None else []
        if len(models) == 1:
            return models[0]
        if len(models) > 1:
            self._skip("mixed_gpus", f"GPUs of several models are sampled ({', '.join(models)}); "
                       "pass gpu= to MFUMeter")
            return None
        self._skip("no_gpu", "MFU needs the device model: no GPU sampler is running; pass "
                   "gpu='NVIDIA H100 80GB HBM3' (the NVML name) or peak_flops=")
        return None

    def peak(self) -> tuple[str, float] | None:
        """(model label, dense peak FLOP/s per device) or None (counted, logged once)."""
        if self.peak_flops is not None:
            return (self.gpu or "custom"), float(self.peak_flops)
        name = self.device()
        if name is None:
            return None
        try:
            _, value = lookup_peak(name, self.dtype, self.peaks)
        except UnknownGPU:
            self._skip("unknown_gpu", f"no peak FLOP/s known for GPU {name!r}: MFU not computed "
                       "(no fallback peak). Pass peak_flops= or peaks={name: {dtype: flops}}")
            return None
        if value is None:
            self._skip("no_peak_for_dtype", f"GPU {name!r} has no published dense {self.dtype} "
                       "peak in the table; pass peak_flops=")
            return None
        return name, value

    # ------------------------------------------------------------ the computation
    def compute(self, *, phase: str = "train", tokens: float | None = None,
                seconds: float, world_size: int = 1, seq_len: float | None = None,
                seq_lens=None) -> tuple[float, float, str, float] | None:
        """(mfu, flops per token, model label, peak) or None. `tokens` are all tokens the
        `world_size` devices processed in `seconds` (prompt + response); `seq_len` the
        mean sequence length (0: leave attention out), or `seq_lens` every sequence."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {tuple(PHASES)}, not {phase!r}")
        if seq_lens is not None:
            seq_lens = [int(x) for x in seq_lens]
            flops = self.model.per_sequences(seq_lens, phase)
            tokens = sum(seq_lens) if tokens is None else tokens
            if tokens != sum(seq_lens):
                return self._bad(f"tokens={tokens} differ from sum(seq_lens)={sum(seq_lens)}")
        elif seq_len is None:
            return self._bad("MFU needs seq_len (mean sequence length; 0 leaves attention out) "
                             "or seq_lens")
        elif tokens is None:
            return self._bad("MFU needs tokens")
        else:
            flops = self.model.per_token(seq_len, phase) * tokens
        try:
            ok = tokens > 0 and seconds > 0 and world_size >= 1 and math.isfinite(seconds)
        except TypeError:
            ok = False
        if not ok:
            return self._bad(f"tokens={tokens}, seconds={seconds}, world_size={world_size}")
        pk = self.peak()
        if pk is None:
            return None
        name, peak = pk
        return mfu(flops, seconds, world_size, peak), flops / tokens, name, peak

    def record(self, *, role: str = "actor", phase: str = "train", tokens: float | None = None,
               seconds: float, world_size: int = 1, seq_len: float | None = None,
               seq_lens=None) -> float | None:
        """Compute MFU and export it (rl_mfu_ratio{role,phase,source="exporter"}, plus its
        inputs rl_model_flops_per_token and rl_gpu_peak_flops_per_second). Returns it."""
        r = self.compute(phase=phase, tokens=tokens, seconds=seconds, world_size=world_size,
                         seq_len=seq_len, seq_lens=seq_lens)
        if r is None:
            return None
        value, fpt, name, peak = r
        store = self.exporter.store if self.exporter is not None else None
        if store is not None:
            store.set("rl_mfu_ratio", value, {"role": role, "phase": phase, "source": "exporter"})
            store.set("rl_model_flops_per_token", fpt, {"role": role, "phase": phase})
            store.set("rl_gpu_peak_flops_per_second", peak, {"gpu_model": name, "dtype": self.dtype})
        return value

    def record_frame(self, frame: dict, *, role: str = "actor", phase: str = "train",
                     tokens_key: str = "perf/total_num_tokens",
                     seconds_key: str = "timing_s/update_actor", world_size: int = 1,
                     seq_len: float | None = None, seq_len_key: str | None = None) -> float | None:
        """MFU from a trainer's own frame. Defaults are veRL's keys: perf/total_num_tokens
        (all ranks' tokens this step) and timing_s/update_actor (the update's seconds). The
        mean sequence length comes from `seq_len`, or from the frame under `seq_len_key`."""
        try:
            tokens = float(frame[tokens_key])
            seconds = float(frame[seconds_key])
            if seq_len is None and seq_len_key is not None:
                seq_len = float(frame[seq_len_key])
        except (KeyError, TypeError, ValueError):
            return self._bad(f"frame lacks a number under {tokens_key!r}, {seconds_key!r} "
                             f"or {seq_len_key!r}")
        return self.record(role=role, phase=phase, tokens=tokens, seconds=seconds,
                           world_size=world_size, seq_len=seq_len)

    # ------------------------------------------------------------ counted skips
    def _bad(self, why: str):
        self._skip("bad_input", why)
        return None

    def _skip(self, reason: str, message: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        store = self.exporter.store if self.exporter is not None else None
        if store is not None:
            store.inc("rl_exporter_mfu_skipped_total", {"reason": reason})
        if reason not in self._logged:
            self._logged.add(reason)
            log.warning("rl-exporter: %s", message)
