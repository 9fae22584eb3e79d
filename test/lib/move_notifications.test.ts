import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResolveNotificationContent, resolveToggle, topicLinkSyntax } from '../../src/lib/move_notifications.js';

test("topicLinkSyntax: Zulip's #**channel>topic**, or a plain link where that syntax would break", () => {
  assert.equal(topicLinkSyntax({ id: 7, name: 'design' }, 'logo'), '#**design>logo**');
  assert.equal(topicLinkSyntax({ id: 7, name: 'design team' }, 'a*b [draft]'), '[#design team > a&#42;b &#91;draft&#93;](#narrow/channel/7-design-team/topic/a*b.20.5Bdraft.5D)');
  assert.equal(topicLinkSyntax({ id: 7, name: 'R&D' }, ''), '[#R&amp;D > general chat](#narrow/channel/7-R.26D/topic/)');
});

test("resolveToggle: Zulip's topic_resolved and topic_unresolved", () => {
  assert.equal(resolveToggle('bug', '✔ bug', '✔ bug'), 'resolved');
  assert.equal(resolveToggle('✔ bug', 'bug', 'bug'), 'unresolved');
  // str.lstrip("✔ ") drops every leading check mark and space.
  assert.equal(resolveToggle('✔ ✔ bug', 'bug', 'bug'), 'unresolved');
  assert.equal(resolveToggle('✔ ✔ bug', '✔ bug', '✔ bug'), null);
  assert.equal(resolveToggle('bug', 'bugs', 'bugs'), null);
  // Truncation: the requested name, before it was cut to 60 characters, decides.
  const long = 'x'.repeat(60);
  assert.equal(resolveToggle(long, `✔ ${'x'.repeat(58)}`, `✔ ${long}`), 'resolved');
});

test('isResolveNotificationContent recognizes only the resolve notices', () => {
  assert.ok(isResolveNotificationContent('@_**King Hamlet|9** has marked this topic as resolved.'));
  assert.ok(isResolveNotificationContent('@_**King Hamlet|9** has marked this topic as unresolved.'));
  assert.ok(!isResolveNotificationContent('This topic was moved here from #**a>b** by @_**King Hamlet|9**.'));
});
