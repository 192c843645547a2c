import { MediaError } from '../errors.ts';

/** 8K UHD: the largest frame area a job may read or write by default, in pixels. */
export const DEFAULT_MAX_PIXELS = 7680 * 4320;

interface Frame {
  width: number;
  height: number;
}

/**
 * Refuses, before any ffmpeg runs, an input whose own frame is over the budget: decoding and
 * scaling cost memory by area, whatever the output size is.
 */
export function checkInputPixels(input: Frame, maxPixels: number): void {
  if (input.width * input.height > maxPixels)
    throw new MediaError(
      'input_too_large',
      `the input is ${input.width}×${input.height} pixels; the limit is ${maxPixels} pixels in area`,
    );
}

/** Refuses an output over the budget (one side given, the other taken from the input's aspect ratio). */
export function checkOutputPixels(output: Frame, maxPixels: number): void {
  if (output.width * output.height > maxPixels)
    throw new MediaError(
      'input_too_large',
      `the output for this input would be ${output.width}×${output.height} pixels; the limit is ${maxPixels} pixels in area (ask for a smaller width or height)`,
    );
}
