import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { zipSync, strToU8 } from 'fflate';
import { freshDatabaseUrl, listenApp, testConfig, testDatabases } from './helpers/server.js';
import { ApiClient, type ParamValue } from './helpers/client.js';
import { cliJson as json, cliRefused, parley } from './helpers/cli.js';
import type { App } from '../src/app.js';
import { convertSlackMarkdown } from '../src/lib/slack_import.js';

const ts = (iso: string, micro = 100): string => `${Date.parse(iso) / 1000}.${String(micro).padStart(6, '0')}`;

/** A workspace export as Slack documents it: users, channels, groups, dms, mpims, one JSON file per conversation and day. */
function slackExport(report: Buffer): Uint8Array {
  const users = [
    { id: 'U01', team_id: 'T1', name: 'alice', deleted: false, real_name: 'Alice Liddell', tz: 'Europe/London', is_admin: true, is_owner: true, is_primary_owner: true, is_bot: false,
      profile: { email: 'alice@wonder.example', real_name: 'Alice Liddell', phone: '+44 20 7946 0000' } },
    { id: 'U02', team_id: 'T1', name: 'bob', deleted: false, real_name: 'Bob Builder', tz: 'America/Chicago', is_admin: false, is_bot: false, profile: { email: 'bob@wonder.example', real_name: 'Bob Builder' } },
    { id: 'U03', team_id: 'T1', name: 'carol', deleted: false, real_name: 'Carol Guest', tz: null, is_restricted: true, is_bot: false, profile: { email: 'carol@wonder.example' } },
    { id: 'U04', team_id: 'T1', name: 'dave', deleted: true, real_name: 'Dave Gone', is_bot: false, profile: { email: 'dave@wonder.example' } },
    { id: 'U05', team_id: 'T1', name: 'deploybot', deleted: false, real_name: 'Deploy Bot', is_bot: true, profile: { bot_id: 'B01', real_name_normalized: 'Deploy Bot' } },
  ];
  const channel = (id: string, name: string, members: string[], purpose: string) => ({
    id, name, created: 1704067200, creator: 'U01', is_archived: false, is_general: name === 'general', members, topic: { value: '' }, purpose: { value: purpose },
  });
  const day = (messages: object[]) => strToU8(JSON.stringify(messages));
  const files: Record<string, Uint8Array> = {
    'users.json': strToU8(JSON.stringify(users)),
    'channels.json': strToU8(JSON.stringify([channel('C01', 'general', ['U01', 'U02', 'U03', 'U05'], 'Company-wide'), channel('C02', 'random', ['U01', 'U02'], 'Off topic')])),
    'groups.json': strToU8(JSON.stringify([channel('G01', 'secret', ['U01', 'U02'], 'Private plans')])),
    'dms.json': strToU8(JSON.stringify([{ id: 'D01', created: 1704067200, members: ['U01', 'U02'] }])),
    'mpims.json': strToU8(JSON.stringify([{ ...channel('G02', 'mpdm-alice--bob--carol-1', ['U01', 'U02', 'U03'], ''), is_mpim: true }])),
    'general/2024-01-15.json': day([
      { type: 'message', user: 'U01', text: 'Hello *world* and _everyone_, ~old~ news <@U02>: see <https://example.com|the site> and <#C02|random> <!here>', ts: ts('2024-01-15T09:00:00Z') },
      { type: 'message', subtype: 'channel_join', user: 'U03', text: '<@U03> has joined the channel', ts: ts('2024-01-15T09:01:00Z') },
      { type: 'message', user: 'U02', text: 'Shall we ship?', ts: ts('2024-01-15T10:00:00Z', 200), thread_ts: ts('2024-01-15T10:00:00Z', 200), reply_count: 1,
        reactions: [{ name: '+1', users: ['U01', 'U03'], count: 2 }, { name: 'no_such_emoji_here', users: ['U01'], count: 1 }] },
      { type: 'message', user: 'U01', text: 'Yes, today.', ts: ts('2024-01-15T10:05:00Z', 300), thread_ts: ts('2024-01-15T10:00:00Z', 200), parent_user_id: 'U02' },
      { type: 'message', user: 'U02', text: 'The report', ts: ts('2024-01-15T11:00:00Z'),
        files: [
          { id: 'F01', name: 'report.txt', title: 'Weekly report', mimetype: 'text/plain', url_private: 'https://files.slack.com/files-pri/T1-F01/report.txt', size: report.length },
          { id: 'F02', name: 'big.pdf', title: 'Big deck', mimetype: 'application/pdf', url_private: 'https://files.slack.com/files-pri/T1-F02/big.pdf', size: 999999 },
        ] },
    ]),
    'general/2024-01-16.json': day([
      { type: 'message', user: 'U03', text: 'Another thread', ts: ts('2024-01-16T08:00:00Z'), thread_ts: ts('2024-01-16T08:00:00Z') },
      { type: 'message', subtype: 'me_message', user: 'U02', text: 'waves', ts: ts('2024-01-16T08:30:00Z') },
    ]),
    'secret/2024-01-15.json': day([{ type: 'message', user: 'U01', text: 'Only for us', ts: ts('2024-01-15T12:00:00Z') }]),
    'D01/2024-01-15.json': day([{ type: 'message', user: 'U02', text: 'Hi Alice', ts: ts('2024-01-15T13:00:00Z') }]),
    'mpdm-alice--bob--carol-1/2024-01-15.json': day([{ type: 'message', user: 'U03', text: 'Hi all three', ts: ts('2024-01-15T14:00:00Z') }]),
    '__uploads/F01/report.txt': new Uint8Array(report),
  };
  return zipSync(files);
}

