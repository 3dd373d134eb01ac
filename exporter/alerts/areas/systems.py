"""Systems: train/inference mismatch, staleness, balance, MFU, throughput, GPUs, turns."""
from __future__ import annotations

from ..config import Dur
from ..exprs import R, recent, paused
from ..model import Alert

ALERTS: list[Alert] = [
    Alert("RLTrainInferenceMismatchRising", "warning",
          "(\n(\n  run:rl_train_inference_logprob_abs_diff:avg_recent\n"
          "  / run:rl_train_inference_logprob_abs_diff:avg_baseline > {mismatch_rise_factor}\n"
          "  and run:rl_train_inference_logprob_abs_diff:avg_recent > {logprob_diff_min}\n)\n"
          "or\n(\n  run:rl_train_inference_kl:avg_recent\n"
          "  / run:rl_train_inference_kl:avg_baseline > {mismatch_rise_factor}\n"
          "  and run:rl_train_inference_kl:avg_recent > {train_inference_kl_min}\n)\n)\n"
          "unless on (run)\n(\n  run:rl_sample_staleness_steps:avg_recent - run:rl_sample_staleness_steps:avg_baseline\n"
          "  >= {mismatch_staleness_rise}\n)",
          Dur(60), "Trainer and inference engine disagree more and more on token log-probs.",
          f"Run {R}: train/inference mismatch is {{{{ printf \"%.1f\" $value }}}}x its baseline over "
          "the preceding steps."),
    # AReaL metrics tracking: the fraction of valid tokens whose trainer or engine log-prob is NaN
    # or infinite; with any, the tail ratios are NaN and the gap statistics are not comparable.
    Alert("RLTrainInferenceNonFinite", "warning",
          recent("min_over_time", "rl_train_inference_nonfinite_ratio") + " > 0",
          Dur(60), "Trainer or engine log-probs are non-finite on valid tokens, step after step.",
          f"Run {R}: {{{{ $value | humanizePercentage }}}} of valid tokens (at least) had a NaN or "
          "infinite log-prob on every recent step."),
    Alert("RLSampleStalenessHigh", "warning",
          "run:rl_sample_staleness_steps:avg_recent > {staleness_max_steps}",
          Dur(60), "Async samples come from policies many versions old.",
          f"Run {R}: samples are {{{{ printf \"%.1f\" $value }}}} policy versions stale on average."),
    Alert("RLDataParallelImbalance", "info",
          "(\n" + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="balanced_max", split=""}}')
          + "\n/ on (run) " + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="balanced_min", split=""}}')
          + "\nor\n" + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="max", split=""}}')
          + "\n/ on (run) " + recent("avg_over_time", "rl_dp_rank_tokens", '{{stat="min", split=""}}')
          + "\n) - 1 > {dp_imbalance_ratio}",
          Dur(1800), "Tokens per data-parallel rank are unbalanced after balancing: the busiest rank "
          "sets the pace.",
          f"Run {R}: the busiest data-parallel rank gets {{{{ $value | humanizePercentage }}}} more "
          "tokens than the least busy one (veRL balanced partition)."),
    Alert("RLMoEExpertImbalance", "warning",
          "run_layer:rl_moe_load_imbalance_ratio:avg_recent\n"
          "> {moe_imbalance_rise_factor} * run_layer:rl_moe_load_imbalance_ratio:avg_baseline",
          Dur(60), "One MoE layer's expert load drifted far from its own balance.",
          f"Run {R}: MoE layer {{{{ $labels.layer }}}} hottest expert carries {{{{ printf \"%.2f\" $value }}}}x "
          "its ideal load, [[moe_imbalance_rise_factor]]x that layer's baseline."),
    Alert("RLMFULow", "info",
          recent("avg_over_time", "rl_mfu_ratio", '{{stat="", split="", phase="train"}}', by="run, role")
          + " < {mfu_low}",
          Dur(1800), "Training model-FLOPs utilisation has been low for a long time.",
          f"Run {R}: {{{{ $labels.role }}}} training MFU is {{{{ $value | humanizePercentage }}}}."),
    Alert("RLThroughputDrop", "warning",
          "run_phase:rl_throughput:avg_recent\n"
          "< {throughput_drop_ratio} * run_phase:rl_throughput:avg_baseline\n"
          "unless on (run)\n" + paused(),
          Dur(60), "Tokens per second dropped well below the run's own baseline.",
          f"Run {R}: {{{{ $labels.phase }}}} throughput is {{{{ printf \"%.0f\" $value }}}} tokens/s, "
          "under half its baseline over the preceding steps."),
    Alert("RLGPUMemoryNearFull", "warning",
          "max by (run) (rl_gpu_memory_peak_bytes{{kind=\"allocated\"}})\n"
          "/ on (run) min by (run) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}\n"
          "or\n(\n  run_instance_gpu:hw_gpu_memory_usage_bytes:avg_recent\n"
          "  / on (run, instance, gpu) max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_full_ratio}\n"
          "  and on (run, instance, gpu)\n"
          "  (run_instance_gpu:hw_gpu_memory_usage_bytes:avg_recent - run_instance_gpu:hw_gpu_memory_usage_bytes:avg_baseline)\n"
          "  / on (run, instance, gpu) max by (run, instance, gpu) (hw_gpu_memory_limit_bytes) > {gpu_memory_growth_ratio}\n)",
          Dur(60), "The trainer's own GPU memory peak is nearly the whole GPU, or usage is near full "
          "and still growing: the next long batch may OOM.",
          f"Run {R}: GPU memory is {{{{ $value | humanizePercentage }}}} of the device (allocated peak, "
          "or NVML usage still growing)."),
    Alert("RLGPUThrottling", "warning",
          'max by (run, instance, gpu) (rate(hw_gpu_clock_event_seconds_total{{reason=~"{throttle_counter_reasons}"}}'
          "[{gpu_window}])) > {throttle_time_ratio}\n"
          "or\nmax by (run, instance, gpu) (avg_over_time(hw_gpu_clock_event_active{{"
          'reason=~"{throttle_reasons}"}}[{gpu_window}])) > {throttle_time_ratio}',
          Dur(300), "A GPU is held back by thermal or hardware throttling for a good share of the time.",
          f"Run {R}: GPU {{{{ $labels.gpu }}}} clocks were held down {{{{ $value | humanizePercentage }}}} "
          "of the last window."),
    Alert("RLMultiTurnRunaway", "warning",
          "run:rl_turns:max_recent\n"
          "> {turns_runaway_factor} * run:rl_turns:avg_baseline\n"
          "and run:rl_turns:max_recent >= {turns_runaway_min}",
          Dur(60), "Multi-turn rollouts run far more turns than the run's own baseline.",
          f"Run {R}: a rollout took {{{{ $value }}}} turns, several times the recent level."),
]
