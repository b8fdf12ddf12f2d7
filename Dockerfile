# settle: one image for every role (`settle gateway`, `settle worker`, `settle migrate`, …).
# The TypeScript sources run through tsx, as `npx settle` does locally: there is no build step.
# Temporal itself runs from Temporal's images with topology/temporal-server.yaml mounted
# (docker-compose.yml, docs/deployment.md); settle's image only holds settle.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
# Two glibc malloc arenas instead of eight per core: ~30 MB less RSS for a worker under load, at no
# measured cost in throughput (docs/performance.md, "Worker RSS").
ENV MALLOC_ARENA_MAX=2
# Listen on every interface inside the container (the gateway and the worker's metrics), so the
# published ports reach them; outside a container settle defaults to 127.0.0.1.
ENV HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY tsconfig.json ./
USER node
# settle's state folder, writable by the node user; the workflow bundle is built into its cache now,
# so a starting worker finds it instead of bundling (src/worker/workflow-bundle.ts).
ENV SETTLE_HOME=/home/node/.settle
RUN node -r tsx/cjs -e "require('./src/worker/workflow-bundle').workflowBundlePath()"
EXPOSE 8080 9464
ENTRYPOINT ["node", "bin/settle.js"]
CMD ["--help"]
