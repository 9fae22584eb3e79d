/// <reference lib="dom" />
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { freshDatabaseUrl, listenApp, OWNER_EMAIL, PASSWORD, startServer, testConfig, type TestServer } from '../helpers/server.js';
import { buildApp, type App } from '../../src/app.js';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { buildWeb, chromiumMissing, launch, loggedIn } from './helpers.js';

/**
 * The web app in real Chromium, selected only by the accessible names the issue fixes
 * (issue 15, item 11): what a person using a screen reader would find.
 */
describe('web app in Chromium', { skip: chromiumMissing }, () => {
  let s: TestServer;
  let browser: Browser;
  let general: number;

  before(async () => {
    buildWeb();
    s = await startServer('sqlite', { thumbnailer: { enabled: true, intervalMs: 1000 } });
    const principals = [s.cast.hamlet.user.id, s.cast.othello.user.id];
    ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals }));
    general = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'general' })).stream_id;
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await s?.close();
  });

  test('log in (a wrong password first, shown in place), then log out', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${s.url}/`);
    assert.match(page.url(), /\/login$/);
    await page.getByLabel('Email').fill(s.cast.hamlet.user.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Your username or password is incorrect' }).waitFor();
    assert.match(page.url(), /\/login$/);

    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'general' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/');

    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('menuitem', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    // The session is over on the server, not only in this tab.
    const status = await page.evaluate(async () => (await fetch('/json/users/me')).status);
    assert.equal(status, 401);
    await context.close();
  });

  test('after logging in, back where the person was going', async () => {
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${general}-general`);
    assert.equal(new URL(page.url()).hash, `#narrow/channel/${general}-general`);
    await page.getByRole('heading', { name: '#general' }).waitFor();
    await context.close();
  });

  test('one person sends to a topic; the other sees it live with the unread count, opens it, and the count clears', async () => {
    const hamlet = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD);
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD);
    const channels = othello.page.getByRole('navigation', { name: 'Channels' });
    await channels.getByRole('link', { name: 'general', exact: true }).waitFor();

    const text = `Lunch at noon? ${randomBytes(3).toString('hex')}`;
    await hamlet.page.getByRole('combobox', { name: 'Channel' }).selectOption({ label: '#general' });
    await hamlet.page.getByRole('textbox', { name: 'Topic' }).fill('lunch');
    await hamlet.page.getByRole('textbox', { name: 'Message' }).fill(text);
    await hamlet.page.getByRole('button', { name: 'Send' }).click();
    await hamlet.page.getByRole('textbox', { name: 'Message' }).and(hamlet.page.locator(':placeholder-shown')).waitFor();

    // Live, through Othello's event queue: the count appears without a reload.
    const unread = channels.getByRole('link', { name: 'general 1 unread' });
    await unread.waitFor();
    await unread.click();
    const message = othello.page.getByRole('article').filter({ hasText: text });
    await message.waitFor();
    assert.match((await message.textContent()) ?? '', /King Hamlet/);
    // Seen in a narrow that marks read: the count clears here and on the server.
    await channels.getByRole('link', { name: 'general', exact: true }).waitFor();
    // The page sends the read flags in batches: wait for the batch to reach the server.
    let flags: string[] = [];
    for (let i = 0; i < 50 && !flags.includes('read'); i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      flags = ok(await s.cast.othello.client.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: general }] })).messages[0].flags;
    }
    assert.ok(flags.includes('read'), `flags: ${flags}`);

    await hamlet.context.close();
    await othello.context.close();
  });

  test('a direct message with the typing indicator; a reaction toggled; an edit, a topic move and a deletion, live on the other side', async () => {
    const hamlet = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD);
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/dm/${s.cast.hamlet.user.id}-King-Hamlet`);
    hamlet.page.on('dialog', (d) => void d.accept());

    // Typing in a direct message shows on the other side, then the message arrives.
    await hamlet.page.getByRole('button', { name: 'New direct message' }).click();
    await hamlet.page.getByRole('textbox', { name: 'To' }).fill(s.cast.othello.user.email);
    await hamlet.page.getByRole('textbox', { name: 'Message' }).pressSequentially('Are you ', { delay: 20 });
    await othello.page.getByRole('status').filter({ hasText: 'King Hamlet is typing' }).waitFor();
    await hamlet.page.getByRole('textbox', { name: 'Message' }).pressSequentially('there?');
    await hamlet.page.getByRole('button', { name: 'Send' }).click();
    const dm = othello.page.getByRole('article').filter({ hasText: 'Are you there?' });
    await dm.waitFor();

    // A reaction through the picker, seen by both; toggled by the other person.
    await dm.hover();
    await dm.getByRole('button', { name: 'Add reaction' }).click();
    await othello.page.getByRole('textbox', { name: 'Search emoji' }).or(othello.page.getByRole('searchbox', { name: 'Search emoji' })).fill('tada');
    await othello.page.getByRole('dialog', { name: 'Emoji picker' }).getByRole('button', { name: 'tada', exact: true }).click();
    await dm.getByRole('button', { name: 'tada 1' }).waitFor();
    await hamlet.page.goto(`${s.url}/#narrow/dm/${s.cast.othello.user.id}-Othello`);
    const mine = hamlet.page.getByRole('article').filter({ hasText: 'Are you there?' });
    await mine.getByRole('button', { name: 'tada 1' }).click();
    await mine.getByRole('button', { name: 'tada 2' }).waitFor();
    await dm.getByRole('button', { name: 'tada 2' }).waitFor();
    await dm.getByRole('button', { name: 'tada 2' }).click();
    await mine.getByRole('button', { name: 'tada 1' }).waitFor();

    // An edit appears live, marked "edited".
    await mine.hover();
    await mine.getByRole('button', { name: 'Message actions' }).click();
    await hamlet.page.getByRole('menuitem', { name: 'Edit' }).click();
    await hamlet.page.getByRole('textbox', { name: 'Edit message' }).fill('Are you there, Othello?');
    await hamlet.page.getByRole('button', { name: 'Save' }).click();
    const edited = othello.page.getByRole('article').filter({ hasText: 'Are you there, Othello?' });
    await edited.waitFor();
    await edited.getByText('edited').waitFor();

    // A topic move and a deletion in a channel, live.
    await othello.page.goto(`${s.url}/#narrow/channel/${general}-general`);
    await othello.page.getByRole('heading', { name: '#general' }).waitFor();
    await hamlet.page.goto(`${s.url}/#narrow/channel/${general}-general`);
    await hamlet.page.getByRole('heading', { name: '#general' }).waitFor();
    await hamlet.page.getByRole('button', { name: 'New topic' }).click();
    await hamlet.page.getByRole('combobox', { name: 'Channel' }).selectOption({ label: '#general' });
    await hamlet.page.getByRole('textbox', { name: 'Topic' }).fill('plans');
    await hamlet.page.getByRole('textbox', { name: 'Message' }).fill('Move me');
    await hamlet.page.getByRole('button', { name: 'Send' }).click();
    const moving = othello.page.getByRole('article').filter({ hasText: 'Move me' });
    await moving.waitFor();
    const sent = hamlet.page.getByRole('article').filter({ hasText: 'Move me' });
    await sent.hover();
    await sent.getByRole('button', { name: 'Message actions' }).click();
    await hamlet.page.getByRole('menuitem', { name: 'Edit' }).click();
    await hamlet.page.getByRole('textbox', { name: 'Edit topic' }).fill('new plans');
    await hamlet.page.getByRole('combobox', { name: 'Move' }).selectOption('change_all');
    await hamlet.page.getByRole('button', { name: 'Save' }).click();
    await othello.page.getByRole('link', { name: 'new plans' }).first().waitFor();

    await sent.hover();
    await sent.getByRole('button', { name: 'Message actions' }).click();
    await hamlet.page.getByRole('menuitem', { name: 'Delete' }).click();
    await moving.waitFor({ state: 'detached' });

    await hamlet.context.close();
    await othello.context.close();
  });

  test('search by typing and by address; keyboard shortcuts', async () => {
    ok(await s.cast.hamlet.client.post('/messages', { type: 'stream', to: general, topic: 'fruit', content: 'The pineapple is ripe' }));
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD);
    await page.getByRole('searchbox', { name: 'Search' }).fill('pineapple');
    await page.getByRole('searchbox', { name: 'Search' }).press('Enter');
    await page.getByRole('article').filter({ hasText: 'The pineapple is ripe' }).waitFor();
    assert.equal(new URL(page.url()).hash, '#narrow/search/pineapple');

    await page.goto(`${s.url}/#narrow/channel/${general}-general/topic/fruit`);
    await page.getByRole('heading', { name: '#general › fruit' }).waitFor();
    await page.getByRole('article').filter({ hasText: 'The pineapple is ripe' }).waitFor();
    assert.equal(await page.getByRole('searchbox', { name: 'Search' }).inputValue(), 'channel:general topic:fruit');

    // Keyboard: "?" lists the shortcuts, Esc closes, "/" goes to search.
    await page.getByRole('heading', { name: '#general › fruit' }).click();
    await page.keyboard.press('?');
    await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor({ state: 'detached' });
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Search');
    await context.close();
  });

  test('an image uploaded by drag-and-drop, shown inline', async () => {
    const { context, page } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/pictures`);
    await page.getByRole('heading', { name: '#general › pictures' }).waitFor();
    // A 1x1 PNG, dropped on compose as a file dragged from the desktop would be.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const drop = await page.evaluateHandle((b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'dot.png', { type: 'image/png' }));
      return dt;
    }, png);
    await page.getByRole('region', { name: 'Compose' }).dispatchEvent('drop', { dataTransfer: drop });
    const message = page.getByRole('textbox', { name: 'Message' });
    await page.waitForFunction(() => /\[dot\.png\]\(\/user_uploads\//.test((document.querySelector('textarea[aria-label="Message"]') as HTMLTextAreaElement).value));
    await message.press('Control+Enter');
    // The thumbnail replaces the spinner live (a rendering-only update_message), and is not an edit.
    const thumbnail = '.message_inline_image img:not(.image-loading-placeholder)';
    const article = page.getByRole('article').filter({ has: page.locator(thumbnail) });
    await article.waitFor();
    assert.equal(await article.getByText('edited').count(), 0);
    const loaded = await article.locator(thumbnail).evaluate(async (img: HTMLImageElement) => {
      if (!img.complete) await new Promise((r) => img.addEventListener('load', r, { once: true }));
      return img.naturalWidth;
    });
    assert.equal(loaded, 1);
    await context.close();
  });

  test('mobile_flow_otp: the login page hands the Zulip app its API key, encrypted by the one-time pad', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const otp = randomBytes(32).toString('hex');
    await page.goto(`${s.url}/accounts/login/?mobile_flow_otp=${otp}`);
    await page.getByLabel('Email').fill(s.cast.hamlet.user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    const answer = page.waitForResponse((r) => r.url().endsWith('/accounts/login/') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Log in' }).click();
    const { redirect_to } = (await (await answer).json()) as { redirect_to: string };
    const url = new URL(redirect_to);
    assert.equal(`${url.protocol}//${url.host}`, 'zulip://login');
    const hex = url.searchParams.get('otp_encrypted_api_key')!;
    let key = '';
    for (let i = 0; i < hex.length; i++) key += (parseInt(hex[i]!, 16) ^ parseInt(otp[i]!, 16)).toString(16);
    assert.equal(Buffer.from(key, 'hex').toString('ascii'), s.cast.hamlet.user.api_key);
    assert.equal(url.searchParams.get('email'), s.cast.hamlet.user.delivery_email);
    assert.equal(url.searchParams.get('user_id'), String(s.cast.hamlet.user.id));
    await context.close();
  });
});

