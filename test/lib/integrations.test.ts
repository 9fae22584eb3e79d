import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pythonJsonDumps } from '../../src/integrations/python_json.js';
import { replaceFormatting, replaceLinks } from '../../src/integrations/slack_incoming.js';
import { fnmatch } from '../../src/actions/webhooks.js';
import { getPushCommitsEventMessage, getPullRequestEventMessage } from '../../src/integrations/git.js';

test('pythonJsonDumps prints as json.dumps(indent=2): ASCII escapes, empty containers inline', () => {
  assert.equal(pythonJsonDumps({ a: [], b: {}, c: 'é😀"\\\n', d: [1, null, true] }), '{\n  "a": [],\n  "b": {},\n  "c": "\\u00e9\\ud83d\\ude00\\"\\\\\\n",\n  "d": [\n    1,\n    null,\n    true\n  ]\n}');
});

test('Slack mrkdwn becomes Zulip Markdown (Zulip\'s test_message_formatting cases)', () => {
  const cases: [string, string][] = [
    ['some *foo* word', 'some **foo** word'],
    ['*foo*', '**foo**'],
    ['*foo* *bar*', '**foo** **bar**'],
    ['*foo*a*bar*', '*foo*a*bar*'],
    ['some _foo_ word', 'some *foo* word'],
  ];
  for (const [input, output] of cases) assert.equal(replaceFormatting(input), output, input);
  assert.equal(replaceLinks('see <https://example.com|the site> and <http://a.b|c>'), 'see [the site](https://example.com) and [c](http://a.b)');
});

test('fnmatch follows Python\'s: *, ?, [seq], [!seq], no special meaning elsewhere', () => {
  assert.ok(fnmatch('opened_pull_request', '*pull_request'));
  assert.ok(fnmatch('issues', 'iss?es'));
  assert.ok(fnmatch('issue_a', 'issue_[abc]'));
  assert.ok(!fnmatch('issue_d', 'issue_[abc]'));
  assert.ok(fnmatch('issue_d', 'issue_[!abc]'));
  assert.ok(fnmatch('a.b', 'a.b'));
  assert.ok(!fnmatch('axb', 'a.b'));
  assert.ok(fnmatch('[x', '[x'));
  assert.ok(!fnmatch('Issues', 'issues'));
});

test('push messages list committers by count, then name, and at most 3 plus "others"', () => {
  const commit = (name: string) => ({ name, sha: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c', url: 'https://x/c', message: 'Update README.md\n\nbody' });
  const commits = ['Tomasz', 'Tomasz', 'Ben', 'James', 'Ben', 'Zed'].map(commit);
  const text = getPushCommitsEventMessage({ userName: 'baxter', compareUrl: 'https://x/compare', branchName: 'changes', commits });
  assert.equal(text.split('\n')[0], 'baxter [pushed](https://x/compare) 6 commits to branch changes. Commits by Ben (2), Tomasz (2), James (1) and others (1).');
  assert.equal(text.split('\n')[2], '* Update README.md ([0d1a26e67d8](https://x/c))');
});

test('PR and issue messages keep a title\'s own final punctuation', () => {
  assert.equal(getPullRequestEventMessage({ userName: 'u', action: 'opened', url: 'https://x', number: 7, type: 'issue', title: 'Done!' }), 'u opened [issue #7 Done!](https://x)');
  assert.equal(getPullRequestEventMessage({ userName: 'u', action: 'opened', url: 'https://x', number: 7, type: 'issue', title: 'Done' }), 'u opened [issue #7 Done](https://x).');
  assert.equal(getPullRequestEventMessage({ userName: 'u', action: 'opened', url: 'https://x', number: 7, message: 'text' }), 'u opened [PR #7](https://x):\n\n~~~ quote\ntext\n~~~');
});
