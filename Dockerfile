# syntax=docker/dockerfile:1.7
# facecompute's images. Every build step is a script in scripts/container/, which the tests run on a
# machine without Docker too (test/container.test.ts), so the steps are proven.
#
#   docker build -t facecompute:0.1.0 .                              CPU, the default target
#   docker build --target runtime-cuda -t facecompute:0.1.0-cuda .   CUDA 12 (onnxruntime-node's CUDA
#                                                                    provider, FACECOMPUTE_ORT_PROVIDER=cuda)
#   --build-arg FC_IMAGE_MODELS="Facenet Dlib opencv retinaface yunet"   the models baked in
#
# Both run as uid 10001 on a read-only root filesystem: the models are in the image (fetched and
# converted here, sha256-checked), and the only writable paths are /tmp and the data directory,
# which the Helm chart mounts as emptyDirs.

# Base images by digest: a tag is moved by every rebuild upstream, a digest names one set of bytes.
# Where each digest was read (no registry is reachable from the build machines that wrote this):
#   node:26.10.0-bookworm-slim  docker-library/repo-info repos/node/remote/26.10.0-bookworm-slim.md
#                               (commit 8caa69d5, NODE_VERSION=26.10.0, built 2026-09-22)
#   rust:1.95.0-bookworm        repos/rust/remote/1.95.0-bookworm.md of repo-info's mirror
#                               maxmood96/repo-info (commit 03290dde, built 2026-05-08)
#   nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04  not an official image, so in no repo-info: the
#                               digest that independent projects pin for this tag (e.g. in their
#                               Dockerfiles); a digest can only name bytes NVIDIA pushed to
#                               nvidia/cuda, but that it is this tag's build is not attested by NVIDIA.
# Node is 26, the Active LTS line since 2026-10-28 (nodejs/Release schedule.json); 26.10.0 is the
# newest 26.x with both an official image digest and a binary on the npm registry, which
# test/node-lts.test.ts runs `serve` under (tools/node-lts pins the same version).
FROM node:26.10.0-bookworm-slim@sha256:662933cf47f013bc8e4beb31a6116448427a82057ba7c42c97e4c5ba766504c2 AS node

# ---- build: Rust (the addon) and Node (npm, TypeScript, the bundle) --------------------------------
FROM rust:1.95.0-bookworm@sha256:adad87df11151c18ba1689c3e1ea8d4810540a29c0adf4a3d69aec35d8ed8968 AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
# Node's headers, so that node-gyp builds better-sqlite3 against this Node without downloading them.
COPY --from=node /usr/local/include/node /usr/local/include/node
ENV npm_config_nodedir=/usr/local
# cmake and nasm build the vendored libjpeg-turbo; python3-venv runs the model converters.
# Versions come from the bookworm snapshot of the base image.
# hadolint ignore=DL3008
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && apt-get update \
 && apt-get install -y --no-install-recommends cmake nasm python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN bash scripts/container/build-app.sh compile \
 && bash scripts/container/build-app.sh assemble /opt/facecompute/app

# ---- models: fetched from their sources (sha256-checked) and converted to ONNX, at build time ---------
FROM build AS models
ARG FC_IMAGE_MODELS="Facenet Dlib opencv retinaface yunet"
RUN FC_IMAGE_MODELS="${FC_IMAGE_MODELS}" bash scripts/container/fetch-models.sh /opt/facecompute/models

# ---- the CUDA provider of onnxruntime-node ----------------------------------------------------------
FROM build AS build-cuda
RUN bash scripts/container/build-app.sh cuda /opt/facecompute/app

# ---- runtime-cuda: NVIDIA's CUDA 12 + cuDNN 9 runtime, the app, the models ----------------------------
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04@sha256:ac55d124da4882b497f732d8dfd9a702d5447a5f29d08d56da6f64f0a1eb34bc AS runtime-cuda
COPY --from=node /usr/local/bin/node /usr/local/bin/node
RUN groupadd --system --gid 10001 facecompute \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin facecompute \
 && mkdir -p /var/lib/facecompute && chown 10001:10001 /var/lib/facecompute
COPY --from=build-cuda /opt/facecompute/app /opt/facecompute/app
COPY --from=models /opt/facecompute/models /opt/facecompute/models
ENV NODE_ENV=production \
    HOME=/tmp \
    FACECOMPUTE_HOST=0.0.0.0 \
    FACECOMPUTE_MODELS_CACHE=/opt/facecompute/models \
    FACECOMPUTE_DATA_DIR=/var/lib/facecompute \
    FACECOMPUTE_ORT_PROVIDER=cuda
USER 10001:10001
WORKDIR /opt/facecompute
EXPOSE 8080 8081 8082 8090 9464
ENTRYPOINT ["node", "/opt/facecompute/app/bin/facecompute.js"]
CMD ["serve"]

# ---- runtime (CPU, the default target): Debian slim, the app, the models --------------------------------
FROM node AS runtime
RUN groupadd --system --gid 10001 facecompute \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin facecompute \
 && mkdir -p /var/lib/facecompute && chown 10001:10001 /var/lib/facecompute
COPY --from=build /opt/facecompute/app /opt/facecompute/app
COPY --from=models /opt/facecompute/models /opt/facecompute/models
ENV NODE_ENV=production \
    HOME=/tmp \
    FACECOMPUTE_HOST=0.0.0.0 \
    FACECOMPUTE_MODELS_CACHE=/opt/facecompute/models \
    FACECOMPUTE_DATA_DIR=/var/lib/facecompute
USER 10001:10001
WORKDIR /opt/facecompute
EXPOSE 8080 8081 8082 8090 9464
ENTRYPOINT ["node", "/opt/facecompute/app/bin/facecompute.js"]
CMD ["serve"]
