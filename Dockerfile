# rollout-queue worker/dashboard image: `docker build -t rollout-queue .`
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
COPY schema ./schema
COPY scripts ./scripts
# npm ci runs `prepare` (the TypeScript build) once the sources are in place.
RUN npm ci && npm prune --omit=dev

FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/schema ./schema
# `rollout-queue` on PATH; Refs like rollout-queue/runners resolve against this install.
RUN ln -s /app/bin/rollout-queue.js /usr/local/bin/rollout-queue && chmod +x /app/bin/rollout-queue.js
USER node
CMD ["rollout-queue", "worker"]
