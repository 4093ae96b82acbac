# syntax=docker/dockerfile:1
#
# hapi-grpc server image.
#
#   docker build -t hapi-grpc:0.1.0 .
#   docker run --rm -p 50051:50051 -p 9090:9090 hapi-grpc:0.1.0
#
# Settings are HAPI_* environment variables (README, "Configuration");
# arguments after the image name are passed to `hapi-grpc serve`.

ARG PYTHON_IMAGE=python:3.11-slim
ARG GO_IMAGE=golang:1.26
ARG PROTOVALIDATE_VERSION=v1.2.2

# --- 1. buf/validate/validate.proto from the published protovalidate Go module.
# It is fetched at build time, never committed; Go is needed for nothing else.
FROM ${GO_IMAGE} AS protos
ARG PROTOVALIDATE_VERSION
WORKDIR /tmp/fetch
RUN go mod download "github.com/bufbuild/protovalidate@${PROTOVALIDATE_VERSION}" \
 && install -D -m 0644 \
      "$(go env GOMODCACHE)/github.com/bufbuild/protovalidate@${PROTOVALIDATE_VERSION}/proto/protovalidate/buf/validate/validate.proto" \
      /out/buf/validate/validate.proto \
 && echo "${PROTOVALIDATE_VERSION}" > /out/buf/validate/.version

# --- 2. Generate the protobuf modules and build wheels for the package and
# every dependency, so the runtime stage needs no compiler and no network.
FROM ${PYTHON_IMAGE} AS build
ARG PROTOVALIDATE_VERSION
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PROTOVALIDATE_VERSION=${PROTOVALIDATE_VERSION}
WORKDIR /src
RUN python -m pip install "grpcio-tools==1.85.1"
COPY pyproject.toml README.md ./
COPY protos/ protos/
COPY scripts/fetch_protos.sh scripts/gen_python.sh scripts/
COPY hapi_grpc/ hapi_grpc/
# fetch_protos.sh (run by gen_python.sh) finds the file and its version stamp
# in place and does not call Go.
COPY --from=protos /out/ third_party/protovalidate/
RUN PYTHON=python scripts/gen_python.sh \
 && python -m pip wheel --wheel-dir /wheels ".[tracing]"

# --- 3. Runtime: the installed wheels, a numeric non-root user, nothing else.
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="hapi-grpc" \
      org.opencontainers.image.description="Turns a Kubernetes incident into a validated remediation decision (gRPC)" \
      org.opencontainers.image.licenses="Apache-2.0"
# No .pyc writes at run time: the root filesystem is read-only in Kubernetes
# (pip compiles the bytecode at install time instead).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --find-links=/wheels "hapi-grpc[tracing]"
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd entry.
USER 10001:10001
WORKDIR /tmp
EXPOSE 50051 9090
ENTRYPOINT ["hapi-grpc", "serve"]
