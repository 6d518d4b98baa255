# syntax=docker/dockerfile:1
# kcontrol-manager image: docker build -t ghcr.io/kcontrol/kcontrol-manager:0.1.0 .
#
# Stage 1 builds a virtualenv holding kcontrol and its controllers; stage 2 copies only that
# virtualenv onto a clean python:3.11-slim and runs it as an unprivileged user. No compiler in
# either stage: every dependency must come as a wheel.
#
# The container runs with a read-only root filesystem (deploy/deployment.yaml): nothing is
# written but the self-signed serving certificate, to /tmp (an emptyDir). Python never needs
# to write byte code - PYTHONDONTWRITEBYTECODE=1 stops it trying - but what it cannot read
# from a .pyc it compiles again at every start. So all byte code is compiled at build time:
# pip compiles the virtualenv's (the venv's pip installs with --compile by default), and the
# final stage compiles the standard library's, which the official python image deletes. Both
# are checked by tests/manager/test_manager_image.py.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/kcontrol
COPY pyproject.toml README.md ./
COPY kcontrol ./kcontrol
COPY controllers ./controllers
# --only-binary: a dependency without a wheel fails the build here rather than needing a
# compiler (kcontrol itself, the source tree, is still built into a wheel by hatchling; the
# wheel installs controllers/ as the package kcontrol_controllers). The uvloop extra: the
# manager runs on uvloop's event loop, which spends less CPU per API request.
RUN /opt/kcontrol/bin/pip install --only-binary=:all: '.[uvloop]' \
    && /opt/kcontrol/bin/kcontrol-manager --version

FROM python:3.11-slim
# The standard library's byte code. Without it every start compiles the ~200 stdlib modules
# kcontrol-manager imports, about 0.5 CPU-seconds: compiling all ~1,500 modules it imports
# took 3.5 s more than loading them compiled (2026-11-23, Python 3.11.7). Costs about 15 MB.
RUN python -m compileall -q -j 0 /usr/local/lib/python3.11 \
    && groupadd --system --gid 65532 kcontrol \
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
