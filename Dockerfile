# syntax=docker/dockerfile:1
# redis-operator: one image, five entry points.
#   default:  node --lite-mode dist/server/main.js (the Metacontroller hook service, port 8080)
#   sidecar:  node src/sidecar/main.ts  (the replication manager, metrics on 9121)
#   metrics proxy: node --lite-mode dist/metrics-proxy/main.js (beside every redis_exporter: the
#             only listener on the Redis pods' metrics port, passing GET /metrics and /health)
#   backup:   node src/backup/main.ts   (one backup, run by a Job: reads a replica's snapshot over
#             the replication protocol and streams it to S3 with the AWS SDK; no redis-cli needed)
#   restore:  node src/backup/restore-main.ts (an init container: a backup into an empty /data)
# Node 24 runs the TypeScript sources directly (type stripping), except the hook service: it runs
# the compiled JS (dist/, `npm run build`) under V8's lite mode, which has no WebAssembly to strip
# types with, to stay under 100 MB RSS under load.
# Build: docker build -t redis-operator:0.1.0 .

# ---- 1. check: full install and typecheck; nothing from here but the checked sources ships ----
FROM node:24-bookworm-slim AS check
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the `node` devDependency would download a second Node 24 binary; the
# image's own Node 24 runs the scripts instead.
RUN npm ci --ignore-scripts --no-audit --no-fund
# The whole build context (see .dockerignore): the typecheck is the repository's own.
COPY . .
RUN npm run typecheck && npm run build

# ---- 2. runtime: production dependencies only, non-root ----
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev keeps typescript, test tools and the `node` devDependency out of the image.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# From the check stage, so the image is only built from sources that typechecked (BuildKit
# skips stages the final one does not depend on).
COPY --from=check /app/src ./src
COPY --from=check /app/dist ./dist
# The image's `node` user, numerically so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 9121
CMD ["node", "--lite-mode", "dist/server/main.js"]
