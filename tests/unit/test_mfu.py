"""MFU against hand-computed values; the unknown-GPU case never falls back to a peak."""
from __future__ import annotations

import json
import logging
import sys

import pytest

from exporter import Exporter
from exporter.mfu import MFUMeter, ModelFlops, UnknownGPU, lookup_peak, model_flops
from exporter.testing import scrape
from exporter.testing.nvml import FakeNVML

# Qwen2.5-3B config.json (the fields that matter)
QWEN25_3B = {"model_type": "qwen2", "hidden_size": 2048, "intermediate_size": 11008,
             "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
             "vocab_size": 151936, "tie_word_embeddings": True, "hidden_act": "silu"}
# Qwen3-30B-A3B config.json
QWEN3_30B_A3B = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                 "moe_intermediate_size": 768, "num_hidden_layers": 48,
                 "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                 "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
                 "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False}

# ---- Qwen2.5-3B by hand (head_dim = 2048/16 = 128, kv width 2*128 = 256)
#   q 2048*2048 = 4,194,304   k,v 2*2048*256 = 1,048,576   o 2048*2048 = 4,194,304
#   attention projections/layer = 9,437,184
#   MLP (gate, up, down) 3*2048*11008 = 67,633,152
#   per layer 77,070,336; x36 = 2,774,532,096; LM head 2048*151936 = 311,164,928
QWEN25_N = 3_085_697_024
#   attention scores, forward, per token at L=1024: 2*16*128*(1024+1) per layer, x36
QWEN25_ATTN_FWD_1024 = 36 * 2 * 16 * 128 * 1025          # 151,142,400
QWEN25_TRAIN_PER_TOKEN_1024 = 3 * (2 * QWEN25_N + QWEN25_ATTN_FWD_1024)   # 18,967,609,344

# ---- Qwen3-30B-A3B by hand (active parameters only)
#   q 2048*4096 = 8,388,608   k,v 2*2048*512 = 2,097,152   o 4096*2048 = 8,388,608 -> 18,874,368
#   router 2048*128 = 262,144;  8 active experts x 3*2048*768 = 37,748,736
#   per layer 56,885,248; x48 = 2,730,491,904; + LM head 311,164,928
QWEN3_MOE_ACTIVE = 3_041_656_832
#   all 128 experts: 128*4,718,592 = 603,979,776/layer -> total incl. untied embedding
QWEN3_MOE_TOTAL = 48 * (18_874_368 + 262_144 + 603_979_776) + 2 * 311_164_928   # 30,531,911,680


def test_dense_parameter_count_and_flops_per_token():
    m = model_flops(QWEN25_3B)
    assert m.matmul_params == QWEN25_N
    assert m.forward_per_token(1024) == 2 * QWEN25_N + QWEN25_ATTN_FWD_1024
    assert m.per_token(1024, "train") == QWEN25_TRAIN_PER_TOKEN_1024 == 18_967_609_344
    assert m.per_token(1024, "inference") == 6_322_536_448      # x1 forward
    assert m.per_token(0, "train") == 6 * QWEN25_N               # attention left out on request


def test_moe_counts_active_experts_only():
    m = model_flops(QWEN3_30B_A3B)
    assert m.matmul_params == QWEN3_MOE_ACTIVE
    assert m.total_params == QWEN3_MOE_TOTAL == 30_531_911_680  # the "30B"
    attn_fwd = 48 * 2 * 32 * 128 * (2048 + 1)
    assert m.per_token(2048, "train") == 3 * (2 * QWEN3_MOE_ACTIVE + attn_fwd)


def test_moe_dense_layers_and_shared_experts():
    cfg = dict(QWEN3_30B_A3B, mlp_only_layers=[0], shared_expert_intermediate_size=1024)
    m = model_flops(cfg)
    attn = 18_874_368
    moe_layer = attn + 262_144 + 37_748_736 + 3 * 2048 * 1024 + 2048
    dense_layer = attn + 3 * 2048 * 6144
    assert m.matmul_params == 47 * moe_layer + dense_layer + 311_164_928


