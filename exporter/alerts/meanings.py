"""The runbook's "Meaning" line of every alert, stated from the rule source so it cannot drift.

Each entry is a template: [[name]] is the value of CONFIG[name] as the rule file renders it
(durations in words), {recent} / {baseline} the step-window phrases built from the step-window
settings, {for} the alert's `for:`. `python -m exporter.alerts docs` writes them into exporter/rules/runbook.md;
`python -m exporter.alerts --check` fails when the runbook differs, and tests/unit/alerts/test_meanings.py
when an alert's expression uses a threshold its meaning does not state.
"""
from __future__ import annotations

import re

from .rules import ALERTS
from .config import BASELINE_FACTOR, CONFIG, REWARD_WINDOW_FACTOR, TIERS, TREND_FACTOR, Dur
from .rules import alert

MEANING: dict[str, str] = {
    "RLRunStalled": "`rl_training_step` has not advanced for longer than max([[stall_floor_seconds]], "
                    "[[stall_step_factor]] x the longest step of the last [[step_window_4]]) while "
                    "Prometheus still scrapes the exporter, and the run has not reached its configured "
                    "total (`rl_config_value{parameter=\"total_training_steps\"}`): a finished run whose "
                    "exporter keeps serving does not page. Held {for}.",
    "RLExporterDown": "Prometheus failed every scrape of an rl-exporter target (`up == 0`) {for}. "
                      "The `run` label is the one the target last reported.",
    "RLRestartWithoutProgress": "the run restarted [[restart_loop_count]] or more times within one of the "
                                "step windows ([[step_window_1]], [[step_window_2]], [[step_window_3]], "
                                "[[step_window_4]]) while the highest `rl_training_step` of that window "
                                "got fewer than [[restart_min_progress_steps]] steps past the highest of "
                                "the [[step_window_4]] before it. A restart is the step going back (a resume "
                                "from an older checkpoint) or the exporter's counters resetting "
                                "(`rl_exporter_frames_received_total`: a new process). Held {for}. One "
                                "restart that resumes and moves on never fires.",
    "RLNonFiniteLoss": "the loss, policy loss or value loss was NaN or infinite on every sample of the "
                       "shortest step window holding at least [[nonfinite_persist_steps]] steps. A lone "
                       "non-finite step, or a non-finite gradient norm the trainer skipped, does not "
                       "page (see RLNonFiniteGradSkipped).",
    "RLOptimizerNonFiniteSkips": "the optimizer rejected [[nonfinite_consecutive_skips]] or more updates "
                                 "in a row for a non-finite loss or gradient "
                                 "(`rl_optimizer_consecutive_nonfinite_skips`).",
    "RLNonFiniteGradSkipped": "[[nonfinite_grad_repeats]] or more non-finite gradient norms (counted by "
                              "the exporter) or optimizer non-finite skips in {recent}. One skipped "
                              "update is harmless; repeats are a trend.",
    "RLRewardCollapse": "the mean task reward of {recent} fell more than [[reward_drop_ratio]] x "
                        "|baseline|, more than [[reward_drop_min]] and more than [[reward_noise_sigmas]] "
                        "per-step standard deviations of the baseline window below {baseline}. The task reward "
                        "is the raw score (`rl_score`: veRL `critic/score`, slime/Miles "
                        "`rollout/raw_reward`) where logged, else `rl_reward`. {reward}",
    "RLRewardDeclining": "the mean task reward of {recent} is more than [[reward_decline_ratio]] x "
                         "|best|, more than [[reward_drop_min]] and more than [[reward_noise_sigmas]] "
                         "per-step standard deviations of the baseline window below {best}: a decline too slow "
                         "for RLRewardCollapse, whose baseline drifts down with it. {reward}",
    "RLEntropyCollapse": "mean token entropy (`rl_entropy`; veRL up to v0.3.0.post1 logs it as "
                         "`actor/entropy_loss`) over {recent} is below [[entropy_collapse_ratio]] x "
                         "{baseline}.",
    "RLPolicyKLSpike": "mean PPO KL (`ppo_kl`, old vs updated policy) over {recent} is above "
                       "[[policy_kl_high]].",
    "RLReferenceKLRunaway": "KL to the frozen reference (`rl_reference_kl`, or where a run logs none the "
                            "KL it folds into the reward, `rl_reward_kl_penalty`) over {recent} is more "
                            "than [[reference_kl_runaway_factor]] x {baseline} (a baseline above "
                            "[[reference_kl_baseline_min]]) and above [[reference_kl_min]]; or above "
                            "[[reference_kl_high]] once the run has a baseline.",
    "RLKLSingleTokenDominates": "on the latest step `kl_max / kl_mean` exceeds [[kl_max_over_mean]], "
                                "`kl_max` is more than [[kl_max_jump_factor]] x its baseline mean, and "
                                "the gradient norm is above the largest value of the baseline window: "
                                "one token owns the step.",
    "RLClipFractionHigh": "the PPO ratio clip bound more than [[clip_ratio_high]] of tokens on average "
                          "over {recent} (`rl_policy_clip_ratio{bound=\"\"}`), or, under GSPO, more than "
                          "[[sequence_clip_ratio_high]] of responses (`rl_policy_sequence_clip_ratio`).",
    "RLDualClipFractionHigh": "the dual-clip lower bound (`pg_clipfrac_lower`, "
                              "`rl_policy_clip_ratio{bound=\"dual\"}`) bound more than "
                              "[[dual_clip_ratio_high]] of tokens on average over {recent}. Info: it "
                              "is usually below that and rarely triggers.",
    "RLClipFractionNonZeroOnPolicy": "the clip fraction was above 0 on some step of {recent} although "
                                     "the run takes one mini-batch per step "
                                     "(`rl_config_value{parameter=\"n_mini\"} == 1`), where the ratio "
                                     "is identically 1. Silent when the run does not export `n_mini`.",
    "RLGradNormExplosion": "the median gradient norm of {recent} is more than "
                           "[[grad_norm_explosion_factor]] x the median of {baseline}. A median: one "
                           "skipped step's Inf does not move it, and a spike of one or two steps "
                           "does not fire. A baseline median at or under [[grad_norm_vanishing]] (a "
                           "gradient that is exactly 0 on most steps) is no level to multiply.",
    "RLGradNormPinnedAtClip": "the pre-clip gradient norm stayed at or above `max_grad_norm` "
                              "(`rl_config_value{parameter=\"max_grad_norm\"}`) on every sample of the "
                              "shortest step window holding at least [[grad_clip_pinned_steps]] steps: "
                              "every update is clipped. Info: a healthy run crosses the clip now and "
                              "then.",
    "RLGradNormZero": "the gradient norm was exactly 0 on every step of {recent}, or at least "
                      "[[zero_grad_skip_share]] zero-gradient skips per step "
                      "(`rl_optimizer_zero_grad_skips_total`) happened there.",
    "RLGradNormVanishing": "the largest gradient norm of {recent} is below [[grad_norm_vanishing]] but "
                           "not 0 (0 is RLGradNormZero), and the median of {baseline} was above it: "
                           "the gradient vanished and learning stalls. A run whose gradient was "
                           "always under the bound (a small LoRA adapter) has fallen from nothing.",
    "RLOptimizerStepsDiverge": "PPO's policy and critic optimizer counters "
                               "(`rl_optimizer_steps_total{role=\"policy\"|\"critic\"}`) advanced by "
                               "more than [[optimizer_steps_divergence]] steps apart over {recent}, "
                               "outside a critic-only warmup (`rl_actor_warmup`). They advance by the "
                               "same configured number of minibatches.",
    "RLLearningRateZero": "the learning rate (`rl_learning_rate`) was exactly 0 on every step of "
                          "{recent} although it was above 0 in the 4x longer window before: the "
                          "schedule or the configuration zeroed it.",
    "RLNoInformativeGroups": "fewer than [[informative_groups_min_ratio]] of GRPO groups had differing "
                             "rewards on average over {recent} (group counts, the tied-group share, "
                             "Miles' zero-std shares or AReaL's zero-advantage token share; group "
                             "counts are skipped under dynamic sampling), or under dynamic sampling "
                             "the filter kept fewer than [[dynamic_filter_pass_min_ratio]] of draws, "
                             "or the best and worst score of every step tied.",
    "RLResponseTruncationHigh": "more than [[truncation_ratio_high]] of responses hit the length limit "
                                "on average over {recent}; where no truncation share is logged, the "
                                "mean response length is above [[length_limit_mean_ratio]] x the "
                                "configured limit (`rl_config_value{parameter=\"max_response_length\"}`).",
    "RLResponseLengthRunaway": "mean response length over {recent} is more than "
                               "[[length_runaway_factor]] x {lowest}, more than "
                               "[[length_runaway_truncation]] of responses hit the length limit on "
                               "average over the same window, and the task reward is not "
                               "[[reward_drop_min]] above its best baseline level of the trend window.",
    "RLLengthFallingRewardRising": "mean response length over {recent} fell more than "
                                   "[[length_drop_ratio]] below {baseline} while the task reward rose "
                                   "more than [[reward_rise_ratio]] above its baseline.",
    "RLValidationRegressing": "a core validation score is more than [[validation_drop]] below its best "
                              "of the last [[validation_window]] (with at least "
                              "[[validation_min_changes]] new validation results in that window) while "
                              "the task reward of {recent} is at or above its baseline.",
    "RLCriticNotLearning": "value explained variance stayed below 0 on every step of {recent}, after "
                           "step [[critic_warmup_steps]]. PPO with a critic only.",
    "RLValueClipFractionHigh": "the value clip bound more than [[value_clip_ratio_high]] of value "
                               "predictions on average over {recent} (`rl_value_clip_ratio`).",
    "RLPreferenceOverfit": "preference accuracy stayed above [[preference_accuracy_high]] on every step "
                           "of {recent} while the best validation loss there is no better than "
                           "(1 - [[validation_flat_ratio]]) x the best of {baseline}.",
    "RLRewardModelMarginCollapse": "the chosen-minus-rejected reward margin over {recent} fell below "
                                   "[[margin_collapse_ratio]] x {baseline} (a positive baseline).",
    "RLTrainInferenceMismatchRising": "mean |log pi_train - log pi_rollout| over {recent} is more than "
                                      "[[mismatch_rise_factor]] x {baseline} and above "
                                      "[[logprob_diff_min]], or the train/inference KL is more than "
                                      "[[mismatch_rise_factor]] x its baseline and above "
                                      "[[train_inference_kl_min]] (one estimator: k3 where logged, k1 "
                                      "only where nothing else is). Silent when the sample staleness "
                                      "rose by [[mismatch_staleness_rise]] or more versions over the "
                                      "same windows: stale samples put policy drift into the gap.",
    "RLTrainInferenceNonFinite": "a share of valid tokens had a NaN or infinite trainer or engine "
                                 "log-prob (`rl_train_inference_nonfinite_ratio` above 0) on every "
                                 "step of {recent}.",
    "RLSampleStalenessHigh": "async samples are on average more than [[staleness_max_steps]] policy "
                             "versions older than the last published checkpoint over {recent} "
                             "(`rl_sample_staleness_steps{reference=\"\"}`; the proximal reference is "
                             "not this).",
    "RLDataParallelImbalance": "after balancing, the busiest data-parallel rank's tokens exceed the "
                               "least busy one's by more than [[dp_imbalance_ratio]] of them on average "
                               "over {recent} (veRL `global_seqlen/balanced_max` vs `balanced_min`; "
                               "the pre-balancing max/min only where no balanced figures exist), held "
                               "{for}.",
    "RLMoEExpertImbalance": "one MoE layer's hottest-expert load (max/ideal) over {recent} is more than "
                            "[[moe_imbalance_rise_factor]] x that layer's {baseline}.",
    "RLMFULow": "training MFU averaged over {recent} is below [[mfu_low]], held {for}.",
    "RLThroughputDrop": "tokens/s of a phase over {recent} are below [[throughput_drop_ratio]] x "
                        "{baseline} (veRL `perf/throughput`, slime/Miles `perf/tokens_per_gpu_per_sec`, "
                        "AReaL `train_perf/tokens_per_second`). A window a pause of the whole run "
                        "touched (a phase named [[pause_phases]] open at a scrape or published) is "
                        "no evidence: the alert stays silent there.",
    "RLGPUMemoryNearFull": "the trainer's own peak allocated memory is above [[gpu_memory_full_ratio]] "
                           "of the device, or NVML usage is above [[gpu_memory_full_ratio]] AND grew by "
                           "more than [[gpu_memory_growth_ratio]] of the device over its baseline.",
    "RLGPUThrottling": "a GPU's clocks were held down more than [[throttle_time_ratio]] of the last "
                       "[[gpu_window]]: the rate of the violation-time counter for reasons "
                       "[[throttle_counter_reasons]], or the average of the sampled clock-event state "
                       "for [[throttle_reasons]]. Held {for}.",
    "RLMultiTurnRunaway": "the longest multi-turn rollout of {recent} took more than "
                          "[[turns_runaway_factor]] x the baseline of the per-step maximum, and at least "
                          "[[turns_runaway_min]] turns (the mean where only the mean is logged).",
    "RLRankStraggler": "on every step of the recent step window (per run, the shortest of "
                       "[[step_window_1]], [[step_window_2]], [[step_window_3]], [[step_window_4]] "
                       "holding at least [[straggler_steps]] steps) one rank's duration of a phase "
                       "(`rl_phase_duration_seconds`, or its step: `rl_step_duration_seconds` as phase "
                       "`step`) was above [[straggler_factor]] x the median over the run's ranks of "
                       "each rank's median, and at least [[straggler_min_excess_seconds]] longer, in a "
                       "run where at least [[straggler_min_ranks]] ranks report that phase. Ranks are "
                       "the run's scrape targets (`instance`); the `rank` label comes from each "
                       "target's `rl_run_info`. Pause phases ([[pause_phases]]) are left out. "
                       "Held {for}.",
    "RLPhaseHung": "a `timer(phase)` has been open longer than max([[phase_hung_floor_seconds]], "
                   "[[phase_hung_factor]] x the phase's median over its last 20 occurrences), or "
                   "[[phase_hung_no_history_seconds]] for a phase that never closed before, held {for}. "
                   "A pause of the whole run (a phase named [[pause_phases]] open) holds every phase and "
                   "does not count. A warning: RLRunStalled pages once no step advances.",
    "RLRolloutGPUIdle": "during rollout phases ([[rollout_phases]]) more than "
                        "[[rollout_gpu_idle_ratio]] of the NVML-sampled GPU time over [[engine_window]] "
                        "was idle, or a rollout phase has been open [[rollout_engine_idle_seconds]] while "
                        "every vLLM/SGLang engine of the run runs no request. Held {for}.",
    "RLRolloutAbortsHigh": "over [[abort_window]] more than [[engine_abort_ratio]] of the run's rollout "
                           "requests ended aborted, with at least [[engine_abort_min_requests]] "
                           "requests. Held {for}.",
    "RLRolloutKVCacheThrash": "an engine's KV cache averaged over [[kv_cache_high_ratio]] for "
                              "[[engine_window]] while it preempted more than [[kv_thrash_preemptions]] "
                              "requests in that window. Held {for}.",
    "RLRolloutLongTail": "end-to-end request latency p99 over [[engine_window]] is more than "
                         "[[long_tail_ratio]] x its p50, held {for}.",
    "RLRolloutEngineDown": "every rollout-engine target of a run (a job matching `engine_job_selector`) "
                           "failed every scrape {for} while the run's trainer still exports "
                           "(`rl_run_info` present). One engine of several down while the others "
                           "serve does not page.",
}


