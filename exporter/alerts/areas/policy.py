"""Policy causes: entropy, KL, clipping, gradients and the learning rate (tickets)."""
from __future__ import annotations

from ..config import Dur
from ..exprs import SEAM, CLIP_SEL, CONFIG_SEL, ladder, over, recent, increase_per_attempt
from ..model import Alert, Case, Threshold
from ..series import alt, s
from ..sim.healthy import uniform
from ..sim.pathology import Pathology, assign, from_entry

ALERTS: list[Alert] = [
    Alert(
        name="RLEntropyCollapse", severity="warning", for_=Dur(60),
        expr="run:rl_entropy:avg_recent\n< {entropy_collapse_ratio} * run:rl_entropy:avg_baseline",
        thresholds={
            "entropy_collapse_ratio": Threshold(
                0.4,
                "Recent mean entropy below this fraction of its baseline: the veRL metrics guide's "
                "\"entropy quickly falls to ~0\" (premature convergence, problem 2); the RL metrics "
                "dictionary checks entropy first when the reward drops."),
        },
        summary="Policy entropy collapsed relative to the run's own recent level.",
        description="Run {{ $labels.run }}: mean entropy is {{ printf \"%.3f\" $value }}, under "
                    "{entropy_collapse_ratio}x its baseline over the preceding steps.",
        meaning="mean token entropy (`rl_entropy`: veRL `actor/entropy`, OpenRLHF `entropy_loss`, "
                "TRL and AReaL `entropy`; the update-pass entropy, veRL `actor/entropy_loss` and "
                "slime/Miles `train/entropy_loss`, where a run logs no other) over {recent} is below {entropy_collapse_ratio} x its mean "
                "over {baseline}.",
        impact="the policy stops exploring (the veRL metrics guide, problem 2, premature "
               "convergence); reward collapse often follows.",
        diagnosis="first the task score the reward rules read (`rl_score`, else `rl_reward`): is it "
                  "already falling, or rising suspiciously? A collapse often comes with reward "
                  "hacking (the RL metrics dictionary): read a few samples (the same short answer, "
                  "format tricks) and the response length before raising entropy. Next "
                  "`rl_policy_kl` near 0, `rl_policy_clip_ratio` and the entropy coefficient.",
        mitigation="raise `entropy_coeff` (the veRL metrics guide: 0.001 -> 0.01) or the rollout "
                   "temperature (1.0 -> 1.2).",
        cases=[
            Case(
                fire=[s("rl_entropy", "1x80 0.2x20")], at="95m",
                desc='Run r: mean entropy is 0.200, under 0.4x its baseline over the preceding steps.',
                silent=[s("rl_entropy", "1.2-0.008x99")], silent_at="95m"),
            # the framework's own entropy first; the update-pass entropy (veRL actor/entropy_loss,
            # slime/Miles train/entropy_loss) where a run logs no other. Miles writes 0 there when
            # it does not compute it: a healthy rollout entropy beside it is what the rule reads
            Case(
                title="the update pass where a run logs no other entropy",
                fire=[s("rl_entropy", "1x80 0.2x20", phase="update")], at="95m",
                desc='Run r: mean entropy is 0.200, under 0.4x its baseline over the preceding steps.',
                silent=[s("rl_entropy", "1.2-0.002x99"), s("rl_entropy", "0x100", phase="update")],
                silent_at="95m"),
        ],
        cadence=from_entry("entropy-collapse", {"30s": 12, "2m": 12, "10m": 10}),
    ),
    Alert(
        name="RLPolicyKLSpike", severity="warning", for_=Dur(60),
        expr=recent("avg_over_time", "rl_policy_kl") + " > {policy_kl_high}",
        thresholds={
            "policy_kl_high": Threshold(
                0.05,
                "The veRL metrics guide, section 1.3: ppo_kl 0.001-0.01 healthy, 0.01-0.05 large, > "
                "0.05 unstable."),
        },
        summary="KL between the sampling and the updated policy is far above its healthy range.",
        description="Run {{ $labels.run }}: mean PPO KL (ppo_kl) is {{ printf \"%.4f\" $value }} "
                    "over the recent steps.",
        meaning="mean PPO KL (`ppo_kl`, old vs updated policy) over {recent} is above {policy_kl_high}.",
        impact="updates move the policy too far per step; instability and clipping follow.",
        diagnosis_source="the RL metrics dictionary: \"KL 飙升\"",
        diagnosis="first the `ppo_kl` trend; next the learning-rate schedule (`rl_learning_rate`: "
                  "warm-up skipped? wrong peak?).",
        mitigation="lower the learning rate, fewer PPO epochs per batch, tighter clip range.",
        cases=[
            Case(
                fire=[s("rl_policy_kl", "0.004x30 0.08x20")], at="45m",
                desc='Run r: mean PPO KL (ppo_kl) is 0.0800 over the recent steps.',
                silent=[s("rl_policy_kl", alt(0.001, 0.01, 25))], silent_at="45m"),
        ],
        cadence=from_entry("kl-spike", {"30s": 11, "2m": 10, "10m": 8}),
    ),
    Alert(
        name="RLReferenceKLRunaway", severity="warning", for_=Dur(60),
        expr="(\n"
             "  run:rl_reference_kl:avg_recent\n"
             "  > {reference_kl_runaway_factor} * (run:rl_reference_kl:avg_baseline > {reference_kl_baseline_min})\n"
             "  and run:rl_reference_kl:avg_recent > {reference_kl_min}\n"
             ")\nor\n"
             + ladder("max by (run) (min_over_time(rl_reference_kl{{stat=\"\", split=\"\"}}[{W}]))\n"
                      "  or max by (run) (min_over_time(rl_reward_kl_penalty{{stat=\"\", split=\"\"}}[{W}]))\n"
                      "  or (-1 * max by (run) (max_over_time(rl_reward_kl_term{{stat=\"\", split=\"\"}}[{W}]))\n"
                      "    / on (run) max by (run) (" + CONFIG_SEL.format("kl_reward_coef") + " > 0))",
                      "{reference_kl_persist_steps}") + " > {reference_kl_high}",
        thresholds={
            "reference_kl_runaway_factor": Threshold(
                5,
                "The veRL metrics guide, section 1.6: actor/kl_loss 0.001-0.1 is normal; the RL "
                "metrics dictionary calls a sudden jump (0.02 -> 0.15) a sharp turn. Relative: the "
                "recent mean this many times its baseline."),
            "reference_kl_min": Threshold(
                0.1,
                "... and above the top of the veRL metrics guide's normal range (0.1)."),
            "reference_kl_baseline_min": Threshold(
                0.02,
                "... only once the baseline itself is off the floor: every run starts at KL 0 (the "
                "policy is the reference), so its first departure multiplies KL many times (a real "
                "healthy TRL GRPO run went 0.01 -> 0.2 over steps 30-45)."),
        },
        summary="KL to the reference policy is running away from its recent level.",
        description="Run {{ $labels.run }}: KL to the reference is {{ printf \"%.4f\" $value }}: "
                    "a recent mean several times its baseline over the preceding steps, or above "
                    "{reference_kl_high} on every recent step, far above the healthy range.",
        meaning="KL to the frozen reference (`rl_reference_kl`, or where a run logs none the KL it "
                "folds into the reward, `rl_reward_kl_penalty`, or AReaL's `kl_rewards` divided by "
                "-`kl_ctl`) over {recent} is more than "
                "{reference_kl_runaway_factor} x its mean over {baseline}, where that mean is above "
                "{reference_kl_baseline_min}, and above {reference_kl_min}; or above "
                "{reference_kl_high} (10x the top of the veRL metrics guide's normal range; the "
                "highest healthy value seen is 0.94 on one step) on every step of "
                "{last_reference_kl_persist_steps}, from the first steps on: no baseline is needed "
                "for a value no healthy run has.",
        impact="the policy is drifting away from the reference faster than before (reward hacking, "
               "language drift).",
        diagnosis_source="the RL metrics dictionary, section 12, \"KL spikes\"",
        diagnosis="first the `rl_policy_kl` trend and whether the learning-rate schedule is right "
                  "(`rl_learning_rate`); next `rl_kl_coefficient` (is the KL penalty on?), "
                  "`rl_reference_kl{stat=\"max\"}` (one token?), and reward vs validation.",
        mitigation="raise the KL coefficient, lower the learning rate, roll back.",
        cases=[
            # the RL metrics dictionary: "KL should grow slowly and steadily; a sudden jump (e.g. 0.02 -> 0.15) is a sharp
            # turn". The first departure from KL 0 (a real healthy TRL run: 0.01 -> 0.2) is not one.
            Case(
                title="a sharp turn from an established level",
                fire=[s("rl_reference_kl", "0.025x80 0.15+0.05x20")], at="90m",
                desc="Run r: KL to the reference is 0.4750: a recent mean several times its baseline over "
                     "the preceding steps, or above 1 on every recent step, far above the healthy range.",
                silent=[s("rl_reference_kl", "0.002x80 0.15+0.002x20")], silent_at="90m"),
            Case(
                title="far above the healthy range from the start",
                fire=[s("rl_reference_kl", "3x100")], at="90m",
                desc="Run r: KL to the reference is 3.0000: a recent mean several times its baseline over "
                     "the preceding steps, or above 1 on every recent step, far above the healthy range.",
                silent=[s("rl_reference_kl", "0.08x100")], silent_at="90m"),
            Case(
                title="broken from the first logged step: no baseline yet",
                fire=[s("rl_reference_kl", "3x15")], at="10m",
                desc="Run r: KL to the reference is 3.0000: a recent mean several times its baseline over "
                     "the preceding steps, or above 1 on every recent step, far above the healthy range.",
                # the highest healthy value seen: 0.94 on one step among 0.006-0.07
                silent=[s("rl_reference_kl", "0.05 0.07 0.94 0.006 0.05x11")], silent_at="10m"),
            # veRL use_kl_in_reward (the veRL metrics guide, section 3.6): the KL to the reference is
            # actor/reward_kl_penalty; no actor/kl_loss is logged
            Case(
                title="veRL's in-reward KL",
                fire=[s("rl_reward_kl_penalty", "3x100")], at="90m",
                desc="Run r: KL to the reference is 3.0000: a recent mean several times its baseline over "
                     "the preceding steps, or above 1 on every recent step, far above the healthy range.",
                silent=[s("rl_reward_kl_penalty", "0.08x100")], silent_at="90m"),
            # AReaL logs -kl_ctl x KL (ppo_actor/kl_rewards, rl_reward_kl_term) and its integration
            # captures kl_ctl: the rules read the KL itself. kl_ctl 0.1, KL 0.03 then 0.15 +
            # 0.05/min; silent: the same term without a reference model (kl_reward_coef 0: no KL)
            Case(
                title="AReaL's coefficient-scaled term",
                fire=[s("rl_reward_kl_term", "-0.003x80 -0.015-0.005x20"),
                      s("rl_config_value", "0.1x100", parameter="kl_reward_coef")], at="90m",
                desc="Run r: KL to the reference is 0.4750: a recent mean several times its baseline over "
                     "the preceding steps, or above 1 on every recent step, far above the healthy range.",
                silent=[s("rl_reward_kl_term", "-0.003x80 -0.015-0.005x20"),
                        s("rl_config_value", "0x100", parameter="kl_reward_coef")], silent_at="90m"),
            Case(
                title="AReaL: a steady KL term",
                fire=[s("rl_reward_kl_term", "-0.3x100"),
                      s("rl_config_value", "0.1x100", parameter="kl_reward_coef")], at="90m",
                desc="Run r: KL to the reference is 3.0000: a recent mean several times its baseline over "
                     "the preceding steps, or above 1 on every recent step, far above the healthy range.",
                silent=[s("rl_reward_kl_term", "-0.003x100"),
                        s("rl_config_value", "0.1x100", parameter="kl_reward_coef")], silent_at="90m"),
        ],
        cadence=from_entry("reference-kl-runaway", {"30s": 10, "2m": 9, "10m": 8}),
    ),
    Alert(
        name="RLKLSingleTokenDominates", severity="warning", for_=Dur(60),
        expr='max by (run) (rl_reference_kl{{stat="max", split=""}})\n'
             '/ max by (run) (rl_reference_kl{{stat="", split=""}}) > {kl_max_over_mean}\n'
             'and on (run)\nmax by (run) (rl_reference_kl{{stat="max", split=""}})\n'
             "> {kl_max_jump_factor} * run:rl_reference_kl_max:avg_baseline\n"
             "and on (run)\nmax by (run) (rl_grad_norm{{stat=\"\", split=\"\"}})\n"
             "> run:rl_grad_norm:max_baseline",
        thresholds={
            "kl_max_over_mean": Threshold(
                100,
                "The posttrain metrics reference, train/kl_max: \"orders of magnitude above kl_mean "
                "together with a grad_norm jump\". The per-token KL tail is heavy, so kl_max/kl_mean "
                "> 100 alone is common (20-400 on a healthy run)."),
            "kl_max_jump_factor": Threshold(
                10,
                "... so the step's kl_max must also jump this many times above its own baseline, and "
                "the grad norm must exceed everything the run showed in its baseline window (the "
                "Miles lab ranges: a healthy run spans 14x, 0.35-4.95)."),
        },
        summary="One token owns the step: kl_max jumped orders of magnitude above kl_mean with a "
                "grad-norm jump.",
        description="Run {{ $labels.run }}: kl_max / kl_mean = {{ printf \"%.0f\" $value }}, kl_max "
                    "far above its baseline, and the gradient norm above anything in the baseline "
                    "window.",
        meaning="on the latest step `kl_max / kl_mean` exceeds {kl_max_over_mean}, `kl_max` is more "
                "than {kl_max_jump_factor} x its mean over {baseline}, and the gradient norm is "
                "above the largest value of those steps: one token owns the step.",
        impact="a single token's K3 penalty drives the whole update; NaNs or a collapse usually follow.",
        diagnosis="first the samples of that step (a near-zero reference probability token); next "
                  "`rl_grad_norm` and the KL estimator in use.",
        mitigation="clamp the per-token KL (posttrain `rl.kl_coeff_clamp`), use a bounded estimator, "
                   "clip gradients.",
        # the heavy tail (kl_max ~100x kl_mean on a healthy step) jumps another ~15x
        cadence=Pathology(assign(kl_max=lambda v, i, r: v["rl_reference_kl"] * uniform(r, 1500, 2500),
                               rl_grad_norm=lambda v, i, r: uniform(r, 8, 12)),
                          {"30s": 5, "2m": 4, "10m": 4},
                          why="the demo's entry sets its own low KL baseline and a 5x grad-norm "
                              "jump (an absolute one would also fire RLGradNormExplosion there); "
                              "on this run's heavy-tailed KL it fires after 6-7 steps, budget 4-5"),
    ),
    Alert(
        name="RLClipFractionHigh", severity="warning", for_=Dur(60),
        expr=recent("avg_over_time", "rl_policy_clip_ratio", CLIP_SEL) + " > {clip_ratio_high}\nor\n"
             + recent("avg_over_time", "rl_policy_sequence_clip_ratio") + " > {sequence_clip_ratio_high}",
        thresholds={
            "clip_ratio_high": Threshold(
                0.3,
                "The veRL metrics guide, section 1.2: clip fraction 0.05-0.30 ideal, 0.30-0.50 too "
                "much clipping, > 0.50 severe; 0.3 is the usual heuristic."),
            "sequence_clip_ratio_high": Threshold(
                0.3,
                "GSPO (importance_sampling_level=sequence): the share of responses the clip touched "
                "is the rate the objective acts on (the posttrain metrics reference, "
                "train/seq_clip_frac). No source gives a range for it; the token bound is the "
                "default. Tune it for your clip range."),
        },
        summary="The PPO ratio clip binds a large share of tokens (or, under GSPO, of responses) for "
                "many steps.",
        description="Run {{ $labels.run }}: clip fraction is {{ printf \"%.2f\" $value }} on average "
                    "over the recent steps.",
        meaning="the PPO ratio clip bound more than {clip_ratio_high} of tokens on average over "
                "{recent} (`rl_policy_clip_ratio{bound=\"\"}`), or, under GSPO, more than "
                "{sequence_clip_ratio_high} of responses (`rl_policy_sequence_clip_ratio`).",
        impact="updates are mostly clipped away; learning slows and may destabilise.",
        diagnosis="first `rl_policy_kl` (RLPolicyKLSpike explains it) and `rl_entropy` "
                  "(RLEntropyCollapse explains it); next the learning rate and reward signal.",
        mitigation="lower the learning rate or raise `clip_ratio` (the veRL metrics guide: 0.2 -> 0.3).",
        cases=[
            Case(
                fire=[s("rl_policy_clip_ratio", "0.12x30 0.45x30")], at="55m",
                desc='Run r: clip fraction is 0.45 on average over the recent steps.',
                silent=[s("rl_policy_clip_ratio", alt(0.05, 0.3, 30)),
                        s("rl_policy_clip_ratio", "0.6x60", bound="dual")], silent_at="55m"),
            # posttrain metrics reference: under GSPO the sequence-level rate is the one the objective acts on
            Case(
                title="GSPO: the sequence clip fraction",
                fire=[s("rl_policy_sequence_clip_ratio", "0.1x30 0.5x30"), s("rl_policy_clip_ratio", "0.02x60")],
                at="55m", desc='Run r: clip fraction is 0.50 on average over the recent steps.',
                silent=[s("rl_policy_sequence_clip_ratio", "0.1x60"), s("rl_policy_clip_ratio", "0.02x60")],
                silent_at="55m"),
        ],
        cadence=from_entry("kl-spike", {"30s": 13, "2m": 12, "10m": 11}),
    ),
    Alert(
        name="RLDualClipFractionHigh", severity="info", for_=Dur(60),
        expr=recent("avg_over_time", "rl_policy_clip_ratio", '{{stat="", split="", bound="dual"}}')
             + " > {dual_clip_ratio_high}",
        thresholds={
            "dual_clip_ratio_high": Threshold(
                0.1,
                "The veRL metrics guide, section 1.4: pg_clipfrac_lower (dual clip, clip_ratio_c = "
                "3) is usually below 0.1 and rarely triggers. Info: \"usually\" is no failure "
                "statement."),
        },
        summary="The dual-clip lower bound binds more negative-advantage tokens than usual.",
        description="Run {{ $labels.run }}: dual-clip fraction (pg_clipfrac_lower) is {{ printf "
                    "\"%.2f\" $value }} on average over the recent steps.",
        meaning="the dual-clip lower bound (`pg_clipfrac_lower`, "
                "`rl_policy_clip_ratio{bound=\"dual\"}`) bound more than {dual_clip_ratio_high} of "
                "tokens on average over {recent}. Info: it is usually below that and rarely triggers.",
        impact="negative-advantage tokens whose ratio passed the dual-clip bound (`clip_ratio_c`, "
               "usually 3) are clipped more often than usual: the policy moves far on bad samples. "
               "Info only.",
        diagnosis="first `rl_policy_kl` and `rl_policy_clip_ratio` (RLPolicyKLSpike, "
                  "RLClipFractionHigh); next the learning rate.",
        mitigation="lower the learning rate; check `clip_ratio_c`.",
        cases=[
            # veRL metrics guide section 1.4: pg_clipfrac_lower usually < 0.1
            Case(
                fire=[s("rl_policy_clip_ratio", "0.02x30 0.3x30", bound="dual")], at="55m",
                desc="Run r: dual-clip fraction (pg_clipfrac_lower) is 0.30 on average over the recent steps.",
                silent=[s("rl_policy_clip_ratio", "0.02x60", bound="dual"), s("rl_policy_clip_ratio", "0.25x60")],
                silent_at="55m"),
        ],
    ),
    Alert(
        name="RLClipFractionNonZeroOnPolicy", severity="warning", for_=Dur(60),
        expr=recent("max_over_time", "rl_policy_clip_ratio", CLIP_SEL) + " > 0\n"
             "and on (run)\nmax by (run) (" + CONFIG_SEL.format("n_mini") + ") == 1\n"
             "unless on (run)\nmax by (run) (" + CONFIG_SEL.format("pi_old_from_rollout") + ") == 1",
        summary="Clip fraction is non-zero although the run takes one mini-batch per step (a bug).",
        description="Run {{ $labels.run }} reports clip fraction {{ printf \"%.4f\" $value }} with "
                    "one mini-batch per step, where the ratio is identically 1.",
        meaning="the clip fraction was above 0 on some step of {recent} although the run takes one "
                "mini-batch per step (`rl_config_value{parameter=\"n_mini\"} == 1`), where the ratio "
                "is identically 1 when pi_old is the trainer's own recompute. Silent when the run "
                "does not export `n_mini`, and where pi_old is the rollout engine's log-probs "
                "(`pi_old_from_rollout` 1: posttrain use_rollout_logprobs_for_loss, slime/Miles "
                "--use-rollout-logprobs, veRL's rollout-correction bypass, AReaL by default), where "
                "the ratio is pi_train / pi_rollout and a healthy run clips some tokens.",
        impact="pi_old is not what the loss thinks (wrong log-probs, dtype mismatch, stale weights): "
               "the objective is wrong.",
        diagnosis="first how pi_old log-probs are computed (rollout log-probs vs a frozen recompute; "
                  "the posttrain metrics reference: bf16 vs fp32 changes the clip rate 17x). A run "
                  "that uses the rollout log-probs on purpose and did not say so "
                  "(`rl_config_value{parameter=\"pi_old_from_rollout\"}` absent: an integration "
                  "older than this release, or a config print the sidecar does not read) fires "
                  "here: check the setting first. Next `rl_train_inference_logprob_abs_diff`.",
        mitigation="recompute pi_old in fp32 with the training weights; fix the batching config.",
        cases=[
            # one mini-batch per step and pi_old from the rollout engine (posttrain
            # use_rollout_logprobs_for_loss, slime/Miles --use-rollout-logprobs, veRL bypass,
            # AReaL's default): the ratio is pi_train / pi_rollout, and the posttrain metrics
            # reference's logprob_gap_gt0p5_frac shows tokens past any 0.2 clip, so a healthy run
            # clips some
            Case(
                title="rollout log-probs as pi_old",
                fire=[s("rl_policy_clip_ratio", "0.002x40"), s("rl_config_value", "1x40", parameter="n_mini"),
                      s("rl_config_value", "0x40", parameter="pi_old_from_rollout")], at="30m",
                desc="Run r reports clip fraction 0.0020 with one mini-batch per step, where the ratio is "
                     "identically 1.",
                silent=[s("rl_policy_clip_ratio", "0.002x40"), s("rl_config_value", "1x40", parameter="n_mini"),
                        s("rl_config_value", "1x40", parameter="pi_old_from_rollout")], silent_at="30m"),
        ],
        cadence=from_entry("on-policy-clip", {"30s": 5, "2m": 4, "10m": 4}),
    ),
    Alert(
        name="RLGradNormExplosion", severity="warning", for_=Dur(60),
        expr="run:rl_grad_norm:median_recent\n> {grad_norm_explosion_factor} * run:rl_grad_norm:median_baseline\n"
             "and on (run) run:rl_grad_norm:median_baseline > {grad_norm_vanishing}",
        thresholds={
            "grad_norm_explosion_factor": Threshold(
                10,
                "The recent median grad norm this many times its baseline median (the veRL metrics "
                "guide and the RL metrics dictionary: a sudden > 10x is an explosion; the Miles lab "
                "ranges measured 0.35-4.95 in one healthy run, so the absolute value says little)."),
        },
        summary="Gradient norm exploded relative to the run's own baseline.",
        description="Run {{ $labels.run }}: median gradient norm is {{ printf \"%.3g\" $value }}, "
                    "more than {grad_norm_explosion_factor}x its baseline over the preceding steps.",
        meaning="the median gradient norm of {recent} is more than {grad_norm_explosion_factor} x "
                "its median over {baseline}. A median: one skipped step's Inf does not move it, and "
                "a spike of one or two steps does not fire. A baseline median at or under "
                "{grad_norm_vanishing} (a gradient that is exactly 0 on most steps) is no level to "
                "multiply.",
        impact="the veRL metrics guide \"训练崩溃 = 梯度爆炸\": the next updates can wreck the policy.",
        diagnosis="first `rl_policy_loss` and `rl_reference_kl{stat=\"max\"}`; next the learning "
                  "rate and reward scale.",
        mitigation="enable/tighten gradient clipping, lower the learning rate, roll back.",
        cases=[
            Case(
                fire=[s("rl_grad_norm", "0.6x80 15x15")], at="90m",
                desc='Run r: median gradient norm is 15, more than 10x its baseline over the preceding steps.',
                silent=[s("rl_grad_norm", alt(0.35, 4.95, 45))], silent_at="85m"),
        ],
        cadence=from_entry("grad-explosion", {"30s": 11, "2m": 10, "10m": 8}),
    ),
    Alert(
        name="RLGradNormPinnedAtClip", severity="info", for_=Dur(60),
        expr=ladder(over("min_over_time", "rl_grad_norm"), "{grad_clip_pinned_steps}") + "\n"
             ">= on (run) max by (run) (" + CONFIG_SEL.format("max_grad_norm") + " > 0)",
        thresholds={
            "grad_clip_pinned_steps": Threshold(
                16,
                "The pre-clip norm at or above max_grad_norm on every sample of a window holding "
                "this many steps (the RL metrics dictionary and the veRL metrics guide: a norm "
                "pinned at the clip means a learning rate too high; a healthy run crosses the clip "
                "now and then)."),
        },
        summary="The gradient norm sits at or above the clip on every step: every update is clipped.",
        description="Run {{ $labels.run }}: the smallest pre-clip gradient norm of the last "
                    "{grad_clip_pinned_steps}+ steps is {{ printf \"%.3g\" $value }}, at or above "
                    "max_grad_norm (learning rate too high?).",
        meaning="the pre-clip gradient norm stayed at or above `max_grad_norm` "
                "(`rl_config_value{parameter=\"max_grad_norm\"}`) on every step of "
                "{last_grad_clip_pinned_steps}: every update is clipped. Info: a healthy run crosses "
                "the clip now and then.",
        impact="the effective step size is the clip, not the learning rate (the RL metrics "
               "dictionary and the veRL metrics guide: a grad norm pinned at grad_clip means a "
               "learning rate too high).",
        diagnosis="first the learning rate schedule and the warm-up; next `rl_grad_norm` against "
                  "`max_grad_norm` on the Gradient norm panel.",
        mitigation="lower the learning rate, or raise the clip if the norm is stable.",
        cases=[
            # every step clipped: the pre-clip norm never comes below max_grad_norm over 16+ steps
            Case(
                fire=[s("rl_grad_norm", "0.5x20 2x40"), s("rl_config_value", "1x60", parameter="max_grad_norm")],
                at="55m", desc="Run r: the smallest pre-clip gradient norm of the last 16+ steps is 2, at or above "
                               "max_grad_norm (learning rate too high?).",
                # the Miles lab ranges: 0.35-4.95 with a 1.0 clip, crossing it on many steps but not all
                silent=[s("rl_grad_norm", alt(0.35, 4.95, 30)), s("rl_config_value", "1x60", parameter="max_grad_norm")],
                silent_at="55m"),
        ],
    ),
    Alert(
        name="RLGradNormZero", severity="warning", for_=Dur(60),
        expr=recent("max_over_time", "rl_grad_norm") + " == 0\nor\n"
             + increase_per_attempt("rl_optimizer_zero_grad_skips_total") + " >= {zero_grad_skip_share}",
        thresholds={
            "zero_grad_skip_share": Threshold(
                0.9,
                "The posttrain metrics reference expects some zero-grad skips in GRPO (tied "
                "mini-batches); this share of the recent optimizer updates (attempts, or steps x "
                "n_mini) skipped means no learning signal."),
        },
        summary="The gradient has been exactly zero: the run gets no learning signal.",
        description="Run {{ $labels.run }}: gradient norm (or the share of optimizer updates "
                    "skipped for a zero gradient) is {{ $value }} over the recent steps.",
        meaning="the gradient norm was exactly 0 on every step of {recent}, or at least "
                "{zero_grad_skip_share} of the optimizer updates there were skipped for a zero "
                "gradient (`rl_optimizer_zero_grad_skips_total` over the attempts, "
                "`rl_optimizer_attempts_total`, or over the steps x `n_mini` updates per step): a "
                "run at n_mini = 8 that skips one update a step is learning.",
        impact="no learning signal; the run burns GPUs for nothing.",
        diagnosis="first GRPO group informativeness (RLNoInformativeGroups explains it); next "
                  "advantages (`rl_advantage` all 0), the loss mask, frozen parameters. A run that "
                  "exports neither an attempts counter nor `n_mini` has its skips read against no "
                  "update count and only the zero-norm branch fires: the posttrain metrics reference "
                  "expects some zero-gradient skips in GRPO (tied mini-batches).",
        mitigation="fix the reward function / data difficulty; check that the right parameters "
                   "require grad.",
        cases=[
            Case(
                fire=[s("rl_grad_norm", "0.5x20 0x20")], at="40m",
                desc='Run r: gradient norm (or the share of optimizer updates skipped for a zero gradient) '
                     'is 0 over the recent steps.',
                silent=[s("rl_grad_norm", alt(0.5, 0, 20))], silent_at="40m"),
            # the posttrain metrics reference at n_mini = 8: 8 optimizer attempts a step, one
            # skipped for a tied mini-batch, the gradient norm 0.5: learning; every attempt
            # skipped is no learning signal
            Case(
                title="skipped updates per attempt",
                fire=[s("rl_training_step", "1+1x40"), s("rl_grad_norm", "0.5x40"),
                      s("rl_optimizer_zero_grad_skips_total", "0+8x40"),
                      s("rl_optimizer_attempts_total", "0+8x40")], at="40m",
                desc='Run r: gradient norm (or the share of optimizer updates skipped for a zero gradient) '
                     'is 1 over the recent steps.',
                silent=[s("rl_training_step", "1+1x80"), s("rl_grad_norm", "0.5x80"),
                        s("rl_optimizer_zero_grad_skips_total", "0+1x80"),
                        s("rl_optimizer_steps_total", "0+7x80"), s("rl_optimizer_attempts_total", "0+8x80"),
                        s("rl_config_value", "8x80", parameter="n_mini")], silent_at="30m"),
            # no attempts counter: the updates are the steps x n_mini
            Case(
                title="skipped updates per step x n_mini",
                fire=[s("rl_training_step", "1+1x40"), s("rl_grad_norm", "0.5x40"),
                      s("rl_optimizer_zero_grad_skips_total", "0+8x40"),
                      s("rl_config_value", "8x40", parameter="n_mini")], at="40m",
                desc='Run r: gradient norm (or the share of optimizer updates skipped for a zero gradient) '
                     'is 1 over the recent steps.',
                silent=[s("rl_training_step", "1+1x80"), s("rl_grad_norm", "0.5x80"),
                        s("rl_optimizer_zero_grad_skips_total", "0+1x80"),
                        s("rl_config_value", "8x80", parameter="n_mini")], silent_at="30m"),
        ],
        cadence=from_entry("no-signal", {"30s": 15, "2m": 13, "10m": 12}),
    ),
    # ... fallen there from a baseline whose median was above the bound: a run whose gradient
    # was always that small (a LoRA adapter of rank 8 on a 7B model: 0.0006-0.03 over 700
    # steps while its score rose) has no stall to show
    Alert(
        name="RLGradNormVanishing", severity="warning", for_=Dur(60),
        expr="(\n" + recent("max_over_time", "rl_grad_norm") + "\n< {grad_norm_vanishing}\n) > 0\n"
             "and on (run) run:rl_grad_norm:median_baseline > {grad_norm_vanishing}",
        summary="The gradient norm stayed below the vanishing-gradient bound on every recent step.",
        description="Run {{ $labels.run }}: the largest gradient norm of the recent steps is {{ "
                    "printf \"%.2g\" $value }}, under {grad_norm_vanishing} (learning stalls).",
        meaning="the largest gradient norm of {recent} is below {grad_norm_vanishing} but not 0 (0 "
                "is RLGradNormZero), and its median over {baseline} was above it: the gradient "
                "vanished and learning stalls. A run whose gradient was always under the bound (a "
                "small LoRA adapter) has fallen from nothing.",
        impact="learning stalls: the updates are too small to move the policy (the veRL metrics "
               "guide, section 1.7; the RL metrics dictionary: the slope is too small to walk).",
        diagnosis="first the reward signal (RLNoInformativeGroups: tied groups shrink the gradient; "
                  "`rl_advantage` near 0); next the learning rate schedule (`rl_learning_rate`: "
                  "still in warm-up, decayed to 0?) and the loss mask.",
        mitigation="raise the learning rate, fix the reward signal or the data difficulty.",
        cases=[
            # veRL metrics guide section 1.7: < 0.01 is a vanishing gradient
            Case(
                # fired while the baseline window still holds the earlier level (its median above 0.01)
                fire=[s("rl_grad_norm", "0.5x25 0.004x20")], at="42m",
                desc="Run r: the largest gradient norm of the recent steps is 0.004, under 0.01 (learning stalls).",
                # exactly 0 is RLGradNormZero's
                silent=[s("rl_grad_norm", "0.5x25 0x20")], silent_at="42m"),
            Case(
                title="a gradient always under the bound: a small LoRA adapter",
                fire=[s("rl_grad_norm", "0.5x25 0.004x20")], at="42m",
                desc="Run r: the largest gradient norm of the recent steps is 0.004, under 0.01 (learning stalls).",
                silent=[s("rl_grad_norm", " ".join(("0.004", "0.009", "0.02", "0.001", "0.006")[i % 5]
                                                   for i in range(60)))], silent_at="55m"),
        ],
        cadence=from_entry("grad-vanishing", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLOptimizerStepsDiverge", severity="warning", for_=Dur(60),
        expr=ladder("abs(\n    max by (run) (increase(rl_optimizer_steps_total{{role=\"policy\"}}[{W}]))\n"
                     "    - on (run) max by (run) (increase(rl_optimizer_steps_total{{role=\"critic\"}}[{W}]))\n  )"
                     "\n  unless on (run) max by (run) (max_over_time(rl_actor_warmup[{W}]) > 0)")
             + " > {optimizer_steps_divergence}",
        thresholds={
            "optimizer_steps_divergence": Threshold(
                0.5,
                "The posttrain metrics reference (PPO): policy and critic optimizer counters advance "
                "by the same configured number of minibatches per collected batch. More than this "
                "many steps apart over the recent window is a role that silently stopped (or "
                "skipped) updating."),
        },
        summary="PPO's policy and critic optimizers no longer advance together.",
        description="Run {{ $labels.run }}: policy and critic optimizer steps differ by {{ printf "
                    "\"%.0f\" $value }} over the recent steps (they advance by the same number of "
                    "minibatches).",
        meaning="PPO's policy and critic optimizer counters "
                "(`rl_optimizer_steps_total{role=\"policy\"|\"critic\"}`) advanced by more than "
                "{optimizer_steps_divergence} steps apart over {recent}, outside a critic-only "
                "warmup (`rl_actor_warmup`). They advance by the same configured number of "
                "minibatches.",
        impact="one of PPO's two roles stopped updating (or skips updates) while the other goes on: "
               "the policy trains against a stale critic, or the critic against a frozen policy (the "
               "posttrain metrics reference: both counters advance by the same configured number of "
               "minibatches).",
        diagnosis="first `rl_optimizer_skip_reason` and `rl_optimizer_update_outcome` of the role "
                  "that lags; next the role's worker logs (OOM, a failed all-reduce).",
        mitigation="restart from the last checkpoint where both counters agreed; fix the failing role.",
        cases=[
            # posttrain metrics reference (PPO): both optimizer counters advance by the same minibatches
            Case(
                fire=[s("rl_optimizer_steps_total", "0+4x40", role="policy"),
                      s("rl_optimizer_steps_total", "0+4x20 80x20", role="critic")], at="40m",
                desc="Run r: policy and critic optimizer steps differ by 20 over the recent steps (they advance "
                     "by the same number of minibatches).",
                # critic-only warmup (train/actor_warmup = 1): the policy counter rightly stands still
                silent=[s("rl_optimizer_steps_total", "0x40", role="policy"),
                        s("rl_optimizer_steps_total", "0+4x40", role="critic"), s("rl_actor_warmup", "1x40")],
                silent_at="15m"),
        ],
        cadence=from_entry("optimizer-diverge", {"30s": 5, "2m": 4, "10m": 4}),
    ),
    # the RL metrics dictionary, section 2.6: a learning rate that suddenly drops to 0 is a
    # configuration bug (a schedule decaying to 0 reaches it only at its last step)
    Alert(
        name="RLLearningRateZero", severity="warning", for_=Dur(60),
        expr=recent("max_over_time", "rl_learning_rate") + " == 0\n"
             "and on (run)\n" + ladder(over("max_over_time", "rl_learning_rate", baseline=True)) + " > 0\n"
             f"unless on (run) {SEAM} == 1",
        summary="The learning rate dropped to exactly 0: the updates change nothing.",
        description="Run {{ $labels.run }}: the learning rate is {{ $value }} on every recent step "
                    "after a non-zero baseline (a schedule or configuration bug).",
        meaning="the learning rate (`rl_learning_rate`) was exactly 0 on every step of {recent} "
                "although it was above 0 in the 4x longer window before them: the schedule or the "
                "configuration zeroed it.",
        impact="every update is multiplied by 0: the run burns GPUs and learns nothing (the RL "
               "metrics dictionary, section 2.6).",
        diagnosis="first the schedule configuration (warm-up and decay steps against the total "
                  "steps: a decay that ended early, a scheduler stepped per micro-batch); next a "
                  "restart that reloaded the optimizer but not the scheduler state.",
        mitigation="fix the schedule and resume from the checkpoint before the LR reached 0.",
        cases=[
            # the RL metrics dictionary, section 2.6: the LR suddenly at 0 is a configuration bug
            Case(
                fire=[s("rl_learning_rate", "1e-6x30 0x20")], at="45m",
                desc="Run r: the learning rate is 0 on every recent step after a non-zero baseline (a schedule "
                     "or configuration bug).",
                # warm-up from 0: the baseline was 0 too, so nothing was zeroed
                silent=[s("rl_learning_rate", "0x10 1e-7+1e-7x9 1e-6x30")], silent_at="9m"),
        ],
        cadence=from_entry("lr-zero", {"30s": 17, "2m": 16, "10m": 13}),
    ),
    Alert(
        name="RLNoInformativeGroups", severity="warning", for_=Dur(60),
        expr="(\n"
             + recent("avg_over_time", "rl_groups", '{{outcome="informative", split=""}}')
             + "\n/ on (run)\n" + recent("avg_over_time", "rl_groups", '{{outcome="total", split=""}}')
             + "\n  unless on (run) max by (run) (rl_dynamic_sampling_refill_rounds or "
               "rl_dynamic_filter_pass_ratio or rl_dynamic_filter_dropped)\n"
             "or\n  1 - " + recent("avg_over_time", "rl_group_zero_std_ratio") + "\n"
             "or\n  1 - " + ladder('sum by (run) (avg_over_time(rl_group_outcome_ratio{{outcome=~"all_zero|all_one", '
                                    'split=""}}[{W}]))') + "\n"
             "or\n  1 - " + ladder('avg by (run) (avg_over_time(rl_advantage_sign_ratio{{sign="zero", stat="", '
                                    'split=""}}[{W}]))') + "\n"
             ") < {informative_groups_min_ratio}\n"
             "or\n" + recent("avg_over_time", "rl_dynamic_filter_pass_ratio") + " < {dynamic_filter_pass_min_ratio}\n"
             "or\n(\n" + recent("max_over_time", "rl_score", '{{stat="max", split=""}}')
             + "\n  - " + recent("min_over_time", "rl_score", '{{stat="min", split=""}}') + "\n) == 0",
        thresholds={
            "informative_groups_min_ratio": Threshold(
                0.1,
                "The posttrain metrics reference: watch informative groups first; tied groups give "
                "zero advantage."),
            "dynamic_filter_pass_min_ratio": Threshold(
                0.05,
                "Dynamic sampling (DAPO-style filtering) draws until groups are informative: the "
                "share of draws the filter keeps is the signal there."),
        },
        summary="Almost no GRPO group has differing rewards: the reward does not discriminate.",
        description="Run {{ $labels.run }}: only {{ $value | humanizePercentage }} of GRPO groups "
                    "(or draws kept by dynamic sampling) are informative.",
        evidence=("Over the last {step_window_2}: {{ with printf `sum(avg_over_time(rl_groups{run=\"%s\", "
                  "outcome=\"all_zero\", split=\"\"}[{step_window_2}])) / sum(avg_over_time(rl_groups{run=\"%s\", "
                  "outcome=\"total\", split=\"\"}[{step_window_2}]))` $labels.run $labels.run | query }}"
                  "{{ . | first | value | humanizePercentage }} of groups all-zero (too hard, or a "
                  "broken reward){{ else }}no all-zero group counts{{ end }}; {{ with printf "
                  "`sum(avg_over_time(rl_groups{run=\"%s\", outcome=\"all_one\", split=\"\"}[{step_window_2}])) "
                  "/ sum(avg_over_time(rl_groups{run=\"%s\", outcome=\"total\", split=\"\"}[{step_window_2}]))` "
                  "$labels.run $labels.run | query }}{{ . | first | value | humanizePercentage }} "
                  "all-one (too easy){{ else }}no all-one group counts{{ end }}."),
        meaning="fewer than {informative_groups_min_ratio} of GRPO groups had differing rewards on "
                "average over {recent} (group counts, the tied-group share, Miles' zero-std shares "
                "or AReaL's zero-advantage token share; group counts are skipped under dynamic "
                "sampling), or under dynamic sampling the filter kept fewer than "
                "{dynamic_filter_pass_min_ratio} of draws, or the best and worst score of every step "
                "tied.",
        impact="the reward does not discriminate; the gradient is (almost) zero.",
        diagnosis="first `rl_groups{outcome=\"all_zero\"}` vs `{outcome=\"all_one\"}` (too hard vs "
                  "too easy); next the reward function on a few samples.",
        mitigation="adjust data difficulty, enable dynamic sampling, fix the reward function.",
        cases=[
            Case(
                fire=[s("rl_groups", "45x10 2x20", outcome="informative"), s("rl_groups", "64x30", outcome="total")],
                at="30m", desc='Run r: only 3.125% of GRPO groups (or draws kept by dynamic sampling) are informative.',
                evidence="Over the last 20m: no all-zero group counts; no all-one group counts.",
                silent=[s("rl_groups", "45x30", outcome="informative"), s("rl_groups", "64x30", outcome="total"),
                        s("rl_group_zero_std_ratio", "0.3x30"), s("rl_score", "1x30", stat="max"),
                        s("rl_score", "0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", stat="min")],
                silent_at="30m"),
            # veRL logs no group counts: a batch whose best and worst score tie has no informative group
            Case(
                title="veRL score spread",
                fire=[s("rl_score", "1x10 0x20", stat="max"), s("rl_score", "0x30", stat="min")], at="30m",
                desc='Run r: only 0% of GRPO groups (or draws kept by dynamic sampling) are informative.',
                evidence="Over the last 20m: no all-zero group counts; no all-one group counts.",
                silent=[s("rl_score", "1x30", stat="max"), s("rl_score", "0x30", stat="min")], silent_at="30m"),
            # ---- framework-specific inputs (the review's faults): each fires from its own source
            Case(
                title="dynamic sampling: the pass ratio, not the draws",
                fire=[s("rl_groups", "2x40", outcome="informative"), s("rl_groups", "64x40", outcome="total"),
                      s("rl_dynamic_filter_pass_ratio", "0.3x10 0.02x30")], at="30m", desc='Run r: only 2% of GRPO groups (or draws kept by dynamic sampling) are informative.',
                # DAPO-style filtering: group counts cover every draw; the kept batch is informative
                evidence="Over the last 20m: no all-zero group counts; no all-one group counts.",
                silent=[s("rl_groups", "2x40", outcome="informative"), s("rl_groups", "64x40", outcome="total"),
                        s("rl_dynamic_filter_pass_ratio", "0.3x40")], silent_at="30m"),
            Case(
                title="Miles zero-std shares",
                fire=[s("rl_group_outcome_ratio", "0.1x10 0.6x30", outcome="all_zero"),
                      s("rl_group_outcome_ratio", "0.05x10 0.38x30", outcome="all_one")], at="30m", desc='Run r: only 2% of GRPO groups (or draws kept by dynamic sampling) are informative.',
                evidence="Over the last 20m: no all-zero group counts; no all-one group counts.",
                silent=[s("rl_group_outcome_ratio", "0.3x40", outcome="all_zero"),
                        s("rl_group_outcome_ratio", "0.2x40", outcome="all_one")], silent_at="30m"),
            Case(
                title="AReaL zero-advantage tokens",
                fire=[s("rl_advantage_sign_ratio", "0.2x10 0.95x30", sign="zero")],
                at="30m", desc='Run r: only 5% of GRPO groups (or draws kept by dynamic sampling) are informative.',
                evidence="Over the last 20m: no all-zero group counts; no all-one group counts.",
                silent=[s("rl_advantage_sign_ratio", "0.4x40", sign="zero")],
                silent_at="30m"),
        ],
        cadence=from_entry("no-signal", {"30s": 16, "2m": 15, "10m": 12}),
    ),
]
