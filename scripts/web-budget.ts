/// <reference lib="dom" />
// Measures the web app's budgets (issue 15) and prints them for docs/web.md:
//   1. initial JavaScript of a logged-in `/`, gzipped (budget 250 KB);
//   2. from opening `/#feed` to the first message on screen, for a member of the benchmark's
//      register organization (1,000 users, 200 channels) on loopback (budget 1 s);
//   3. typing in compose while 100 messages a second arrive: the longest main-thread task
//      (budget 50 ms);
//   4. scrolling up through a narrow of 10,000 messages, loading as it goes: the longest
//      main-thread task (budget 50 ms: no stutter).
// Usage: npm run web-budget   (needs /usr/bin/chromium; builds web/ first)
import { rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { request } from 'node:http';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { fetchRealmByStringId } from '../src/db/repos/realms.js';
import { fetchUserByEmail } from '../src/db/repos/users.js';
import { startSession } from '../src/plugins/session.js';
import { seed } from '../bench/lib/seed.js';
import { freePort } from '../bench/lib/util.js';
import type { BrowserContext, Page } from 'playwright-core';
import { buildWeb, launch, scratchServerEnv } from '../test/browser/helpers.js';


buildWeb();

const port = await freePort();
const { dir, env } = scratchServerEnv('parley-web-budget-', port, { PARLEY_RATE_LIMITS: 'off' });
const log = (line: string) => console.log(line);
log('seeding the register organization (1,000 users, 200 channels)…');
const seeded = await seed(env, { fanoutUsers: 10, sendSubscribers: 5, historyMessages: 100, historyChannels: 2, historyTopics: 4, historySenders: 2, registerUsers: 1000, registerChannels: 200, registerMessages: 5000 }, log);
const app = await buildApp(loadConfig({}, env), { announce: () => undefined });
await app.fastify.listen({ port, host: '127.0.0.1' });
const browser = await launch();

/**
 * Runs `during` under a Chromium trace and returns the longest task of the page's main thread
 * by CPU time (the trace's `tdur`), beside the wall-clock long tasks the page itself observes:
 * on a machine other work shares, a task's wall time includes the time it waited for a core,
 * its CPU time does not.
 */
async function longestTaskCpu(context: BrowserContext, page: Page, during: () => Promise<void>): Promise<{ cpuMs: number; over50: number; inside: string }> {
  const cdp = await context.newCDPSession(page);
  const events: { name: string; ph: string; pid: number; tid: number; ts: number; dur?: number; tdur?: number; args?: { name?: string; data?: { url?: string; functionName?: string } } }[] = [];
  cdp.on('Tracing.dataCollected', (d) => void events.push(...(d.value as unknown as typeof events)));
  await cdp.send('Tracing.start', { categories: 'disabled-by-default-devtools.timeline,devtools.timeline,toplevel', transferMode: 'ReportEvents' });
  await during();
  const complete = new Promise((r) => cdp.once('Tracing.tracingComplete', r));
  await cdp.send('Tracing.end');
  await complete;
  await cdp.detach();
  const mains = new Set(events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const main = events.filter((e) => mains.has(`${e.pid}:${e.tid}`));
  const tasks = main.filter((e) => e.name === 'RunTask' && e.ph === 'X' && e.tdur !== undefined);
  const longest = tasks.reduce<(typeof tasks)[number] | null>((a, e) => (!a || e.tdur! > a.tdur! ? e : a), null);
  // What the longest task did: its direct kinds of work (script, style, layout, GC…) by wall time.
  const kinds = new Map<string, number>();
  if (longest) {
    for (const e of main) {
      if (e === longest || e.ph !== 'X' || e.dur === undefined || e.ts < longest.ts || e.ts + e.dur > longest.ts + longest.dur!) continue;
      if (['RunTask', 'ThreadControllerImpl::RunTask'].includes(e.name)) continue;
      kinds.set(e.name, Math.max(kinds.get(e.name) ?? 0, e.dur / 1000));
    }
  }
  const inside = [...kinds].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, ms]) => `${k} ${ms.toFixed(0)} ms`).join(', ');
  return { cpuMs: (longest?.tdur ?? 0) / 1000, over50: tasks.filter((e) => e.tdur! > 50000).length, inside };
}

