# settle: one image for every role (`settle gateway`, `settle worker`, `settle migrate`, …), running
# the compiled JavaScript of `npm run build` on Node.js 24 LTS: no tsx, TypeScript or esbuild at run
# time. Temporal itself runs from Temporal's images (docker-compose.yml, docs/deployment.md).
#
#   docker build -t settle:latest .
# Where npm's registry is reached through a proxy with its own CA (as on the development machines),
# tools/images/build-image.sh puts that CA bundle in tools/images/npm-ca/ for the build stages (never in the
# final stage) and builds with --network host.
#
# NODE_IMAGE is the official image in a real deployment; where no registry is reachable,
# tools/images/base/build.sh makes a local equivalent under the same name (docs/deployment.md, "The image").
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: every dependency, the TypeScript compiled to dist/, the workflow bundle built into it.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY tools/images/npm-ca/ /tmp/npm-ca/
RUN if [ -f /tmp/npm-ca/ca.pem ]; then export NODE_EXTRA_CA_CERTS=/tmp/npm-ca/ca.pem; fi \
  && npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# dist/stack/ (`settle start`'s development stack) is dropped before the bundle is keyed and built.
RUN npm run build && rm -rf dist/stack && npm run build:workflows

# Production dependencies only (no embedded PostgreSQL, @temporalio/testing, tsx, TypeScript).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY tools/images/npm-ca/ /tmp/npm-ca/
RUN if [ -f /tmp/npm-ca/ca.pem ]; then export NODE_EXTRA_CA_CERTS=/tmp/npm-ca/ca.pem; fi \
  && npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# Of the Temporal core bridge's prebuilt binaries (five platforms, ~27 MB each) only this platform's is
# ever loaded; its Rust sources (sdk-core/) and every source map serve no one at run time.
RUN cd node_modules/@temporalio/core-bridge \
  && target="$(node -p "require('./common.js').getPrebuiltTargetName()")" \
  && find releases -mindepth 1 -maxdepth 1 ! -name "$target" -exec rm -rf {} + \
  && rm -rf sdk-core \
  && cd /app && find node_modules -name '*.map' -type f -delete

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# Two glibc malloc arenas instead of eight per core: ~30 MB less RSS for a worker under load, at no
# measured cost in throughput (docs/performance.md, "The levers, and what they cost").
ENV MALLOC_ARENA_MAX=2
# Listen on every interface inside the container (the gateway and the worker's metrics), so the
# published ports reach them; outside a container settle defaults to 127.0.0.1.
ENV HOST=0.0.0.0
# settle's state folder; nothing in it is written by the production roles (the workflow bundle is in
# dist/workflow-bundles/), so the root filesystem can be read-only.
ENV SETTLE_HOME=/home/node/.settle
# The build this image's workers join the Worker Deployment as (docs/deployment.md, "Upgrades"):
# `docker build --build-arg SETTLE_BUILD_ID=$(git rev-parse --short HEAD)` (or the release version).
# Left empty, the workers stay unversioned, as before.
ARG SETTLE_BUILD_ID=
ENV SETTLE_BUILD_ID=${SETTLE_BUILD_ID}
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
# package-lock.json stays: it is part of the workflow bundle's key (src/worker-runtime/workflow-bundle.ts).
COPY package.json package-lock.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8080 9464
# bin/settle.js runs dist/ as there is no src/ here. node is PID 1: settle's own SIGTERM handler
# stops the role (docker stop).
# --max-semi-space-size=16 keeps V8's young generation at Node 20's size. Node 24 lets it grow to 128
# MB in each isolate, and a worker has two (its main thread and the SDK's workflow thread): at 50 in
# flight it peaked at 572 MB without the flag and 351 MB with it, its CPU per event unchanged
# (docs/performance.md, "The levers, and what they cost"). On the command line, not in NODE_OPTIONS,
# so that a deployment's own NODE_OPTIONS does not drop it.
ENTRYPOINT ["node", "--max-semi-space-size=16", "bin/settle.js"]
CMD ["--help"]
