# An ffmpeg with libvmaf (models built in), for measuring picture quality only (VMAF_FFMPEG):
# Debian's ffmpeg has none. The static GPL build inside the pinned imageio-ffmpeg wheel, checked
# against its sha256 (the same file scripts/test-services/vmaf.sh fetches for the tests); the
# service runs it as a program of its own.
FROM python:3.12-slim-bookworm AS vmaf
RUN python -m pip download --no-cache-dir --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
      --dest /wheel imageio-ffmpeg==0.8.1 \
 && echo "050d6850601c3b3890bd2b28306f3b842b3daea390a561101174375a1c460bda  /wheel/imageio_ffmpeg-0.8.1-py3-none-manylinux_2_28_x86_64.whl" \
    | sha256sum -c - \
 && mkdir -p /opt/ffmpeg-vmaf \
 && python -c "import shutil, zipfile; z = zipfile.ZipFile('/wheel/imageio_ffmpeg-0.8.1-py3-none-manylinux_2_28_x86_64.whl'); shutil.copyfileobj(z.open('imageio_ffmpeg/binaries/ffmpeg-linux-x86_64-v9.0.2'), open('/opt/ffmpeg-vmaf/ffmpeg', 'wb'))" \
 && chmod 755 /opt/ffmpeg-vmaf/ffmpeg \
 && /opt/ffmpeg-vmaf/ffmpeg -hide_banner -filters | grep -qw libvmaf

# One image for the four services; the command picks the service.
FROM node:24-bookworm-slim
# util-linux (setpriv, prlimit) bounds every ffmpeg; it is essential in Debian, named so it stays.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg fonts-dejavu-core ca-certificates util-linux \
 && rm -rf /var/lib/apt/lists/*
COPY --from=vmaf /opt/ffmpeg-vmaf/ffmpeg /opt/ffmpeg-vmaf/ffmpeg
ENV VMAF_FFMPEG=/opt/ffmpeg-vmaf/ffmpeg
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts
COPY schemas ./schemas
COPY services ./services
# Node keeps the stripped TypeScript and compiled code here: a start that finds it skips the
# type stripper and recompiling, about 25 MB less RSS (README, Benchmarks: footprint). Warmed at
# build time by importing once every module the services load, as the code itself says which
# (services/core/runtime/warm-up-modules.ts; no module does work when imported).
# A 4 MiB young-generation semi-space instead of V8's 16 MiB (README "Footprint": idle RSS, and
# the ingress's status view after a start over a long history). Set before the warm-up below:
# V8 accepts a code cache only from a process started with the same flags.
ENV NODE_OPTIONS=--max-semi-space-size=4
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
RUN node --input-type=module -e "const { warmUpModules } = await import('./services/core/runtime/warm-up-modules.ts'); for (const m of await warmUpModules('services')) await import(m);" \
 && chown -R node /app/.node-compile-cache
# The one place the service writes (embedded bus, first-run secrets, all-in-one's watermark
# library): owned by the node user, kept apart from the root-owned code, and a volume so it
# outlives the container.
ENV DATA_DIR=/data
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
ENV HOST=0.0.0.0
# 8080: the API (PORT); 9464: /metrics, /healthz, /readyz (METRICS_PORT), in every mode.
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.METRICS_PORT || 9464) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "services/all-in-one/main.ts"]
