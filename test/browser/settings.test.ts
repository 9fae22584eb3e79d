/// <reference lib="dom" />
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { PASSWORD, startServer, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { loopbackSmtp } from '../helpers/smtp.js';
import { buildWeb, chromiumMissing, launch, loggedIn } from './helpers.js';

const { url: smtpUrl, inbox } = await loopbackSmtp();

/**
 * The settings screens in real Chromium (issue 16), each test one rule end to end: what one
 * person does in settings, checked on the server, in the mail and on another person's open page.
 * Controls are found by their accessible names, which are Zulip's labels.
 */
describe('web settings in Chromium', { skip: chromiumMissing }, () => {
  let s: TestServer;
  let browser: Browser;
  let general: number;

  before(async () => {
    buildWeb();
    s = await startServer('sqlite', { smtpUrl });
    const principals = [s.cast.owner.user.id, s.cast.hamlet.user.id, s.cast.othello.user.id];
    ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals }));
    general = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'general' })).stream_id;
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await s?.close();
  });

  async function mailTo(email: string): Promise<string> {
    for (let i = 0; i < 100; i++) {
      const mail = inbox.find((m) => m.to === email);
      if (mail) return mail.mail.text ?? '';
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no email to ${email}`);
  }

  const saved = (page: Page) => page.getByRole('status').filter({ hasText: 'Saved' }).first().waitFor();

  test('an owner invites by email through the UI; the invitee follows the emailed link, signs up and lands in the app in the invitation\'s channels', async () => {
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/invites-list');
    const page = owner.page;
    await page.getByRole('heading', { name: 'Invitations', exact: true }).waitFor();
    await page.getByLabel('Emails (one on each line or comma-separated)').fill('newcomer@example.com');
    await page.getByRole('group', { name: 'Channels they should join' }).getByLabel('#general').check();
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Invitations sent!' }).waitFor();
    // The pending list is fetched again on the server's invites_changed event.
    await page.getByRole('table', { name: 'Pending invitations' }).getByRole('rowheader', { name: 'newcomer@example.com' }).waitFor();

    const mail = await mailTo('newcomer@example.com');
    const link = /(http:\/\/\S+\/join\/[A-Za-z0-9_-]+\/?)/.exec(mail)?.[1];
    assert.ok(link, 'the invitation email carries the link');

    const context = await browser.newContext();
    const invitee = await context.newPage();
    await invitee.goto(link);
    await invitee.getByLabel('Name').fill('Newcomer');
    await invitee.getByLabel('Password').fill(PASSWORD);
    await invitee.getByRole('button', { name: 'Create account' }).click();
    await invitee.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'general', exact: true }).waitFor();
    assert.equal(new URL(invitee.url()).pathname, '/');
    const me = await invitee.evaluate(async () => (await (await fetch('/json/users/me')).json()) as { email: string; full_name: string });
    assert.equal(me.full_name, 'Newcomer');
    await context.close();
    await owner.context.close();
  });

  test('the API key is shown only after the password, and the zuliprc download carries it', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#settings/account-and-privacy');
    await page.getByRole('dialog', { name: 'Settings' }).getByRole('heading', { name: 'Account & privacy' }).waitFor();
    await page.getByLabel('Your password').fill('not the password');
    await page.getByRole('button', { name: 'Get API key' }).click();
    await page.getByRole('alert').filter({ hasText: 'Your username or password is incorrect' }).waitFor();
    assert.equal(await page.getByLabel('API key').count(), 0);
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Get API key' }).click();
    const key = page.getByLabel('API key', { exact: true });
    await key.waitFor();
    assert.equal(await key.textContent(), s.cast.othello.user.api_key);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download zuliprc' }).click()]);
    assert.equal(download.suggestedFilename(), 'zuliprc');
    const { readFileSync } = await import('node:fs');
    const text = readFileSync((await download.path())!, 'utf8');
    assert.match(text, /^\[api\]\nemail=othello@example\.com\nkey=/);
    assert.ok(text.includes(`key=${s.cast.othello.user.api_key}\n`));
    await context.close();
  });

  test('a member sees no organization settings, and a direct visit to their address says why', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD);
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('menuitem', { name: 'Personal settings' }).waitFor();
    assert.equal(await page.getByRole('menuitem', { name: 'Organization settings' }).count(), 0);
    await page.goto(`${s.url}/#organization/organization-settings`);
    await page.getByRole('heading', { name: 'Organization settings' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'Only organization administrators can see and change these settings' }).waitFor();
    assert.equal(await page.getByLabel('Allow message editing').count(), 0);
    await context.close();
  });

  test('an owner makes a member an administrator; the member\'s open page changes live', async () => {
    const hamlet = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, '#organization/organization-settings');
    await hamlet.page.getByRole('alert').filter({ hasText: 'Only organization administrators' }).waitFor();

    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/users');
    await owner.page.getByLabel('Role of King Hamlet').selectOption({ label: 'Administrator' });
    await saved(owner.page);
    assert.equal(ok(await s.cast.owner.client.get(`/users/${s.cast.hamlet.user.id}`)).user.role, 200);

    // Without a reload: the settings the server now lets Hamlet change appear, enabled.
    await hamlet.page.getByLabel('Allow message editing').waitFor();
    assert.equal(await hamlet.page.getByLabel('Allow message editing').isEnabled(), true);
    await hamlet.page.getByRole('button', { name: 'Close settings' }).click();
    await hamlet.page.getByRole('button', { name: 'Menu' }).click();
    await hamlet.page.getByRole('menuitem', { name: 'Organization settings' }).waitFor();
    await hamlet.context.close();
    await owner.context.close();
  });

  test('a channel created with initial subscribers appears live in their sidebars', async () => {
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD);
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#channels/new');
    const form = owner.page.getByRole('form', { name: 'Create channel' });
    await form.getByLabel('Channel name').fill('design review');
    await form.getByLabel('Channel description').fill('Weekly design critique');
    await form.getByRole('group', { name: 'Choose subscribers' }).getByLabel('Othello, the Moor of Venice').check();
    await form.getByRole('button', { name: 'Create' }).click();
    // The new channel's settings open; the person named is a subscriber.
    await owner.page.getByRole('heading', { name: '#design review' }).waitFor();
    await othello.page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'design review', exact: true }).waitFor();
    const id = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'design review' })).stream_id;
    const members = ok(await s.cast.owner.client.get(`/streams/${id}/members`)).subscribers as number[];
    assert.deepEqual(members.sort((a, b) => a - b), [s.cast.owner.user.id, s.cast.othello.user.id].sort((a, b) => a - b));
    assert.equal(ok(await s.cast.owner.client.get(`/streams/${id}`)).stream.description, 'Weekly design critique');
    await othello.context.close();
    await owner.context.close();
  });

  test('an avatar uploaded in settings shows in another person\'s feed', async () => {
    ok(await s.cast.hamlet.client.post('/messages', { type: 'stream', to: general, topic: 'portraits', content: 'New picture soon' }));
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/portraits`);
    const message = othello.page.getByRole('article').filter({ hasText: 'New picture soon' });
    await message.waitFor();

    const hamlet = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, '#settings/profile');
    // A wide picture, red on the left half and blue on the right; the square chosen is the
    // rightmost one (pixels 70–160), which is mostly blue.
    const png = await hamlet.page.evaluate(() => {
      const c = document.createElement('canvas');
      c.width = 160;
      c.height = 90;
      const g = c.getContext('2d')!;
      g.fillStyle = '#ff0000';
      g.fillRect(0, 0, 80, 90);
      g.fillStyle = '#0000ff';
      g.fillRect(80, 0, 80, 90);
      return c.toDataURL('image/png').split(',')[1]!;
    });
    await hamlet.page.getByLabel('Upload new profile picture').setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: Buffer.from(png, 'base64') });
    const crop = hamlet.page.getByRole('group', { name: 'Crop your profile picture' });
    await crop.getByLabel('Horizontal position').fill('100');
    await crop.getByRole('button', { name: 'Save profile picture' }).click();
    await saved(hamlet.page);
    const url = ok(await s.cast.othello.client.get(`/users/${s.cast.hamlet.user.id}`)).user.avatar_url as string;
    assert.match(url, /\/user_avatars\//);

    // Othello's page shows the new picture on the message already there, without a reload.
    const img = message.locator('img.avatar');
    await img.waitFor();
    assert.equal(await img.getAttribute('src'), url);
    await img.evaluate((el: HTMLImageElement) => el.decode());
    // The picture as the server stores it, read by sharp: a square, the chosen one.
    const { default: sharp } = await import('sharp');
    const stored = Buffer.from(await (await fetch(url.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:'))).arrayBuffer());
    const { data, info } = await sharp(stored).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const pixel = (fx: number) => {
      const at = (Math.floor(info.height / 2) * info.width + Math.floor(info.width * fx)) * 3;
      return [...data.subarray(at, at + 3)];
    };
    const [width, height, left, middle] = [info.width, info.height, pixel(0.03), pixel(0.5)];
    assert.equal(width, height, 'the picture was cropped to a square');
    assert.ok(left[0]! > 200 && left[2]! < 60, `the square's left edge is the red half: ${left}`);
    assert.ok(middle[2]! > 200 && middle[0]! < 60, `its middle is the blue half: ${middle}`);
    await hamlet.context.close();
    await othello.context.close();
  });

  test('a linkifier added in settings (with its preview) turns text into a link in a new message', async () => {
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/linkifier-settings');
    const form = owner.page.getByRole('form', { name: 'Add a new linkifier' });
    await form.getByLabel('Pattern').fill('#(?P<id>[0-9]+)');
    await form.getByLabel('URL template').fill('https://tracker.example.com/issue/{id}');
    await form.getByLabel('Sample text').fill('see #1234');
    await owner.page.getByRole('status', { name: 'Linkifier preview' }).filter({ hasText: 'Links to https://tracker.example.com/issue/1234' }).waitFor();
    await form.getByRole('button', { name: 'Add linkifier' }).click();
    await owner.page.getByRole('table', { name: 'Linkifiers' }).getByText('https://tracker.example.com/issue/{id}').waitFor();

    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/bugs`);
    ok(await s.cast.hamlet.client.post('/messages', { type: 'stream', to: general, topic: 'bugs', content: 'Fixed in #4321' }));
    const link = othello.page.getByRole('article').filter({ hasText: 'Fixed in' }).getByRole('link', { name: '#4321' });
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), 'https://tracker.example.com/issue/4321');
    await othello.context.close();
    await owner.context.close();
  });

  test('an owner deactivates a person, who can no longer use the app, and reactivates them', async () => {
    const shiva = await loggedIn(browser, s.url, s.cast.moderator.user.email, PASSWORD);
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/users');
    owner.page.on('dialog', (d) => void d.accept());
    await owner.page.getByRole('button', { name: 'Deactivate Shiva' }).click();
    await saved(owner.page);
    // Their session ended on the server: the next load of the app is the login page.
    await shiva.page.reload();
    await shiva.page.getByRole('button', { name: 'Log in' }).waitFor();
    assert.equal(ok(await s.cast.owner.client.get(`/users/${s.cast.moderator.user.id}`)).user.is_active, false);

    await owner.page.getByRole('tab', { name: 'Deactivated users' }).click();
    await owner.page.getByRole('button', { name: 'Reactivate Shiva' }).click();
    await saved(owner.page);
    assert.equal(ok(await s.cast.owner.client.get(`/users/${s.cast.moderator.user.id}`)).user.is_active, true);
    // Back in the active list, fetched again on the realm_user event.
    await owner.page.getByRole('tab', { name: 'Users', exact: true }).click();
    await owner.page.getByRole('button', { name: 'Deactivate Shiva' }).waitFor();
    await shiva.context.close();
    await owner.context.close();
  });

  test('a reusable invite link is created, listed, and revoked; the revoked link no longer signs anyone up', async () => {
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/invites-list');
    await owner.page.getByRole('button', { name: 'Generate invite link' }).click();
    const link = (await owner.page.getByLabel('Invite link').textContent())!;
    assert.match(link, /\/join\/[A-Za-z0-9_-]+\/?$/);
    const pending = owner.page.getByRole('table', { name: 'Pending invitations' });
    await pending.getByRole('rowheader', { name: link }).waitFor();
    await owner.page.getByRole('button', { name: `Revoke invitation ${link}` }).click();
    await pending.getByRole('rowheader', { name: link }).waitFor({ state: 'detached' });
    const res = await fetch(link.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:'));
    assert.equal(res.status, 404);
    assert.match(await res.text(), /expired or been deactivated/);
    await owner.context.close();
  });

  test('a user group created in settings, with a member added, shows live in that member\'s groups', async () => {
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#groups/your');
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#groups/new');
    const form = owner.page.getByRole('form', { name: 'Create user group' });
    await form.getByLabel('User group name').fill('reviewers');
    await form.getByLabel('User group description').fill('People who review designs');
    await form.getByRole('button', { name: 'Create' }).click();
    await owner.page.getByRole('heading', { name: 'reviewers' }).waitFor();
    await owner.page.getByLabel('Add members').selectOption({ label: 'Othello, the Moor of Venice' });
    await owner.page.getByRole('button', { name: 'Add', exact: true }).click();
    await owner.page.getByRole('list', { name: 'Members' }).getByText('Othello, the Moor of Venice').waitFor();
    await othello.page.getByRole('list', { name: 'User groups' }).getByRole('link', { name: 'reviewers' }).waitFor();
    const groups = ok(await s.cast.othello.client.get('/user_groups')).user_groups as { name: string; members: number[] }[];
    assert.deepEqual(groups.find((g) => g.name === 'reviewers')?.members.sort((a, b) => a - b), [s.cast.owner.user.id, s.cast.othello.user.id].sort((a, b) => a - b));
    await othello.context.close();
    await owner.context.close();
  });

  test('browsing all channels, a member subscribes and unsubscribes, and the sidebar follows', async () => {
    ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'announcements', description: 'Company news' }] }));
    const { page, context } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#channels/all');
    const row = page.getByRole('list', { name: 'Channels' }).getByRole('listitem').filter({ hasText: 'announcements' });
    await row.getByText('1 subscribers').waitFor();
    await row.getByText('Company news').waitFor();
    await page.getByRole('button', { name: 'Subscribe to announcements' }).click();
    await page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'announcements', exact: true }).waitFor();
    await row.getByText('2 subscribers').waitFor();
    await page.getByRole('button', { name: 'Unsubscribe from announcements' }).click();
    await page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'announcements', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Subscribe to announcements' }).waitFor();
    await context.close();
  });

  test('a saved snippet created in settings is inserted into compose from its menu', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#settings/saved-snippets');
    const form = page.getByRole('form', { name: 'Add a new saved snippet' });
    await form.getByLabel('Title').fill('Standup');
    await form.getByLabel('Content').fill('Yesterday: reviews. Today: the release.');
    await form.getByRole('button', { name: 'Save' }).click();
    // Listed from the server's saved_snippets event.
    await page.getByRole('list', { name: 'Saved snippets' }).getByText('Standup').waitFor();
    await page.getByRole('button', { name: 'Close settings' }).click();
    await page.goto(`${s.url}/#narrow/channel/${general}-general/topic/standup`);
    await page.getByRole('button', { name: 'Snippets', exact: true }).click();
    await page.getByRole('menuitem', { name: 'Standup' }).click();
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'Yesterday: reviews. Today: the release.');
    const stored = ok(await s.cast.othello.client.get('/saved_snippets')).saved_snippets as { title: string }[];
    assert.deepEqual(stored.map((x) => x.title), ['Standup']);
    await context.close();
  });

  test('an administrator sees the owner-only settings disabled with the reason, and the server refuses them too', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.admin.user.email, PASSWORD, '#organization/organization-settings');
    const required = page.getByLabel('Invitations are required for joining this organization');
    await required.waitFor();
    assert.equal(await required.isDisabled(), true);
    assert.equal(await required.getAttribute('aria-describedby') !== null, true);
    const reason = page.locator(`#${await required.getAttribute('aria-describedby')}`);
    assert.equal(await reason.textContent(), 'Only organization owners can change this.');
    // What the administrator may change is enabled, and saves.
    await page.getByLabel('Allow message editing').uncheck();
    await saved(page);
    const refused = await s.cast.admin.client.patch('/realm', { invite_required: false });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'UNAUTHORIZED_PRINCIPAL');
    await page.getByLabel('Allow message editing').check();
    await saved(page);
    await context.close();
  });

  test('a custom profile field added and renamed by the owner appears live in a member\'s profile, who fills it in', async () => {
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#settings/profile');
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/profile-field-settings');
    const form = owner.page.getByRole('form', { name: 'Add a new profile field' });
    await form.getByLabel('Type').selectOption({ label: 'Text (short)' });
    await form.getByLabel('Label').fill('Team');
    await form.getByLabel('Hint').fill('Which team you are on');
    await form.getByRole('button', { name: 'Add' }).click();
    await owner.page.getByRole('table', { name: 'Custom profile fields' }).getByRole('rowheader', { name: 'Team' }).waitFor();
    await owner.page.getByRole('button', { name: 'Edit Team' }).click();
    const edit = owner.page.getByRole('form', { name: 'Edit Team' });
    await edit.getByLabel('Label').fill('Team name');
    await edit.getByRole('button', { name: 'Save' }).click();
    await owner.page.getByRole('table', { name: 'Custom profile fields' }).getByRole('rowheader', { name: 'Team name' }).waitFor();

    const field = othello.page.getByRole('textbox', { name: 'Team name' });
    await field.waitFor();
    await field.fill('Design');
    await field.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).click();
    await saved(othello.page);
    const user = ok(await s.cast.owner.client.get(`/users/${s.cast.othello.user.id}`, { include_custom_profile_fields: true })).user;
    assert.deepEqual(Object.values(user.profile_data).map((v: any) => v.value), ['Design']);
    // The realm_user event updated the person's profile data: the field shows a saved value
    // (Save is enabled only for a change), and a fresh page loads it from register.
    await field.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).and(othello.page.locator(':disabled')).waitFor();
    await othello.page.reload();
    assert.equal(await othello.page.getByRole('textbox', { name: 'Team name' }).inputValue(), 'Design');
    await othello.context.close();
    await owner.context.close();
  });
  test('the theme and the plain-text emoji set chosen in Preferences apply at once, and follow the person to another tab', async () => {
    ok(await s.cast.hamlet.client.post('/messages', { type: 'stream', to: general, topic: 'looks', content: 'Looks good :smile:' }));
    const { page, context } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, `#narrow/channel/${general}-general/topic/looks`);
    const other = await context.newPage();
    await other.goto(`${s.url}/#narrow/channel/${general}-general/topic/looks`);
    const smile = other.getByRole('article').filter({ hasText: 'Looks good' }).getByRole('img', { name: 'smile' });
    await smile.waitFor();
    assert.notEqual(await smile.textContent(), ':smile:');
    const background = (p: Page) => p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.emulateMedia({ colorScheme: 'light' });
    await other.emulateMedia({ colorScheme: 'light' });
    assert.equal(await background(other), 'rgb(255, 255, 255)');

    await page.goto(`${s.url}/#settings/preferences`);
    const prefs = page.getByRole('dialog', { name: 'Settings' });
    await prefs.getByLabel('Theme', { exact: true }).selectOption({ label: 'Dark' });
    await saved(page);
    await prefs.getByLabel('Emoji theme').selectOption({ label: 'Plain text' });
    await saved(page);
    // The other tab turns dark although the system is light, and shows emoji as their names.
    await other.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(29, 31, 36)');
    await other.getByRole('article').filter({ hasText: 'Looks good' }).getByRole('img', { name: 'smile' }).filter({ hasText: ':smile:' }).waitFor();
    const reg = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: ['user_settings'] }));
    assert.equal(reg.user_settings.color_scheme, 2);
    assert.equal(reg.user_settings.emojiset, 'text');

    await prefs.getByLabel('Theme', { exact: true }).selectOption({ label: 'Automatic (follows system settings)' });
    await saved(page);
    await other.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(255, 255, 255)');
    await prefs.getByLabel('Emoji theme').selectOption({ label: 'Google' });
    await saved(page);
    await context.close();
  });
  test('navigation views: a built-in view unpinned leaves the sidebar, a view of one\'s own joins it, live in another tab', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#settings/navigation-views');
    const other = await context.newPage();
    await other.goto(`${s.url}/#inbox`);
    const sidebar = other.getByRole('navigation', { name: 'Views' });
    await sidebar.getByRole('link', { name: 'Combined feed' }).waitFor();
    const list = page.getByRole('list', { name: 'Navigation views' });
    await list.getByLabel('Combined feed').uncheck();
    await saved(page);
    await sidebar.getByRole('link', { name: 'Combined feed' }).waitFor({ state: 'detached' });

    const form = page.getByRole('form', { name: 'Add a navigation view' });
    await form.getByLabel('Name').fill('Alerts');
    await form.getByLabel('Address').fill('#narrow/is/alerted');
    await form.getByRole('button', { name: 'Add' }).click();
    await sidebar.getByRole('link', { name: 'Alerts' }).waitFor();
    assert.equal(await sidebar.getByRole('link', { name: 'Alerts' }).getAttribute('href'), '#narrow/is/alerted');
    const views = ok(await s.cast.othello.client.get('/navigation_views')).navigation_views;
    assert.deepEqual(views, [
      { fragment: 'feed', is_pinned: false, name: null },
      { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alerts' },
    ]);
    await page.getByRole('button', { name: 'Remove navigation view Alerts' }).click();
    await sidebar.getByRole('link', { name: 'Alerts' }).waitFor({ state: 'detached' });
    await list.getByLabel('Combined feed').check();
    await sidebar.getByRole('link', { name: 'Combined feed' }).waitFor();
    await context.close();
  });
  test('an administrator sets announcement channels, move limits, edit history, the Jitsi URL, channel folders and new users\' default settings', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.admin.user.email, PASSWORD, '#organization/organization-settings');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByLabel('New user announcements').selectOption({ label: '#general' });
    await saved(page);
    await dialog.getByLabel('Time limit for moving messages between topics').selectOption({ label: '1 hour' });
    await saved(page);
    await dialog.getByLabel('Message edit history').selectOption({ label: 'Show moves only' });
    await saved(page);
    const jitsi = dialog.getByLabel(/^Jitsi server URL/);
    await jitsi.fill('https://meet.example.com/');
    await jitsi.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).click();
    await saved(page);
    await dialog.getByLabel('New channel folder').fill('Engineering');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await dialog.getByRole('list', { name: 'Channel folders' }).getByText('Engineering').waitFor();
    // Authentication methods are the owners': shown, disabled with the reason.
    const email = dialog.getByLabel('Email and password');
    assert.equal(await email.isDisabled(), true);

    const realm = ok(await s.cast.admin.client.post('/register', { fetch_event_types: ['realm', 'realm_user_settings_defaults'] }));
    assert.equal(realm.realm_signup_announcements_stream_id, general);
    assert.equal(realm.realm_move_messages_within_stream_limit_seconds, 3600);
    assert.equal(realm.realm_message_edit_history_visibility_policy, 'moves');
    assert.equal(realm.realm_jitsi_server_url, 'https://meet.example.com/');
    const folders = ok(await s.cast.admin.client.get('/channel_folders')).channel_folders as { name: string }[];
    assert.deepEqual(folders.map((f) => f.name), ['Engineering']);

    await page.goto(`${s.url}/#organization/default-user-settings`);
    await dialog.getByRole('heading', { name: 'Default user settings' }).waitFor();
    await dialog.getByLabel('Theme', { exact: true }).selectOption({ label: 'Dark' });
    await saved(page);
    // Not an organization default: the login-email notice stays each person's own.
    assert.equal(await dialog.getByLabel('Send email notifications for new logins to my account').count(), 0);
    const defaults = ok(await s.cast.admin.client.post('/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
    assert.equal(defaults.color_scheme, 2);
    ok(await s.cast.admin.client.patch('/realm/user_settings_defaults', { color_scheme: 1 }));
    await context.close();
  });
  test('a bot\'s owner renames it, sets its default channel, hands it to another owner and regenerates its API key', async () => {
    const bot = s.cast.bot.user;
    const { page, context } = await loggedIn(browser, s.url, s.cast.hamlet.user.email, PASSWORD, '#settings/your-bots');
    const table = page.getByRole('table', { name: 'Bots' });
    await table.getByRole('button', { name: `Generate a new API key for ${bot.full_name}` }).click();
    const key = table.getByLabel(`API key of ${bot.full_name}`);
    await key.waitFor();
    const fresh = (await key.textContent())!;
    assert.notEqual(fresh, bot.api_key);
    const auth = (k: string) => ({ authorization: `Basic ${Buffer.from(`${bot.email}:${k}`).toString('base64')}` });
    assert.equal((await fetch(`${s.url}/api/v1/users/me`, { headers: auth(bot.api_key) })).status, 401);
    assert.equal((await fetch(`${s.url}/api/v1/users/me`, { headers: auth(fresh) })).status, 200);

    await table.getByRole('button', { name: `Edit ${bot.full_name}` }).click();
    const form = page.getByRole('form', { name: `Edit ${bot.full_name}` });
    await form.getByLabel('Name').fill('Greeter Bot');
    await form.getByLabel('Default channel for messages it sends').selectOption({ label: '#general' });
    await form.getByRole('button', { name: 'Save' }).click();
    await table.getByRole('rowheader', { name: 'Greeter Bot' }).waitFor();
    const mine = ok(await s.cast.hamlet.client.get('/bots')).bots as { full_name: string; default_sending_stream: string | null }[];
    assert.deepEqual(mine.map((b) => [b.full_name, b.default_sending_stream]), [['Greeter Bot', 'general']]);

    await table.getByRole('button', { name: 'Edit Greeter Bot' }).click();
    await page.getByRole('form', { name: 'Edit Greeter Bot' }).getByLabel('Owner').selectOption({ label: 'Othello, the Moor of Venice' });
    await page.getByRole('form', { name: 'Edit Greeter Bot' }).getByRole('button', { name: 'Save' }).click();
    // No longer Hamlet's: it leaves his list, live.
    await table.getByRole('rowheader', { name: 'Greeter Bot' }).waitFor({ state: 'detached' });
    assert.equal(ok(await s.cast.owner.client.get(`/users/${bot.id}`)).user.bot_owner_id, s.cast.othello.user.id);
    await context.close();
  });
  test('the owner edits a select field\'s choices; a person\'s answer keeps its choice through a rename', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/profile-field-settings');
    const form = page.getByRole('form', { name: 'Add a new profile field' });
    await form.getByLabel('Type').selectOption({ label: 'List of options' });
    await form.getByLabel('Label').fill('Office');
    await form.getByLabel('Field choices (one on each line)').fill('Paris\nLima');
    await form.getByRole('button', { name: 'Add' }).click();
    const table = page.getByRole('table', { name: 'Custom profile fields' });
    await table.getByRole('rowheader', { name: 'Office' }).waitFor();
    const field = (ok(await s.cast.owner.client.get('/realm/profile_fields')).custom_fields as { id: number; name: string; field_data: string }[]).find((f) => f.name === 'Office')!;
    const lima = Object.entries(JSON.parse(field.field_data) as Record<string, { text: string }>).find(([, c]) => c.text === 'Lima')![0];
    ok(await s.cast.hamlet.client.patch('/users/me/profile_data', { data: [{ id: field.id, value: lima }] }));

    await table.getByRole('button', { name: 'Edit Office' }).click();
    const edit = page.getByRole('form', { name: 'Edit Office' });
    await edit.getByLabel('Choice 2', { exact: true }).fill('Lima (Peru)');
    await edit.getByRole('button', { name: 'Remove choice 1' }).click();
    await edit.getByRole('button', { name: 'Add choice' }).click();
    await edit.getByLabel('Choice 2', { exact: true }).fill('Oslo');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    const after = (ok(await s.cast.owner.client.get('/realm/profile_fields')).custom_fields as { id: number; field_data: string }[]).find((f) => f.id === field.id)!;
    const choices = JSON.parse(after.field_data) as Record<string, { text: string; order: string }>;
    assert.deepEqual(choices[lima], { text: 'Lima (Peru)', order: '0' });
    assert.deepEqual(Object.values(choices).map((c) => c.text).sort(), ['Lima (Peru)', 'Oslo']);
    const hamlet = ok(await s.cast.owner.client.get(`/users/${s.cast.hamlet.user.id}`, { include_custom_profile_fields: true })).user;
    assert.equal(hamlet.profile_data[field.id].value, lima);
    await context.close();
  });
  test('a channel\'s settings edited by its administrator: name, description, privacy and who may post, live in a subscriber\'s sidebar', async () => {
    ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'ops', description: 'Operations' }], principals: [s.cast.owner.user.id, s.cast.othello.user.id] }));
    const id = ok(await s.cast.owner.client.get('/get_stream_id', { stream: 'ops' })).stream_id as number;
    const othello = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD);
    await othello.page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'ops', exact: true }).waitFor();
    const { page, context } = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, `#channels/${id}/ops/general`);
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    const name = dialog.getByLabel('Channel name');
    await name.fill('operations');
    await name.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).click();
    await saved(page);
    const description = dialog.getByLabel('Channel description');
    await description.fill('Keeping the lights on');
    await description.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).click();
    await saved(page);
    await dialog.getByLabel('Who can access the channel?').selectOption({ label: 'Private, shared history' });
    await saved(page);
    await dialog.getByLabel('Who can post to this channel').selectOption({ label: 'Administrators' });
    await saved(page);
    const folder = ok(await s.cast.owner.client.post('/channel_folders/create', { name: 'Operations', description: '' })).channel_folder_id as number;
    await dialog.getByLabel('Channel folder').selectOption({ label: 'Operations' });
    await saved(page);
    // The subscriber's sidebar follows the rename and the lock, without a reload.
    await othello.page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: 'operations', exact: true }).waitFor();

    const c = ok(await s.cast.owner.client.get(`/streams/${id}`)).stream;
    const groups = ok(await s.cast.owner.client.get('/user_groups')).user_groups as { id: number; name: string }[];
    assert.deepEqual(
      [c.name, c.description, c.invite_only, c.history_public_to_subscribers, c.can_send_message_group, c.folder_id],
      ['operations', 'Keeping the lights on', true, true, groups.find((g) => g.name === 'role:administrators')!.id, folder],
    );
    const refused = await s.cast.othello.client.post('/messages', { type: 'stream', to: id, topic: 'x', content: 'hello' });
    assert.equal(refused.status, 400);
    await othello.context.close();
    await context.close();
  });

  test('a custom emoji uploaded in settings is listed live and usable in a message', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.othello.user.email, PASSWORD, '#organization/emoji-settings');
    const png = await page.evaluate(() => {
      const c = document.createElement('canvas');
      c.width = c.height = 32;
      const g = c.getContext('2d')!;
      g.fillStyle = '#2b8a3e';
      g.fillRect(0, 0, 32, 32);
      return c.toDataURL('image/png').split(',')[1]!;
    });
    const form = page.getByRole('form', { name: 'Add a new emoji' });
    await form.getByLabel('Emoji name').fill('shipit');
    await form.getByLabel('Upload emoji').setInputFiles({ name: 'shipit.png', mimeType: 'image/png', buffer: Buffer.from(png, 'base64') });
    await form.getByRole('button', { name: 'Add emoji' }).click();
    await page.getByRole('list', { name: 'Custom emoji' }).getByText(':shipit:').waitFor();
    const emoji = Object.values(ok(await s.cast.owner.client.get('/realm/emoji')).emoji as Record<string, { name: string; author_id: number }>);
    assert.deepEqual(emoji.filter((e) => e.name === 'shipit').map((e) => e.author_id), [s.cast.othello.user.id]);
    const sent = ok(await s.cast.othello.client.post('/messages', { type: 'stream', to: general, topic: 'emoji', content: 'Ready :shipit:' }));
    const m = ok(await s.cast.othello.client.get(`/messages/${sent.id}`)).message;
    assert.match(m.content, /<img alt=":shipit:" class="emoji"/);
    await context.close();
  });

  test('a user group\'s permission settings changed on its Permissions tab', async () => {
    const created = ok(await s.cast.owner.client.post('/user_groups/create', { name: 'auditors', description: 'Audit', members: [s.cast.hamlet.user.id] }));
    const { page, context } = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, `#groups/${created.group_id}/auditors/permissions`);
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByLabel('Who can mention this group').selectOption({ label: 'Moderators' });
    await saved(page);
    await dialog.getByLabel('Who can join this group').selectOption({ label: 'Members' });
    await saved(page);
    const groups = ok(await s.cast.owner.client.get('/user_groups')).user_groups as { id: number; name: string; can_mention_group: unknown; can_join_group: unknown }[];
    const id = (n: string) => groups.find((g) => g.name === n)!.id;
    const g = groups.find((x) => x.id === created.group_id)!;
    assert.deepEqual([g.can_mention_group, g.can_join_group], [id('role:moderators'), id('role:members')]);
    await context.close();
  });

  test('a password changed in Account & privacy: a wrong old one is refused in place, then the new one logs in', async () => {
    const newPassword = 'a much longer passphrase 2026';
    const { page, context } = await loggedIn(browser, s.url, s.cast.guest.user.email, PASSWORD, '#settings/account-and-privacy');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByLabel('Old password').fill('not it');
    await dialog.getByLabel('New password').fill(newPassword);
    await dialog.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong password!' }).waitFor();
    await dialog.getByLabel('Old password').fill(PASSWORD);
    await dialog.getByRole('button', { name: 'Change password' }).click();
    await saved(page);
    const key = async (password: string) => (await s.anonymous.post('/fetch_api_key', { username: s.cast.guest.user.email, password })).status;
    assert.equal(await key(PASSWORD), 401);
    assert.equal(await key(newPassword), 200);
    await context.close();
  });
  test('an email change in Account & privacy: the link mailed to the new address confirms it, and the page shows it live', async () => {
    const who = s.cast.moderator.user;
    const { page, context } = await loggedIn(browser, s.url, who.email, PASSWORD, '#settings/account-and-privacy');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    const field = dialog.getByLabel('Email', { exact: true });
    await field.fill('shiva.new@example.com');
    await field.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Check your email (shiva.new@example.com) to confirm the new address.' }).waitFor();
    // Nothing changes until the link is opened.
    assert.equal(ok(await s.cast.owner.client.get(`/users/${who.id}`)).user.delivery_email, who.delivery_email);

    const mail = await mailTo('shiva.new@example.com');
    const link = /(http:\/\/\S+\/accounts\/confirm_new_email\/[A-Za-z0-9_-]+)/.exec(mail)?.[1];
    assert.ok(link, 'the email carries the confirmation link');
    const other = await context.newPage();
    await other.goto(link.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:'));
    await other.getByRole('heading', { name: 'Email address changed' }).waitFor();
    assert.equal(ok(await s.cast.owner.client.get(`/users/${who.id}`)).user.delivery_email, 'shiva.new@example.com');
    // The open settings page follows the realm_user event.
    for (let i = 0; (await field.inputValue()) !== 'shiva.new@example.com'; i++) {
      assert.ok(i < 100, 'the settings page shows the new address');
      await new Promise((r) => setTimeout(r, 100));
    }
    // The link works once.
    await other.reload();
    await other.getByRole('heading', { name: 'Invalid link' }).waitFor();
    await context.close();
  });
  test('an owner starts a data export, downloads the tarball when it is ready, and deletes it', async () => {
    const owner = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/data-exports-admin');
    await owner.page.getByText('There are no exports yet.').waitFor();
    const form = owner.page.getByRole('form', { name: 'Start a new export' });
    await form.getByLabel('Export type').selectOption('public');
    await form.getByRole('button', { name: 'Start export' }).click();
    // Written in the background; the realm_export event brings the finished one into the list.
    const link = owner.page.getByRole('table', { name: 'Data exports' }).getByRole('link', { name: /^Download export of / });
    await link.waitFor({ timeout: 60_000 });
    // The link is under the organization's URL; the test's page is at the server's own address.
    const res = await owner.page.request.get(new URL(new URL((await link.getAttribute('href'))!).pathname, s.url).toString());
    assert.equal(res.status(), 200);
    assert.deepEqual([...(await res.body()).subarray(0, 2)], [0x1f, 0x8b], 'a gzip tarball');
    await owner.page.getByRole('button', { name: /^Delete export of / }).click();
    await owner.page.getByText('There are no exports yet.').waitFor();
    await owner.context.close();
  });
  test('the owner sets the organization type, code block language, GIPHY rating, preview size and channel-event messages', async () => {
    const { page, context } = await loggedIn(browser, s.url, s.cast.owner.user.email, PASSWORD, '#organization/organization-settings');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByLabel('Organization type').selectOption({ label: 'Open-source project' });
    await saved(page);
    await dialog.getByLabel('GIPHY integration').selectOption({ label: 'Allow GIFs rated PG (Parental guidance)' });
    await saved(page);
    await dialog.getByLabel('Image and video preview size').selectOption({ label: 'Large' });
    await saved(page);
    const code = dialog.getByLabel('Default language for code blocks');
    await code.fill('python');
    await code.locator('xpath=ancestor::form').getByRole('button', { name: 'Save' }).click();
    await saved(page);
    await dialog.getByLabel(/^Send notification messages about channel events/).uncheck();
    await saved(page);
    const realm = ok(await s.cast.owner.client.post('/register', { fetch_event_types: ['realm'] }));
    assert.equal(realm.realm_org_type, 20);
    assert.equal(realm.realm_gif_rating_policy, 3);
    assert.equal(realm.realm_media_preview_size, 200);
    assert.equal(realm.realm_default_code_block_language, 'python');
    assert.equal(realm.realm_send_channel_events_messages, false);
    await context.close();
  });

  test('in an organization with no channels the invitation form says so, links to creating one, and lists the first one live', async () => {
    const empty = await startServer('sqlite');
    try {
      assert.deepEqual(ok(await empty.cast.owner.client.get('/streams')).streams, []);
      const { page, context } = await loggedIn(browser, empty.url, empty.cast.owner.user.email, PASSWORD, '#organization/invites-list');
      const channels = page.getByRole('group', { name: 'Channels they should join' });
      await channels.getByText('There are no channels to add them to yet.').waitFor();
      assert.equal(await channels.getByRole('checkbox').count(), 0);
      await channels.getByRole('link', { name: 'Create a channel' }).click();
      await page.getByRole('form', { name: 'Create channel' }).waitFor();
      await page.goBack();
      ok(await empty.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'lobby' }] }));
      await channels.getByRole('checkbox', { name: '#lobby' }).waitFor();
      assert.equal(await channels.getByText('There are no channels to add them to yet.').count(), 0);
      await context.close();
    } finally {
      await empty.close();
    }
  });

  test('an administrator renames and describes a channel folder and reorders folders by keyboard', async () => {
    const ids: Record<string, number> = {};
    for (const name of ['Alpha team', 'Beta team', 'Gamma team']) ids[name] = ok(await s.cast.admin.client.post('/channel_folders/create', { name, description: '' })).channel_folder_id;
    const mine = async () => (ok(await s.cast.admin.client.get('/channel_folders', { include_archived: true })).channel_folders as { id: number; name: string; description: string }[]).filter((f) => Object.values(ids).includes(f.id));
    const { page, context } = await loggedIn(browser, s.url, s.cast.admin.user.email, PASSWORD, '#organization/organization-settings');
    const list = page.getByRole('dialog', { name: 'Settings' }).getByRole('list', { name: 'Channel folders' });
    // The order the list shows these three folders in, once it is `want`.
    const shownOrder = async (want: string[]) => {
      const names = async () => (await list.getByRole('listitem').allTextContents()).map((text) => ['Alpha team', 'Beta squad', 'Gamma team'].find((n) => text.includes(n))).filter(Boolean);
      for (let i = 0; i < 100 && JSON.stringify(await names()) !== JSON.stringify(want); i++) await page.waitForTimeout(100);
      assert.deepEqual(await names(), want);
    };

    // Name and description, in place; the name field has the focus, then Edit again.
    await list.getByRole('button', { name: 'Edit channel folder Beta team' }).click();
    const form = list.getByRole('form', { name: 'Edit channel folder Beta team' });
    assert.equal(await form.getByLabel('Name').evaluate((el) => el === document.activeElement), true);
    await form.getByLabel('Name').fill('Beta squad');
    await form.getByLabel('Description').fill('Testing **before** release');
    await form.getByRole('button', { name: 'Save' }).click();
    // Shown as the server renders it, as channel descriptions are: bold, not asterisks.
    await list.locator('strong', { hasText: 'before' }).waitFor();
    assert.doesNotMatch((await list.textContent()) ?? '', /\*\*/);
    const edit = list.getByRole('button', { name: 'Edit channel folder Beta squad' });
    await page.waitForFunction((el) => el === document.activeElement, await edit.elementHandle());
    assert.deepEqual((await mine()).map((f) => [f.name, f.description]), [['Alpha team', ''], ['Beta squad', 'Testing **before** release'], ['Gamma team', '']]);

    // Enter on "up" twice: the button keeps the focus as the folder moves.
    const up = list.getByRole('button', { name: 'Move channel folder Gamma team up' });
    await up.focus();
    await page.keyboard.press('Enter');
    await shownOrder(['Alpha team', 'Gamma team', 'Beta squad']);
    await page.waitForFunction((el) => el === document.activeElement, await up.elementHandle());
    await page.keyboard.press('Enter');
    await shownOrder(['Gamma team', 'Alpha team', 'Beta squad']);
    // At the top of the list (when no other folder is above) "up" is disabled: "down" has the focus.
    const focused = (await up.isDisabled()) ? list.getByRole('button', { name: 'Move channel folder Gamma team down' }) : up;
    await page.waitForFunction((el) => el === document.activeElement, await focused.elementHandle());
    await list.getByRole('button', { name: 'Move channel folder Alpha team down' }).click();
    await shownOrder(['Gamma team', 'Beta squad', 'Alpha team']);
    assert.deepEqual((await mine()).map((f) => f.name), ['Gamma team', 'Beta squad', 'Alpha team']);
    await context.close();
  });
});
