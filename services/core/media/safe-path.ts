import { MediaError } from '../errors.ts';

const SAFE_PATH = /^[A-Za-z0-9_./-]+$/;

/** A path for a filter string. Filter values come from validated enums and numbers; only paths need care (checked). */
export function safePath(path: string): string {
  if (!SAFE_PATH.test(path))
    throw new MediaError('internal', 'a temporary path has characters filters cannot take');
  return path;
}
