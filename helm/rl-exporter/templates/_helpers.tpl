{{/* vim: set filetype=mustache: */}}

{{- define "rl-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name. It always contains "rl-exporter" unless fullnameOverride drops it: the
shipped RLExporterDown alert matches up{job=~".*rl-exporter.*"}, and the job label of a
PodMonitor target is <namespace>/<PodMonitor name>, of a ServiceMonitor target the Service name.
*/}}
{{- define "rl-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rl-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rl-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rl-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rl-exporter.labels" -}}
helm.sh/chart: {{ include "rl-exporter.chart" . }}
{{ include "rl-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rl-exporter
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
rl-exporter.values: this chart's values as YAML (read back with fromYaml), wherever the named
templates are called from.
  - from this chart:                 include "rl-exporter.values" .
  - from a parent chart that has rl-exporter as a dependency: the same call with the parent's
    root context finds the merged subchart values under .Values.rl-exporter
  - with per-workload overrides:     (dict "root" $ "sidecar" (dict "sources" (list "verl:/logs/x.log")))
    every key other than "root" is deep-merged over the values.
_appVersion carries the image tag default (this chart's appVersion, also from a parent).
*/}}
{{- define "rl-exporter.values" -}}
{{- $root := . -}}
{{- $over := dict -}}
{{- if hasKey . "root" -}}
{{- $root = .root -}}
{{- $over = omit . "root" -}}
{{- end -}}
{{- $v := $root.Values -}}
{{- $appVersion := $root.Chart.AppVersion -}}
{{- if hasKey $root.Values "rl-exporter" -}}
{{- $v = index $root.Values "rl-exporter" -}}
{{- if and $root.Subcharts (hasKey $root.Subcharts "rl-exporter") -}}
{{- $appVersion = (index $root.Subcharts "rl-exporter").Chart.AppVersion -}}
{{- end -}}
{{- end -}}
{{- $v = mergeOverwrite (deepCopy $v) $over -}}
{{- $_ := set $v "_appVersion" $appVersion -}}
{{- toYaml $v -}}
{{- end }}

{{/* Image reference from a values map (rl-exporter.values output). */}}
{{- define "rl-exporter.image" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default ._appVersion .image.tag | toString) -}}
{{- end -}}
{{- end }}

{{/*
rl-exporter.podLabels: the labels your workload's pod template needs so the PodMonitor (and the
NetworkPolicy) select it. Use under the pod template's metadata.labels:
  labels:
    {{- include "rl-exporter.podLabels" . | nindent 4 }}
*/}}
{{- define "rl-exporter.podLabels" -}}
{{- $v := include "rl-exporter.values" . | fromYaml -}}
{{- toYaml $v.podLabels -}}
{{- end }}

{{- define "rl-exporter.ingestSecretName" -}}
{{- $v := .v -}}
{{- if $v.ingest.tokenSecret.name -}}
{{- $v.ingest.tokenSecret.name -}}
{{- else if $v.ingest.tokenSecret.create -}}
{{- printf "%s-ingest-token" .fullname | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end }}

{{/* Fails rendering when ingest is on without a token: the port is reachable from outside the pod. */}}
{{- define "rl-exporter.checkIngest" -}}
{{- $v := . -}}
{{- if and $v.ingest.enabled (not (or $v.ingest.tokenSecret.name $v.ingest.tokenSecret.create)) -}}
{{- fail "ingest.enabled: the /ingest endpoint shares the scraped port, so it needs a bearer token: set ingest.tokenSecret.name (an existing Secret) or ingest.tokenSecret.create=true" -}}
{{- end -}}
{{- end }}