def words(seconds: float) -> str:
    """A duration in words: 1800 -> 30 min, 4800 -> 1 h 20 min, 172800 -> 2 days."""
    s = int(round(seconds))
    if s % 86400 == 0 and s >= 86400:
        return f"{s // 86400} day" + ("s" if s >= 172800 else "")
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    parts = ([f"{h} h"] if h else []) + ([f"{m} min"] if m else []) + ([f"{sec} s"] if sec else [])
    return " ".join(parts) or "0 s"


def _value(name: str) -> str:
    v = CONFIG[name]
    if isinstance(v, Dur):
        return words(v.seconds)
    if isinstance(v, str):
        return "|".join(f"`{p}`" for p in v.split("|"))
    return f"{v:g}" if isinstance(v, float) else str(v)


def recent_phrase() -> str:
    ws = ", ".join(words(CONFIG[f"step_window_{i}"].seconds) for i in TIERS)
    return (f"the recent step window (per run, the shortest of {ws} holding at least "
            f"{CONFIG['recent_min_steps']} steps)")


def trend_phrase(which: str) -> str:
    return (f"its {which} baseline level over the trend window ({TREND_FACTOR} recent windows, "
            f"{TREND_FACTOR * CONFIG['recent_min_steps']}-{TREND_FACTOR * 4 * CONFIG['recent_min_steps']} steps)")


