/** Test helpers: capture what a call throws, so tests can check `code` and `location` (never message text alone). */
import { isHarnessError, type HarnessError } from '../../src/errors.js';

/** The HarnessError `p` rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(p: Promise<unknown>): Promise<HarnessError> {
  try {
    await p;
  } catch (e) {
    if (isHarnessError(e)) return e;
    throw e;
  }
  throw new Error('expected a HarnessError');
}

/** The HarnessError `f` throws; fails the test when it returns or throws anything else. */
export function thrown(f: () => unknown): HarnessError {
  try {
    f();
  } catch (e) {
    if (isHarnessError(e)) return e;
    throw e;
  }
  throw new Error('expected a HarnessError');
}