def test_mfu_dense_on_h100_sxm_hand_computed():
    meter = MFUMeter(None, QWEN25_3B, gpu="NVIDIA H100 80GB HBM3")
    # 1M tokens of 1024-token sequences in 10 s on 8 GPUs
    got = meter.record(role="actor", phase="train", tokens=1_000_000, seconds=10.0,
                       world_size=8, seq_len=1024)
    assert got == pytest.approx(18_967_609_344 * 1_000_000 / (10.0 * 8 * 989.5e12), rel=1e-12)
    assert got == pytest.approx(0.239611, abs=1e-6)


def test_mfu_moe_inference_on_h200_hand_computed():
    meter = MFUMeter(None, QWEN3_30B_A3B, gpu="NVIDIA H200")
    per_token = 2 * QWEN3_MOE_ACTIVE + 48 * 2 * 32 * 128 * 513
    got = meter.record(role="rollout", phase="inference", tokens=2_000_000, seconds=20.0,
                       world_size=4, seq_len=512)
    assert got == pytest.approx(per_token * 2_000_000 / (20.0 * 4 * 989.5e12), rel=1e-12)


def test_packed_sequences_sum_per_sequence():
    m = model_flops(QWEN25_3B)
    same = m.per_sequences([1024, 1024], "train")
    assert same == pytest.approx(2048 * QWEN25_TRAIN_PER_TOKEN_1024)
    mixed = m.per_sequences([512, 1536], "train")
    # attention grows with L^2, so unequal lengths cost more than their mean suggests
    extra = 3 * 2 * 36 * 16 * 128 * (512 * 513 + 1536 * 1537 - 2 * 1024 * 1025)
    assert mixed - same == pytest.approx(extra)


def test_unknown_gpu_gives_no_value_and_a_counted_warning(caplog, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(library_missing=True))
    ex = Exporter(run="r", serve=False, gpu="auto")
    try:
        meter = MFUMeter(ex, QWEN25_3B, gpu="NVIDIA Hypothetical X900")
        with caplog.at_level(logging.WARNING, logger="rl_exporter"):
            assert meter.record(tokens=1e6, seconds=10, world_size=8, seq_len=1024) is None
            assert meter.record(tokens=1e6, seconds=10, world_size=8, seq_len=1024) is None
        s = scrape(ex)
        assert s[("rl_exporter_mfu_skipped_total", (("reason", "unknown_gpu"),))] == 2
        assert not [k for k in s if k[0] == "rl_mfu_ratio"]
        assert len([r for r in caplog.records if "no fallback peak" in r.getMessage()]) == 1
    finally:
        ex.close()
    with pytest.raises(UnknownGPU):
        lookup_peak("NVIDIA A10G")   # not the A10, not the A100: unknown, not guessed


def test_device_from_sampler_and_exported_series(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(2, names={0: "NVIDIA A100-SXM4-80GB",
                                                                  1: "NVIDIA A100-SXM4-80GB"}))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    ex = Exporter(run="r", serve=False, gpu="auto", gpu_interval=60)
    try:
        meter = MFUMeter(ex, QWEN25_3B)
        v = meter.record(role="actor", phase="train", tokens=500_000, seconds=5.0, world_size=2,
                         seq_len=1024)
        assert v == pytest.approx(18_967_609_344 * 500_000 / (5.0 * 2 * 312e12))
        ex.log({"perf/mfu/actor": 0.31})   # the framework's own number keeps its own series
        s = scrape(ex)
        assert s[("rl_mfu_ratio", (("phase", "train"), ("role", "actor"), ("source", "exporter")))] == \
            pytest.approx(v)
        assert s[("rl_mfu_ratio", (("phase", "train"), ("role", "actor"), ("source", "framework")))] == 0.31
        assert s[("rl_model_flops_per_token", (("phase", "train"), ("role", "actor")))] == 18_967_609_344
        assert s[("rl_gpu_peak_flops_per_second", (("dtype", "bf16"), ("gpu_model", "NVIDIA A100-SXM4-80GB")))] == 312e12
    finally:
        ex.close()


def test_mixed_gpus_need_an_explicit_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(2, names={1: "NVIDIA L40S"}))
    ex = Exporter(run="r", serve=False, gpu="auto", gpu_interval=60)
    try:
        assert MFUMeter(ex, QWEN25_3B).record(tokens=1e5, seconds=1, seq_len=128) is None
        assert scrape(ex)[("rl_exporter_mfu_skipped_total", (("reason", "mixed_gpus"),))] == 1
        assert MFUMeter(ex, QWEN25_3B, gpu="NVIDIA L40S").record(tokens=1e5, seconds=1,
                                                                 seq_len=128) is not None
    finally:
        ex.close()


