# One image for the four services; the command picks the service.
FROM node:24-bookworm-slim
# util-linux (setpriv, prlimit) bounds every ffmpeg; it is essential in Debian, named so it stays.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg fonts-dejavu-core ca-certificates util-linux \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts
COPY schemas ./schemas
COPY services ./services
USER node
ENV HOST=0.0.0.0
CMD ["node", "services/all-in-one/main.ts"]
