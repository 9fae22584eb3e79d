import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonableError } from '../../src/errors.js';
import { parseNarrow, decodeNarrowParam, canonicalOperator } from '../../src/lib/narrow/terms.js';
import { parseAnchor } from '../../src/lib/narrow/anchor.js';
import { fts5Query, highlightHtml, parseSearch, searchMatchFields } from '../../src/lib/narrow/search.js';
import { escapeHtml } from '../../src/lib/html.js';
import { checkEventNarrow, messageMatchesNarrowInMemory } from '../../src/lib/narrow/memory.js';
import type { MessageDict } from '../../src/lib/format/messages.js';

function throwsWith(fn: () => unknown, code: string, msg: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof JsonableError);
    assert.equal(e.code, code);
    assert.equal(e.message, msg);
    return true;
  });
}

test('parseNarrow accepts objects and legacy pairs, defaulting negated to false', () => {
  assert.deepEqual(parseNarrow([['stream', 'Verona'], { operator: 'dm', operand: [1, 2], negated: true }, { operator: 'id', operand: 5 }]), [
    { operator: 'stream', operand: 'Verona', negated: false },
    { operator: 'dm', operand: [1, 2], negated: true },
    { operator: 'id', operand: 5, negated: false },
  ]);
  assert.deepEqual(decodeNarrowParam('[]', 'narrow'), []);
  throwsWith(() => decodeNarrowParam('nope', 'narrow'), 'BAD_REQUEST', 'Argument "narrow" is not valid JSON.');
  throwsWith(() => parseNarrow({}), 'BAD_REQUEST', 'narrow is not a list');
  throwsWith(() => parseNarrow([['a']]), 'BAD_REQUEST', 'Invalid narrow[0]: Value error, element is not a string pair');
  throwsWith(() => parseNarrow([1]), 'BAD_REQUEST', 'Invalid narrow[0]: Value error, dict or list required');
  throwsWith(() => parseNarrow([{ operand: 'x' }]), 'BAD_REQUEST', 'Invalid narrow[0]: Value error, operator is missing');
  throwsWith(() => parseNarrow([{ operator: 'search', operand: '  ' }]), 'BAD_REQUEST', 'operand cannot be blank.');
  throwsWith(() => parseNarrow([{ operator: 'channel', operand: 1.5 }]), 'BAD_REQUEST', 'operand is not a string or integer');
});

test('canonical operator names', () => {
  assert.equal(canonicalOperator('stream'), 'channel');
  assert.equal(canonicalOperator('streams'), 'channels');
  assert.equal(canonicalOperator('pm-with'), 'dm');
  assert.equal(canonicalOperator('dm-with'), 'dm-including');
  assert.equal(canonicalOperator('subject'), 'topic');
  assert.equal(canonicalOperator('sender'), 'sender');
});

test('parseAnchor follows Zulip parse_anchor_value', () => {
  assert.deepEqual(parseAnchor('newest', false, undefined), { kind: 'id', id: 10000000000000000 });
  assert.deepEqual(parseAnchor('oldest', false, undefined), { kind: 'id', id: 0 });
  assert.deepEqual(parseAnchor('first_unread', false, undefined), { kind: 'first_unread' });
  assert.deepEqual(parseAnchor('0', true, undefined), { kind: 'first_unread' });
  assert.deepEqual(parseAnchor(undefined, true, undefined), { kind: 'first_unread' });
  assert.deepEqual(parseAnchor(' 42 ', false, undefined), { kind: 'id', id: 42 });
  assert.deepEqual(parseAnchor('-3', false, undefined), { kind: 'id', id: 0 });
  assert.deepEqual(parseAnchor('123456789012345678901', false, undefined), { kind: 'id', id: 10000000000000000 });
  assert.deepEqual(parseAnchor('date', false, '2024-01-02'), { kind: 'date', since: Date.UTC(2024, 0, 2) / 1000 });
  assert.deepEqual(parseAnchor('date', false, '2024-01-02T03:04:05+01:00'), { kind: 'date', since: Date.UTC(2024, 0, 2, 2, 4, 5) / 1000 });
  throwsWith(() => parseAnchor(undefined, false, undefined), 'BAD_REQUEST', "Missing 'anchor' argument.");
  throwsWith(() => parseAnchor('1.5', false, undefined), 'BAD_REQUEST', 'Invalid anchor');
});

test('search parsing: stop words dropped, diacritics folded, phrases kept', () => {
  const q = parseSearch('The Café "on the hill" running running');
  assert.deepEqual(q.words, ['cafe', 'hill', 'running']);
  assert.deepEqual(q.phrases, ['on the hill']);
  assert.equal(fts5Query(q), '"cafe" "hill" "running"');
  assert.equal(fts5Query(parseSearch('the and of')), null);
});