def test_peak_table_dtypes_and_overrides():
    assert lookup_peak("NVIDIA H100 PCIe")[1] == 756.5e12
    assert lookup_peak("NVIDIA H100 NVL")[1] == 835.5e12
    assert lookup_peak("NVIDIA H100 80GB HBM3", "fp8")[1] == 1979e12
    assert lookup_peak("NVIDIA H100 80GB HBM3", "fp16")[1] == 989.5e12
    assert lookup_peak("NVIDIA GB200")[0] == "GB200" and lookup_peak("NVIDIA B200")[0] == "B200"
    assert lookup_peak("NVIDIA A10")[0] == "A10" and lookup_peak("NVIDIA A100 80GB PCIe")[0] == "A100"
    assert lookup_peak("NVIDIA H20")[1] == 148e12 and lookup_peak("NVIDIA H200")[0] == "H200 SXM"
    assert lookup_peak("AMD Instinct MI300X")[1] == 1307.4e12
    assert lookup_peak("NVIDIA A100-SXM4-40GB", "fp8")[1] is None     # no FP8 on Ampere
    assert lookup_peak("NVIDIA H100 80GB HBM3", "bf16", {"H100": {"bf16": 9e14}}) == ("H100", 9e14)
    assert lookup_peak("NVIDIA Hypothetical X900", "bf16", {"x900": 1e15}) == ("x900", 1e15)
    with pytest.raises(ValueError):
        lookup_peak("NVIDIA H100 PCIe", "int4")


def test_known_gpu_without_dtype_peak_is_skipped_not_guessed():
    meter = MFUMeter(None, QWEN25_3B, gpu="NVIDIA A100-SXM4-80GB", dtype="fp8")
    assert meter.record(tokens=1e6, seconds=1, seq_len=1024) is None
    assert meter.skipped == {"no_peak_for_dtype": 1}
    gb10 = MFUMeter(None, QWEN25_3B, gpu="NVIDIA GB10")
    assert gb10.record(tokens=1e6, seconds=1, seq_len=1024) is None
    assert MFUMeter(None, QWEN25_3B, gpu="NVIDIA GB10", peak_flops=1e14).record(
        tokens=1e6, seconds=1, seq_len=0) == pytest.approx(6 * QWEN25_N * 1e6 / 1e14)


def test_bad_inputs_are_counted_not_raised():
    meter = MFUMeter(None, QWEN25_3B, gpu="NVIDIA H100 80GB HBM3")
    assert meter.record(tokens=0, seconds=1, seq_len=1) is None
    assert meter.record(tokens=10, seconds=0, seq_len=1) is None
    assert meter.record(tokens=10, seconds=float("nan"), seq_len=1) is None
    assert meter.record(tokens=10, seconds=1) is None                    # no seq_len
    assert meter.record(tokens=10, seconds=1, seq_lens=[3, 4]) is None   # tokens != sum
    assert meter.skipped == {"bad_input": 5}
    with pytest.raises(ValueError):
        meter.record(phase="rollout", tokens=1, seconds=1, seq_len=1)


def test_record_frame_uses_verl_keys():
    meter = MFUMeter(None, QWEN25_3B, gpu="NVIDIA H100 80GB HBM3")
    frame = {"perf/total_num_tokens": 1_000_000, "timing_s/update_actor": 10.0}
    v = meter.record_frame(frame, world_size=8, seq_len=1024)
    assert v == pytest.approx(18_967_609_344 * 1_000_000 / (10.0 * 8 * 989.5e12))
    assert meter.record_frame({"timing_s/update_actor": 1.0}, seq_len=1) is None


def test_config_from_file_and_unsupported_attention(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_3B))
    assert model_flops(tmp_path).matmul_params == QWEN25_N
    assert ModelFlops.from_config(tmp_path / "config.json").matmul_params == QWEN25_N
    with pytest.raises(ValueError, match="latent attention"):
        model_flops(dict(QWEN25_3B, kv_lora_rank=512))
    with pytest.raises(ValueError, match="hidden_size"):
        model_flops({"num_hidden_layers": 2})
