# syntax=docker/dockerfile:1
# The Python base, pinned to a patch release: 3.11.10 was the first 3.11 with the fix for tarfile's
# PAX header ReDoS (CVE-2024-6232); 3.11.14 also carries the tarfile security fixes of 2025
# (CVE-2025-4517 and related). pivoter guards tar headers itself (provisioners/tarheaders.py) on any
# interpreter; the pin keeps the image's own Python fixed too. Override: --build-arg PYTHON_IMAGE=.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# Build stage: compile wheels (and gRPC stubs) with the build tools, which stay out of the final image.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY setup.py* ./
COPY proto/ proto/
COPY pivoter/ pivoter/
COPY resolver/ resolver/
COPY provisioners/ provisioners/
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# helm renders charts of the helm bundle format (provisioners/formats/helm); built from source at
# the version the set-up installs (hack/tools/helm.sh), statically, so only the binary is copied.
FROM golang:1.26-bookworm AS helm
RUN CGO_ENABLED=0 GOBIN=/out go install helm.sh/helm/v3/cmd/helm@v3.21.4

# Final stage: slim, non-root, no compilers.
FROM ${PYTHON_IMAGE}
RUN useradd --system --uid 65532 --home-dir /var/lib/pivoter --create-home pivoter
COPY --from=helm /out/helm /usr/local/bin/helm
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532:65532
WORKDIR /var/lib/pivoter
ENTRYPOINT ["pivoter"]
CMD ["run"]
