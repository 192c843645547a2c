import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import type { MediaJobDeps } from '../../services/core/media-job/media-job.ts';
import { createSemaphore } from '../../services/core/scheduling/semaphore.ts';
import { DEFAULT_MAX_PIXELS } from '../../services/core/media/pixel-budget.ts';
import { createProber, createVideoRateReader } from '../../services/core/media/probe-media.ts';
import type { QualityTools } from '../../services/core/media/measure-quality.ts';
import { createFfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { createMetrics } from '../../services/core/observability/metrics.ts';
import { createHttpStore } from '../../services/core/storage/http-store.ts';
import { createStoreResolver } from '../../services/core/storage/resolve-store.ts';

/** Where the handler tests keep their job dirs (one root, as a service would). */
export const TEST_WORK_ROOT = join(tmpdir(), 'media-service-test-work');

const bounds = { memoryLimitBytes: 2 * 1024 ** 3 };

/**
 * The quality report's tools: the test ffmpeg, and the ffmpeg with libvmaf of TEST_VMAF_FFMPEG
 * (unset: reports say VMAF is missing).
 */
export function testQualityTools(vmafPath = process.env['TEST_VMAF_FFMPEG']): QualityTools {
  const runFfmpeg = createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', bounds);
  if (!vmafPath) return { runFfmpeg, vmaf: { missing: 'TEST_VMAF_FFMPEG is unset' } };
  return { runFfmpeg, vmaf: { runFfmpeg: createFfmpegRunner(vmafPath, bounds), subsample: 4 } };
}

/** Handler deps on real ffmpeg and the http store, as the runtime builds them, with overrides. */
export function testMediaJobDeps(overrides: Partial<MediaJobDeps> = {}): MediaJobDeps {
  const httpStore = createHttpStore(createGuardedHttp({ allowPrivateNetworks: true }));
  return {
    resolveStore: createStoreResolver({ http: httpStore }),
    httpStore,
    runFfmpeg: createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', bounds),
    probe: createProber(process.env['TEST_FFPROBE'] ?? 'ffprobe', bounds),
    videoRate: createVideoRateReader(process.env['TEST_FFPROBE'] ?? 'ffprobe', bounds),
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    maxInputBytes: 50 * 1024 * 1024,
    maxPixels: DEFAULT_MAX_PIXELS,
    stallTimeoutMs: 30_000,
    threads: 2,
    fontFile: process.env['TEST_FONT_FILE'] ?? '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
    watermarks: undefined,
    workRoot: TEST_WORK_ROOT,
    slots: { cpu: createSemaphore(1), transfer: createSemaphore(2) },
    rateFloor: { minBytesPerSecond: 16_384, windowMs: 30_000 },
    quality: testQualityTools(),
    ...overrides,
  };
}
