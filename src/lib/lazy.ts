import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS package loaded on first use. Packages only some configurations or requests
 * need (PostgreSQL, Redis, SMTP, KaTeX) then add nothing to the start-up time of the others:
 * together they took about a third of a second to load.
 */
export function lazyRequire<T>(name: string, init?: (module: T) => void): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      loaded = require(name) as T;
      init?.(loaded);
    }
    return loaded;
  };
}

/** The same for an ES-module-only package: loaded on first use, once, through `import()`. */
export function lazyImport<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}

/** JSON Web Tokens: JWT logins and the push services' credentials, neither on every server. */
export const jose = lazyImport(() => import('jose'));
