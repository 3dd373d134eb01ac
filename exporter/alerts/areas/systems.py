"""Systems: train/inference mismatch, staleness, balance, MFU, throughput, GPUs, turns."""
from __future__ import annotations

from ..config import Dur
from ..exprs import recent, paused
from ..model import Alert, Case, Threshold
from ..series import alt, s
from ..sim.healthy import uniform
from ..sim.pathology import Pathology, assign, from_entry

ALERTS: list[Alert] = [
    Alert(
        name="RLTrainInferenceMismatchRising", severity="warning", for_=Dur(60),
        expr="(\n(\n  run:rl_train_inference_logprob_abs_diff:avg_recent\n"
             "  / run:rl_train_inference_logprob_abs_diff:avg_baseline > {mismatch_rise_factor}\n"
             "  and run:rl_train_inference_logprob_abs_diff:avg_recent > {logprob_diff_min}\n)\n"
             "or\n(\n  run:rl_train_inference_kl:avg_recent\n"
             "  / run:rl_train_inference_kl:avg_baseline > {mismatch_rise_factor}\n"
             "  and run:rl_train_inference_kl:avg_recent > {train_inference_kl_min}\n)\n)\n"
             "unless on (run)\n(\n  run:rl_sample_staleness_steps:avg_recent - run:rl_sample_staleness_steps:avg_baseline\n"
             "  >= {mismatch_staleness_rise}\n)",
        thresholds={
            "mismatch_rise_factor": Threshold(
                2,
                "The Miles lab ranges: |logprob diff| 0.0136-0.0164 and KL 0.00063-0.00076 with "
                "plain sampling; the posttrain metrics reference and AReaL metrics tracking: a "
                "rising gap on MoE is routing flips. The recent gap this many times its baseline ..."),
            "logprob_diff_min": Threshold(
                0.03,
                "... and above this |log pi_train - log pi_rollout| (twice the Miles lab's healthy "
                "level) ..."),
            "train_inference_kl_min": Threshold(
                0.002,
                "... or the train/inference KL above this (about three times the Miles lab's healthy "
                "level)."),
            "mismatch_staleness_rise": Threshold(
                1,
                "The train/inference gap of stale samples includes policy drift, not only engine "
                "disagreement (AReaL metrics tracking, train_infer): a mismatch rise that comes with "
                "a staleness rise of at least this many versions over the same windows is drift."),
        },
        summary="Trainer and inference engine disagree more and more on token log-probs.",
        description="Run {{ $labels.run }}: train/inference mismatch is {{ printf \"%.1f\" $value "
                    "}}x its baseline over the preceding steps.",
        meaning="mean |log pi_train - log pi_rollout| over {recent} is more than "
                "{mismatch_rise_factor} x its mean over {baseline} and above {logprob_diff_min}, or "
                "the train/inference KL is more than {mismatch_rise_factor} x its mean there and "
                "above {train_inference_kl_min} (one estimator: k3 where logged, k1 only where "
                "nothing else is). Silent when the sample staleness rose by "
                "{mismatch_staleness_rise} or more versions over the same steps: stale samples put "
                "policy drift into the gap.",
        impact="on MoE a rising gap is the routing-flip collapse signature (the posttrain metrics "
               "reference, AReaL metrics tracking); rollout log-probs become unusable as pi_old.",
        diagnosis="on an async run first the sample staleness "
                  "(`rl_sample_staleness_steps{reference=\"\"}`, `rl_stale_token_ratio`, "
                  "RLSampleStalenessHigh): for stale rollouts the gap includes policy drift, not "
                  "only engine disagreement (AReaL metrics tracking), and the rule stays silent "
                  "while staleness rises with it. Then what changed when the gap rose: an engine "
                  "restart or a failed weight sync (the engine row of the GPU dashboard, the trainer "
                  "log), or the sampling configuration (a temperature other than 1, top-p/top-k: the "
                  "engine's log-probs are those of its processed distribution, the posttrain metrics "
                  "reference and AReaL metrics tracking). Then whether the policy is MoE and "
                  "`rl_moe_load_imbalance_ratio`; next `rl_train_inference_tokens` (0 = no data), "
                  "`rl_train_inference_nonfinite_ratio` (RLTrainInferenceNonFinite), the KL "
                  "estimator (`estimator` label: k1 is signed and noisy, compare k3 with k3), and "
                  "engine/trainer dtype.",
        mitigation="first the safe actions: if an engine restarted or a weight sync failed, force a "
                   "weight sync or restart the engine; if the sampling configuration changed, that "
                   "is the cause (restore it, or compute the rollout log-probs from the unprocessed "
                   "distribution). Then routing replay, importance-sampling correction, recompute "
                   "pi_old on the trainer.",
        cases=[
            # AReaL metrics tracking: "the k1 sample estimate can be negative"; compare one estimator
            # at a time. A k3 rise (Miles lab: 0.00063-0.00076 healthy) next to a steady negative k1.
            Case(
                title="k3 rises beside a negative k1",
                fire=[s("rl_train_inference_kl", "0.0007x80 0.003x20", estimator="k3"),
                      s("rl_train_inference_kl", "-0.0005x100", estimator="k1")], at="90m",
                desc="Run r: train/inference mismatch is 2.4x its baseline over the preceding steps.",
                # k1 moves, k3 holds: the k3 estimate is the one compared
                silent=[s("rl_train_inference_kl", "0.0007x100", estimator="k3"),
                        s("rl_train_inference_kl", "-0.0005x80 0.004x20", estimator="k1")], silent_at="90m"),
            # AReaL metrics tracking: "for stale rollouts, differences include policy drift"
            Case(
                title="the gap doubles while staleness holds",
                fire=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x20"),
                      s("rl_sample_staleness_steps", "1x100")], at="90m",
                desc="Run r: train/inference mismatch is 2.3x its baseline over the preceding steps.",
                silent=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x20"),
                        s("rl_sample_staleness_steps", "1x80 5x20")], silent_at="90m"),
            # Miles' mismatch is gated on its own staleness (the weight-version lag): the gap
            # doubling while the samples age (the weight push stalled) is policy drift, not
            # engine disagreement
            Case(
                title="Miles: the gap of aging samples",
                fire=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x20"),
                      s("rl_training_step", "0+2x100"), s("rl_step_counter", "0+1x100", counter="rollout"),
                      s("rl_sample_weight_version", "0+1x100", stat="min")], at="90m",
                desc="Run r: train/inference mismatch is 2.3x its baseline over the preceding steps.",
                silent=[s("rl_train_inference_logprob_abs_diff", "0.015x80 0.06x20"),
                        s("rl_training_step", "0+2x100"), s("rl_step_counter", "0+1x100", counter="rollout"),
                        s("rl_sample_weight_version", "0+1x80 80x20", stat="min")], silent_at="90m"),
        ],
        cadence=from_entry("train-infer-mismatch", {"30s": 8, "2m": 7, "10m": 7}),
    ),
    # AReaL metrics tracking: the fraction of valid tokens whose trainer or engine log-prob is NaN
    # or infinite; with any, the tail ratios are NaN and the gap statistics are not comparable.
    Alert(
        name="RLTrainInferenceNonFinite", severity="warning", for_=Dur(60),
        expr=recent("min_over_time", "rl_train_inference_nonfinite_ratio") + " > 0",
        summary="Trainer or engine log-probs are non-finite on valid tokens, step after step.",
        description="Run {{ $labels.run }}: {{ $value | humanizePercentage }} of valid tokens (at "
                    "least) had a NaN or infinite log-prob on every recent step.",
        meaning="a share of valid tokens had a NaN or infinite trainer or engine log-prob "
                "(`rl_train_inference_nonfinite_ratio` above 0) on every step of {recent}.",
        impact="the train/inference comparison is broken on some tokens: the tail ratios are NaN "
               "(AReaL metrics tracking), and a NaN log-prob that reaches the loss poisons the "
               "update.",
        diagnosis="first which side is non-finite (trainer or engine log-probs: "
                  "`rl_train_inference_nll` by `engine`); next invalid token ids, vocabulary "
                  "mismatch between trainer and engine, and bf16 overflow.",
        mitigation="fix the tokenizer/vocabulary mismatch; mask invalid tokens; recompute log-probs "
                   "in fp32.",
        cases=[
            # AReaL metrics tracking: nonfinite_logp_fraction
            Case(
                fire=[s("rl_train_inference_nonfinite_ratio", "0x20 0.002x20")], at="40m",
                desc="Run r: 0.2% of valid tokens (at least) had a NaN or infinite log-prob on every recent step.",
                silent=[s("rl_train_inference_nonfinite_ratio", alt(0, 0.01, 20))], silent_at="40m"),
        ],
        cadence=from_entry("nonfinite-logprob", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLSampleStalenessHigh", severity="warning", for_=Dur(60),
        expr="run:rl_sample_staleness_steps:avg_recent > {staleness_max_steps}",
        thresholds={
            "staleness_max_steps": Threshold(
                4,
                "No source gives a range; set it to your trainer's staleness bound."),
        },
        summary="Async samples come from policies many versions old.",
        description="Run {{ $labels.run }}: samples are {{ printf \"%.1f\" $value }} policy versions "
                    "stale on average.",
        meaning="async samples are on average more than {staleness_max_steps} policy versions older "
                "than the last published checkpoint over {recent} "
                "(`rl_sample_staleness_steps{reference=\"\"}`; the proximal reference is not this; "
                "on Miles, which logs its samples' weight versions, the oldest sample's lag in weight "
                "versions, `run:rl_sample_weight_version:lag`).",
        impact="off-policy drift; clipping and KL rise.",
        diagnosis="first rollout vs training throughput (`rl_phase_duration_seconds`); next the "
                  "trainer's staleness bound.",
        mitigation="lower the staleness bound, add rollout capacity, or use decoupled PPO corrections.",
        cases=[
            Case(
                fire=[s("rl_sample_staleness_steps", "1x10 7x30")], at="40m",
                desc="Run r: samples are 7.0 policy versions stale on average.",
                silent=[s("rl_sample_staleness_steps", alt(1, 3, 20))], silent_at="40m"),
            Case(
                title="theta staleness, not the proximal reference",
                fire=[s("rl_sample_staleness_steps", "1x10 7x30"),
                      s("rl_sample_staleness_steps", "0x40", reference="proximal")], at="40m",
                desc="Run r: samples are 7.0 policy versions stale on average.",
                silent=[s("rl_sample_staleness_steps", "1x40"),
                        s("rl_sample_staleness_steps", "9x40", reference="proximal")], silent_at="40m"),
            # Miles, one step off (train_async.py), 2 optimizer steps per rollout: rollout r is
            # generated with weight version r (one behind the 1 + r being trained), so its lag is 1
            # throughout; the training step minus the version grows by one every rollout. When the
            # weight push stops at version 10, the samples really age, one version per rollout.
            Case(
                title="Miles: weight-version lag, not steps",
                fire=[s("rl_training_step", "0+2x40"), s("rl_step_counter", "0+1x40", counter="rollout"),
                      s("rl_sample_weight_version", "0+1x10 10x30", stat="min"),
                      s("rl_config_value", "1x40", parameter="update_weights_interval")], at="40m",
                desc="Run r: samples are 28.5 policy versions stale on average.",
                silent=[s("rl_training_step", "0+2x80"), s("rl_step_counter", "0+1x80", counter="rollout"),
                        s("rl_sample_weight_version", "0+1x80", stat="min"),
                        s("rl_config_value", "1x80", parameter="update_weights_interval")], silent_at="80m"),
            # a Miles run that pushes weights every 2 rollouts: its samples are at most one push
            # behind, so a lag of 0 or 1; stalled pushes show as before
            Case(
                title="Miles: update_weights_interval 2",
                fire=[s("rl_training_step", "0+4x40"), s("rl_step_counter", "0+2x40", counter="rollout"),
                      s("rl_sample_weight_version", "1+1x10 11x30", stat="min"),
                      s("rl_config_value", "2x40", parameter="update_weights_interval")], at="40m",
                desc="Run r: samples are 27.5 policy versions stale on average.",
                silent=[s("rl_training_step", "0+4x80"), s("rl_step_counter", "0+2x80", counter="rollout"),
                        s("rl_sample_weight_version", "1+1x80", stat="min"),
                        s("rl_config_value", "2x80", parameter="update_weights_interval")], silent_at="80m"),
        ],
        cadence=from_entry("async-staleness", {"30s": 11, "2m": 11, "10m": 8}),
    ),
    Alert(
        name="RLDataParallelImbalance", severity="info", for_=Dur(1800),
        expr="(\n" + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="balanced_max", split=""}}')
             + "\n/ on (run) " + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="balanced_min", split=""}}')
             + "\nor\n" + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="max", split=""}}')
             + "\n/ on (run) " + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="min", split=""}}')
             + "\n) - 1 > {dp_imbalance_ratio}",
        thresholds={
            "dp_imbalance_ratio": Threshold(
                0.5,
                "balanced_max / balanced_min - 1 (veRL after balancing); no source gives a range."),
        },
        summary="Tokens per data-parallel rank are unbalanced after balancing: the busiest rank sets "
                "the pace.",
        description="Run {{ $labels.run }}: the busiest data-parallel rank gets {{ $value | "
                    "humanizePercentage }} more tokens than the least busy one (veRL balanced "
                    "partition).",
        meaning="after balancing, the busiest data-parallel rank's tokens exceed the least busy "
                "one's by more than {dp_imbalance_ratio} of them on average over {recent} (veRL "
                "`global_seqlen/balanced_max` vs `balanced_min`; the pre-balancing max/min only "
                "where no balanced figures exist), held {for}.",
        impact="every other rank waits for the busiest; step time and MFU suffer (the RL metrics "
               "dictionary: \"训练很慢 -> global_seqlen/minmax_diff\").",
        diagnosis="first the response-length spread; next the balancing setting.",
        mitigation="enable sequence balancing (veRL `balance_batch`), dynamic batch size.",
        cases=[
            Case(
                fire=[s("rl_dp_rank_tokens", "1000x60", stat="balanced_min"),
                      s("rl_dp_rank_tokens", "2000x60", stat="balanced_max")], at="50m",
                desc="Run r: the busiest data-parallel rank gets 100% more tokens than the least busy one "
                     "(veRL balanced partition).",
                # veRL's global_seqlen/max,min are the split before balancing: far apart on a healthy run
                silent=[s("rl_dp_rank_tokens", "1000x60", stat="balanced_min"),
                        s("rl_dp_rank_tokens", "1080x60", stat="balanced_max"),
                        s("rl_dp_rank_tokens", "2200x60", stat="max"), s("rl_dp_rank_tokens", "500x60", stat="min")],
                silent_at="50m"),
        ],
    ),
    Alert(
        name="RLMoEExpertImbalance", severity="warning", for_=Dur(60),
        expr="run_layer:rl_moe_load_imbalance_ratio:avg_recent\n"
             "> {moe_imbalance_rise_factor} * run_layer:rl_moe_load_imbalance_ratio:avg_baseline",
        thresholds={
            "moe_imbalance_rise_factor": Threshold(
                1.5,
                "A layer's max/ideal load this many times its own baseline. With 64-128 experts "
                "max/ideal is routinely 2-4, so an absolute bound pages on healthy models."),
        },
        summary="One MoE layer's expert load drifted far from its own balance.",
        description="Run {{ $labels.run }}: MoE layer {{ $labels.layer }} hottest expert carries {{ "
                    "printf \"%.2f\" $value }}x its ideal load, {moe_imbalance_rise_factor}x that "
                    "layer's baseline.",
        meaning="one MoE layer's hottest-expert load (max/ideal) over {recent} is more than "
                "{moe_imbalance_rise_factor} x that layer's mean over {baseline}.",
        impact="expert-parallel stragglers, dropped tokens, routing collapse.",
        diagnosis="first which layers (`layer` label); next the router aux loss (`rl_aux_loss`) and "
                  "RLTrainInferenceMismatchRising.",
        mitigation="raise the aux-loss coefficient, capacity factor, or use routing replay.",
        cases=[
            Case(
                title="each layer against itself",
                fire=[s("rl_moe_load_imbalance_ratio", "2x80 4x20", layer="1"),
                      s("rl_moe_load_imbalance_ratio", "3.8x100", layer="2")], at="90m",
                labels={"layer": "1"}, desc="Run r: MoE layer 1 hottest expert carries 4.00x its ideal load, 1.5x that layer's baseline.",
                # 128 experts: max/ideal of 2-4 on every layer is the healthy norm
                silent=[s("rl_moe_load_imbalance_ratio", "2.2x100", layer="1"),
                        s("rl_moe_load_imbalance_ratio", "3.8x100", layer="2")], silent_at="90m"),
        ],
        cadence=Pathology(
            assign(layer2=lambda v, i, r: uniform(r, 5.5, 6.5)), {"30s": 8, "2m": 8, "10m": 7},
            why="this run's MoE has 4 layers at 2.2-3.8 (64-128 experts); the demo's entry edits its layer 12"),
    ),
    Alert(
        name="RLMFULow", severity="info", for_=Dur(1800),
        expr=recent("avg_over_time", "rl_mfu_ratio", '{{stat="", split="", phase="train"}}', by="run, role")
             + " < {mfu_low}",
        thresholds={
            "mfu_low": Threshold(
                0.3,
                "The veRL metrics guide, section 7.4: > 40 % excellent, 30-40 % good, < 20 % poor; "
                "30 % is the usual heuristic."),
        },
        summary="Training model-FLOPs utilisation has been low for a long time.",
        description="Run {{ $labels.run }}: {{ $labels.role }} training MFU is {{ $value | "
                    "humanizePercentage }}.",
        meaning="training MFU averaged over {recent} is below {mfu_low}, held {for}.",
        impact="paying for idle FLOPs. Info only.",
        diagnosis_source="the veRL metrics guide, problem 4",
        diagnosis="first `rl_phase_duration_seconds` (gen > 0.5 x step: generation is the "
                  "bottleneck; update_actor > 0.4 x step: training is); next RLGPUThrottling and "
                  "RLDataParallelImbalance.",
        mitigation="micro-batch size, torch.compile, sequence packing, rollout engine settings.",
        cases=[
            Case(
                fire=[s("rl_mfu_ratio", "0.15x100", role="actor", phase="train", source="framework")], at="80m",
                labels={"role": "actor"}, desc="Run r: actor training MFU is 15%.",
                silent=[s("rl_mfu_ratio", "0.38x100", role="actor", phase="train", source="framework"),
                        s("rl_mfu_ratio", "0.22x100", role="actor", phase="inference", source="framework")],
                silent_at="80m"),
        ],
    ),
    Alert(
        name="RLThroughputDrop", severity="warning", for_=Dur(60),
        expr="run_phase:rl_throughput:avg_recent\n"
             "< {throughput_drop_ratio} * run_phase:rl_throughput:avg_baseline\n"
             "unless on (run)\n" + paused(),
        thresholds={
            "throughput_drop_ratio": Threshold(
                0.5,
                "Half the run's own baseline: no source gives an absolute throughput for every model "
                "size."),
        },
        summary="Tokens per second dropped well below the run's own baseline.",
        description="Run {{ $labels.run }}: {{ $labels.phase }} throughput is {{ printf \"%.0f\" "
                    "$value }} tokens/s, under half its baseline over the preceding steps.",
        meaning="tokens/s of a phase (veRL `perf/throughput`, slime/Miles "
                "`perf/tokens_per_gpu_per_sec`, AReaL `train_perf/tokens_per_second`) over {recent} "
                "are below {throughput_drop_ratio} x its mean over {baseline}. A window a pause of "
                "the whole run touched (a phase named {pause_phases} open at a scrape or published) "
                "is no evidence: the alert stays silent there.",
        impact="the run will take twice as long (or longer).",
        diagnosis_source="the RL metrics dictionary: \"训练很慢\"",
        diagnosis="first `rl_phase_duration_seconds` per phase; next GPU throttling "
                  "(RLGPUThrottling), a pause of the whole run that is not reported as a phase (a "
                  "heat guard: wrap it in `exporter.timer(\"heat_guard\")` so the alert skips those "
                  "steps), `rl_dp_rank_tokens`, response length growth.",
        mitigation="fix the slow phase; cool or power-cap consistently.",
        cases=[
            Case(
                title="slime rollout phase",
                fire=[s("rl_gpu_throughput_tokens_per_second", "1200x80 300x20", phase="rollout")], at="90m",
                labels={"phase": "rollout"}, desc='Run r: rollout throughput is 300 tokens/s, under half its baseline over the preceding steps.',
                silent=[s("rl_gpu_throughput_tokens_per_second", "1200x100", phase="rollout")], silent_at="90m"),
            # Miles lab ranges: time values hold only for steps no heat-guard pause touched
            Case(
                title="steps a heat-guard pause touched are no evidence",
                fire=[s("rl_gpu_throughput_tokens_per_second", "1200x80 300x20"),
                      s("rl_phase_in_progress_start_timestamp_seconds", " ".join(["NaN"] * 100), phase="gen")], at="90m",
                desc="Run r:  throughput is 300 tokens/s, under half its baseline over the preceding steps.",
                silent=[s("rl_gpu_throughput_tokens_per_second", "1200x80 300x20"),
                        s("rl_phase_in_progress_start_timestamp_seconds",
                          " ".join(["NaN"] * 84 + ["5040"] * 3 + ["NaN"] * 13), phase="heat_guard")],
                silent_at="90m"),
        ],
        cadence=Pathology(
            assign(rl_gpu_throughput_tokens_per_second=lambda v, i, r: uniform(r, 250, 350)), {"30s": 12, "2m": 12, "10m": 11},
            why="the demo's entry derives tokens/s from phase timings and step tokens, which this run does not log"),
    ),
    Alert(
        name="RLGPUMemoryNearFull", severity="warning", for_=Dur(60),
        expr="max by (run) (rl_gpu_memory_peak_bytes{{kind=\"allocated\"}})\n"
             "/ on (run) min by (run) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}\n"
             "or\n(\n  run_instance_gpu:hw_gpu_memory_usage_bytes:avg_recent\n"
             "  / on (run, instance, gpu) max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}\n"
             "  and on (run, instance, gpu)\n"
             "  (run_instance_gpu:hw_gpu_memory_usage_bytes:avg_recent - run_instance_gpu:hw_gpu_memory_usage_bytes:avg_baseline)\n"
             "  / on (run, instance, gpu) max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_growth_ratio}\n)",
        thresholds={
            "gpu_memory_full_ratio": Threshold(
                0.95,
                "The veRL metrics guide, problem 3: max_memory close to total memory = OOM next. "
                "NVML usage alone is ~95 % on a healthy RL job (the rollout engine pre-allocates its "
                "KV cache, the caching allocator keeps what it reserved): read the trainer's peak "
                "allocated bytes, or NVML usage that is near full ..."),
            "gpu_memory_growth_ratio": Threshold(
                0.03,
                "... AND still growing by this share of the device over the baseline."),
        },
        summary="The trainer's own GPU memory peak is nearly the whole GPU, or usage is near full "
                "and still growing: the next long batch may OOM.",
        description="Run {{ $labels.run }}: GPU memory is {{ $value | humanizePercentage }} of the "
                    "device (allocated peak, or NVML usage still growing).",
        meaning="the trainer's own peak allocated memory is above {gpu_memory_full_ratio} of the "
                "device, or NVML usage is above {gpu_memory_full_ratio} AND grew by more than "
                "{gpu_memory_growth_ratio} of the device over its baseline.",
        impact="the next long batch OOMs (the veRL metrics guide, problem 3).",
        diagnosis_source="the RL metrics dictionary: \"显存 OOM\"",
        diagnosis="first `rl_dp_rank_tokens{stat=\"max\"}` (global_seqlen/max); next "
                  "`rl_response_length_tokens{stat=\"max\"}` and prompt length.",
        mitigation="smaller mini/micro batch, gradient checkpointing, dynamic batch size with a "
                   "lower token cap.",
        cases=[
            Case(
                title="the trainer's peak, not NVML",
                fire=[s("rl_gpu_memory_peak_bytes", "78e9x30", kind="allocated"),
                      s("hw_gpu_memory_limit_bytes", "80e9x30", gpu="0")], at="20m", desc='Run r: GPU memory is 97.5% of the device (allocated peak, or NVML usage still growing).',
                # the rollout engine pre-allocated its KV cache: NVML at 96 %, flat
                silent=[s("hw_gpu_memory_usage_bytes", "76.8e9x100", gpu="0"),
                        s("hw_gpu_memory_limit_bytes", "80e9x100", gpu="0"),
                        s("rl_gpu_memory_peak_bytes", "52e9x100", kind="allocated")], silent_at="90m"),
        ],
        cadence=from_entry("gpu-memory-full", {"30s": 5, "2m": 4, "10m": 4}),
    ),
    Alert(
        name="RLGPUThrottling", severity="warning", for_=Dur(300),
        expr='max by (run, instance, gpu) (rate(hw_gpu_clock_event_seconds_total{{reason=~"{throttle_counter_reasons}"}}'
             "[{gpu_window}])) > {throttle_time_ratio}\n"
             "or\nmax by (run, instance, gpu) (avg_over_time(hw_gpu_clock_event_active{{"
             'reason=~"{throttle_reasons}"}}[{gpu_window}])) > {throttle_time_ratio}',
        thresholds={
            "gpu_window": Threshold(
                Dur(600),
                "Fixed wall-clock window for hardware signals (they do not move with steps)."),
            "throttle_time_ratio": Threshold(
                0.2,
                "Share of the gpu_window the clocks were held down (rate of the violation-time "
                "counter, or the average of the sampled clock-event state)."),
            "throttle_counter_reasons": Threshold(
                "thermal",
                "The violation-time counter's reasons that count. power is left out: a GPU at its "
                "power limit under full training load is normal."),
            "throttle_reasons": Threshold(
                "hardware_slowdown|hardware_thermal_slowdown|software_thermal_slowdown|"
                        "hardware_power_brake_slowdown",
                "The sampled clock-event reasons that count. software_power_cap is left out: a GPU "
                "at its power limit under full training load is normal; add it if your fleet runs "
                "below its cap."),
        },
        summary="A GPU is held back by thermal or hardware throttling for a good share of the time.",
        description="Run {{ $labels.run }}: GPU {{ $labels.gpu }} clocks were held down {{ $value | "
                    "humanizePercentage }} of the last window.",
        meaning="a GPU's clocks were held down more than {throttle_time_ratio} of the last "
                "{gpu_window}: the rate of the violation-time counter for reasons "
                "{throttle_counter_reasons}, or the average of the sampled clock-event state for "
                "{throttle_reasons}. Held {for}.",
        impact="slower steps. (A heat-guard pause of the whole run is not throttling: it stops the "
               "run; report it as a phase, see RLThroughputDrop.)",
        diagnosis="first `hw_gpu_temperature_celsius` against `hw_gpu_temperature_limit_celsius` and "
                  "`hw_gpu_power_watts` against `hw_gpu_power_limit_watts`; next the node's cooling "
                  "and whether the throttling follows the load (steps slow down with it).",
        mitigation="fix cooling, set a consistent power cap, move the run.",
        cases=[
            Case(
                fire=[s("hw_gpu_clock_event_active", "1x30", gpu="0", reason="hardware_thermal_slowdown")], at="20m",
                labels={"gpu": "0"},
                desc='Run r: GPU 0 clocks were held down 100% of the last window.',
                # a rare slowdown, idle clocks and the power cap of a fully loaded GPU are not throttling
                silent=[s("hw_gpu_clock_event_active", "0 0 0 0 0 0 0 0 0 1 " * 3, gpu="0", reason="software_thermal_slowdown"),
                        s("hw_gpu_clock_event_active", "1x30", gpu="0", reason="gpu_idle"),
                        s("hw_gpu_clock_event_active", "1x30", gpu="1", reason="software_power_cap")],
                silent_at="20m"),
            Case(
                title="violation-time counter",
                fire=[s("hw_gpu_clock_event_seconds_total", "0+30x30", gpu="0", reason="thermal")], at="25m",
                labels={"gpu": "0"}, desc='Run r: GPU 0 clocks were held down 50% of the last window.',
                # at its power cap under full load: normal
                silent=[s("hw_gpu_clock_event_seconds_total", "0+50x30", gpu="0", reason="power")], silent_at="25m"),
        ],
        cadence=Pathology(
            assign(thermal=lambda v, i, r: uniform(r, 0.4, 0.6)), {"30s": 25, "2m": 8, "10m": 4},
            why="the thermal clock-event reason is NVML's: a side series in the demo, not an edit of its frames"),
    ),
    Alert(
        name="RLMultiTurnRunaway", severity="warning", for_=Dur(60),
        expr="run:rl_turns:max_recent\n"
             "> {turns_runaway_factor} * run:rl_turns:avg_baseline\n"
             "and run:rl_turns:max_recent >= {turns_runaway_min}",
        thresholds={
            "turns_runaway_factor": Threshold(
                3,
                "The RL metrics dictionary: num_turns about 2 for single turn, a max that jumps is a "
                "loop. Max turns this many times their baseline ..."),
            "turns_runaway_min": Threshold(
                8,
                "... and at least this many turns."),
        },
        summary="Multi-turn rollouts run far more turns than the run's own baseline.",
        description="Run {{ $labels.run }}: a rollout took {{ $value }} turns, several times the "
                    "recent level.",
        meaning="the longest multi-turn rollout of {recent} took more than {turns_runaway_factor} x "
                "the average per-step maximum of {baseline}, and at least {turns_runaway_min} turns "
                "(the mean where only the mean is logged; veRL's message count, prompt included, "
                "read as (messages - 1) / 2 assistant turns).",
        impact="agent loops that never terminate burn rollout time and context.",
        diagnosis="first tool-call failures (`rl_tool_call_failure_ratio`) and the stop condition; "
                  "next a sample transcript.",
        mitigation="cap turns, penalise long episodes, fix the tool that fails.",
        cases=[
            Case(
                title="AReaL logs the mean only",
                fire=[s("rl_turns", "3x80 30x20")], at="90m", desc='Run r: a rollout took 30 turns, several times the recent level.',
                silent=[s("rl_turns", "3x100")], silent_at="90m"),
            # veRL counts messages, prompt included (num_turns = user + assistant + 1): the rule
            # reads (m - 1) / 2 assistant turns, the unit AReaL and slime count. 41 messages are 20
            Case(
                title="veRL's message count",
                fire=[s("rl_turn_messages", "5x80 41x20", stat="max"), s("rl_turn_messages", "3x100")],
                at="90m", desc="Run r: a rollout took 20 turns, several times the recent level.",
                silent=[s("rl_turn_messages", "2x100", stat="max"), s("rl_turn_messages", "2x100")],
                silent_at="90m"),
        ],
        cadence=from_entry("multi-turn-runaway", {"30s": 5, "2m": 4, "10m": 4}),
    ),
]
