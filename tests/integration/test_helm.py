"""The Helm chart, rendered by the real helm binary and validated by real schemas and tools.

- helm lint --strict; helm template for the default values and each combination that matters
  (monitoring CRDs present/absent, ServiceMonitor instead of PodMonitor, ingest, NetworkPolicy,
  example Job, Alertmanager Secret);
- every rendered object validated: core kinds with kubernetes-validate --strict -k 1.30.0,
  monitoring.coreos.com/v1 kinds with the npm @kubernetes-models/prometheus-operator validators;
- the sidecar named template rendered from a parent chart into a Job, a PyTorchJob and a RayJob,
  their pod templates validated as Pods;
- the PrometheusRule's groups identical to exporter/rules/*.yaml (and promtool check rules on the
  extracted spec); the dashboard ConfigMaps identical to exporter/dashboards/ JSON; the Alertmanager Secret
  passing amtool check-config; per-rule overrides applied; values.schema.json rejecting bad types.

Rendering uses small stand-in sources written here (the chart's own files/ come from
helm/sync.py); the comparisons against the repository's exporter/alerts/ and exporter/dashboards/ run on a chart
synced from them and skip, saying why, while those directories have no generated files.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_binary
from tests.helpers import helm_sync, scrape_text

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "rl-exporter"
sync = helm_sync()

K8S_VERSION = "1.30.0"
CRDS = ["--api-versions", "monitoring.coreos.com/v1/PodMonitor",
        "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
        "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"]

# ------------------------------------------------------------------ stand-in sources
STANDIN_RULES = """\
# a small stand-in rule file: chart mechanics are tested independently of the real rules
groups:
- name: standin.rules
  rules:
  - record: run:rl_reward:avg_over_time10m
    expr: avg by (run) (avg_over_time(rl_reward{stat="", split=""}[10m]))
  - record: run:rl_step_age_seconds:time
    expr: time() - max by (run) (rl_training_step_timestamp_seconds)
- name: standin.alerts
  interval: 30s
  rules:
  - alert: RLRunStalled
    expr: run:rl_step_age_seconds:time > 900
    for: 5m
    labels:
      severity: critical
    annotations:
      summary: An RL run stopped advancing its training step.
      description: Run {{ $labels.run }} has not advanced for {{ $value | humanizeDuration }}.
      runbook_url: https://github.com/rl-exporter/rl-exporter/blob/main/exporter/rules/runbook.md#rlrunstalled
  - alert: RLEntropyCollapse
    expr: |-
      run:rl_reward:avg_over_time10m > 0
      and on (run) avg by (run) (rl_entropy{stat="", split=""}) < 0.05
    for: 15m
    labels:
      severity: warning
    annotations:
      summary: Policy entropy collapsed.
      description: 'Run {{ $labels.run }}: entropy {{ $value | printf "%.3f" }}.'
"""
STANDIN_DASHBOARD = {
    "uid": "rl-standin", "title": "RL stand-in", "schemaVersion": 39, "tags": ["rl-exporter"],
    "templating": {"list": [{"name": "run", "type": "query", "query": "label_values(rl_run_info, run)"}]},
    "panels": [{"id": 1, "type": "timeseries", "title": "Reward \u2014 mean",
                "targets": [{"expr": "rl_reward{run=~\"$run\", stat=\"\"}", "legendFormat": "{{run}}"}]}],
}
STANDIN_ALERTMANAGER = """\
route:
  receiver: ticket
  group_by: [alertname, run]
  routes:
    - matchers: ['severity = critical']
      receiver: pager
receivers:
  - name: ticket
  - name: pager
    pagerduty_configs:
      - routing_key_file: /etc/alertmanager/secrets/pd/routing-key
        severity: '{{ .CommonLabels.severity }}'
inhibit_rules:
  - source_matchers: ['severity = critical']
    target_matchers: ['severity =~ warning|info']
    equal: [run, alertname]
"""


def write_standin_root(root: Path) -> Path:
    (root / "exporter" / "rules").mkdir(parents=True)
    (root / "exporter" / "rules" / "standin.rules.yaml").write_text(STANDIN_RULES)
    (root / "helm" / "rl-exporter" / "files" / "alertmanager").mkdir(parents=True)
    (root / "helm" / "rl-exporter" / "files" / "alertmanager" / "alertmanager.yml").write_text(STANDIN_ALERTMANAGER)
    (root / "helm" / "rl-exporter" / "files" / "dashboards").mkdir(parents=True)
    (root / "helm" / "rl-exporter" / "files" / "dashboards" / "rl-standin.json").write_text(json.dumps(STANDIN_DASHBOARD, indent=2))
    (root / "exporter" / "dashboards" / "provisioning").mkdir(parents=True)
    (root / "exporter" / "dashboards" / "provisioning" / "ignored.json").write_text("{}")
    return root


def synced_chart(dst: Path, src_root: Path) -> Path:
    shutil.copytree(CHART, dst, ignore=shutil.ignore_patterns("files"))
    sync.write(dst, sync.plan(src_root))
    return dst


@pytest.fixture(scope="module")
def helm():
    return require_binary("helm")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("helm")


@pytest.fixture(scope="module")
def standin_root(work):
    return write_standin_root(work / "standin-root")


@pytest.fixture(scope="module")
def chart(work, standin_root):
    """The chart with stand-in rules, dashboards and Alertmanager config synced in."""
    return synced_chart(work / "chart", standin_root)


@pytest.fixture(scope="module")
def repo_chart(work):
    """The chart synced from the repository's real exporter/alerts/ and exporter/dashboards/."""
    return synced_chart(work / "repo-chart", ROOT)


class Rendered(list):
    def kinds(self):
        return sorted((d["kind"], d["metadata"]["name"]) for d in self)

    def one(self, kind):
        found = [d for d in self if d["kind"] == kind]
        assert len(found) == 1, f"{len(found)} {kind} in {self.kinds()}"
        return found[0]


RENDERED_FILES: dict[str, Path] = {}


