import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import type { Browser, BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Debian's Chromium, when installed (.ci/run installs it); the browser tests skip without it. */
export const chromiumMissing: string | false = existsSync(CHROMIUM) ? false : `browser tests skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`;

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Builds web/dist from the current sources unless it already was, so the tests exercise what is
 * checked out. Test files running together wait for one build (scripts/build.mjs) instead of
 * rebuilding under each other's servers.
 */
export function buildWeb(): void {
  const r = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale', 'web'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('the web build failed');
}

export async function launch(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A fresh browser profile logged in through the login page, as a person would. */
export async function loggedIn(browser: Browser, base: string, email: string, password: string, hash = ''): Promise<{ context: BrowserContext; page: Page; queueId: string }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // CI runs two test files at once on two cores, each with its own Chromium and server: a page
  // load or a login there has been seen to take over Playwright's default 30 s.
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  await page.goto(`${base}/${hash}`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  const registered = page.waitForResponse((r) => r.url().endsWith('/json/register'), { timeout: 60_000 });
  await page.getByRole('button', { name: 'Log in' }).click();
  const { queue_id } = (await (await registered).json()) as { queue_id: string };
  await page.getByRole('navigation', { name: 'Channels' }).waitFor();
  return { context, page, queueId: queue_id };
}

/**
 * The environment of a throwaway server for the web scripts (screenshots, budgets): a new
 * SQLite database and data directory under a temporary folder `dir` (the caller removes it),
 * on `port`, logs silent.
 */
export function scratchServerEnv(prefix: string, port: number, extra: Record<string, string> = {}): { dir: string; env: Record<string, string | undefined> } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const env = {
    PATH: process.env.PATH,
    PARLEY_ENV_FILE: '/nonexistent',
    DATABASE_URL: `sqlite:${join(dir, 'db.sqlite3')}`,
    PARLEY_DATA_DIR: join(dir, 'data'),
    PORT: String(port),
    HOST: '127.0.0.1',
    EXTERNAL_URL: `http://localhost:${port}`,
    LOG_LEVEL: 'silent',
    ...extra,
  };
  return { dir, env };
}
