# syntax=docker/dockerfile:1
# Build stage: compile wheels (and gRPC stubs) with the build tools, which stay out of the final image.
FROM python:3.11-slim-bookworm AS build
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
FROM python:3.11-slim-bookworm
RUN useradd --system --uid 65532 --home-dir /var/lib/pivoter --create-home pivoter
COPY --from=helm /out/helm /usr/local/bin/helm
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532:65532
WORKDIR /var/lib/pivoter
ENTRYPOINT ["pivoter"]
CMD ["run"]
