# syntax=docker/dockerfile:1
# rl-exporter image: every verb (`docker run IMAGE demo`, `doctor`, `backfill`, ...) and the
# sidecar (`docker run IMAGE --source ...`, or no arguments: serve the logs under /var/log/rl).
#   docker build -t rl-exporter:0.1.0 .                      # default target: with promtool and
#                                                            # prometheus (doctor, backfill)
#   docker build --target sidecar -t rl-exporter:0.1.0-sidecar .   # no Prometheus binaries:
#                                                            # the Helm chart's sidecar, smaller
# Pin the bases by digest for reproducible builds, e.g.
#   docker build --build-arg PYTHON_IMAGE=python:3.12.8-slim-bookworm@sha256:<digest> .
ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm
ARG PROMETHEUS_IMAGE=prom/prometheus:v2.53.1

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY exporter ./exporter
RUN pip wheel --wheel-dir /wheels ".[gpu,otlp,stacks]"

FROM ${PROMETHEUS_IMAGE} AS prometheus

FROM ${PYTHON_IMAGE} AS sidecar
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="rl-exporter" \
      org.opencontainers.image.description="Prometheus/OpenTelemetry exporter for LLM RL post-training runs: sidecar, demo, doctor" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/rl-exporter/rl-exporter"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NVIDIA_DRIVER_CAPABILITIES=utility \
    RL_EXPORTER_IMAGE=sidecar \
    RL_EXPORTER_LISTEN=0.0.0.0
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels "rl-exporter[gpu,otlp,stacks]==${VERSION}" \
    && groupadd --system --gid 10001 rlx \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin rlx \
    && mkdir -p /var/log/rl /var/lib/rl-exporter \
    && chown 10001:10001 /var/lib/rl-exporter \
    && python -m exporter.container --help >/dev/null
USER 10001:10001
WORKDIR /var/log/rl
EXPOSE 9464
# Docker/Podman only; Kubernetes ignores HEALTHCHECK and uses the chart's probes on /healthz.
# GET /healthz on the port the container serves (its own --port/--listen); other verbs pass.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-m", "exporter.container", "--healthcheck"]
# A verb first runs that verb; flags first run serve with them (the chart passes serve's flags).
ENTRYPOINT ["python", "-m", "exporter.container"]
# Default when run without arguments; the state file lets a restarted container resume its
# offsets (mount a volume on /var/lib/rl-exporter to keep it across `docker rm`).
CMD ["serve", "--listen", "0.0.0.0", "--port", "9464", "--source", "auto:/var/log/rl/*.log", \
     "--state-file", "/var/lib/rl-exporter/state.json"]

# The default target: the sidecar plus promtool and prometheus, the engine of doctor and backfill.
FROM sidecar AS full
ENV RL_EXPORTER_IMAGE=full
USER 0:0
RUN --mount=type=bind,from=prometheus,source=/bin,target=/prom \
    install -m 0755 /prom/promtool /prom/prometheus /usr/local/bin/ \
    && promtool --version >/dev/null && prometheus --version >/dev/null
USER 10001:10001
