# syntax=docker/dockerfile:1
# pivoter's image: `pivoter run` as a non-root user, with helm (the helm bundle format renders
# charts with it) and git (the git bundle source), and exactly the Python packages of
# requirements.lock. How to build it, with Docker or with podman and no registry at all, and what
# it weighs: docs/image.md.
#
# The Python base, pinned to a patch release: 3.11.10 was the first 3.11 with the fix for tarfile's
# PAX header ReDoS (CVE-2024-6232); 3.11.14 also carries the tarfile security fixes of 2025
# (CVE-2025-4517 and related). pivoter guards tar headers itself (provisioners/tarheaders.py) on any
# interpreter; the pin keeps the image's own Python fixed too. Any Debian-based image with Python
# 3.11 and python3 -m venv will do: hack/image/base.sh makes one from Debian's packages.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
# Only for building helm from source; unused when the `helm` stage is given as a build context.
ARG GOLANG_IMAGE=golang:1.26-bookworm

# helm, built from source at the version the set-up pins (hack/tools/helm.sh), statically, with its
# version stamped as helm's own release builds do. To use a binary built elsewhere instead (no Go
# image needed): --build-context helm=DIR, with DIR/helm (hack/image/helm.sh makes one).
FROM ${GOLANG_IMAGE} AS helm-build
ARG HELM_VERSION=v3.21.4
RUN CGO_ENABLED=0 GOBIN=/out go install -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
      "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
FROM scratch AS helm
COPY --from=helm-build /out/helm /helm

# What pivoter runs besides Python, on any Debian-based PYTHON_IMAGE: git and ssh (the git bundle
# source) and libstdc++ (the C++ extensions of python-sat, google-re2 and grpcio-tools' protoc).
# Installed from Debian only where missing: hack/image/base.sh's base has them all.
FROM ${PYTHON_IMAGE} AS base
RUN missing=""; \
    command -v git >/dev/null || missing="$missing git"; \
    command -v ssh >/dev/null || missing="$missing openssh-client"; \
    ldconfig -p | grep -q 'libstdc++\.so\.6' || missing="$missing libstdc++6"; \
    if [ -n "$missing" ]; then \
      apt-get update && apt-get install --yes --no-install-recommends $missing \
      && rm -rf /var/lib/apt/lists/*; \
    fi

# Build stage: the locked packages into a virtualenv, then pivoter's wheel (its gRPC stubs are
# generated here, by grpcio-tools from requirements-build.lock). Nothing of this stage but the
# virtualenv reaches the final image. The kubernetes distribution's asyncio client (kubernetes/aio,
# 68 MB, a sixth of the image) is removed: pivoter never imports it (tests/image checks the
# daemon runs from the image; docs/image.md).
FROM base AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python3 -m venv /opt/build && python3 -m venv /opt/pivoter
COPY requirements-build.lock requirements.lock /src/
# --require-hashes: every package pinned and checked against the sha256 the lock recorded;
# --no-deps: nothing that is not in the lock (pip check below proves the lock is complete).
# The only step that downloads (from PyPI, or the index a pip.conf names). Optional build secrets
# for a network that needs them, never stored in a layer: `pip.conf` (index URL, proxy, `cert =
# /run/secrets/pip-ca`) and `pip-ca` (a CA bundle), e.g. --secret id=pip.conf,src=FILE.
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf --mount=type=secret,id=pip-ca \
    /opt/build/bin/pip install --require-hashes --no-deps -r /src/requirements-build.lock \
 && /opt/pivoter/bin/pip install --require-hashes --no-deps -r /src/requirements.lock
COPY pyproject.toml setup.py README.md /src/
COPY proto/ /src/proto/
COPY pivoter/ /src/pivoter/
COPY resolver/ /src/resolver/
COPY provisioners/ /src/provisioners/
COPY deploy/ /src/deploy/
# The build's identity. The context is a tree without .git, so hack/image/build.sh passes what git
# says of the commit: the version (setuptools-scm's, for the pretend variable it reads), the commit
# and its date (setup.py writes them into pivoter/_version.py; docs/releasing.md). Declared here,
# after the locked packages, so a new commit does not rebuild their layer.
ARG PIVOTER_VERSION=0.0.0+unknown
ARG PIVOTER_COMMIT=unknown
ARG PIVOTER_DATE_EPOCH=
RUN cd /src \
 && export SETUPTOOLS_SCM_PRETEND_VERSION_FOR_PIVOTER="$PIVOTER_VERSION" \
      PIVOTER_BUILD_COMMIT="$PIVOTER_COMMIT" SOURCE_DATE_EPOCH="$PIVOTER_DATE_EPOCH" \
 && /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
 && /opt/pivoter/bin/pip install --no-deps --no-index /wheels/pivoter-*.whl \
 && /opt/pivoter/bin/pip check \
 && /opt/pivoter/bin/pip uninstall --yes pip setuptools \
 && rm -rf /opt/pivoter/lib/python3*/site-packages/kubernetes/aio

# Final stage: the base, helm, the virtualenv; no compilers, no pip, non-root.
FROM base
RUN useradd --no-log-init --uid 65532 --user-group --home-dir /var/lib/pivoter --create-home \
      --shell /usr/sbin/nologin pivoter
COPY --from=helm /helm /usr/local/bin/helm
COPY --from=build /opt/pivoter /opt/pivoter
# The byte code was compiled at install time; the root filesystem is read-only in the cluster.
# MALLOC_ARENA_MAX: glibc maps a 64 MiB arena per thread; grpc core's threads alone took 728 MiB
# of address space, so a memory limit on the container hit mappings, not use (204 MiB with 2).
ENV PATH=/opt/pivoter/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2
USER 65532:65532
WORKDIR /var/lib/pivoter
ENTRYPOINT ["pivoter"]
CMD ["run"]
# Which pivoter this is, as `pivoter version` says it too (labels add no layer; last, so a new
# commit changes nothing above).
ARG PIVOTER_VERSION=0.0.0+unknown
ARG PIVOTER_COMMIT=unknown
ARG PIVOTER_CREATED=unknown
LABEL org.opencontainers.image.title="pivoter" \
      org.opencontainers.image.description="Catalog-driven package lifecycle daemon for Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${PIVOTER_VERSION}" \
      org.opencontainers.image.revision="${PIVOTER_COMMIT}" \
      org.opencontainers.image.created="${PIVOTER_CREATED}"
