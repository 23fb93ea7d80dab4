# rollout-queue worker/dashboard image: `docker build -t rollout-queue .`
# Node 24 is the current LTS (Node 20 reached end of life on 2026-04-30).
FROM node:24-bookworm-slim AS build
# gcc and libc6-dev build native/rq-launch (static), which starts each rollout attempt inside its
# containment in one exec; the runtime image needs no compiler.
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
COPY schema ./schema
COPY scripts ./scripts
COPY native ./native
# npm ci runs `install` (rq-launch) and `prepare` (the TypeScript build) once the sources are in place.
RUN npm ci && npm prune --omit=dev && test -x native/rq-launch

FROM node:24-bookworm-slim
# python3: the artifacts rollouts run are often Python (codeRunner { entrypoint: "main.py" }).
# tini: PID 1 that forwards SIGTERM to the worker and reaps orphaned rollout processes (a
#   grandchild a rollout left behind is re-parented to PID 1; without an init it stays a zombie).
# util-linux (unshare, setpriv, prlimit) and bubblewrap: per-attempt containment
#   (docs/security.md); rq-launch starts each attempt and bubblewrap gives each program a spec
#   runs its tenant view. The sealed level needs user namespaces (or root): see docs/security.md
#   "Containers" for the docker run flags.
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini python3 util-linux bubblewrap ca-certificates \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/schema ./schema
COPY --from=build /app/native/rq-launch ./native/rq-launch
# `rollout-queue` on PATH; Refs like rollout-queue/runners resolve against this install.
RUN ln -s /app/bin/rollout-queue.js /usr/local/bin/rollout-queue && chmod +x /app/bin/rollout-queue.js
# The image's non-root user `node` (uid 1000): rollout code never runs as root.
USER node
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["rollout-queue", "worker"]
