import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { main } from '../../src/cli/main.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

const baseEnv = (): Record<string, string> => ({ PATH: process.env.PATH ?? '', PARLEY_ENV_FILE: '/nonexistent' });

/** `parley <args>` in this process, with only `env` as its environment, capturing what it prints. */
export async function parley(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  const saved = process.env;
  const out: string[] = [];
  const errOut: string[] = [];
  process.env = { ...baseEnv(), ...env };
  try {
    const code = await main(['node', 'parley', ...args], { out: (t) => out.push(t), err: (t) => errOut.push(t) });
    return { code, stdout: out.join(''), stderr: errOut.join('') };
  } finally {
    process.env = saved;
  }
}

/** `npx parley <args>` as its own process (bin/parley.js), as an operator or a cron job runs it. */
export function parleyProcess(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/parley.js', ...args], { env: { ...baseEnv(), ...env }, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** The command's JSON output, after asserting it succeeded. */
export function cliJson(run: CliRun): any {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** Asserts a refusal: exit status 1, nothing on stdout, `Error: <message>` on stderr. */
export function cliRefused(run: CliRun, message: string | RegExp): void {
  assert.equal(run.code, 1, `expected a refusal, got exit ${run.code}: ${run.stdout}`);
  assert.equal(run.stdout, '');
  if (typeof message === 'string') assert.equal(run.stderr, `Error: ${message}\n`);
  else assert.match(run.stderr, message);
}
