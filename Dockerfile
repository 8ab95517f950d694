# albumflow: one image, two entry points (ingress and worker), compiled to JavaScript.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY workflows workflows
COPY activities activities
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY migrations migrations
# Read at run time from the project root: the console's templates and assets.
COPY src/ui/templates src/ui/templates
COPY src/ui/assets src/ui/assets
RUN mkdir -p /data/media && chown node:node /data /data/media
USER node
EXPOSE 3000
# The worker service overrides this with: node --max-old-space-size=160 dist/src/worker.js
CMD ["node", "dist/src/ingress.js"]
