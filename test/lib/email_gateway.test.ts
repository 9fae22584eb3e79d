import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeChannelAddress, encodeEmailAddress, gatewayLocalPart, isMissedMessageToken } from '../../src/lib/email_gateway/addresses.js';
import { filterFooter, formatAddressList, htmlToMarkdown, isForwarded, stripFromSubject } from '../../src/lib/email_gateway/body.js';
import { extractReplyFromPlain } from '../../src/lib/email_gateway/quotations.js';

const TOKEN = 'af64447e9e39374841063747ade8e6b0';

test('encodeEmailAddress: Zulip slugs, "channel" when the slug loses characters, empty without a domain', () => {
  assert.equal(encodeEmailAddress('testserver', 'test', TOKEN, true), `test.${TOKEN}.show-sender@testserver`);
  assert.equal(encodeEmailAddress('d.example', 'Social Stuff', TOKEN, false), `social-stuff.${TOKEN}@d.example`);
  assert.equal(encodeEmailAddress('d.example', 'a/b & c', TOKEN, false), `a-b-c.${TOKEN}@d.example`);
  assert.equal(encodeEmailAddress('d.example', 'Déjà vu', TOKEN, false), `deja-vu.${TOKEN}@d.example`);
  // A trailing non-word run leaves a hyphen that slugify strips: the name would be mangled.
  assert.equal(encodeEmailAddress('d.example', 'help!', TOKEN, false), `channel.${TOKEN}@d.example`);
  assert.equal(encodeEmailAddress('d.example', 'Ελληνικά', TOKEN, false), `channel.${TOKEN}@d.example`);
  assert.equal(encodeEmailAddress(null, 'test', TOKEN, true), '');
});

test('decodeChannelAddress: "." and "+" separators, options anywhere, the token alone or after the name', () => {
  assert.deepEqual(decodeChannelAddress(`test.${TOKEN}.show-sender`), { token: TOKEN, options: { show_sender: true } });
  assert.deepEqual(decodeChannelAddress(`test+${TOKEN}+include-footer+prefer-html`), { token: TOKEN, options: { include_footer: true, prefer_text: false } });
  assert.deepEqual(decodeChannelAddress(`${TOKEN}.include-quotes`), { token: TOKEN, options: { include_quotes: true } });
  assert.equal(gatewayLocalPart('streams.example.com', `x.${TOKEN}@Streams.Example.com`), `x.${TOKEN}`);
  assert.equal(gatewayLocalPart('streams.example.com', `x.${TOKEN}@example.com`), null);
  assert.equal(isMissedMessageToken(`mm${TOKEN}`), true);
  assert.equal(isMissedMessageToken(TOKEN), false);
});

test('subjects: Re/Fwd prefixes removed, forwards recognised', () => {
  assert.equal(stripFromSubject('Re: Fwd: [RE] budget'), 'budget');
  assert.equal(stripFromSubject('AW: Termin'), 'Termin');
  assert.equal(stripFromSubject('Regarding the plan'), 'Regarding the plan');
  assert.equal(isForwarded('Fwd: plan'), true);
  assert.equal(isForwarded('[FW] plan'), true);
  assert.equal(isForwarded('Re: Fwd: plan'), false);
});

test('extractReplyFromPlain: reply headers, quote blocks, inline replies and forwards as talon does', () => {
  assert.equal(extractReplyFromPlain('Sounds good.\n\nOn Mon, Jan 6, 2025 at 10:00 AM, Bob <bob@example.org> wrote:\n> Can you?\n'), 'Sounds good.');
  assert.equal(extractReplyFromPlain('Yes.\n\n-----Original Message-----\nFrom: Bob\nSent: today\nNo quote markers here\n'), 'Yes.');
  assert.equal(extractReplyFromPlain('Ok\n\nFrom: Bob <b@example.org>\nSent: Monday\nSubject: plan\n\nold text\n'), 'Ok');
  assert.equal(extractReplyFromPlain('Reply\n> one\n> two\n> three\n'), 'Reply');
  // Fewer than three quoted lines and no header: part of the message.
  assert.equal(extractReplyFromPlain('As you said:\n> quoted\nI agree'), 'As you said:\n> quoted\nI agree');
  // An answer between quoted lines keeps everything.
  const inline = 'On Mon, Jan 6, 2025, Bob wrote:\n> first?\nyes\n> second?\nno';
  assert.equal(extractReplyFromPlain(inline), inline);
  assert.equal(extractReplyFromPlain('---------- Forwarded message ----------\nFrom: a\nbody'), '---------- Forwarded message ----------\nFrom: a\nbody');
  assert.equal(extractReplyFromPlain('See <http://example.com/x>\n'), 'See <http://example.com/x>');
});

test('filterFooter: only a single "--" line ends the message', () => {
  assert.equal(filterFooter('Hi\n--\nSig'), 'Hi');
  assert.equal(filterFooter('Hi\n--\nA\n--\nB'), 'Hi\n--\nA\n--\nB');
  assert.equal(filterFooter('No footer'), 'No footer');
});

test('htmlToMarkdown and sender lines', () => {
  assert.equal(htmlToMarkdown('<p>Hi <em>there</em></p><div class="gmail_quote">On Mon, Bob wrote:<blockquote>old</blockquote></div>', false), 'Hi _there_');
  assert.equal(htmlToMarkdown('<p>Hi</p><blockquote type="cite">old</blockquote>', true), 'Hi\n\n> old');
  assert.equal(htmlToMarkdown('<img src="http://h.example/p/cat.png?v=1">', false), '[cat.png](http://h.example/p/cat.png)');
  assert.equal(formatAddressList([{ name: 'Doe, John', address: 'j@example.org' }, { name: '', address: 'k@example.org' }]), '"Doe, John" <j@example.org>, k@example.org');
});
