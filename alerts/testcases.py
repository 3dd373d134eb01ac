"""promtool unit tests as data: for every alert a series that fires it (full labels and
annotations asserted) and a healthy series that must stay silent (seed 002's measured
ranges, seed 004's healthy ranges, the demo's healthy run). Rendered to
alerts/tests/rl-exporter.test.yaml by `python -m alerts test-file`."""
from __future__ import annotations

from .rules import ALERTS, render, yaml_text

RUN = 'run="r"'


def s(name: str, values: str, **labels) -> dict:
    lab = ", ".join([RUN] + [f'{k}="{v}"' for k, v in labels.items()])
    return {"series": f"{name}{{{lab}}}", "values": values}


def alt(a, b, n):
    return " ".join([str(a), str(b)] * n)


# name -> (fire series, eval, extra labels, description), (silent series, eval)
CASES: dict[str, dict] = {
    "RLRunStalled": dict(
        fire=[s("rl_training_step_timestamp_seconds", "0+60x10 600x40"),
              s("rl_step_duration_seconds", "60x50")],
        at="40m", desc="Run r has not advanced its training step for 30m 0s (longer than max(floor, k x "
                       "its longest recent step)).",
        # 10-minute steps: 20 minutes without a step is under 5 x 600 s, not a stall
        silent=[s("rl_training_step_timestamp_seconds", "0+60x10 600x20"),
                s("rl_step_duration_seconds", "600x30")], silent_at="30m"),
    "RLExporterDown": dict(
        fire=[{"series": 'up{job="rl-exporter", instance="h:9464"}', "values": "1x10 0x20"},
              {"series": 'rl_run_info{job="rl-exporter", instance="h:9464", run="r", framework="verl"}',
               "values": "1x10 _x20"}],
        at="25m", labels={"job": "rl-exporter", "instance": "h:9464"},
        desc="Target h:9464 (run r) has been down: up == 0.",
        silent=[{"series": 'up{job="rl-exporter", instance="h:9464"}', "values": "1x30"},
                {"series": 'rl_run_info{job="rl-exporter", instance="h:9464", run="r"}', "values": "1x30"}],
        silent_at="25m"),
    "RLNonFiniteLoss": dict(
        fire=[s("rl_policy_loss", "0.01 0.01 " + " ".join(["NaN"] * 14)), s("rl_grad_norm", "0.5x15")],
        at="15m", labels={"metric": "rl_policy_loss"}, desc="Run r reports rl_policy_loss = NaN.",
        silent=[s("rl_policy_loss", "0.01 -0.01 0.005 0 0.01 0.002"), s("rl_grad_norm", "0.35 4.95 1 2 0.5 0.6"),
                s("rl_loss", "0.3x5")], silent_at="5m"),
    "RLOptimizerNonFiniteSkips": dict(
        fire=[s("rl_optimizer_consecutive_nonfinite_skips", "0 0 1+1x14")],
        at="15m", desc="Run r skipped 14 updates in a row for a non-finite loss or gradient.",
        silent=[s("rl_optimizer_consecutive_nonfinite_skips", "1 0 2 0 1 0 2 0")], silent_at="7m"),
    "RLRewardCollapse": dict(
        fire=[s("rl_reward", "0.6x80 0.2x20")], at="95m",
        desc="Run r: mean reward fell by 0.367 below its baseline of the previous hour.",
        # seed 002: 0.53 to 0.87 per step over 48 steps, rising
        silent=[s("rl_reward", " ".join(str(round(0.53 + 0.0035 * i + (0.03 if i % 2 else -0.03), 4))
                                        for i in range(100)))], silent_at="95m"),
    "RLEntropyCollapse": dict(
        fire=[s("rl_entropy", "1x80 0.2x20")], at="95m",
        desc="Run r: mean entropy is 0.200, under 0.4x its baseline of the previous hour.",
        silent=[s("rl_entropy", "1.2-0.008x99")], silent_at="95m"),
    "RLPolicyKLSpike": dict(
        fire=[s("rl_policy_kl", "0.004x30 0.08x20")], at="45m",
        desc="Run r: mean PPO KL (ppo_kl) is 0.0800 over the last window.",
        silent=[s("rl_policy_kl", alt(0.001, 0.01, 25))], silent_at="45m"),
    "RLReferenceKLRunaway": dict(
        fire=[s("rl_reference_kl", "0.005x80 0.1x30")], at="95m",
        desc="Run r: mean KL to the reference (kl_mean) is 0.1000, several times its baseline of the "
             "previous hour.",
        silent=[s("rl_reference_kl", "0.001+0.0002x99")], silent_at="100m"),
    "RLKLSingleTokenDominates": dict(
        fire=[s("rl_reference_kl", "0.002x85"), s("rl_reference_kl", "0.01x70 0.5x15", stat="max"),
              s("rl_grad_norm", "0.5x70 3x15")], at="80m",
        desc="Run r: kl_max / kl_mean = 250 with the gradient norm jumping above its baseline.",
        # a large kl_max alone (no gradient jump) is not the signature
        silent=[s("rl_reference_kl", "0.002x80"), s("rl_reference_kl", "0.5x80", stat="max"),
                s("rl_grad_norm", "0.5x80")], silent_at="78m"),
    "RLClipFractionHigh": dict(
        fire=[s("rl_policy_clip_ratio", "0.12x30 0.45x30")], at="55m",
        desc="Run r: clip fraction is 0.45 on average over the last window.",
        silent=[s("rl_policy_clip_ratio", alt(0.05, 0.3, 30)),
                s("rl_policy_clip_ratio", "0.6x60", bound="dual")], silent_at="55m"),
    "RLClipFractionNonZeroOnPolicy": dict(
        fire=[s("rl_policy_clip_ratio", "0.02x10"), s("rl_config_value", "1x10", parameter="n_mini")], at="5m",
        desc="Run r reports clip fraction 0.0200 with one mini-batch per step, where the ratio is "
             "identically 1.",
        silent=[s("rl_policy_clip_ratio", "0x10"), s("rl_config_value", "1x10", parameter="n_mini"),
                {"series": 'rl_policy_clip_ratio{run="b"}', "values": "0.12x10"},
                {"series": 'rl_config_value{run="b", parameter="n_mini"}', "values": "4x10"}], silent_at="5m"),
    "RLGradNormExplosion": dict(
        fire=[s("rl_grad_norm", "0.6x80 15x15")], at="90m",
        desc="Run r: gradient norm is 15, more than 10x its baseline of the previous hour.",
        silent=[s("rl_grad_norm", alt(0.35, 4.95, 45))], silent_at="85m"),
    "RLGradNormZero": dict(
        fire=[s("rl_grad_norm", "0.5x20 0x20")], at="40m",
        desc="Run r: gradient norm has been exactly 0 for the whole window.",
        silent=[s("rl_grad_norm", alt(0.5, 0, 20))], silent_at="40m"),
    "RLNoInformativeGroups": dict(
        fire=[s("rl_groups", "45x10 2x20", outcome="informative"), s("rl_groups", "64x30", outcome="total")],
        at="30m", desc="Run r: only 3.125% of GRPO groups are informative.",
        silent=[s("rl_groups", "45x30", outcome="informative"), s("rl_groups", "64x30", outcome="total"),
                s("rl_group_zero_std_ratio", "0.3x30"), s("rl_score", "1x30", stat="max"),
                s("rl_score", "0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", stat="min")],
        silent_at="30m"),
    # veRL logs no group counts: a batch whose best and worst score tie has no informative group
    "RLNoInformativeGroups (veRL score spread)": dict(
        alert="RLNoInformativeGroups",
        fire=[s("rl_score", "1x10 0x20", stat="max"), s("rl_score", "0x30", stat="min")], at="30m",
        desc="Run r: only 0% of GRPO groups are informative.",
        silent=[s("rl_score", "1x30", stat="max"), s("rl_score", "0x30", stat="min")], silent_at="30m"),
    "RLResponseTruncationHigh": dict(
        fire=[s("rl_response_truncated_ratio", "0.02x10 0.8x30")], at="40m",
        desc="Run r: 80% of responses hit the length limit.",
        silent=[s("rl_response_truncated_ratio", "0.02+0.01x40"),
                s("rl_response_truncated_ratio", "0.9x40", subset="non_aborted")], silent_at="40m"),
    "RLLengthFallingRewardRising": dict(
        fire=[s("rl_response_length_tokens", "450x80 250x20"), s("rl_reward", "0.5x80 0.7x20")],
        at="100m", desc="Run r: mean response length fell to 250 tokens while reward rose above its baseline.",
        silent=[s("rl_response_length_tokens", "300+1.5x99"), s("rl_reward", "0.2+0.006x99")],
        silent_at="100m"),
    "RLValidationRegressing": dict(
        fire=[s("rl_validation_score", "0.5+0.005x60 0.8-0.01x40", data_source="gsm8k", var="acc",
                estimator="mean", n="1", tier="core"),
              s("rl_reward", "0.5+0.003x100")],
        at="100m", labels={"data_source": "gsm8k"},
        desc="Run r: validation on gsm8k is 0.390 below its best of the previous hour while train "
             "reward rises.",
        silent=[s("rl_validation_score", "0.3+0.004x100", data_source="gsm8k", var="acc", estimator="mean",
                  n="1", tier="core"), s("rl_reward", "0.2+0.006x100")], silent_at="100m"),
    "RLCriticNotLearning": dict(
        fire=[s("rl_value_explained_variance", "-0.3x40"), s("rl_training_step", "0+5x40")], at="40m",
        desc="Run r: value explained variance is -0.300 (below 0) after warm-up.",
        # seed 004: -1.0..0.2 early, then rising
        silent=[s("rl_value_explained_variance", "-0.5+0.03x40"), s("rl_training_step", "0+5x40")],
        silent_at="40m"),
    "RLPreferenceOverfit": dict(
        fire=[s("rl_preference_accuracy_ratio", "0.99x120"), s("rl_validation_loss", "0.6x120")], at="110m",
        desc="Run r: training preference accuracy is 99% and the validation loss stopped improving.",
        silent=[s("rl_preference_accuracy_ratio", "0.99x120"), s("rl_validation_loss", "0.9-0.004x120")],
        silent_at="110m"),
    "RLRewardModelMarginCollapse": dict(
        fire=[s("rl_preference_reward_margin", "2x80 0.3x30")], at="105m",
        desc="Run r: reward margin fell to 0.300, a fraction of its baseline of the previous hour.",
        silent=[s("rl_preference_reward_margin", "1+0.01x110")], silent_at="105m"),
    "RLTrainInferenceMismatchRising": dict(
        fire=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x30")], at="105m",
        desc="Run r: train/inference mismatch is 2.3x its baseline of the previous hour.",
        # seed 002: 0.0136-0.0164 and KL 0.00063-0.00076 with plain sampling
        silent=[s("rl_train_inference_logprob_abs_diff", alt(0.0136, 0.0164, 55)),
                s("rl_train_inference_kl", alt(0.00063, 0.00076, 55), estimator="k3")], silent_at="105m"),
    "RLSampleStalenessHigh": dict(
        fire=[s("rl_sample_staleness_steps", "1x10 7x30")], at="40m",
        desc="Run r: samples are 7.0 policy versions stale on average.",
        silent=[s("rl_sample_staleness_steps", alt(1, 3, 20))], silent_at="40m"),
    "RLDataParallelImbalance": dict(
        fire=[s("rl_dp_rank_tokens", "1000x60"), s("rl_dp_rank_tokens", "2000x60", stat="max")], at="45m",
        desc="Run r: the busiest data-parallel rank gets 100% more tokens than the mean.",
        silent=[s("rl_dp_rank_tokens", "1000x60"), s("rl_dp_rank_tokens", "1080x60", stat="max")],
        silent_at="45m"),
    "RLMoEExpertImbalance": dict(
        fire=[s("rl_moe_load_imbalance_ratio", "2.5x60", layer="3"),
              s("rl_moe_load_imbalance_ratio", "1.1x60", layer="1")], at="45m",
        desc="Run r: the hottest MoE expert carries 2.50x its ideal load.",
        silent=[s("rl_moe_load_imbalance_ratio", "1.3x60", layer="3")], silent_at="45m"),
    "RLMFULow": dict(
        fire=[s("rl_mfu_ratio", "0.15x100", role="actor", phase="train", source="framework")], at="80m",
        labels={"role": "actor"}, desc="Run r: actor training MFU is 15%.",
        silent=[s("rl_mfu_ratio", "0.38x100", role="actor", phase="train", source="framework"),
                s("rl_mfu_ratio", "0.22x100", role="actor", phase="inference", source="framework")],
        silent_at="80m"),
    "RLThroughputDrop": dict(
        fire=[s("rl_gpu_throughput_tokens_per_second", "1200x80 400x30")], at="105m",
        desc="Run r: throughput is 400 tokens/s/GPU, under half its baseline of the previous hour.",
        silent=[s("rl_gpu_throughput_tokens_per_second", "1000+2x110")], silent_at="105m"),
    "RLGPUMemoryNearFull": dict(
        fire=[s("hw_gpu_memory_usage_bytes", "78e9x20", gpu="0", uuid="GPU-a", gpu_model="NVIDIA H100 80GB HBM3"),
              s("hw_gpu_memory_limit_bytes", "80e9x20", gpu="0", uuid="GPU-a", gpu_model="NVIDIA H100 80GB HBM3")],
        at="15m", labels={"gpu": "0"}, desc="Run r: GPU 0 memory is 97.5% full.",
        silent=[s("hw_gpu_memory_usage_bytes", "60e9x20", gpu="0"),
                s("hw_gpu_memory_limit_bytes", "80e9x20", gpu="0")], silent_at="15m"),
    "RLGPUThrottling": dict(
        fire=[s("hw_gpu_clock_event_active", "1x30", gpu="0", reason="hardware_thermal_slowdown")], at="20m",
        labels={"gpu": "0", "reason": "hardware_thermal_slowdown"},
        desc="Run r: GPU 0 has been throttled (hardware_thermal_slowdown = 1) for the whole window.",
        # intermittent slowdowns, idle clocks and the power cap of a fully loaded GPU are not throttling
        silent=[s("hw_gpu_clock_event_active", alt(1, 0, 15), gpu="0", reason="software_thermal_slowdown"),
                s("hw_gpu_clock_event_active", "1x30", gpu="0", reason="gpu_idle"),
                s("hw_gpu_clock_event_active", "1x30", gpu="1", reason="software_power_cap")],
        silent_at="20m"),
    "RLMultiTurnRunaway": dict(
        fire=[s("rl_turns", "6x80 40x20", stat="max"), s("rl_turns", "3x100")], at="95m",
        desc="Run r: a rollout took 40 turns, several times the recent maximum.",
        silent=[s("rl_turns", " ".join(str(5 + i % 4) for i in range(100)), stat="max")], silent_at="95m"),
}