{{/*
rl-exporter.sidecar: the sidecar container as one list item. With sidecar.native (default) it
is a native sidecar (restartPolicy: Always) and goes under initContainers:
  initContainers:
    {{- include "rl-exporter.sidecar" . | nindent 4 }}
with sidecar.native=false under containers. The pod also needs the volumes:
  volumes:
    {{- include "rl-exporter.volumes" . | nindent 4 }}
and the trainer container the log mount:
  volumeMounts:
    {{- include "rl-exporter.logVolumeMount" . | nindent 4 }}
*/}}
{{- define "rl-exporter.sidecar" -}}
{{- $v := include "rl-exporter.values" . | fromYaml -}}
{{- include "rl-exporter.checkIngest" $v -}}
{{- $s := $v.sidecar -}}
{{- $root := . -}}
{{- if hasKey . "root" }}{{ $root = .root }}{{ end -}}
{{- $fullname := include "rl-exporter.fullname" (dict "Values" $v "Chart" (dict "Name" "rl-exporter") "Release" $root.Release) -}}
- name: {{ $s.name }}
  image: {{ include "rl-exporter.image" $v | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if $s.native }}
  restartPolicy: Always
  {{- end }}
  args:
    - --listen={{ $s.listen }}
    - --port={{ int $s.port }}
    {{- range $s.sources }}
    - --source={{ . }}
    {{- end }}
    {{- with $s.run.name }}
    - --run={{ . }}
    {{- end }}
    {{- with $s.algorithm }}
    - --algorithm={{ . }}
    {{- end }}
    {{- with $s.model }}
    - --model={{ . }}
    {{- end }}
    {{- if $s.stateFile }}
    - --state-file={{ $s.logVolume.mountPath }}/.rl-exporter-state.json
    {{- end }}
    {{- if $v.ingest.enabled }}
    - --ingest
    - --ingest-token-file={{ $v.ingest.tokenSecret.mountPath }}/{{ $v.ingest.tokenSecret.key }}
    - --ingest-max-bytes={{ int $v.ingest.maxBytes }}
    - --ingest-framework={{ $v.ingest.framework }}
    {{- end }}
    {{- range $s.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: PYTHONUNBUFFERED
      value: "1"
    {{- if and (not $s.run.name) $s.run.fromPodLabel }}
    # Run label from the pod's own label (Downward API); empty label -> run-<date>.
    - name: RL_EXPORTER_RUN
      valueFrom:
        fieldRef:
          fieldPath: metadata.labels['{{ $s.run.fromPodLabel }}']
    {{- end }}
    {{- if $v.gpu.enabled }}
    # NVML without requesting a GPU: the NVIDIA runtime injects these devices and the
    # driver's utility libraries (libnvidia-ml). See docs/kubernetes.md for the caveats.
    - name: NVIDIA_VISIBLE_DEVICES
      value: {{ $v.gpu.visibleDevices | quote }}
    - name: NVIDIA_DRIVER_CAPABILITIES
      value: {{ $v.gpu.driverCapabilities | quote }}
    {{- end }}
    {{- with $s.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - name: {{ $s.portName }}
      containerPort: {{ int $s.port }}
      protocol: TCP
  volumeMounts:
    - name: {{ $s.logVolume.name }}
      mountPath: {{ $s.logVolume.mountPath }}
      {{- if not $s.stateFile }}
      readOnly: true
      {{- end }}
    - name: rl-exporter-tmp
      mountPath: /tmp
    {{- if $v.ingest.enabled }}
    - name: rl-exporter-ingest-token
      mountPath: {{ $v.ingest.tokenSecret.mountPath }}
      readOnly: true
    {{- end }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: {{ $s.portName }}
    {{- toYaml $s.livenessProbe | nindent 4 }}
  readinessProbe:
    httpGet:
      path: /healthz
      port: {{ $s.portName }}
    {{- toYaml $s.readinessProbe | nindent 4 }}
  {{- if $s.preStopSleepSeconds }}
  lifecycle:
    preStop:
      exec:
        command: ["sleep", "{{ int $s.preStopSleepSeconds }}"]
  {{- end }}
  resources:
    {{- toYaml $s.resources | nindent 4 }}
  securityContext:
    {{- $sc := deepCopy ($s.securityContext | default dict) }}
    {{- if $s.stackDumps.enabled }}
    {{- /* py-spy of the trainer (values.yaml sidecar.stackDumps): ptrace, effective as root */}}
    {{- $caps := deepCopy ($sc.capabilities | default dict) }}
    {{- $_ := set $caps "add" (concat ($caps.add | default list) (list "SYS_PTRACE") | uniq) }}
    {{- $_ := set $sc "capabilities" $caps }}
    {{- $_ := set $sc "runAsUser" (int $s.stackDumps.runAsUser) }}
    {{- $_ := set $sc "runAsNonRoot" (ne (int $s.stackDumps.runAsUser) 0) }}
    {{- end }}
    {{- toYaml $sc | nindent 4 }}
{{- end }}

{{/*
rl-exporter.podSpec: the pod-level fields the sidecar needs, under your pod template's spec
(the same arguments as rl-exporter.sidecar):
  spec:
    {{- include "rl-exporter.podSpec" . | nindent 4 }}
With sidecar.stackDumps.enabled: shareProcessNamespace: true (the sidecar's py-spy sees the
trainer's process); otherwise nothing.
*/}}
{{- define "rl-exporter.podSpec" -}}
{{- $v := include "rl-exporter.values" . | fromYaml -}}
{{- if $v.sidecar.stackDumps.enabled -}}
shareProcessNamespace: true
{{- end -}}
{{- end }}

{{/* rl-exporter.volumes: the pod volumes the sidecar mounts (list items). */}}
{{- define "rl-exporter.volumes" -}}
{{- $v := include "rl-exporter.values" . | fromYaml -}}
{{- $root := . -}}
{{- if hasKey . "root" }}{{ $root = .root }}{{ end -}}
{{- $fullname := include "rl-exporter.fullname" (dict "Values" $v "Chart" (dict "Name" "rl-exporter") "Release" $root.Release) -}}
{{- $s := $v.sidecar -}}
- name: {{ $s.logVolume.name }}
  emptyDir:
    {{- with $s.logVolume.medium }}
    medium: {{ . }}
    {{- end }}
    {{- with $s.logVolume.sizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
- name: rl-exporter-tmp
  emptyDir:
    medium: Memory
    sizeLimit: 16Mi
{{- if $v.ingest.enabled }}
- name: rl-exporter-ingest-token
  secret:
    secretName: {{ include "rl-exporter.ingestSecretName" (dict "v" $v "fullname" $fullname) }}
    items:
      - key: {{ $v.ingest.tokenSecret.key }}
        path: {{ $v.ingest.tokenSecret.key }}
    defaultMode: 0444
{{- end }}
{{- end }}

{{/* rl-exporter.logVolumeMount: the trainer container's mount of the shared log volume. */}}
{{- define "rl-exporter.logVolumeMount" -}}
{{- $v := include "rl-exporter.values" . | fromYaml -}}
- name: {{ $v.sidecar.logVolume.name }}
  mountPath: {{ $v.sidecar.logVolume.mountPath }}
{{- end }}

{{/* The monitoring.coreos.com/v1 kind is served by the cluster (or passed with --api-versions). */}}
{{- define "rl-exporter.hasCRD" -}}
{{- if .root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind) -}}true{{- end -}}
{{- end }}

{{/*
Replace every `__threshold_<name>__` in .text by .values.<name> (alert threshold tuning).
*/}}
{{- define "rl-exporter.fillThresholds" -}}
{{- $text := .text -}}
{{- range $name, $v := .values -}}
{{- $text = replace (printf "__threshold_%s__" $name) $v $text -}}
{{- end -}}
{{- $text -}}
{{- end -}}