describe('web app across a server restart', { skip: chromiumMissing }, () => {
  let app: App | null = null;
  let browser: Browser;
  let drop: () => Promise<void>;
  let dataDir: string | undefined;

  after(async () => {
    await browser?.close();
    await app?.close();
    await drop?.();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  test('the page says it is reconnecting, then catches up without a reload; a lost queue is registered again', async () => {
    const db = await freshDatabaseUrl('sqlite');
    drop = db.drop;
    const config = testConfig(db.url);
    dataDir = config.dataDir;
    const first = await listenApp(config);
    app = first.app;
    const port = Number(new URL(first.url).port);
    const owner = ok(await new ApiClient(first.url, null, null).post('/fetch_api_key', { username: OWNER_EMAIL, password: PASSWORD }));
    const api = new ApiClient(first.url, OWNER_EMAIL, owner.api_key);
    ok(await api.post('/users/me/subscriptions', { subscriptions: [{ name: 'general' }] }));
    browser = await launch();
    const { context, page, queueId } = await loggedIn(browser, first.url, OWNER_EMAIL, PASSWORD, '#feed');
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    await page.getByRole('textbox', { name: 'Message' }).fill('half-written');

    await app.close();
    app = null;
    await page.getByRole('status').filter({ hasText: 'Reconnecting' }).waitFor();
    app = await buildApp(config, { announce: () => undefined });
    await app.fastify.listen({ port, host: '127.0.0.1' });
    ok(await api.post('/messages', { type: 'stream', to: 'general', topic: 'back', content: 'We are back' }));
    await page.getByRole('article').filter({ hasText: 'We are back' }).waitFor({ timeout: 20000 });
    await page.getByRole('status').filter({ hasText: 'Reconnecting' }).waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 1, 'no reload');

    // The queue gone (BAD_EVENT_QUEUE_ID): the page registers again, keeping its place and the draft.
    ok(await api.request('DELETE', '/events', { queue_id: queueId }));
    ok(await api.post('/messages', { type: 'stream', to: 'general', topic: 'back', content: 'After the queue was lost' }));
    await page.getByRole('article').filter({ hasText: 'After the queue was lost' }).waitFor({ timeout: 20000 });
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'half-written');
    assert.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 1, 'no reload');
    await context.close();
  });
});