def missing_cases() -> list[str]:
    names = {a.name for a in ALERTS}
    covered = {c.get("alert", k) for k, c in CASES.items()}
    out = [f"{n}: no promtool test case in alerts/testcases.py" for n in sorted(names - covered)]
    out += [f"{n}: test case for an unknown alert" for n in sorted(covered - names)]
    return out


def render_tests() -> str:
    rules = {r["alert"]: r for g in render()["groups"] for r in g["rules"] if "alert" in r}
    tests = []
    for case, c in CASES.items():
        name = c.get("alert", case)
        r = rules[name]
        labels = {"severity": r["labels"]["severity"]}
        labels["run"] = "r"
        labels.update(c.get("labels", {}))
        tests.append({
            "name": f"{case} fires",
            "interval": "1m",
            "input_series": c["fire"],
            "alert_rule_test": [{
                "eval_time": c["at"], "alertname": name,
                "exp_alerts": [{"exp_labels": labels, "exp_annotations": {
                    "summary": r["annotations"]["summary"], "description": c["desc"],
                    "runbook_url": r["annotations"]["runbook_url"]}}],
            }],
        })
        tests.append({
            "name": f"{case} stays silent on healthy series",
            "interval": "1m",
            "input_series": c["silent"],
            "alert_rule_test": [{"eval_time": c["silent_at"], "alertname": name, "exp_alerts": []}],
        })
    # recording rules: the run's recent level and its baseline
    tests.append({
        "name": "recording rules: recent level and baseline",
        "interval": "1m",
        "input_series": [s("rl_reward", "0.6x80 0.2x20"), s("rl_reward", "1x100", stat="max")],
        "promql_expr_test": [
            {"expr": "run:rl_reward:avg_over_time10m", "eval_time": "100m",
             "exp_samples": [{"labels": 'run:rl_reward:avg_over_time10m{run="r"}', "value": 0.2}]},
            {"expr": "run:rl_reward:avg_over_time1h_offset10m", "eval_time": "90m",
             "exp_samples": [{"labels": 'run:rl_reward:avg_over_time1h_offset10m{run="r"}', "value": 0.6}]},
        ],
    })
    # Rules are evaluated every 5m (series are sampled every 1m): promtool evaluates every rule of
    # the file at every tick of every test group, and 1m ticks made this file take ~1 min on 2 cores.
    doc = {"rule_files": ["../rules/rl-exporter.rules.yaml"], "evaluation_interval": "5m", "tests": tests}
    return yaml_text(doc).replace("# Generated by `python -m alerts render` from alerts/rules.py",
                                  "# Generated by `python -m alerts test-file` from alerts/testcases.py")


# Phases in progress, GPU time by phase and rollout engines (alerts/phase_cases.py).
from .phase_cases import PHASE_CASES  # noqa: E402

CASES.update(PHASE_CASES)
