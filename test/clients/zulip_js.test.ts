import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { forEachDatabase } from '../helpers/server.js';

/**
 * The real `zulip-js` package from npm as a client: its callOnEachEvent loop registers a
 * queue (multipart POST /register with event_types), long-polls GET /events with
 * dont_block=false, and must receive a message sent through zulip-js's messages.send.
 * The loop never returns, so the listening client runs in a child process that exits
 * once it has the event.
 */

const require = createRequire(import.meta.url);
type ZulipClient = {
  messages: { send(params: Record<string, unknown>): Promise<{ result: string; id: number; msg: string }> };
};
const zulip = require('zulip-js') as (config: { username: string; apiKey: string; realm: string }) => Promise<ZulipClient>;

const LISTENER = `
const zulip = require('zulip-js');
(async () => {
  const client = await zulip({ username: process.env.Z_EMAIL, apiKey: process.env.Z_KEY, realm: process.env.Z_REALM });
  await client.callOnEachEvent((event) => {
    process.stdout.write(JSON.stringify(event) + '\\n');
    if (event.type === 'message') process.exit(0);
  }, ['message']);
})();
`;

forEachDatabase('zulip-js as a real client', (server) => {
  test('callOnEachEvent receives a message sent with messages.send', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const queuesBefore = s.app.services.queues.queueCount;
    const child = spawn(process.execPath, ['-e', LISTENER], {
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '', Z_EMAIL: hamlet.user.email, Z_KEY: hamlet.user.api_key, Z_REALM: s.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      // Wait until the listener has registered its queue (and is long-polling it).
      const deadline = Date.now() + 15_000;
      while (s.app.services.queues.queueCount === queuesBefore) {
        assert.ok(Date.now() < deadline, `zulip-js never registered:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 200));

      const sender = await zulip({ username: othello.user.email, apiKey: othello.user.api_key, realm: s.url });
      const sent = await sender.messages.send({ type: 'private', to: [hamlet.user.id], content: 'hello **zulip-js**' });
      assert.equal(sent.result, 'success', sent.msg);

      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000))]);
      assert.equal(code, 0, `listener did not get the message:\n${out}`);
      const event = out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; flags: string[]; message: Record<string, unknown> })
        .find((e) => e.type === 'message')!;
      assert.equal(event.message.id, sent.id);
      assert.equal(event.message.sender_id, othello.user.id);
      // zulip-js registers without apply_markdown: the raw Markdown comes through.
      assert.equal(event.message.content, 'hello **zulip-js**');
      assert.equal(event.message.content_type, 'text/x-markdown');
      assert.deepEqual(event.flags, []);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
