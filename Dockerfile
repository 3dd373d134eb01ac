# syntax=docker/dockerfile:1.7
# rl-exporter sidecar image: `rl-exporter serve` follows a trainer's logs and serves /metrics.
#   docker build -t rl-exporter:0.1.0 .
#   docker run --rm -p 9464:9464 -v /path/to/logs:/var/log/rl:ro rl-exporter:0.1.0
# Every runtime dependency is a pure-Python wheel or a prebuilt one (py-spy, the sidecar's hang
# stack dumps: a static binary), so no compiler is ever installed: the build
# stage only turns the source tree into wheels, the runtime stage installs them from a bind
# mount (no wheel files left in any layer) and runs as an unprivileged user.
# Pin the base by digest in your registry mirror for reproducible builds, e.g.
#   docker build --build-arg PYTHON_IMAGE=python:3.12.8-slim-bookworm@sha256:<digest> .
ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY exporter ./exporter
RUN pip wheel --wheel-dir /wheels ".[gpu,otlp,stacks]"

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="rl-exporter" \
      org.opencontainers.image.description="Prometheus/OpenTelemetry exporter sidecar for LLM RL post-training runs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/rl-exporter/rl-exporter"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels "rl-exporter[gpu,otlp,stacks]==${VERSION}" \
    && groupadd --system --gid 10001 rlx \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin rlx \
    && mkdir -p /var/log/rl \
    && rl-exporter --help >/dev/null
USER 10001:10001
WORKDIR /var/log/rl
EXPOSE 9464
# Docker/Podman only; Kubernetes ignores HEALTHCHECK and uses the chart's probes on /healthz.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2)"]
ENTRYPOINT ["rl-exporter", "serve"]
# Default when run without arguments; the Helm chart passes its own.
CMD ["--listen", "0.0.0.0", "--port", "9464", "--source", "auto:/var/log/rl/*.log"]
