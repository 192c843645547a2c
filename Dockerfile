# One image for the four services; the command picks the service.
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg fonts-dejavu-core ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts
COPY schemas ./schemas
COPY services ./services
USER node
ENV HOST=0.0.0.0
CMD ["node", "services/all-in-one/main.ts"]
