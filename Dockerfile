# syntax=docker/dockerfile:1
# Multi-stage: compile with the dev dependencies, run with production dependencies only, as `node`.

FROM node:20-bookworm-slim AS build
# no install telemetry (@scarf/scarf via swagger-ui-dist)
ENV SCARF_ANALYTICS=false
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

FROM node:20-bookworm-slim AS deps
ENV SCARF_ANALYTICS=false
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

FROM node:20-bookworm-slim
ENV NODE_ENV=production PORT=3000 HOST=0.0.0.0
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
COPY --chown=root:root config ./config
COPY --chown=root:root console ./console
COPY --chown=root:root asyncapi ./asyncapi
# the embedded database (no DATABASE_URL) keeps its files here; with DATABASE_URL nothing is written
RUN mkdir .data && chown node:node .data
USER node
EXPOSE 3000
# liveness only: a database outage makes /readyz fail, and must not get the container restarted
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains (SVC_SHUTDOWN_GRACE_MS) and exits 0; give it that long plus 15 s before SIGKILL
STOPSIGNAL SIGTERM
# the same node flags as package.json's start script: a smaller young generation and a slower-growing old one (RSS under load)
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=50", "dist/src/main.js"]