def template(helm, chart, *args, name="rlx", check=True, record=None, work=None) -> Rendered | subprocess.CompletedProcess:
    r = subprocess.run([helm, "template", name, str(chart), "--namespace", "training",
                        "--kube-version", K8S_VERSION, *args], capture_output=True, text=True, timeout=60)
    if not check:
        return r
    assert r.returncode == 0, r.stderr
    if record and work is not None:
        p = work / f"rendered-{record}.yaml"
        p.write_text(r.stdout)
        RENDERED_FILES[record] = p
    return Rendered(d for d in yaml.safe_load_all(r.stdout) if d)


# ------------------------------------------------------------------ lint
@pytest.mark.parametrize("which", ["committed", "synced"])
def test_lint_strict(helm, chart, which):
    target = CHART if which == "committed" else chart
    r = subprocess.run([helm, "lint", "--strict", str(target)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([helm, "lint", "--strict", str(target), "--set", "exampleJob.enabled=true",
                        "--set", "networkPolicy.enabled=true"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------------ combinations
def names(kinds):
    return sorted(kinds)


COMBOS = {
    # id: (args, expected kinds (kind, name) with release "rlx")
    "default-with-crds": (CRDS, [
        ("ConfigMap", "rlx-rl-exporter-dashboard-standin"), ("PodMonitor", "rlx-rl-exporter"),
        ("PrometheusRule", "rlx-rl-exporter")]),
    "default-without-crds": ([], [("ConfigMap", "rlx-rl-exporter-dashboard-standin")]),
    "servicemonitor": (CRDS + ["--set", "podMonitor.enabled=false", "--set", "service.enabled=true",
                               "--set", "serviceMonitor.enabled=true"], [
        ("ConfigMap", "rlx-rl-exporter-dashboard-standin"), ("PrometheusRule", "rlx-rl-exporter"),
        ("Service", "rlx-rl-exporter"), ("ServiceMonitor", "rlx-rl-exporter")]),
    "servicemonitor-without-crds": (["--set", "podMonitor.enabled=false", "--set", "service.enabled=true",
                                     "--set", "serviceMonitor.enabled=true"], [
        ("ConfigMap", "rlx-rl-exporter-dashboard-standin"), ("Service", "rlx-rl-exporter")]),
    "ingest-created-token": (CRDS + ["--set", "ingest.enabled=true", "--set", "ingest.tokenSecret.create=true"], [
        ("ConfigMap", "rlx-rl-exporter-dashboard-standin"), ("PodMonitor", "rlx-rl-exporter"),
        ("PrometheusRule", "rlx-rl-exporter"), ("Secret", "rlx-rl-exporter-ingest-token")]),
    "networkpolicy-ingest": (CRDS + ["--set", "networkPolicy.enabled=true", "--set", "ingest.enabled=true",
                                     "--set", "ingest.tokenSecret.name=my-token",
                                     "--set-json", 'networkPolicy.ingestFrom=[{"podSelector":{"matchLabels":{"app":"pusher"}}}]',
                                     "--set-json", 'networkPolicy.prometheusPodSelector={"app.kubernetes.io/name":"prometheus"}'], [
        ("ConfigMap", "rlx-rl-exporter-dashboard-standin"), ("NetworkPolicy", "rlx-rl-exporter"),
        ("PodMonitor", "rlx-rl-exporter"), ("PrometheusRule", "rlx-rl-exporter")]),
    "example-job-alertmanager": (CRDS + ["--set", "exampleJob.enabled=true", "--set", "alertmanagerConfig.enabled=true",
                                         "--set", "podMonitor.additionalLabels.release=kube-prometheus-stack",
                                         "--set", "prometheusRule.additionalLabels.release=kube-prometheus-stack"], [
        ("ConfigMap", "rlx-rl-exporter-dashboard-standin"), ("Job", "rlx-rl-exporter-demo"),
        ("PodMonitor", "rlx-rl-exporter"), ("PrometheusRule", "rlx-rl-exporter"),
        ("Secret", "rlx-rl-exporter-alertmanager")]),
    "everything-off": (CRDS + ["--set", "podMonitor.enabled=false", "--set", "prometheusRule.enabled=false",
                               "--set", "dashboards.enabled=false"], []),
}


@pytest.mark.parametrize("combo", list(COMBOS))
def test_render_combination(helm, chart, work, combo):
    args, expected = COMBOS[combo]
    docs = template(helm, chart, *args, record=combo, work=work)
    assert docs.kinds() == sorted(expected)
    for d in docs:
        labels = d["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "rl-exporter"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        if d["kind"] in ("PodMonitor", "PrometheusRule") and "release" in " ".join(args):
            assert labels["release"] == "kube-prometheus-stack"


def test_committed_chart_renders_without_synced_files(helm, work):
    """Before helm/sync.py has run (no files/), the chart still installs: no rule, no dashboard."""
    bare = work / "bare"
    shutil.copytree(CHART, bare, ignore=shutil.ignore_patterns("files"))
    docs = template(helm, bare, *CRDS, record="bare", work=work)
    assert docs.kinds() == [("PodMonitor", "rlx-rl-exporter")]


# ------------------------------------------------------------------ sidecar in user workloads
PARENT_VALUES = {
    "rl-exporter": {"sidecar": {"algorithm": "grpo", "model": "Qwen2.5-7B"},
                    "ingest": {"enabled": True, "tokenSecret": {"create": True}}},
}
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: grpo-qwen
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        {{- include "rl-exporter.podLabels" . | nindent 8 }}
    spec:
      restartPolicy: Never
      initContainers:
        {{- include "rl-exporter.sidecar" (dict "root" $ "sidecar" (dict "sources" (list "verl:/var/log/rl/train.log"))) | nindent 8 }}
      containers:
        - name: trainer
          image: verlai/verl:app-verl0.5
          command: ["bash", "-c", "python3 -m verl.trainer.main_ppo 2>&1 | tee /var/log/rl/train.log"]
          resources:
            limits:
              nvidia.com/gpu: 8
          volumeMounts:
            {{- include "rl-exporter.logVolumeMount" . | nindent 12 }}
      volumes:
        {{- include "rl-exporter.volumes" . | nindent 8 }}
"""
PLAIN_JOB = JOB.replace("grpo-qwen", "grpo-plain").replace(
    """      initContainers:
        {{- include "rl-exporter.sidecar" (dict "root" $ "sidecar" (dict "sources" (list "verl:/var/log/rl/train.log"))) | nindent 8 }}
      containers:
""", """      containers:
        {{- include "rl-exporter.sidecar" (dict "root" $ "sidecar" (dict "native" false "run" (dict "name" "grpo-plain"))) | nindent 8 }}
""")
PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ppo-llama
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          labels:
            {{- include "rl-exporter.podLabels" . | nindent 12 }}
        spec:
          initContainers:
            {{- include "rl-exporter.sidecar" (dict "root" $ "sidecar" (dict "sources" (list "hf:/var/log/rl/*.log") "run" (dict "fromPodLabel" "training.kubeflow.org/job-name"))) | nindent 12 }}
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.07-py3
              command: ["bash", "-c", "torchrun train_ppo.py 2>&1 | tee /var/log/rl/train.log"]
              volumeMounts:
                {{- include "rl-exporter.logVolumeMount" . | nindent 16 }}
          volumes:
            {{- include "rl-exporter.volumes" . | nindent 12 }}
"""
RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: openrlhf-grpo
spec:
  entrypoint: python3 -m openrlhf.cli.train_ppo_ray 2>&1 | tee /var/log/rl/train.log
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        metadata:
          labels:
            {{- include "rl-exporter.podLabels" . | nindent 12 }}
        spec:
          initContainers:
            {{- include "rl-exporter.sidecar" (dict "root" $ "sidecar" (dict "sources" (list "openrlhf:/var/log/rl/train.log") "run" (dict "fromPodLabel" "ray.io/cluster"))) | nindent 12 }}
          containers:
            - name: ray-head
              image: rayproject/ray:2.40.0-py311-gpu
              volumeMounts:
                {{- include "rl-exporter.logVolumeMount" . | nindent 16 }}
          volumes:
            {{- include "rl-exporter.volumes" . | nindent 12 }}
"""


@pytest.fixture(scope="module")
def workloads(helm, work, chart):
    """A user's chart that depends on rl-exporter and includes the sidecar in three workloads."""
    parent = work / "parent"
    (parent / "templates").mkdir(parents=True)
    (parent / "charts").mkdir()
    shutil.copytree(chart, parent / "charts" / "rl-exporter")
    (parent / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": "my-training", "version": "1.0.0", "appVersion": "9.9.9",
        "dependencies": [{"name": "rl-exporter", "version": "0.1.0"}]}))
    (parent / "values.yaml").write_text(yaml.safe_dump(PARENT_VALUES))
    for n, text in {"job": JOB, "plainjob": PLAIN_JOB, "pytorchjob": PYTORCHJOB, "rayjob": RAYJOB}.items():
        (parent / "templates" / f"{n}.yaml").write_text(text)
    docs = template(helm, parent, *CRDS, record="workloads", work=work)
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def pod_templates(workloads):
    out = {}
    for (kind, name), d in workloads.items():
        if kind == "Job":
            out[name] = d["spec"]["template"]
        elif kind == "PyTorchJob":
            out[name] = d["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
        elif kind == "RayJob":
            out[name] = d["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    return out


def sidecar_of(tpl):
    cs = [c for c in tpl["spec"].get("initContainers", []) + tpl["spec"]["containers"] if c["name"] == "rl-exporter"]
    assert len(cs) == 1
    return cs[0]


def test_sidecar_in_three_workloads(workloads):
    kinds = sorted(workloads)
    assert ("Job", "grpo-qwen") in kinds and ("PyTorchJob", "ppo-llama") in kinds and ("RayJob", "openrlhf-grpo") in kinds
    # the subchart's own objects come along: monitors, rules, dashboards, the ingest token Secret
    assert ("Secret", "rlx-rl-exporter-ingest-token") in kinds
    tpls = pod_templates(workloads)
    assert set(tpls) == {"grpo-qwen", "grpo-plain", "ppo-llama", "openrlhf-grpo"}
    for name, tpl in tpls.items():
        assert tpl["metadata"]["labels"] == {"rl-exporter.dev/scrape": "true"}
        c = sidecar_of(tpl)
        native = name != "grpo-plain"
        assert (c.get("restartPolicy") == "Always") is native
        assert (c in tpl["spec"].get("initContainers", [])) is native
        assert c["image"] == "ghcr.io/rl-exporter/rl-exporter:0.1.0", "image tag is the subchart's appVersion"
        assert c["ports"] == [{"name": "rl-metrics", "containerPort": 9464, "protocol": "TCP"}]
        for probe in ("livenessProbe", "readinessProbe"):
            assert c[probe]["httpGet"] == {"path": "/healthz", "port": "rl-metrics"}
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
        assert sc["capabilities"]["drop"] == ["ALL"]
        env = {e["name"]: e for e in c["env"]}
        assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
        assert env["NVIDIA_DRIVER_CAPABILITIES"]["value"] == "utility"
        assert "resources" in c and "nvidia.com/gpu" not in json.dumps(c["resources"]), \
            "the sidecar must not request a GPU of its own"
        assert "--listen=0.0.0.0" in c["args"] and "--port=9464" in c["args"]
        assert "--algorithm=grpo" in c["args"] and "--model=Qwen2.5-7B" in c["args"]
        assert "--ingest" in c["args"] and "--ingest-token-file=/var/run/secrets/rl-exporter/token" in c["args"]
        vols = {v["name"]: v for v in tpl["spec"]["volumes"]}
        assert vols["rl-exporter-ingest-token"]["secret"]["secretName"] == "rlx-rl-exporter-ingest-token"
        for m in c["volumeMounts"]:
            assert m["name"] in vols
        trainer = [x for x in tpl["spec"]["containers"] if x["name"] != "rl-exporter"][0]
        assert trainer["volumeMounts"] == [{"name": "rl-logs", "mountPath": "/var/log/rl"}]
    args = {n: sidecar_of(t)["args"] for n, t in tpls.items()}
    assert "--source=verl:/var/log/rl/train.log" in args["grpo-qwen"]
    assert "--source=auto:/var/log/rl/*.log" in args["grpo-plain"] and "--run=grpo-plain" in args["grpo-plain"]
    assert "--source=hf:/var/log/rl/*.log" in args["ppo-llama"]
    assert "--source=openrlhf:/var/log/rl/train.log" in args["openrlhf-grpo"]
    runs = {n: {e["name"]: e for e in sidecar_of(t)["env"]}.get("RL_EXPORTER_RUN") for n, t in tpls.items()}
    assert runs["grpo-plain"] is None  # fixed --run instead
    assert runs["grpo-qwen"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['job-name']"
    assert runs["ppo-llama"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['training.kubeflow.org/job-name']"
    assert runs["openrlhf-grpo"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['ray.io/cluster']"


def test_workload_pods_validate(work, workloads):
    """Each pod template (Job, PyTorchJob, RayJob) is a valid Pod spec for Kubernetes 1.30."""
    docs = []
    for name, tpl in pod_templates(workloads).items():
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **tpl.get("metadata", {})},
                     "spec": tpl["spec"]})
    p = work / "workload-pods.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    RENDERED_FILES["workload-pods"] = p
    kv_validate([p])


def test_ingest_requires_a_token(helm, chart):
    r = template(helm, chart, "--set", "ingest.enabled=true", check=False)
    # the sidecar template is only rendered from a workload; NOTES is not rendered by template,
    # so check through a workload that includes it
    parent_tpl = chart.parent / "ingest-check"
    if not parent_tpl.exists():
        shutil.copytree(chart, parent_tpl)
        (parent_tpl / "templates" / "zz-pod.yaml").write_text(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
            "    {{- include \"rl-exporter.sidecar\" (dict \"root\" $ \"sidecar\" (dict \"native\" false)) | nindent 4 }}\n")
    r = template(helm, parent_tpl, "--set", "ingest.enabled=true", check=False)
    assert r.returncode != 0 and "needs a bearer token" in r.stderr, r.stderr
    ok = template(helm, parent_tpl, "--set", "ingest.enabled=true", "--set", "ingest.tokenSecret.name=t")
    pod = ok.one("Pod")
    assert pod["spec"]["containers"][0]["args"][-3:] == [
        "--ingest-token-file=/var/run/secrets/rl-exporter/token", "--ingest-max-bytes=1048576", "--ingest-framework=auto"]


STACK_DUMPS_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  {{{{- include "rl-exporter.podSpec" {ctx} | nindent 2 }}}}
  containers:
    {{{{- include "rl-exporter.sidecar" {ctx} | nindent 4 }}}}
    - name: trainer
      image: verlai/verl:app-verl0.5
  volumes:
    {{{{- include "rl-exporter.volumes" . | nindent 4 }}}}
"""


def test_stack_dumps_share_the_process_namespace_and_add_ptrace(helm, chart, work):
    """sidecar.stackDumps.enabled (values or a per-workload override): the pod shares its
    process namespace and the sidecar gets SYS_PTRACE, as root (the capability is effective
    only there); off (the default): neither, the hardened context unchanged."""
    parent = chart.parent / "stack-dumps"
    if not parent.exists():
        shutil.copytree(chart, parent)
        over = '(dict "root" $ "sidecar" (dict "native" false "stackDumps" (dict "enabled" true)))'
        plain = '(dict "root" $ "sidecar" (dict "native" false))'
        (parent / "templates" / "zz-pods.yaml").write_text(
            STACK_DUMPS_POD.format(name="dumps", ctx=over) + "---\n"
            + STACK_DUMPS_POD.format(name="plain", ctx=plain))
    pods = {d["metadata"]["name"]: d for d in template(helm, parent, record="stack-dumps", work=work)
            if d["kind"] == "Pod"}
    on, off = pods["dumps"]["spec"], pods["plain"]["spec"]
    assert on["shareProcessNamespace"] is True and "shareProcessNamespace" not in off
    sc_on = on["containers"][0]["securityContext"]
    sc_off = off["containers"][0]["securityContext"]
    assert sc_on["capabilities"] == {"drop": ["ALL"], "add": ["SYS_PTRACE"]}
    assert sc_on["runAsUser"] == 0 and sc_on["runAsNonRoot"] is False
    assert not sc_on["allowPrivilegeEscalation"] and sc_on["readOnlyRootFilesystem"]
    assert sc_off == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                      "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                      "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    # chart-wide, and as the trainer's uid where the node's ptrace_scope allows it
    both = template(helm, parent, "--set", "sidecar.stackDumps.enabled=true",
                    "--set", "sidecar.stackDumps.runAsUser=1000")
    for d in both:
        if d["kind"] == "Pod":
            assert d["spec"]["shareProcessNamespace"] is True
            sc = d["spec"]["containers"][0]["securityContext"]
            assert sc["runAsUser"] == 1000 and sc["runAsNonRoot"] is True
            assert sc["capabilities"]["add"] == ["SYS_PTRACE"]
    r = template(helm, parent, "--set", "sidecar.stackDumps.enabled=yes", check=False)
    assert r.returncode != 0 and "stackDumps" in r.stderr


# ------------------------------------------------------------------ schema validation of everything
def kv_validate(files):
    exe = require_binary("kubernetes-validate")
    r = subprocess.run([exe, "--strict", "-k", K8S_VERSION, "--no-warn", *map(str, files)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "ERROR" not in r.stdout, r.stdout
    return r.stdout


NODE_VALIDATE = r"""
const path = require("node:path"), fs = require("node:fs"), { pathToFileURL } = require("node:url");
const NM = process.env.RLX_NODE_MODULES;
(async () => {
  const YAML = require(path.join(NM, "yaml"));
  const v1 = await import(pathToFileURL(path.join(NM, "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/index.js")).href);
  let bad = 0, ok = 0;
  for (const f of process.argv.slice(2)) for (const d of YAML.parseAllDocuments(fs.readFileSync(f, "utf8"))) {
    const o = d.toJS();
    if (!o || o.apiVersion !== "monitoring.coreos.com/v1") continue;
    const K = v1[o.kind];
    if (!K) { bad++; console.log("FAIL", f, o.kind, "unknown kind"); continue; }
    try { new K(o).validate(); ok++; console.log("OK", path.basename(f), o.kind, o.metadata.name); }
    catch (e) { bad++; console.log("FAIL", path.basename(f), o.kind, o.metadata && o.metadata.name, e.message); }
  }
  console.log(`validated ${ok} ok, ${bad} failed`);
  process.exit(bad ? 1 : 0);
})().catch(e => { console.log("ERROR", e.stack); process.exit(2); });
"""


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory):
    node = require_binary("node")
    nm = os.environ.get("RLX_NODE_MODULES")
    if nm and (Path(nm) / "@kubernetes-models" / "prometheus-operator").is_dir():
        return node, Path(nm)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rl-exporter-test-node"
    if not (cache / "node_modules" / "@kubernetes-models" / "prometheus-operator").is_dir():
        npm = require_binary("npm")
        cache.mkdir(parents=True, exist_ok=True)
        if not (cache / "package.json").exists():
            (cache / "package.json").write_text('{"name": "rlx-test-node", "private": true}\n')
        r = subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund",
                            "@kubernetes-models/prometheus-operator@6", "yaml@2"], cwd=cache,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            pytest.skip(f"npm install of @kubernetes-models/prometheus-operator failed: {r.stderr[-500:]}")
    return node, cache / "node_modules"


def crd_validate(node_modules, work, files):
    node, nm = node_modules
    script = work / "validate-crds.cjs"
    script.write_text(NODE_VALIDATE)
    r = subprocess.run([node, str(script), *map(str, files)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "RLX_NODE_MODULES": str(nm)})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    return r.stdout


def test_every_rendered_object_validates(work, node_modules, helm, chart, workloads):
    """Runs after the combination tests (file order): validates everything they rendered."""
    for combo, (args, _) in COMBOS.items():  # render any the -k selection skipped
        if combo not in RENDERED_FILES:
            template(helm, chart, *args, record=combo, work=work)
    files = [p for p in RENDERED_FILES.values() if p.read_text().strip()]
    out = kv_validate(files)
    assert "passed" in out
    crd_out = crd_validate(node_modules, work, files)
    kinds = {line.split()[2] for line in crd_out.splitlines() if line.startswith("OK")}
    assert kinds == {"PodMonitor", "ServiceMonitor", "PrometheusRule"}, crd_out


def test_crd_validator_rejects_a_broken_monitor(work, node_modules):
    """The CRD validation can fail: a PodMonitor without a selector, a rule without expr."""
    bad = work / "bad-crds.yaml"
    bad.write_text(yaml.safe_dump_all([
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor", "metadata": {"name": "x"},
         "spec": {"podMetricsEndpoints": [{"port": "rl-metrics"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "y"},
         "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "for": "5 minutes"}]}]}}]))
    node, nm = node_modules
    script = work / "validate-crds.cjs"
    script.write_text(NODE_VALIDATE)
    r = subprocess.run([node, str(script), str(bad)], capture_output=True, text=True,
                       env={**os.environ, "RLX_NODE_MODULES": str(nm)})
    assert r.returncode == 1 and r.stdout.count("FAIL") == 2, r.stdout + r.stderr


# ------------------------------------------------------------------ rules
def rule_groups_from(root: Path):
    groups = []
    for p in sync.rule_sources(root):
        groups += yaml.safe_load(p.read_text())["groups"]
    return groups


def promtool_check(work, groups, name):
    promtool = require_binary("promtool")
    p = work / f"{name}.rules.yaml"
    p.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    r = subprocess.run([promtool, "check", "rules", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_prometheusrule_identical_to_standin_sources(helm, chart, standin_root, work):
    pr = template(helm, chart, *CRDS).one("PrometheusRule")
    assert pr["spec"]["groups"] == rule_groups_from(standin_root)
    out = promtool_check(work, pr["spec"]["groups"], "standin")
    assert "4 rules found" in out


def test_prometheusrule_identical_to_repository_alerts(helm, repo_chart, work):
    groups = rule_groups_from(ROOT)
    assert groups, "exporter/rules/*.yaml missing: run `python -m exporter.alerts render`"
    pr = template(helm, repo_chart, *CRDS).one("PrometheusRule")
    assert pr["spec"]["groups"] == groups
    promtool_check(work, pr["spec"]["groups"], "repo")
    # the shipped RLExporterDown alert keys on job=~".*rl-exporter.*": our monitors' job labels match
    pm = template(helm, repo_chart, *CRDS, name="team-a").one("PodMonitor")
    assert "rl-exporter" in pm["metadata"]["name"]


def test_committed_chart_copies_are_current():
    """helm/sync.py --check: the chart's files/ match exporter/alerts/ and exporter/dashboards/ of this checkout."""
    problems = sync.diff(sync.plan(ROOT), sync.current(CHART))
    assert not problems, "run `python helm/sync.py`:\n" + "\n".join(problems)


def test_rule_overrides(helm, chart, work):
    over = {"prometheusRule": {
        "additionalRuleLabels": {"team": "rl", "severity": "ignored-own-wins"},
        "additionalRuleAnnotations": {"dashboard": "https://grafana/d/rl-overview"},
        "rules": {
            "RLRunStalled": {"for": "30m", "severity": "warning", "labels": {"pager": "no"},
                             "annotations": {"summary": "custom"}},
            "RLEntropyCollapse": {"disabled": True},
            "run:rl_reward:avg_over_time10m": {"expr": "avg by (run) (avg_over_time(rl_reward{stat=\"\"}[30m]))"},
        }}}
    vf = work / "overrides.yaml"
    vf.write_text(yaml.safe_dump(over))
    pr = template(helm, chart, *CRDS, "-f", str(vf), record="overrides", work=work).one("PrometheusRule")
    rules = {r.get("alert") or r["record"]: r for g in pr["spec"]["groups"] for r in g["rules"]}
    assert "RLEntropyCollapse" not in rules
    stalled = rules["RLRunStalled"]
    assert stalled["for"] == "30m"
    assert stalled["labels"] == {"severity": "warning", "pager": "no", "team": "rl"}
    assert stalled["annotations"]["summary"] == "custom"
    assert stalled["annotations"]["dashboard"] == "https://grafana/d/rl-overview"
    assert stalled["annotations"]["description"].startswith("Run {{ $labels.run }}")
    assert "[30m]" in rules["run:rl_reward:avg_over_time10m"]["expr"]
    assert "labels" not in rules["run:rl_step_age_seconds:time"]
    promtool_check(work, pr["spec"]["groups"], "overrides")


def test_unknown_rule_override_fails(helm, chart):
    r = template(helm, chart, *CRDS, "--set", "prometheusRule.rules.RLNoSuchAlert.disabled=true", check=False)
    assert r.returncode != 0 and "prometheusRule.rules.RLNoSuchAlert: no alert or recording rule" in r.stderr


def test_thresholds_are_tuned_by_name(helm, repo_chart, work):
    """prometheusRule.thresholds.<name> changes that threshold in the expression and the
    description, and nothing else; promtool still accepts the rules."""
    base = template(helm, repo_chart, *CRDS).one("PrometheusRule")
    tuned = template(helm, repo_chart, *CRDS, "--set", "prometheusRule.thresholds.clip_ratio_high=0.42",
                     "--set", "prometheusRule.thresholds.nonfinite_consecutive_skips=7").one("PrometheusRule")
    rules = lambda pr: {r.get("alert") or r["record"]: r for g in pr["spec"]["groups"] for r in g["rules"]}  # noqa: E731
    b, t = rules(base), rules(tuned)
    # the token branch (clip_ratio_high); the GSPO sequence branch keeps its own threshold
    assert ") > 0.3\nor\n" in b["RLClipFractionHigh"]["expr"]
    assert ") > 0.42\nor\n" in t["RLClipFractionHigh"]["expr"]
    assert t["RLClipFractionHigh"]["expr"].rstrip().endswith("> 0.3")
    # (the expression goes on past its threshold: unless the run has finished)
    assert "}) >= 7\nunless on (run)\n" in t["RLOptimizerNonFiniteSkips"]["expr"]
    assert "}) >= 5\nunless on (run)\n" in b["RLOptimizerNonFiniteSkips"]["expr"]
    changed = {n for n in b if b[n] != t[n]}
    assert changed == {"RLClipFractionHigh", "RLOptimizerNonFiniteSkips"}
    assert "__threshold_" not in yaml.safe_dump(tuned)
    promtool_check(work, tuned["spec"]["groups"], "tuned")


def test_helm_thresholds_equal_python_overrides(helm, repo_chart):
    """One override implementation: Helm fills the sentinels of the file helm/sync.py generates
    from exporter/alerts/, and the result equals `python -m exporter.alerts render --overrides` exactly."""
    from exporter.alerts.render import render
    tuned = {"clip_ratio_high": 0.42, "warmup_steps": 30, "gpu_memory_full_ratio": 0.9}
    args = [a for k, v in tuned.items() for a in ("--set", f"prometheusRule.thresholds.{k}={v}")]
    pr = template(helm, repo_chart, *CRDS, *args).one("PrometheusRule")
    assert pr["spec"]["groups"] == render({"thresholds": tuned})["groups"]


def test_unknown_or_non_numeric_threshold_fails(helm, repo_chart):
    r = template(helm, repo_chart, *CRDS, "--set", "prometheusRule.thresholds.clip_ratio_hihg=0.4", check=False)
    assert r.returncode != 0 and "prometheusRule.thresholds.clip_ratio_hihg: no such threshold" in r.stderr
    assert "clip_ratio_high" in r.stderr  # the message lists the known names
    r = template(helm, repo_chart, *CRDS, "--set", "prometheusRule.thresholds.clip_ratio_high=high", check=False)
    assert r.returncode != 0 and "prometheusRule.thresholds.clip_ratio_high" in r.stderr


# ------------------------------------------------------------------ dashboards
def dashboards_of(docs):
    out = {}
    for d in docs:
        if d["kind"] == "ConfigMap" and d["metadata"]["labels"].get("grafana_dashboard") == "1":
            (key, text), = d["data"].items()
            out[key] = (d, text)
    return out


def test_dashboard_configmaps_identical_to_standin(helm, chart):
    cms = dashboards_of(template(helm, chart))
    assert set(cms) == {"rl-standin.json"}
    cm, text = cms["rl-standin.json"]
    assert json.loads(text) == STANDIN_DASHBOARD
    assert cm["metadata"]["annotations"] == {"grafana_folder": "RL training"}
    assert cm["metadata"]["namespace"] == "training"


def test_dashboard_configmaps_identical_to_repository(helm, repo_chart):
    sources = sync.dashboard_sources(ROOT)
    assert sources, "helm/rl-exporter/files/dashboards/*.json missing: run `python -m exporter.dashboards`"
    docs = template(helm, repo_chart)
    cms = dashboards_of(docs)
    assert set(cms) == {f"{p.stem}.json" for p in sources}
    for p in sources:
        cm, text = cms[f"{p.stem}.json"]
        assert text == p.read_text().strip(), p  # the generated JSON itself, not a second rendering
        assert len(yaml.safe_dump(cm).encode()) < 1024 * 1024, f"{p}: ConfigMap over 1 MiB"
    # Helm stores the whole release gzip'd in one Secret (1 MiB): leave room for the rest
    everything = template(helm, repo_chart, *CRDS, "--set", "exampleJob.enabled=true")
    size = len(gzip.compress(yaml.safe_dump_all(list(everything)).encode()))
    assert size < 512 * 1024, f"release manifest {size} bytes gzip'd"


def test_dashboard_overrides(helm, chart):
    cms = dashboards_of(template(helm, chart, "--set", "dashboards.folder=Training",
                                 "--set", "dashboards.namespace=monitoring",
                                 "--set", "dashboards.additionalLabels.team=rl"))
    cm, _ = cms["rl-standin.json"]
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Training"}
    assert cm["metadata"]["namespace"] == "monitoring" and cm["metadata"]["labels"]["team"] == "rl"


# ------------------------------------------------------------------ alertmanager, networkpolicy, job
def test_alertmanager_secret_passes_amtool(helm, chart, work):
    docs = template(helm, chart, "--set", "alertmanagerConfig.enabled=true")
    sec = docs.one("Secret")
    text = sec["stringData"]["alertmanager.yaml"]
    assert yaml.safe_load(text) == yaml.safe_load(STANDIN_ALERTMANAGER)
    amtool = require_binary("amtool")
    p = work / "alertmanager.yaml"
    p.write_text(text)
    r = subprocess.run([amtool, "check-config", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_alertmanager_secret_without_source_fails(helm, work):
    bare = work / "bare-am"
    if not bare.exists():
        shutil.copytree(CHART, bare, ignore=shutil.ignore_patterns("files"))
    r = template(helm, bare, "--set", "alertmanagerConfig.enabled=true", check=False)
    assert r.returncode != 0 and "run helm/sync.py" in r.stderr


def test_networkpolicy_admits_monitoring_only_on_the_exporter_port(helm, chart):
    docs = template(helm, chart, "--set", "networkPolicy.enabled=true")
    np = docs.one("NetworkPolicy")["spec"]
    assert np["podSelector"] == {"matchLabels": {"rl-exporter.dev/scrape": "true"}}
    scrape, others = np["ingress"]
    assert scrape["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert scrape["ports"] == [{"protocol": "TCP", "port": 9464}]
    # every other TCP port stays open (NCCL, torch.distributed), 9464 is in no range
    assert "from" not in others
    tcp = [(p["port"], p["endPort"]) for p in others["ports"] if p["protocol"] == "TCP"]
    assert tcp == [(1, 9463), (9465, 65535)]
    closed = template(helm, chart, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.allowOtherPorts=false")
    assert len(closed.one("NetworkPolicy")["spec"]["ingress"]) == 1


def test_example_job_runs_the_demo(helm, chart):
    docs = template(helm, chart, *CRDS, "--set", "exampleJob.enabled=true", "--set", "exampleJob.scenario=kl-spike")
    job = docs.one("Job")
    pod = job["spec"]["template"]
    pm = docs.one("PodMonitor")
    # the PodMonitor selects the demo pod on the named port
    for k, v in pm["spec"]["selector"]["matchLabels"].items():
        assert pod["metadata"]["labels"][k] == v
    c = pod["spec"]["containers"][0]
    assert c["command"] == ["rl-exporter"] and c["args"][0] == "demo"
    assert "--scenario=kl-spike" in c["args"] and "--listen=0.0.0.0" in c["args"] and "--exit-after" in c["args"]
    assert pm["spec"]["podMetricsEndpoints"][0]["port"] in [p["name"] for p in c["ports"]]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.slow
def test_example_job_command_serves_metrics(helm, chart, port):
    """The example Job's exact command line, run here, serves the demo run on the named port."""
    import time
    import urllib.request
    from tests.conftest import rl_exporter_cmd, stop
    docs = template(helm, chart, "--set", "exampleJob.enabled=true", "--set", "exampleJob.interval=0.05",
                    "--set", "exampleJob.steps=40", "--set", f"sidecar.port={port}")
    c = docs.one("Job")["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("--listen=0.0.0.0", "--listen=127.0.0.1") for a in c["args"]]
    proc = subprocess.Popen(rl_exporter_cmd(*args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        body = ""
        while time.monotonic() < deadline:
            try:
                body = scrape_text(f"http://127.0.0.1:{port}/metrics", timeout=2)
                if "rl_training_step{" in body:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert 'run="demo-healthy"' in body, body[:2000]
        health = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
        assert health.status == 200
    finally:
        stop(proc)


# ------------------------------------------------------------------ values.schema.json
@pytest.mark.parametrize("bad, message", [
    (["--set", "sidecar.port=abc"], "sidecar.port"),
    (["--set", "podMonitor.interval=15"], "podMonitor.interval"),
    (["--set", "prometheusRule.rules.RLRunStalled.severity=page"], "severity"),
    (["--set", "sidecar.sources[0]=no-format-here"], "sidecar.sources"),
    (["--set", "podMonitr.enabled=true"], "podMonitr"),
])
def test_schema_rejects_bad_values(helm, chart, bad, message):
    r = template(helm, chart, *bad, check=False)
    assert r.returncode != 0
    assert "values don't meet the specifications of the schema" in r.stderr and message in r.stderr, r.stderr


# ------------------------------------------------------------------ NOTES.txt
def test_notes_render(helm, chart, work):
    notes_chart = work / "notes"
    if not notes_chart.exists():
        shutil.copytree(chart, notes_chart)
        (notes_chart / "templates" / "zz-notes.yaml").write_text(
            "notes: |\n  {{- include (print .Template.BasePath \"/NOTES.txt\") . | nindent 2 }}\n")
    def notes(*args):
        return template(helm, notes_chart, *args, "--show-only", "templates/zz-notes.yaml")[0]["notes"]
    text = notes(*CRDS, "--set", "exampleJob.enabled=true")
    assert "PodMonitor rlx-rl-exporter" in text and "release label" in text
    assert "include \"rl-exporter.sidecar\"" in text and "rl-exporter.dev/scrape" in text
    assert "PrometheusRule rlx-rl-exporter" in text and "1 ConfigMap(s)" in text
    assert "port-forward job/rlx-rl-exporter-demo 9464" in text
    text = notes("--set", "podMonitor.additionalLabels.release=kps")
    assert "No PodMonitor/ServiceMonitor rendered" in text and "release label" not in text


# ------------------------------------------------------------------ docs/kubernetes.md
def doc_manifests():
    import re
    text = (ROOT / "docs" / "kubernetes.md").read_text()
    out = {}
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        if "{{" in block:
            continue
        doc = yaml.safe_load(block)
        if isinstance(doc, dict) and "kind" in doc and "metadata" in doc:
            out[doc["kind"]] = doc
    return out


def test_docs_snippets_validate_and_match_the_chart(helm, chart, work):
    docs = doc_manifests()
    assert set(docs) >= {"Job", "PyTorchJob", "RayJob"}
    tpls = pod_templates({(k, d["metadata"]["name"]): d for k, d in docs.items()})
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, **t["metadata"]}, "spec": t["spec"]}
            for n, t in tpls.items()]
    p = work / "docs-pods.yaml"
    p.write_text(yaml.safe_dump_all(pods))
    kv_validate([p])
    for n, t in tpls.items():
        c = sidecar_of(t)
        assert t["metadata"]["labels"] == {"rl-exporter.dev/scrape": "true"}
        assert c["restartPolicy"] == "Always" and c in t["spec"]["initContainers"]
        assert c["ports"] == [{"name": "rl-metrics", "containerPort": 9464, "protocol": "TCP"}]
        assert c["securityContext"]["readOnlyRootFilesystem"] and c["securityContext"]["runAsNonRoot"]
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    # the plain Job's sidecar is exactly what the named template renders
    dj = work / "docs-job"
    if not dj.exists():
        shutil.copytree(chart, dj)
        (dj / "templates" / "zz-pod.yaml").write_text(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  initContainers:\n"
            "    {{- include \"rl-exporter.sidecar\" (dict \"root\" $ \"sidecar\" (dict \"sources\" "
            "(list \"verl:/var/log/rl/train.log\"))) | nindent 4 }}\n  containers: []\n  volumes:\n"
            "    {{- include \"rl-exporter.volumes\" . | nindent 4 }}\n")
    pod = template(helm, dj, "--show-only", "templates/zz-pod.yaml").one("Pod")
    job = tpls["grpo-qwen"]
    assert sidecar_of(job) == pod["spec"]["initContainers"][0]
    assert job["spec"]["volumes"] == pod["spec"]["volumes"]


# ------------------------------------------------------------------ the rendered sidecar runs `serve`
def test_rendered_sidecar_args_drive_serve(helm, chart, work, tmp_path, port):
    """The sidecar's args exactly as rendered (paths moved into a tmp dir, loopback instead of
    0.0.0.0) run `rl-exporter serve`: it follows the log, serves /metrics and /healthz, takes the
    run label from RL_EXPORTER_RUN, and /ingest demands the mounted token."""
    import time
    import urllib.error
    import urllib.request
    from tests.conftest import rl_exporter_cmd, stop
    logs, secret = tmp_path / "logs", tmp_path / "secret"
    logs.mkdir()
    secret.mkdir()
    (secret / "token").write_text("s3cret-token\n")
    (logs / "train.log").write_text(
        "step:1 - actor/entropy:0.5 - critic/score/mean:0.2 - actor/grad_norm:1.5\n"
        "step:2 - actor/entropy:0.4 - critic/score/mean:0.3 - actor/grad_norm:1.2\n")
    sc = work / "serve-chart"
    if not sc.exists():
        shutil.copytree(chart, sc)
        (sc / "templates" / "zz-pod.yaml").write_text(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
            "    {{- include \"rl-exporter.sidecar\" . | nindent 4 }}\n")
    pod = template(helm, sc, "--show-only", "templates/zz-pod.yaml",
                   "--set", f"sidecar.logVolume.mountPath={logs}", "--set", f"sidecar.port={port}",
                   "--set-json", f'sidecar.sources=["verl:{logs}/train.log"]',
                   "--set", "ingest.enabled=true", "--set", "ingest.tokenSecret.name=t",
                   # the pushed keys join the run the log feeds: same vocabulary
                   "--set", "ingest.framework=verl",
                   "--set", f"ingest.tokenSecret.mountPath={secret}").one("Pod")
    c = pod["spec"]["containers"][0]
    args = [a.replace("--listen=0.0.0.0", "--listen=127.0.0.1") for a in c["args"]]
    env = {**os.environ, "RL_EXPORTER_RUN": "grpo-qwen"}
    for e in c["env"]:
        if "value" in e:
            env[e["name"]] = e["value"]
    env["NVIDIA_VISIBLE_DEVICES"] = "void"  # no GPU sampling of this machine's devices
    proc = subprocess.Popen(rl_exporter_cmd("serve", *args), cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        body, deadline = "", time.monotonic() + 30
        while time.monotonic() < deadline and 'rl_training_step{run="grpo-qwen"} 2.0' not in body:
            if proc.poll() is not None:
                pytest.fail(f"serve exited {proc.returncode}: {proc.stdout.read()}")
            try:
                body = scrape_text(base + "/metrics", timeout=2)
            except OSError:
                time.sleep(0.2)
        assert 'rl_training_step{run="grpo-qwen"} 2.0' in body, body[:3000]
        assert 'rl_entropy{run="grpo-qwen"} 0.4' in body
        assert urllib.request.urlopen(base + "/healthz", timeout=2).status == 200
        frame = json.dumps({"step": 3, "data": {"actor/entropy": 0.3}}).encode()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(base + "/ingest", data=frame, method="POST"), timeout=2)
        assert e.value.code == 401
        ok = urllib.request.urlopen(urllib.request.Request(
            base + "/ingest", data=frame, method="POST",
            headers={"Authorization": "Bearer s3cret-token", "Content-Type": "application/json"}), timeout=2)
        assert ok.status == 200 and json.loads(ok.read()) == {"accepted": 1}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and 'rl_entropy{run="grpo-qwen"} 0.3' not in body:
            time.sleep(0.1)
            body = scrape_text(base + "/metrics", timeout=2)
        assert 'rl_entropy{run="grpo-qwen"} 0.3' in body
        assert (logs / ".rl-exporter-state.json").exists(), "state file on the log volume"
    finally:
        stop(proc)