try {
  const { db } = app.services;
  const realm = (await fetchRealmByStringId(db.kysely, 'reg'))!;
  const member = (await fetchUserByEmail(db.kysely, realm.id, 'regular0@bench.example.com'))!;
  const cookie = (await startSession(app.services, member)).split(';')[0]!.split('=');
  const base = `http://${seeded.registerHost}`;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addCookies([{ name: cookie[0]!, value: cookie[1]!, domain: 'reg.localhost', path: '/' }]);
  const page = await context.newPage();

  const scripts: { url: string; gz: number }[] = [];
  page.on('response', async (r) => {
    if (!/javascript/.test(r.headers()['content-type'] ?? '')) return;
    scripts.push({ url: new URL(r.url()).pathname, gz: gzipSync(await r.body(), { level: 9 }).length });
  });
  const sender = (await fetchUserByEmail(db.kysely, realm.id, 'regular10@bench.example.com'))!;
  // Node cannot resolve reg.localhost (Chromium maps *.localhost to loopback): name the organization in Host.
  const post = (who: { email: string; api_key: string }, path: string, params: Record<string, string>) =>
    new Promise<void>((resolve, reject) => {
      const body = new URLSearchParams(params).toString();
      const auth = `Basic ${Buffer.from(`${who.email}:${who.api_key}`).toString('base64')}`;
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: `/api/v1${path}`, headers: { Host: seeded.registerHost, Authorization: auth, 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) } });
      req.on('response', (res) => res.resume().on('end', () => resolve()));
      req.on('error', reject);
      req.end(body);
    });
  // A server that has been running: its caches for the organization warmed by one API client.
  await post(member, '/register', {});
  // The first visit: nothing cached in the browser (the JavaScript is counted here), the server warm.
  const cold0 = Date.now();
  await page.goto(`${base}/#feed`);
  await page.getByRole('article').first().waitFor({ timeout: 30000 });
  const cold = Date.now() - cold0;
  // Returning visits: assets from the browser's cache (immutable), the page and API from the server.
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    await page.goto('about:blank');
    const t0 = Date.now();
    await page.goto(`${base}/#feed`);
    await page.getByRole('article').first().waitFor({ timeout: 30000 });
    runs.push(Date.now() - t0);
  }
  const phases = await page.evaluate(() =>
    performance
      .getEntriesByType('resource')
      .filter((e): e is PerformanceResourceTiming => /\/json\/(register|messages)/.test(e.name))
      .map((e) => `${new URL(e.name).pathname} ${Math.round(e.startTime)}→${Math.round(e.responseEnd)} ms`)
      .concat([`DOMContentLoaded ${Math.round((performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).domContentLoadedEventEnd)} ms`]),
  );
  const initial = new Map(scripts.map((x) => [x.url, x.gz]));
  const totalGz = [...initial.values()].reduce((a, b) => a + b, 0);
  runs.sort((a, b) => a - b);

  // Typing while 100 messages a second arrive in the channel on screen.
  const channel = (await db.kysely.selectFrom('subscriptions').innerJoin('streams', 'streams.id', 'subscriptions.stream_id').select(['streams.id', 'streams.name']).where('subscriptions.user_id', '=', member.id).executeTakeFirst())!;
  // Everything read first, so the channel opens at its newest message and follows what arrives.
  await post(member, '/mark_all_as_read', {});
  await page.goto(`${base}/#narrow/channel/${channel.id}-x`);
  await page.getByRole('heading', { name: `#${channel.name}` }).waitFor();
  await page.evaluate(() => {
    const w = window as unknown as { longest: number };
    w.longest = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.longest = Math.max(w.longest, e.duration);
    }).observe({ type: 'longtask', buffered: false });
  });
  // WEB_BUDGET_PROFILE=1: a CPU profile of the page while typing, summed by function (self time).
  const cdp = process.env.WEB_BUDGET_PROFILE ? await context.newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.start');
  }
  let sent = 0;
  const pending: Promise<void>[] = [];
  const flood = setInterval(() => {
    for (let i = 0; i < 10; i++) {
      sent++;
      pending.push(post(sender, '/messages', { type: 'stream', to: String(channel.id), topic: `flood ${sent % 5}`, content: `Message ${sent} with some **bold** text` }));
    }
  }, 100);
  const textbox = page.getByRole('textbox', { name: 'Message' });
  await textbox.click();
  const typed = Date.now();
  const typingCpu = await longestTaskCpu(context, page, () => textbox.pressSequentially('Typing while the channel is busy, one key at a time, to see if it stays smooth.', { delay: 40, timeout: 180000 }));
  const typingMs = Date.now() - typed;
  clearInterval(flood);
  await Promise.all(pending);
  const longest = await page.evaluate(() => (window as unknown as { longest: number }).longest);
  if (cdp) {
    const { profile } = (await cdp.send('Profiler.stop')) as { profile: { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] } };
    const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      const f = byNode.get(id)!.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
      self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
    });
    for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  profile ${ms.toFixed(0)} ms  ${k}`);
  }
  await page.getByRole('article').filter({ hasText: `Message ${sent} with some` }).waitFor({ timeout: 30000 });

  // A topic of 10,000 messages (made in the database in one statement, read by the member),
  // opened at its newest and scrolled up to its first message by the wheel, as a reader would.
  const LONG = 10000;
  const longTopic = 'long topic';
  await sql`
    INSERT INTO messages (realm_id, sender_id, type, stream_id, topic, topic_lc, content, rendered_content, date_sent, sending_client)
    SELECT ${realm.id}, ${sender.id}, 'stream', ${channel.id}, ${longTopic}, ${longTopic}, 'Line ' || s.i, '<p>Line ' || s.i || ' of the long topic, with <strong>some</strong> text</p>', ${Math.floor(Date.now() / 1000) - LONG} + s.i, 'bench'
    FROM (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ${sql.lit(LONG - 1)}) SELECT i FROM r) AS s
    ORDER BY s.i
  `.execute(db.kysely);
  await sql`
    INSERT INTO user_messages (user_id, message_id, flags)
    SELECT ${member.id}, id, 1 FROM messages WHERE stream_id = ${channel.id} AND topic_lc = ${longTopic}
  `.execute(db.kysely);
  await page.goto(`${base}/#narrow/channel/${channel.id}-x/topic/long.20topic`);
  await page.getByRole('article').filter({ hasText: `Line ${LONG - 1} of the long topic` }).waitFor({ timeout: 30000 });
  await page.evaluate(() => {
    const w = window as unknown as { longest: number; longTasks: number };
    w.longest = 0;
    w.longTasks = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        w.longest = Math.max(w.longest, e.duration);
        w.longTasks++;
      }
    }).observe({ type: 'longtask', buffered: false });
  });
  const feed = page.locator('.feed-scroll');
  await feed.hover();
  const scroll0 = Date.now();
  const first = page.getByRole('article').filter({ hasText: 'Line 0 of the long topic' });
  const scrollCpu = await longestTaskCpu(context, page, async () => {
    while (!(await first.count()) && Date.now() - scroll0 < 180000) {
      await page.mouse.wheel(0, -1200);
      await page.waitForTimeout(16);
    }
  });
  const scrollMs = Date.now() - scroll0;
  const scrolled = await page.evaluate(() => {
    const w = window as unknown as { longest: number; longTasks: number };
    return { longest: w.longest, longTasks: w.longTasks };
  });
  const reachedFirst = (await first.count()) > 0;

  console.log('\n| Budget | Measured | Limit |');
  console.log('|---|---|---|');
  console.log(`| Initial JavaScript of \`/\` (gzip -9, ${initial.size} files) | ${(totalGz / 1024).toFixed(1)} KB | 250 KB |`);
  console.log(`| \`/#feed\` to first message, 1,000 users / 200 channels: first visit | ${cold} ms | 1000 ms |`);
  console.log(`| the same, returning visit (median of 5) | ${runs[2]} ms (min ${runs[0]}, max ${runs[4]}) | 1000 ms |`);
  console.log(`| Longest main-thread task typing in compose, ${sent} messages at 100/s: wall clock | ${Math.round(longest)} ms (typing took ${typingMs} ms) | 50 ms |`);
  console.log(`| the same, CPU time | ${Math.round(typingCpu.cpuMs)} ms (${typingCpu.over50} tasks over 50 ms) | 50 ms |`);
  console.log(`| Longest main-thread task scrolling up through ${LONG.toLocaleString('en')} messages (${reachedFirst ? 'reached the first' : 'did not reach the first'} in ${(scrollMs / 1000).toFixed(1)} s) | ${Math.round(scrolled.longest)} ms (${scrolled.longTasks} tasks over 50 ms) | 50 ms |`);
  console.log(`| the same, CPU time | ${Math.round(scrollCpu.cpuMs)} ms (${scrollCpu.over50} tasks over 50 ms) | 50 ms |`);
  console.log(`  longest task typing, inside (longest of each kind, wall): ${typingCpu.inside}`);
  console.log(`  longest task scrolling, inside: ${scrollCpu.inside}`);
  for (const [url, gz] of initial) console.log(`  ${url}: ${(gz / 1024).toFixed(1)} KB`);
  console.log(`  last returning visit: ${phases.join(', ')}`);
} finally {
  await browser.close();
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