test("Slack's mrkdwn becomes Zulip Markdown as Zulip's converter makes it", () => {
  const users = [{ id: 'U02', name: 'bob', deleted: false, real_name: 'Bob Builder' }];
  const c = convertSlackMarkdown('*bold* _it_ ~gone~ <@U02> <@U99> <https://a.example/x|label> <http://b.example> <mailto:x@y.example|x@y.example> <#C1|dev> <!channel>', users, new Map([['dev', 'C1']]), new Map([['U02', 7]]));
  assert.equal(c.content, '**bold** *it* ~~gone~~ @**Bob Builder** <@U99> [label](https://a.example/x) http://b.example mailto:x@y.example #**dev** @**all**');
  assert.deepEqual(c.mentioned, [7]);
  assert.equal(c.hasLink, true);
  // Mid-word markers are not formatting in Slack.
  assert.equal(convertSlackMarkdown('snake_case_name and 2*3*4', [], new Map(), new Map()).content, 'snake_case_name and 2*3*4');
});

for (const kind of testDatabases()) {
  describe(`Slack import [${kind}]`, () => {
    let app: App;
    let env: Record<string, string>;
    let drop: () => Promise<void>;
    let dataDir: string;
    let work: string;

    before(async () => {
      const db = await freshDatabaseUrl(kind);
      drop = db.drop;
      const config = testConfig(db.url);
      dataDir = config.dataDir;
      app = (await listenApp(config)).app;
      env = { DATABASE_URL: db.url, PARLEY_DATA_DIR: config.dataDir };
      work = mkdtempSync(join(tmpdir(), 'parley-slack-'));
    });

    after(async () => {
      await app.close();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    });

    test('a Slack export zip imports with channels, threads as topics, reactions, files and direct messages', async () => {
      const report = Buffer.from('numbers went up\n');
      const zip = join(work, 'slack.zip');
      writeFileSync(zip, slackExport(report));
      const result = json(await parley(env, 'import-slack', zip, '--subdomain', 'wonderland'));
      assert.equal(result.string_id, 'wonderland');
      assert.deepEqual({ users: result.counts.users, bots: result.counts.bots, channels: result.counts.channels, uploads: result.counts.uploads }, { users: 4, bots: 1, channels: 3, uploads: 1 });
      assert.ok(result.skipped.includes('file big.pdf (F02): not in the export; linked to https://files.slack.com/files-pri/T1-F02/big.pdf'), JSON.stringify(result.skipped));
      assert.ok(result.skipped.some((s: string) => s.startsWith('reaction :no_such_emoji_here:')));
      assert.deepEqual(result.password_reset_links.map((l: { email: string }) => l.email).sort(), ['alice@wonder.example', 'bob@wonder.example', 'carol@wonder.example']);

      const key = async (email: string) => json(await parley(env, '--realm', 'wonderland', 'api-key', '--email', email)).api_key as string;
      const host = `wonderland.${new URL(app.services.config.externalUrl).host}`;
      const call = async (email: string, method: 'GET' | 'POST', path: string, params: Record<string, ParamValue> = {}) => {
        const auth = `Basic ${Buffer.from(`${email}:${await key(email)}`).toString('base64')}`;
        const query = new URLSearchParams(ApiClient.encode(params)).toString();
        const res = await app.fastify.inject(
          method === 'GET'
            ? { method, url: `/api/v1${path}?${query}`, headers: { host, authorization: auth } }
            : { method, url: `/api/v1${path}`, headers: { host, authorization: auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: query },
        );
        assert.equal(res.statusCode, 200, res.body);
        return res.json();
      };

      const reg = await call('alice@wonder.example', 'POST', '/register', { include_subscribers: true });
      const byName = new Map<string, any>(reg.realm_users.map((u: any) => [u.full_name, u]));
      const people = reg.realm_users.filter((u: any) => !u.is_bot).map((u: any) => [u.full_name, u.role, u.timezone]).sort();
      assert.deepEqual(people, [['Alice Liddell', 100, 'Europe/London'], ['Bob Builder', 400, 'America/Chicago'], ['Carol Guest', 600, 'America/New_York']]);
      // As Zulip's get_user_full_name: a deleted user keeps only their Slack name.
      assert.deepEqual(reg.realm_non_active_users.map((u: any) => u.full_name), ['dave']);
      assert.equal(reg.realm_users.find((u: any) => u.is_bot).full_name, 'Deploy Bot');
      const phone = reg.custom_profile_fields.find((f: any) => f.name === 'phone');
      assert.equal(byName.get('Alice Liddell').profile_data[phone.id].value, '+44 20 7946 0000');
      const subs = new Map<string, any>(reg.subscriptions.map((s: any) => [s.name, s]));
      assert.deepEqual([...subs.keys()].sort(), ['general', 'random', 'secret']);
      assert.equal(subs.get('general').description, 'Company-wide');
      assert.equal(subs.get('secret').invite_only, true);
      assert.deepEqual(reg.realm_default_streams.map((id: number) => reg.subscriptions.find((s: any) => s.stream_id === id).name).sort(), ['general', 'random']);

      const all = (await call('alice@wonder.example', 'GET', '/messages', { anchor: 'oldest', num_before: 0, num_after: 100, apply_markdown: false })).messages;
      const general = all.filter((m: any) => m.type === 'stream' && m.display_recipient === 'general');
      assert.deepEqual(general.map((m: any) => [m.sender_full_name, m.subject, m.content]), [
        ['Alice Liddell', 'imported from Slack', 'Hello **world** and *everyone*, ~~old~~ news @**Bob Builder**: see [the site](https://example.com) and #**random** @**all**'],
        ['Bob Builder', '2024-01-15 Slack thread 1', 'Shall we ship?'],
        ['Alice Liddell', '2024-01-15 Slack thread 1', 'Yes, today.'],
        ['Bob Builder', 'imported from Slack', `The report\n[Weekly report](${general[3].content.match(/\/user_uploads\/\d+\/[^)]+/)[0]})\n[Big deck](https://files.slack.com/files-pri/T1-F02/big.pdf)`],
        ['Carol Guest', '2024-01-16 Slack thread 1', 'Another thread'],
        ['Bob Builder', 'imported from Slack', '/me waves'],
      ]);
      assert.deepEqual(general.map((m: any) => m.timestamp), [1705309200, 1705312800, 1705313100, 1705316400, 1705392000, 1705393800]);
      assert.deepEqual(general[1].reactions.map((r: any) => [r.emoji_code, r.reaction_type, r.user_id]).sort(), [
        ['1f44d', 'unicode_emoji', byName.get('Alice Liddell').user_id], ['1f44d', 'unicode_emoji', byName.get('Carol Guest').user_id],
      ].sort());
      assert.equal(general[5].is_me_message, true);
      assert.deepEqual(all.filter((m: any) => m.type === 'stream' && m.display_recipient === 'secret').map((m: any) => m.content), ['Only for us']);
      const dms = all.filter((m: any) => m.type === 'private').map((m: any) => [m.sender_full_name, m.display_recipient.map((u: any) => u.full_name).sort(), m.content]);
      assert.deepEqual(dms, [['Bob Builder', ['Alice Liddell', 'Bob Builder'], 'Hi Alice'], ['Carol Guest', ['Alice Liddell', 'Bob Builder', 'Carol Guest'], 'Hi all three']]);

      // Rendered as Zulip renders the Markdown, mentions resolved to the imported users.
      const rendered = (await call('bob@wonder.example', 'GET', `/messages/${general[0].id}`, {})).message;
      assert.equal(
        rendered.content,
        `<p>Hello <strong>world</strong> and <em>everyone</em>, <del>old</del> news <span class="user-mention" data-user-id="${byName.get('Bob Builder').user_id}">@Bob Builder</span>: see <a href="https://example.com">the site</a> and <a class="stream" data-stream-id="${subs.get('random').stream_id}" href="/#narrow/channel/${subs.get('random').stream_id}-random">#random</a> <span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span></p>`,
      );
      assert.ok(rendered.flags.includes('read') && rendered.flags.includes('mentioned'), rendered.flags.join());

      // The file that was in the zip is an upload of the new organization.
      const url = general[3].content.match(/\/user_uploads\/\d+\/[^)]+/)[0];
      const file = await app.fastify.inject({ method: 'GET', url, headers: { host, authorization: `Basic ${Buffer.from(`bob@wonder.example:${await key('bob@wonder.example')}`).toString('base64')}` } });
      assert.equal(file.statusCode, 200);
      assert.deepEqual(file.rawPayload, report);

      cliRefused(await parley(env, 'import-slack', zip, '--subdomain', 'wonderland'), "Subdomain 'wonderland' is already in use. Please choose a different one.");
      writeFileSync(join(work, 'not.zip'), 'not a zip');
      cliRefused(await parley(env, 'import-slack', join(work, 'not.zip'), '--subdomain', 'other'), /^Error: .*not\.zip is not a readable zip file/);
      writeFileSync(join(work, 'empty.zip'), zipSync({ 'readme.txt': strToU8('hi') }));
      cliRefused(await parley(env, 'import-slack', join(work, 'empty.zip'), '--subdomain', 'other'), `${join(work, 'empty.zip')} has no users.json: not a Slack export`);
      // All or nothing: a refused import leaves no organization behind.
      const orgs = json(await parley(env, 'list-organizations')).map((o: { string_id: string }) => o.string_id);
      assert.deepEqual(orgs, ['', 'wonderland']);
    });
  });
}
