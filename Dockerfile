# syntax=docker/dockerfile:1
# Node 26 is the Active LTS line; the test suite also runs on Node 20 (package.json engines).
ARG NODE_IMAGE=node:26-trixie-slim

# Build stage: full dependencies, compile TypeScript.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspaces' manifests, so that npm ci links the SDK (the console is built on it) and installs what the CLI needs to build.
COPY packages/client/package.json ./packages/client/
COPY packages/cli/package.json ./packages/cli/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY plugins ./plugins
COPY db ./db
COPY console ./console
COPY packages ./packages
RUN npm run build

# Production dependencies only.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# Configuration comes from the environment only (see the README); nothing is baked in but defaults.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The base image's unprivileged user owns the data folder and nothing else. Without DATABASE_URL the
# service starts its own PostgreSQL server (binaries from node_modules) as this user, data in /data/postgres.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# SIGTERM starts the graceful shutdown: give the container SHUTDOWN_GRACE_SECONDS + 5 s before SIGKILL.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The same allocator setting and Node.js flags as `npm start` (they keep the process small; see the README).
ENV MALLOC_ARENA_MAX=2 UV_THREADPOOL_SIZE=6
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=20", "--no-concurrent-sweeping", "dist/src/server.js"]
