/// <reference lib="dom" />
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { PASSWORD, startServer, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { PNG_1X1, postFiles } from '../helpers/uploads.js';
import { buildWeb, chromiumMissing, launch, loggedIn } from './helpers.js';

/**
 * The web app's reading and writing beyond the basics (issue 15): emoji, moving between
 * channels, search highlights, the sticky recipient bar, filters, mention suggestions, edit
 * history, read receipts, paste upload, keyboard shortcuts and the desktop app's login. Real
 * Chromium, elements selected by their accessible names (issue 15, item 11).
 */
describe('web app in Chromium: actions and views', { skip: chromiumMissing }, () => {
  let s: TestServer;
  let browser: Browser;
  let general: number;
  let second: number;

  const send = async (to: number, topic: string, content: string): Promise<number> => ok(await s.cast.hamlet.client.post('/messages', { type: 'stream', to, topic, content })).id;
  const compose = (page: Page, text: string) => page.getByRole('textbox', { name: 'Message' }).pressSequentially(text);

  before(async () => {
    buildWeb();
    s = await startServer('sqlite', { thumbnailer: { enabled: true, intervalMs: 1000 } });
    const principals = [s.cast.hamlet.user.id, s.cast.othello.user.id];
    ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'general' }, { name: 'second' }], principals }));
    general = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'general' })).stream_id;
    second = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'second' })).stream_id;
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await s?.close();
  });

  test('emoji show as emoji: in messages (named for screen readers), custom emoji, reactions and suggestions', async () => {
    ok(await postFiles(s.cast.hamlet.client, '/realm/emoji/parley_dot', [{ name: 'emoji.png', data: PNG_1X1, type: 'image/png' }]));
    const id = await send(general, 'emoji', 'Good news :smile: :heart: :parley_dot:');
    ok(await s.cast.hamlet.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/emoji`);
    const article = page.getByRole('article').filter({ hasText: 'Good news' });
    await article.waitFor();
    // The server's <span class="emoji emoji-1f604" aria-label="smile">:smile:</span> shows the glyph.
    assert.equal(await article.getByRole('img', { name: 'smile' }).textContent(), '🙂');
    assert.equal(await article.getByRole('img', { name: 'heart' }).textContent(), '❤\uFE0F');
    assert.doesNotMatch((await article.textContent()) ?? '', /:smile:|:heart:/);
    const custom = article.getByRole('img', { name: ':parley_dot:' });
    assert.equal(await custom.evaluate(async (img: HTMLImageElement) => {
      if (!img.complete) await new Promise((r) => img.addEventListener('load', r, { once: true }));
      return img.naturalWidth;
    }), 1);
    assert.equal((await article.getByRole('button', { name: 'octopus 1' }).textContent())?.replace(/\s/g, ''), '🐙1');

    // Typing ":smi" suggests the emoji with its glyph.
    await compose(page, 'Me too :smi');
    await page.getByRole('listbox', { name: 'Suggestions' }).getByRole('option', { name: '🙂 :smile:', exact: true }).waitFor();
    await context.close();
  });

  test('a change to 24-hour time applies at once to the messages already shown', async () => {
    await send(general, 'clock', 'What time is it?');
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/clock`);
    const time = page.getByRole('article').filter({ hasText: 'What time is it?' }).locator('time').first();
    await time.waitFor();
    assert.match((await time.textContent()) ?? '', /AM|PM/);
    ok(await s.cast.othello.client.patch('/settings', { twenty_four_hour_time: true }));
    await page.waitForFunction((el) => !/AM|PM/.test(el?.textContent ?? ''), await time.elementHandle());
    assert.match((await time.textContent()) ?? '', /^\d{1,2}:\d{2}$/);
    ok(await s.cast.othello.client.patch('/settings', { twenty_four_hour_time: false }));
    await context.close();
  });

  test('a message moved to another channel, live on the other side', async () => {
    const id = await send(general, 'moving', 'Pack the boxes');
    const hamlet = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/moving`);
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#feed');
    await othello.page.getByRole('article').filter({ hasText: 'Pack the boxes' }).waitFor();
    const mine = hamlet.page.getByRole('article').filter({ hasText: 'Pack the boxes' });
    await mine.hover();
    await mine.getByRole('button', { name: 'Message actions' }).click();
    await hamlet.page.getByRole('menuitem', { name: 'Move message' }).click();
    await hamlet.page.getByRole('combobox', { name: 'Move to channel' }).selectOption({ label: '#second' });
    await hamlet.page.getByRole('textbox', { name: 'Edit topic' }).fill('moved here');
    await hamlet.page.getByRole('button', { name: 'Save' }).click();
    // Othello's feed shows it under its new channel and topic, without a reload.
    await othello.page.getByRole('link', { name: 'moved here' }).waitFor();
    await othello.page.getByRole('link', { name: '#second' }).first().waitFor();
    const m = ok(await s.cast.othello.client.get(`/messages/${id}`)).message;
    assert.equal(m.stream_id, second);
    assert.equal(m.subject, 'moved here');
    await hamlet.context.close();
    await othello.context.close();
  });

  test('the move dialog\'s notices: none when "new topic" is unticked, the old topic\'s when ticked, the choice remembered', async () => {
    const id = await send(general, 'crates', 'First crate');
    await send(general, 'crates', 'Second crate');
    const topic = async (name: string): Promise<[string, string][]> => {
      const narrow = [{ operator: 'channel', operand: general }, { operator: 'topic', operand: name }];
      const r = ok(await s.cast.hamlet.client.get('/messages', { narrow, anchor: 'newest', num_before: 20, num_after: 0, apply_markdown: false }));
      return (r.messages as { sender_full_name: string; content: string }[]).map((m) => [m.sender_full_name, m.content]);
    };
    const { context, page } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/crates`);
    const move = async (to: string, ticks: { newTopic: boolean; oldTopic: boolean }, shown: { newTopic: boolean; oldTopic: boolean }) => {
      const article = page.getByRole('article').filter({ hasText: 'First crate' });
      await article.hover();
      await article.getByRole('button', { name: 'Message actions' }).click();
      await page.getByRole('menuitem', { name: 'Move message' }).click();
      const newTopic = page.getByRole('checkbox', { name: 'Send automated notice to new topic' });
      const oldTopic = page.getByRole('checkbox', { name: 'Send automated notice to old topic' });
      assert.equal(await newTopic.isChecked(), shown.newTopic);
      assert.equal(await oldTopic.isChecked(), shown.oldTopic);
      await newTopic.setChecked(ticks.newTopic);
      await oldTopic.setChecked(ticks.oldTopic);
      await page.getByRole('combobox', { name: 'Move', exact: true }).selectOption('change_one');
      await page.getByRole('textbox', { name: 'Edit topic' }).fill(to);
      const patched = page.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().endsWith(`/json/messages/${id}`));
      await page.getByRole('button', { name: 'Save' }).click();
      assert.equal((await patched).status(), 200);
    };

    // Zulip's defaults: a notice to the new topic, none to the old. Unticked, there is none at all.
    await move('crates moved', { newTopic: false, oldTopic: false }, { newTopic: true, oldTopic: false });
    assert.deepEqual(await topic('crates moved'), [['King Hamlet', 'First crate']]);
    assert.deepEqual(await topic('crates'), [['King Hamlet', 'Second crate']]);

    // The dialog remembers that choice; ticking "old topic" posts its notice there only.
    await page.goto(`${s.url}/#narrow/channel/${general}-general/topic/crates%20moved`);
    await move('crates again', { newTopic: false, oldTopic: true }, { newTopic: false, oldTopic: false });
    const by = `@_**King Hamlet|${s.cast.hamlet.user.id}**`;
    assert.deepEqual(await topic('crates again'), [['King Hamlet', 'First crate']]);
    assert.deepEqual(await topic('crates moved'), [['Notification Bot', `This topic was moved to #**general>crates again** by ${by}.`]]);
    // The notice shows in the topic view the person is reading.
    await page.getByRole('article').filter({ hasText: 'This topic was moved to' }).waitFor();
    await context.close();
  });

  test('search results show the server highlights in content and topic', async () => {
    await send(general, 'pomegranate season', 'The pomegranate trees are full');
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#narrow/search/pomegranate');
    const article = page.getByRole('article').filter({ hasText: 'The pomegranate trees are full' });
    await article.waitFor();
    assert.deepEqual(await article.locator('.highlight').allTextContents(), ['pomegranate']);
    const topic = page.getByRole('link', { name: 'pomegranate season' });
    assert.deepEqual(await topic.locator('.highlight').allTextContents(), ['pomegranate']);
    await context.close();
  });

  test('the recipient bar stays on top while scrolling a long conversation', async () => {
    for (let i = 0; i < 40; i++) await send(second, i < 20 ? 'first half' : 'second half', `Line ${i}\n\nwith a second paragraph`);
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${second}-second`);
    await page.getByRole('article').filter({ hasText: 'Line 0' }).waitFor();
    const sticky = page.getByRole('group', { name: 'Current conversation' });
    // Scrolls the feed down until the message is rendered (the list is virtual), then puts it at the top.
    const toTop = async (text: string) => {
      const article = page.getByRole('article').filter({ hasText: text });
      for (let i = 0; i < 60 && !(await article.count()); i++) await page.evaluate(() => (document.querySelector('.feed-scroll')!.scrollTop += 300));
      await article.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    };
    await toTop('Line 10');
    await sticky.getByRole('link', { name: 'first half' }).waitFor();
    await toTop('Line 30');
    await sticky.getByRole('link', { name: 'second half' }).waitFor();
    await sticky.getByRole('link', { name: '#second' }).waitFor();
    await context.close();
  });

  test('Inbox and Recent conversations filter by what is typed', async () => {
    await send(general, 'apples', 'Apples are in');
    await send(general, 'bananas', 'Bananas too');
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#inbox');
    const inbox = page.getByRole('region', { name: 'Inbox' });
    await inbox.getByRole('link', { name: '#general › bananas 1 unread' }).waitFor();
    await inbox.getByRole('searchbox', { name: 'Filter conversations' }).fill('appl');
    await inbox.getByRole('link', { name: '#general › bananas 1 unread' }).waitFor({ state: 'detached' });
    await inbox.getByRole('link', { name: '#general › apples 1 unread' }).waitFor();

    await page.goto(`${s.url}/#recent`);
    const recent = page.getByRole('region', { name: 'Recent conversations' });
    await recent.getByRole('link', { name: /#general › apples/ }).waitFor();
    await recent.getByRole('searchbox', { name: 'Filter conversations' }).fill('banan');
    await recent.getByRole('link', { name: /#general › apples/ }).waitFor({ state: 'detached' });
    await recent.getByRole('link', { name: /#general › bananas/ }).waitFor();
    await context.close();
  });

  test('@-suggestions offer user groups and wildcard mentions', async () => {
    ok(await s.cast.owner.client.post('/user_groups/create', { name: 'gravediggers', description: 'Dig', members: [s.cast.hamlet.user.id] }));
    const { context, page } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/mentions`);
    const box = page.getByRole('textbox', { name: 'Message' });
    const options = page.getByRole('listbox', { name: 'Suggestions' });
    await compose(page, 'Ask @grave');
    await options.getByRole('option', { name: 'gravediggers (group)' }).click();
    assert.equal(await box.inputValue(), 'Ask @*gravediggers* ');
    await compose(page, 'and @top');
    await options.getByRole('option', { name: 'topic (Notify topic)' }).click();
    await compose(page, 'or @_grave');
    await options.getByRole('option', { name: 'gravediggers (group)' }).click();
    assert.equal(await box.inputValue(), 'Ask @*gravediggers* and @**topic** or @_*gravediggers* ');
    await box.fill('');
    await compose(page, '@al');
    await options.getByRole('option', { name: 'all (Notify channel)' }).waitFor();
    await context.close();
  });

  test('edit history and read receipts', async () => {
    ok(await s.cast.owner.client.patch('/realm', { enable_read_receipts: true }));
    const id = await send(general, 'history', 'First version');
    ok(await s.cast.hamlet.client.patch(`/messages/${id}`, { content: 'Second version' }));
    ok(await s.cast.othello.client.post('/messages/flags', { messages: [id], op: 'add', flag: 'read' }));
    const { context, page } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/history`);
    const article = page.getByRole('article').filter({ hasText: 'Second version' });
    await article.hover();
    await article.getByRole('button', { name: 'Message actions' }).click();
    await page.getByRole('menuitem', { name: 'View edit history' }).click();
    const history = page.getByRole('dialog', { name: 'Edit history' });
    await history.getByText('First version').waitFor();
    await history.getByText('Second version').waitFor();
    await history.getByRole('button', { name: 'Close' }).click();
    await history.waitFor({ state: 'detached' });

    await article.hover();
    await article.getByRole('button', { name: 'Message actions' }).click();
    await page.getByRole('menuitem', { name: 'View read receipts' }).click();
    const receipts = page.getByRole('dialog', { name: 'Read receipts' });
    await receipts.getByText('Othello, the Moor of Venice').waitFor();
    await context.close();
  });

  test('an image pasted into compose uploads with progress shown, then is shown inline', async () => {
    const { context, page } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/paste`);
    await page.getByRole('heading', { name: '#general › paste' }).waitFor();
    // Hold the upload's answer so the progress can be seen.
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/json/user_uploads', async (route) => {
      await held;
      await route.continue();
    });
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.evaluate((el, b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, PNG_1X1.toString('base64'));
    await page.getByRole('progressbar', { name: 'Uploading pasted.png' }).waitFor();
    release();
    await page.getByRole('progressbar', { name: 'Uploading pasted.png' }).waitFor({ state: 'detached' });
    assert.match(await box.inputValue(), /^\[pasted\.png\]\(\/user_uploads\/.+\)\n$/);
    await box.press('Control+Enter');
    const image = page.getByRole('article').locator('.message_inline_image img:not(.image-loading-placeholder)');
    await image.waitFor();
    assert.equal(await image.evaluate(async (img: HTMLImageElement) => {
      if (!img.complete) await new Promise((r) => img.addEventListener('load', r, { once: true }));
      return img.naturalWidth;
    }), 1);
    await context.close();
  });

  test('keyboard: j/k move, r replies, c new topic, x new direct message, Esc leaves compose, n next unread topic, / search', async () => {
    await send(general, 'keys', 'Key one');
    await send(general, 'keys', 'Key two');
    await send(second, 'unread topic', 'Waiting for n');
    const { context, page } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/keys`);
    const one = page.getByRole('article').filter({ hasText: 'Key one' });
    const two = page.getByRole('article').filter({ hasText: 'Key two' });
    await two.waitFor();
    await page.getByRole('heading', { name: '#general › keys' }).click();
    const selected = () => page.evaluate(() => document.querySelector('article.selected')?.textContent ?? '');
    await page.keyboard.press('k');
    assert.match(await selected(), /Key one/);
    await page.keyboard.press('j');
    assert.match(await selected(), /Key two/);
    await page.keyboard.press('k');
    await one.waitFor();

    // r: reply to the selected message, in its topic, typing in Message.
    await page.keyboard.press('r');
    const message = page.getByRole('textbox', { name: 'Message' });
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Message');
    assert.equal(await page.getByRole('textbox', { name: 'Topic' }).inputValue(), 'keys');
    // Esc leaves compose; c starts a new topic (an empty Topic), x a direct message (To).
    await message.press('Escape');
    assert.notEqual(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Message');
    await page.keyboard.press('c');
    await page.waitForFunction(() => ['Topic', 'Message'].includes(document.activeElement?.getAttribute('aria-label') ?? ''));
    assert.equal(await page.getByRole('textbox', { name: 'Topic' }).inputValue(), '');
    await page.keyboard.press('Escape');
    await page.keyboard.press('x');
    await page.getByRole('textbox', { name: 'To' }).waitFor();
    await page.waitForFunction(() => ['To', 'Message'].includes(document.activeElement?.getAttribute('aria-label') ?? ''));
    await page.keyboard.press('Escape');

    // n: the next topic with unread messages.
    await page.keyboard.press('n');
    await page.getByRole('heading', { name: /#(second|general) › / }).waitFor();
    await page.getByRole('article').first().waitFor();
    assert.notEqual(new URL(page.url()).hash, `#narrow/channel/${general}-general/topic/keys`);
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Search');
    await context.close();
  });

  test('desktop_flow_otp: the page shows a login token sealed by the pad, which logs the desktop app in', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const otp = randomBytes(32).toString('hex');
    await page.goto(`${s.url}/accounts/login/?desktop_flow_otp=${otp}`);
    await page.getByLabel('Email').fill(s.cast.hamlet.user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    const sealed = Buffer.from(await page.getByRole('textbox', { name: 'Login token' }).inputValue(), 'hex');
    const decipher = createDecipheriv('aes-256-gcm', Buffer.from(otp, 'hex'), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const token = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString('utf8');
    // The desktop app opens the token's address in its own window: logged in, in the app.
    const app = await browser.newContext();
    const appPage = await app.newPage();
    await appPage.goto(`${s.url}/accounts/login/subdomain/${token}`);
    await appPage.getByRole('navigation', { name: 'Channels' }).waitFor();
    assert.equal(new URL(appPage.url()).pathname, '/');
    assert.equal(await appPage.evaluate(async () => ((await (await fetch('/json/users/me')).json()) as { email: string }).email), s.cast.hamlet.user.email);
    await app.close();
    await context.close();
  });
});