def reward_phrase() -> str:
    return (f"The reward's windows, baseline and trend window are {REWARD_WINDOW_FACTOR}x those of "
            f"the other rules ({REWARD_WINDOW_FACTOR * CONFIG['recent_min_steps']} steps or more): "
            "a reward is a mean over a few groups, and some trainers log it on rollout steps only.")


def baseline_phrase() -> str:
    return (f"its baseline (the {BASELINE_FACTOR}x longer window just before, holding at least "
            f"{CONFIG['baseline_min_steps']} steps, once the run is past step {CONFIG['warmup_steps']})")


_REF = re.compile(r"\[\[(\w+)\]\]")


def fill(text: str) -> str:
    """[[name]] -> the configured value of CONFIG[name]."""
    return _REF.sub(lambda m: _value(m.group(1)), text)


def meaning(name: str) -> str:
    a = alert(name)
    text = MEANING[name].replace("{recent}", recent_phrase()).replace("{baseline}", baseline_phrase())
    text = text.replace("{best}", trend_phrase("best")).replace("{lowest}", trend_phrase("lowest"))
    text = text.replace("{reward}", reward_phrase())
    return fill(text.replace("{for}", f"for {words(a.for_.seconds)}"))


def stated(name: str) -> set[str]:
    """CONFIG names a meaning states ([[name]], and recent_min_steps through {recent})."""
    out = set(_REF.findall(MEANING[name]))
    if "{recent}" in MEANING[name]:
        out |= {"recent_min_steps"} | {f"step_window_{i}" for i in TIERS}
    return out


_LINE = re.compile(r"^- \*\*Meaning\*\*: .*$", re.M)


def render_runbook(text: str) -> str:
    """Rewrite the Meaning line of every alert section of the runbook."""
    out, pos = [], 0
    heads = list(re.finditer(r"^## (RL\w+)\s*$", text, re.M))
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        name = h.group(1)
        body = text[h.end():end]
        if name in MEANING:
            line = f"- **Meaning**: {meaning(name)}"
            if _LINE.search(body):
                body = _LINE.sub(lambda m: line, body, count=1)
            else:
                body = "\n" + line + body
        out.append(text[pos:h.end()] + body)
        pos = end
    return "".join(out) + text[pos:]


def missing() -> list[str]:
    names = {a.name for a in ALERTS}
    return ([f"{n}: no Meaning in exporter/alerts/meanings.py" for n in sorted(names - set(MEANING))]
            + [f"{n}: Meaning for an unknown alert" for n in sorted(set(MEANING) - names)])
