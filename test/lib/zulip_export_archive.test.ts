import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readZulipExport, zulipExportTarball } from '../../src/lib/zulip_export/archive.js';
import { fromZulipFlagsMask, toZulipFlagsMask } from '../../src/lib/zulip_export/flags.js';

const LONG = `2/ab/${'x'.repeat(24)}/${'a-very-long-file-name-'.repeat(4)}.txt`;

test('export tarballs round-trip, long upload paths included (ustar prefix)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-archive-'));
  try {
    const tarball = zulipExportTarball(
      {
        realm: { zerver_realm: [{ id: 2 }] },
        messages: [{ id: 5 }, { id: 6 }],
        userMessages: [{ id: 1, message: 5, user_profile: 9, flags_mask: 1 }],
        attachment: { zerver_attachment: [{ id: 1, path_id: LONG }] },
        files: { uploads: { records: [{ path: LONG }], data: new Map([[LONG, Buffer.from('hello')]]) } },
      },
      'zulip-export-test',
      0,
    );
    writeFileSync(join(dir, 'e.tar.gz'), tarball);
    const back = await readZulipExport(join(dir, 'e.tar.gz'));
    assert.deepEqual(back.realm, { zerver_realm: [{ id: 2 }] });
    assert.deepEqual(back.messages.map((m) => m.id), [5, 6]);
    assert.deepEqual(back.userMessages, [{ id: 1, message: 5, user_profile: 9, flags_mask: 1 }]);
    assert.equal(back.files.uploads!.data.get(LONG)!.toString(), 'hello');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an export directory, and GNU tar's archive of it (long names, directory entries), read alike", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-archive-'));
  try {
    const top = join(dir, 'zulip-export-abc');
    mkdirSync(join(top, 'uploads', ...LONG.split('/').slice(0, -1)), { recursive: true });
    writeFileSync(join(top, 'realm.json'), JSON.stringify({ zerver_realm: [{ id: 2 }] }));
    writeFileSync(join(top, 'messages-000001.json'), JSON.stringify({ zerver_message: [{ id: 1 }], zerver_usermessage: [] }));
    writeFileSync(join(top, 'attachment.json'), JSON.stringify({ zerver_attachment: [] }));
    writeFileSync(join(top, 'uploads', 'records.json'), JSON.stringify([{ path: LONG }]));
    writeFileSync(join(top, 'uploads', LONG), 'content');
    execFileSync('tar', ['--format=gnu', '-czf', join(dir, 'gnu.tar.gz'), '-C', dir, 'zulip-export-abc']);
    for (const path of [top, join(dir, 'gnu.tar.gz')]) {
      const data = await readZulipExport(path);
      assert.deepEqual(data.messages, [{ id: 1 }], path);
      assert.equal(data.files.uploads!.data.get(LONG)!.toString(), 'content', path);
    }
    await assert.rejects(readZulipExport(join(dir, 'nothing-here')), /does not exist/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("flags travel in Zulip's bit order", () => {
  // read, starred, mentioned, has_alert_word, historical: Parley 1|2|8|64|128.
  assert.equal(toZulipFlagsMask(1 | 2 | 8 | 64 | 128), 1 | 2 | 8 | 1024 | 2048);
  assert.equal(fromZulipFlagsMask(1 | 2 | 8 | 1024 | 2048), 1 | 2 | 8 | 64 | 128);
});
