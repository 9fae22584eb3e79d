import { lazyRequire } from './lazy.js';

type Zxcvbn = typeof import('@zxcvbn-ts/core');

const core = lazyRequire<Zxcvbn>('@zxcvbn-ts/core');
const common = lazyRequire<typeof import('@zxcvbn-ts/language-common')>('@zxcvbn-ts/language-common');
let factory: InstanceType<Zxcvbn['ZxcvbnFactory']> | null = null;

/**
 * zxcvbn's estimate of how many guesses a password takes (what Zulip's check_password_strength
 * compares with PASSWORD_MIN_GUESSES), with zxcvbn-ts's language-independent dictionaries
 * (common passwords, names, keyboard patterns). Built on the first check: the dictionaries take
 * a noticeable fraction of a second that most processes never need.
 */
export function passwordGuesses(password: string): number {
  factory ??= new (core().ZxcvbnFactory)({ dictionary: { ...common().dictionary }, graphs: common().adjacencyGraphs });
  return factory.check(password).guesses;
}
