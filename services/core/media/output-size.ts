/** A frame size in pixels. */
export interface OutputSize {
  width: number;
  height: number;
}

/** Rounded down to even, at least 2: x264 and x265 refuse odd sizes in 4:2:0. */
export const even = (n: number): number => Math.max(2, Math.floor(n / 2) * 2);

/**
 * The output size: both given → both (rounded down to even); one given → the other keeps the
 * input's aspect ratio (even); none → the input's, rounded down to even.
 */
export function outputSize(
  spec: { width?: number; height?: number },
  input: OutputSize,
): OutputSize {
  const { width, height } = spec;
  if (width !== undefined && height !== undefined)
    return { width: even(width), height: even(height) };
  if (width !== undefined)
    return { width: even(width), height: even((input.height * width) / input.width) };
  if (height !== undefined)
    return { width: even((input.width * height) / input.height), height: even(height) };
  return { width: even(input.width), height: even(input.height) };
}