test('highlighting wraps stem matches outside markup only', () => {
  const stems = parseSearch('link running').stems;
  assert.equal(
    highlightHtml('<p>Running <a href="https://link.example/running">links</a> &amp; ran</p>', stems),
    '<p><span class="highlight">Running</span> <a href="https://link.example/running"><span class="highlight">links</span></a> &amp; ran</p>',
  );
  assert.equal(escapeHtml(`a<b>&"c'`), 'a&lt;b&gt;&amp;&quot;c&#x27;');
  assert.deepEqual(searchMatchFields('<p>x</p>', 'R&D', null), { match_content: '<p>x</p>', match_subject: 'R&amp;D' });
  assert.deepEqual(searchMatchFields('<p>amp</p>', 'R&D amp', parseSearch('amp')), {
    match_content: '<p><span class="highlight">amp</span></p>',
    match_subject: 'R&amp;D <span class="highlight">amp</span>',
  });
});

function message(overrides: Partial<MessageDict>): MessageDict {
  return {
    id: 10,
    sender_id: 1,
    sender_full_name: 'Hamlet',
    sender_email: 'hamlet@example.com',
    sender_realm_str: '',
    avatar_url: null,
    client: 'test',
    content: '<p>hi</p>',
    content_type: 'text/html',
    display_recipient: 'Denmark',
    recipient_id: 2,
    stream_id: 7,
    subject: 'Castle',
    topic_links: [],
    submessages: [],
    timestamp: 0,
    type: 'stream',
    is_me_message: false,
    reactions: [],
    ...overrides,
  };
}

test('in-memory narrow matching for event queues', () => {
  const m = message({});
  const match = (narrow: unknown, flags: string[] = [], msg = m, readerId?: number) =>
    messageMatchesNarrowInMemory(msg, flags, parseNarrow(narrow), { readerId, emptyTopicDisplayName: 'general chat' });
  assert.equal(match([['stream', 'denmark'], ['topic', 'castle']]), true);
  assert.equal(match([{ operator: 'channel', operand: 7 }]), true);
  assert.equal(match([{ operator: 'channel', operand: 8 }]), false);
  assert.equal(match([['topic', 'moat']]), false);
  assert.equal(match([{ operator: 'topic', operand: 'castle', negated: true }]), false);
  assert.equal(match([['sender', 'HAMLET@example.com']]), true);
  assert.equal(match([{ operator: 'sender', operand: 2 }]), false);
  assert.equal(match([['is', 'starred']], ['starred']), true);
  assert.equal(match([['is', 'starred']], []), false);
  assert.equal(match([['is', 'unread']], ['read']), false);
  assert.equal(match([['is', 'mentioned']], ['topic_wildcard_mentioned']), true);
  assert.equal(match([['is', 'alerted']], ['has_alert_word']), true);
  assert.equal(match([['is', 'dm']]), false);
  assert.equal(match([['is', 'resolved']], [], message({ subject: '\u2714 done' })), true);
  // Operators that need the database do not filter, negated or not.
  assert.equal(match([['search', 'anything']]), true);
  assert.equal(match([{ operator: 'is', operand: 'followed', negated: true }]), true);
  assert.equal(match([['topic', 'general chat']], [], message({ subject: '' })), true);

  const dm = message({
    type: 'private',
    stream_id: undefined,
    subject: '',
    display_recipient: [
      { id: 1, email: 'hamlet@example.com', full_name: 'Hamlet', is_mirror_dummy: false },
      { id: 3, email: 'othello@example.com', full_name: 'Othello', is_mirror_dummy: false },
    ],
  });
  assert.equal(match([['is', 'private']], [], dm), true);
  assert.equal(match([{ operator: 'dm', operand: [1] }], [], dm, 3), true);
  assert.equal(match([{ operator: 'dm', operand: [1, 3] }], [], dm, 3), true);
  assert.equal(match([['dm', 'Hamlet@example.com']], [], dm, 3), true);
  assert.equal(match([{ operator: 'dm', operand: [4] }], [], dm, 3), false);
  assert.equal(match([{ operator: 'dm-including', operand: 3 }], [], dm), true);
  assert.equal(match([{ operator: 'group-pm-with', operand: 3 }], [], dm), false);
  assert.equal(match([['stream', 'Denmark']], [], dm), false);

  checkEventNarrow(parseNarrow([['stream', 'x'], ['topic', 'y'], ['sender', 'z'], ['is', 'dm']]));
  throwsWith(() => checkEventNarrow(parseNarrow([['search', 'x']])), 'BAD_REQUEST', 'Operator search not supported.');
});
