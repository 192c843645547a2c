import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { createBus } from './create-bus.ts';
import { loadContracts, type Contracts } from '../contracts/load-contracts.ts';
import { createEventCodec, type EventCodec } from '../events/event-codec.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { createMetrics, type Metrics } from '../observability/metrics.ts';
import { tracingOff, type Tracing } from '../observability/tracing.ts';
import { createFfmpegRunner, type FfmpegRunner } from '../media/run-ffmpeg.ts';
import {
  createProber,
  createVideoRateReader,
  type Prober,
  type VideoRateReader,
} from '../media/probe-media.ts';
import { createGuardedHttp, type HttpClient } from '../net/guarded-http.ts';
import { createHttpStore } from '../storage/http-store.ts';
import { createStoreResolver } from '../storage/resolve-store.ts';
import { lazyStoreFactory } from '../storage/lazy-store.ts';
import type { MediaStore, StoreResolver } from '../storage/media-store.ts';
import type { SealingKey } from '../crypto/secret-box.ts';
import { systemClock, type Clock } from '../time.ts';
import { createSemaphore, type Semaphore } from '../scheduling/semaphore.ts';
import { openWatermarkLibrary } from '../watermarks/open-watermark-library.ts';
import type { WatermarkLibrary } from '../watermarks/watermark-library.ts';
import { createDrainState, type DrainState } from './drain-state.ts';

/** What every service is built from; made once in a main.ts. */
export interface Runtime {
  config: Readonly<Config>;
  bus: EventBus;
  contracts: Contracts;
  codec: EventCodec;
  log: Logger;
  metrics: Metrics;
  /** Spans and trace context; no-op unless an exporter is configured (startTracing). */
  tracing: Tracing;
  clock: Clock;
  sealingKeys: readonly SealingKey[];
  http: HttpClient;
  httpStore: MediaStore;
  resolveStore: StoreResolver;
  runFfmpeg: FfmpegRunner;
  probe: Prober;
  videoRate: VideoRateReader;
  /** Threads for one ffmpeg (cpuPlan). */
  ffmpegThreads: number;
  /** CPU slots of the process: jobs encoding at once (cpuPlan). */
  cpuSlots: number;
  /** Slots shared by all the media workers of the process (both in all-in-one mode). */
  slots: { cpu: Semaphore; transfer: Semaphore };
  /** Root of the job work directories: WORK_DIR, or `<os tmpdir>/media-service/<service>`. */
  workRoot: string;
  /** The organisations' named watermark images; undefined when none is set up. */
  watermarks: WatermarkLibrary | undefined;
  /** Begun by the service's stop: `/readyz` then says 503 while work drains. */
  drain: DrainState;
}

export interface RuntimeOptions {
  service: string;
  /** The bus; default: Kafka when KAFKA_BROKERS is set, else the embedded bus in DATA_DIR. */
  bus?: EventBus;
  sealingKeys: readonly SealingKey[];
  log?: Logger;
  /** Default: off (no-op tracer; trace context still passed along). */
  tracing?: Tracing;
  /** The watermark library's folder when the configuration names none (all-in-one mode). */
  watermarkDir?: string;
}

/**
 * The CPU slots and ffmpeg threads of a worker process. By default (WORKER_CONCURRENCY=0) one slot
 * per core, and every ffmpeg gets threads for all the cores: a lone job encodes as fast as one
 * ffmpeg can, and a backlog runs a job per core, so the parts of a job that one ffmpeg cannot
 * spread over the cores (probing, its own start and muxing, verifying, a small input's encode)
 * overlap with other jobs' instead of leaving cores idle. With one slot, a backlog of small jobs
 * kept 2 cores about 45 % busy (bench/backlog.ts). Jobs sharing the cores time-slice them; memory
 * is sized per slot (docs/operating.md, "Scaling each service"). WORKER_CONCURRENCY=N sets N slots of cores / N threads.
 */
export function cpuPlan(
  workerConcurrency: number,
  cores: number,
): { cpuSlots: number; ffmpegThreads: number } {
  if (workerConcurrency === 0)
    return { cpuSlots: Math.max(1, cores), ffmpegThreads: Math.max(1, cores) };
  return {
    cpuSlots: workerConcurrency,
    ffmpegThreads: Math.max(1, Math.floor(cores / workerConcurrency)),
  };
}

export function createRuntime(config: Readonly<Config>, options: RuntimeOptions): Runtime {
  const log =
    options.log ?? createLogger({ level: config.logLevel, base: { service: options.service } });
  const contracts = loadContracts();
  const http = createGuardedHttp({
    allowPrivateNetworks: config.allowPrivateNetworks,
    allowList: config.addressAllowList,
  });
  const httpStore = createHttpStore(http);
  const bus = options.bus ?? createBus(config, log, options.service);
  const cpu = cpuPlan(config.workerConcurrency, availableParallelism());
  return {
    config,
    bus,
    contracts,
    codec: createEventCodec(contracts, `media-service/${options.service}`),
    log,
    metrics: createMetrics(new Registry()),
    tracing: options.tracing ?? tracingOff,
    clock: systemClock,
    sealingKeys: options.sealingKeys,
    http,
    httpStore,
    resolveStore: createStoreResolver({
      http: httpStore,
      buckets: {
        s3: lazyStoreFactory(async () =>
          (await import('../storage/s3-store.ts')).createS3StoreFactory(
            config.s3Endpoint ? { endpoint: config.s3Endpoint, forcePathStyle: true } : {},
          ),
        ),
        azure: lazyStoreFactory(async () =>
          (await import('../storage/azure-store.ts')).createAzureStoreFactory(
            config.azureBlobEndpoint ? { endpointTemplate: config.azureBlobEndpoint } : {},
          ),
        ),
        gcp: lazyStoreFactory(async () =>
          (await import('../storage/gcs-store.ts')).createGcsStoreFactory(
            config.gcsApiEndpoint ? { apiEndpoint: config.gcsApiEndpoint } : {},
          ),
        ),
      },
    }),
    runFfmpeg: createFfmpegRunner(config.ffmpegPath, {
      memoryLimitBytes: config.ffmpegMemoryLimitBytes,
    }),
    probe: createProber(config.ffprobePath, { memoryLimitBytes: config.ffmpegMemoryLimitBytes }),
    videoRate: createVideoRateReader(config.ffprobePath, {
      memoryLimitBytes: config.ffmpegMemoryLimitBytes,
    }),
    ...cpu,
    slots: {
      cpu: createSemaphore(cpu.cpuSlots),
      transfer: createSemaphore(config.transferConcurrency),
    },
    workRoot: config.workDir ?? join(tmpdir(), 'media-service', options.service),
    watermarks: openWatermarkLibrary(config, options.watermarkDir),
    drain: createDrainState(),
  };
}
