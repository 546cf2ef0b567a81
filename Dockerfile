# The Tenure service image.
#
#   docker build -t tenure:0.1.0 .
#   docker run --rm -p 8080:8080 -e TENURE_DATABASE_URL=postgresql://… \
#     -v "$PWD/tokens.toml:/etc/tenure/tokens.toml:ro" -e TENURE_TOKENS_FILE=/etc/tenure/tokens.toml \
#     tenure:0.1.0
#
# A container must be given TENURE_DATABASE_URL: the embedded PostgreSQL that `tenure serve`
# starts without it is for a laptop, and its data would die with the container. Run one process
# per container (TENURE_WORKERS=1) and scale with replicas: each process keeps its own pool.
# Every other setting is a TENURE_* environment variable (see docs/operations.md); traces are
# turned on with the standard OTEL_* variables (docs/tracing.md), e.g.
# `-e OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318`.
#
# A container must also be given authentication. The image listens on all interfaces
# (TENURE_HOST=0.0.0.0, so that a port can be published), and the service refuses to start there
# without TENURE_TOKENS_FILE (a tokens file mounted read-only, made with `tenure token new`; or
# TENURE_TOKENS with the same TOML) or, for a throw-away container only,
# TENURE_ALLOW_UNAUTHENTICATED_REMOTE=true. One-off commands never listen and need neither,
# e.g. `docker run --rm -e TENURE_DATABASE_URL=… tenure:0.1.0 migrate`.
#
# Both stages use the same base image, pinned by its exact version: the virtual environment built
# in the first stage is copied into the second and points at the same interpreter. To pin the
# bytes as well, append the image digest (`…-slim-bookworm@sha256:…`) and let a bot update it.

# --- builder: build the wheel and install it, with its dependencies, into /opt/venv ------------
FROM python:3.12.12-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
# Only what the wheel is built from (.dockerignore keeps everything else out of the context).
COPY pyproject.toml README.md ./
COPY client/ client/
COPY service/ service/

# The same two steps tests/deploy/test_install_recipe.py runs outside Docker, then the otel extra:
# traces stay off until OTEL_* variables turn them on (docs/tracing.md), so an operator needs
# no other image for them. It adds the OpenTelemetry SDK, the OTLP/HTTP exporter (protobuf, no
# gRPC: no grpcio) and two instrumentations, about 10 MB.
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
    && python -m venv /opt/venv \
    && wheel="$(ls /wheels/tenure-*.whl)" \
    && /opt/venv/bin/pip install "tenure[server] @ file://${wheel}" \
    && /opt/venv/bin/pip install "tenure[otel] @ file://${wheel}" \
    && /opt/venv/bin/python -c "import tenure_server.server.cli" \
    && /opt/venv/bin/python -c "import opentelemetry.sdk, opentelemetry.instrumentation.asyncpg"

# --- runtime: the interpreter and the venv; no compiler, no wheel, no pip cache ----------------
FROM python:3.12.12-slim-bookworm AS runtime

LABEL org.opencontainers.image.title="tenure" \
      org.opencontainers.image.description="Leases, job windows and fencing tokens on PostgreSQL" \
      org.opencontainers.image.licenses="Apache-2.0"

# A fixed numeric UID/GID so Kubernetes can check runAsNonRoot without reading /etc/passwd.
RUN groupadd --gid 10001 tenure \
    && useradd --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin tenure

COPY --from=builder /opt/venv /opt/venv

# Listening on 0.0.0.0 needs TENURE_TOKENS_FILE (or the explicit allowance) at run time: above.
ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    TENURE_HOST=0.0.0.0 \
    TENURE_PORT=8080 \
    TENURE_WORKERS=1

# Root-owned and not writable: nothing at run time writes outside /tmp.
WORKDIR /app
USER 10001:10001
EXPOSE 8080

# Liveness only (/healthz); the image has no curl, so the interpreter asks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('TENURE_PORT', '8080'), timeout=4)"]

ENTRYPOINT ["tenure"]
CMD ["serve"]
