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

# Final stage: slim, non-root, no compilers.
FROM python:3.11-slim-bookworm
RUN useradd --system --uid 65532 --home-dir /var/lib/pivoter --create-home pivoter
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532:65532
WORKDIR /var/lib/pivoter
ENTRYPOINT ["pivoter"]
CMD ["run"]
