# syntax=docker/dockerfile:1
# kcontrol-manager image: docker build -t ghcr.io/kcontrol/kcontrol-manager:0.1.0 .
#
# Stage 1 builds a virtualenv holding kcontrol and its controllers; stage 2 copies only that
# virtualenv onto a clean python:3.11-slim and runs it as an unprivileged user. Byte code is
# compiled at build time, so the container runs with a read-only root filesystem.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/kcontrol
COPY pyproject.toml README.md ./
COPY kcontrol ./kcontrol
COPY controllers ./controllers
RUN /opt/kcontrol/bin/pip install . \
    && /opt/kcontrol/bin/kcontrol-manager --version

FROM python:3.11-slim
RUN groupadd --system --gid 65532 kcontrol \
    && useradd --system --uid 65532 --gid 65532 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin kcontrol
COPY --from=build /opt/kcontrol /opt/kcontrol
ENV PATH=/opt/kcontrol/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 65532:65532
# HTTPS /metrics, /healthz, /livez, /readyz (--secure-port, delegated authn/authz).
EXPOSE 10263
ENTRYPOINT ["kcontrol-manager"]
