import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MAX_BLOCK_NESTING,
  MAX_MARKDOWN_INPUT,
  emojiCodeToName,
  emojiCodeToNames,
  emojiNameToCode,
  expandUriTemplate,
  isPlainText,
  mentionCandidates,
  renderMarkdown,
  renderThroughPipeline,
  topicLinks,
  unicodeEmojiToCode,
  type MarkdownContext,
} from '../../src/lib/markdown/index.js';
import { rewriteThumbnailedImage, type UploadPreview } from '../../src/lib/thumbnail.js';

const ctx: MarkdownContext = {
  realmUrl: 'https://chat.example.com',
  users: [
    { id: 10, fullName: 'King Hamlet', isActive: true },
    { id: 11, fullName: "Cordelia, Lear's daughter", isActive: true },
    { id: 12, fullName: 'Old Man', isActive: false },
    { id: 20, fullName: 'Twin', isActive: true },
    { id: 21, fullName: 'Twin', isActive: true },
  ],
  groups: [
    { id: 5, name: 'hamletcharacters', deactivated: false },
    { id: 6, name: 'retired', deactivated: true },
  ],
  channels: [
    { id: 1, name: 'Denmark' },
    { id: 2, name: 'Verona Beach' },
  ],
  linkifiers: [{ pattern: '#(?P<id>[0-9]{2,8})', url_template: 'https://trac.example.com/ticket/{id}' }],
  realmEmoji: [
    { name: 'party', id: '1', sourceUrl: '/user_avatars/2/emoji/images/1.png', deactivated: false },
    { name: 'gone', id: '2', sourceUrl: '/user_avatars/2/emoji/images/2.png', deactivated: true },
  ],
};

const html = (content: string, extra: Partial<MarkdownContext> = {}): string => renderMarkdown(content, { ...ctx, ...extra }).html;

test('user mentions: HTML and the users they notify', () => {
  let r = renderMarkdown('hi @**King Hamlet** and @**cordelia, lear\'s daughter**', ctx);
  assert.equal(
    r.html,
    '<p>hi <span class="user-mention" data-user-id="10">@King Hamlet</span> and ' +
      '<span class="user-mention" data-user-id="11">@Cordelia, Lear\'s daughter</span></p>',
  );
  assert.deepEqual(r.mentionedUserIds, [10, 11]);
  assert.deepEqual(r.silentMentionedUserIds, []);

  // Silent mentions render without "@" and notify nobody.
  r = renderMarkdown('@_**King Hamlet**', ctx);
  assert.equal(r.html, '<p><span class="user-mention silent" data-user-id="10">King Hamlet</span></p>');
  assert.deepEqual(r.mentionedUserIds, []);
  assert.deepEqual(r.silentMentionedUserIds, [10]);

  // Duplicate names are disambiguated with |id; |id alone works too.
  r = renderMarkdown('@**Twin|21** @**|20**', ctx);
  assert.equal(
    r.html,
    '<p><span class="user-mention" data-user-id="21">@Twin</span> <span class="user-mention" data-user-id="20">@Twin</span></p>',
  );
  assert.deepEqual(r.mentionedUserIds, [20, 21]);

  // A name that does not belong to the id is not a mention (and then reads as bold text).
  assert.equal(html('@**King Hamlet|11**'), '<p>@<strong>King Hamlet|11</strong></p>');
  // Unknown users stay literal.
  assert.deepEqual(renderMarkdown('@**Nobody**', ctx).mentionedUserIds, []);
  // Deactivated users render silently and are not notified.
  r = renderMarkdown('@**Old Man**', ctx);
  assert.equal(r.html, '<p><span class="user-mention silent" data-user-id="12">Old Man</span></p>');
  assert.deepEqual(r.mentionedUserIds, []);
  // Mentions must start after whitespace or an opening delimiter.
  assert.deepEqual(renderMarkdown('mail@**King Hamlet**', ctx).mentionedUserIds, []);
  assert.deepEqual(renderMarkdown('(@**King Hamlet**)', ctx).mentionedUserIds, [10]);
});

test('quoted and code mentions notify nobody', () => {
  let r = renderMarkdown('> @**King Hamlet** said', ctx);
  assert.equal(
    r.html,
    '<blockquote>\n<p><span class="user-mention silent" data-user-id="10">King Hamlet</span> said</p>\n</blockquote>',
  );
  assert.deepEqual(r.mentionedUserIds, []);
  r = renderMarkdown('```quote\n@**King Hamlet** @*hamletcharacters* @**all**\n```', ctx);
  assert.deepEqual(r.mentionedUserIds, []);
  assert.deepEqual(r.mentionedGroupIds, []);
  assert.deepEqual(r.wildcards, { stream: false, topic: false });
  r = renderMarkdown('`@**King Hamlet**`\n\n```\n@**King Hamlet**\n```', ctx);
  assert.deepEqual(r.mentionedUserIds, []);
});

test('wildcard mentions', () => {
  for (const name of ['all', 'everyone', 'channel', 'stream']) {
    const r = renderMarkdown(`@**${name}**`, ctx);
    assert.equal(r.html, `<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@${name}</span></p>`);
    assert.deepEqual(r.wildcards, { stream: true, topic: false });
  }
  let r = renderMarkdown('@**topic**', ctx);
  assert.equal(r.html, '<p><span class="topic-mention">@topic</span></p>');
  assert.deepEqual(r.wildcards, { stream: false, topic: true });
  r = renderMarkdown('@_**all** @_**topic**', ctx);
  assert.equal(
    r.html,
    '<p><span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> <span class="topic-mention silent">topic</span></p>',
  );
  assert.deepEqual(r.wildcards, { stream: false, topic: false });
  assert.deepEqual(renderMarkdown('@**All**', ctx).wildcards, { stream: false, topic: false });
});

test('user group mentions', () => {
  let r = renderMarkdown('@*hamletcharacters* @_*hamletcharacters*', ctx);
  assert.equal(
    r.html,
    '<p><span class="user-group-mention" data-user-group-id="5">@hamletcharacters</span> ' +
      '<span class="user-group-mention silent" data-user-group-id="5">hamletcharacters</span></p>',
  );
  assert.deepEqual(r.mentionedGroupIds, [5]);
  // Deactivated groups are shown but cannot be mentioned.
  r = renderMarkdown('@*retired*', ctx);
  assert.equal(r.html, '<p><span class="user-group-mention silent" data-user-group-id="6">retired</span></p>');
  assert.deepEqual(r.mentionedGroupIds, []);
  assert.equal(html('@*nobody*'), '<p>@<em>nobody</em></p>');
});

test('channel, topic and message links', () => {
  assert.equal(html('#**Denmark**'), '<p><a class="stream" data-stream-id="1" href="/#narrow/channel/1-Denmark">#Denmark</a></p>');
  assert.equal(
    html('#**Verona Beach>rock & roll.2**'),
    '<p><a class="stream-topic" data-stream-id="2" href="/#narrow/channel/2-Verona-Beach/topic/rock.20.26.20roll.2E2">#Verona Beach &gt; rock &amp; roll.2</a></p>',
  );
  assert.equal(
    html('#**Denmark>castle@42**'),
    '<p><a class="message-link" href="/#narrow/channel/1-Denmark/topic/castle/near/42">#Denmark &gt; castle @ 💬</a></p>',
  );
  assert.equal(html('#**Nowhere**'), '<p>#<strong>Nowhere</strong></p>');
  assert.equal(renderMarkdown('#**Denmark**', ctx).hasLink, true);
});

test('emoji: names, Unicode, realm emoji, emoticons', () => {
  assert.equal(
    html(':smile: 👍'),
    '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> ' +
      '<span aria-label="+1" class="emoji emoji-1f44d" role="img" title="+1">:+1:</span></p>',
  );
  assert.equal(
    html(':party: :gone: :zulip:'),
    '<p><img alt=":party:" class="emoji" src="/user_avatars/2/emoji/images/1.png" title="party"> :gone: ' +
      '<img alt=":zulip:" class="emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip"></p>',
  );
  assert.equal(html(':)'), '<p>:)</p>');
  assert.equal(html(':)', { translateEmoticons: true }), '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span></p>');
  assert.equal(emojiNameToCode('smile'), '1f642');
  assert.equal(emojiNameToCode('thumbs_up'), '1f44d');
  assert.equal(emojiNameToCode('octopus'), '1f419');
  assert.equal(emojiNameToCode('skin-tone-2'), undefined);
  assert.equal(emojiCodeToName('1f604'), 'big_smile');
  assert.equal(unicodeEmojiToCode('❤️'), '2764');
  const codeToNames = emojiCodeToNames();
  assert.deepEqual(codeToNames['1f44d'], ['+1', 'thumbs_up', 'like']);
  // Every name maps back to its code, and no name belongs to two codes.
  const seen = new Set<string>();
  for (const [code, names] of Object.entries(codeToNames)) {
    assert.match(code, /^[0-9a-f]{4,5}(-[0-9a-f]{4,5})*$/);
    for (const name of names) {
      assert.ok(!seen.has(name), name);
      seen.add(name);
      assert.equal(emojiNameToCode(name), code);
    }
  }
  assert.ok(Object.keys(codeToNames).length > 1500);
});

test('raw HTML and unsafe URLs are always escaped', () => {
  assert.equal(html('<script>alert(1)</script>'), '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  assert.equal(html('<img src=x onerror=alert(1)>'), '<p>&lt;img src=x onerror=alert(1)&gt;</p>');
  assert.equal(html('<a href="javascript:alert(1)">x</a>'), '<p>&lt;a href="javascript:alert(1)"&gt;x&lt;/a&gt;</p>');
  assert.equal(html('[x](javascript:alert(1))'), '<p>[x](javascript:alert(1))</p>');
  assert.equal(html('[x](data:text/html,hi)'), '<p>[x](data:text/html,hi)</p>');
  assert.equal(html('[x](http://a.com/"onmouseover="alert(1))'), '<p><a href="http://a.com/&quot;onmouseover=&quot;alert(1">x</a>)</p>');
  assert.equal(html('`<b>&amp;</b>`'), '<p><code>&lt;b&gt;&amp;amp;&lt;/b&gt;</code></p>');
  assert.equal(
    html('```spoiler <b>head</b>\n<i>body</i>\n```'),
    '<div class="spoiler-block"><div class="spoiler-header">\n<p>&lt;b&gt;head&lt;/b&gt;</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>&lt;i&gt;body&lt;/i&gt;</p>\n</div></div>',
  );
  assert.equal(
    html('``` js"><script>\nx\n```'),
    '<div class="codehilite" data-code-language="JavaScript"><pre><span></span><code>x\n</code></pre></div>',
  );
  // Names and custom emoji URLs from the database are escaped too.
  assert.equal(
    html('@**<b>x</b>**', { users: [{ id: 1, fullName: '<b>x</b>', isActive: true }] }),
    '<p><span class="user-mention" data-user-id="1">@&lt;b&gt;x&lt;/b&gt;</span></p>',
  );
  assert.equal(
    html(':e:', { realmEmoji: [{ name: 'e', id: '1', sourceUrl: '/x.png" onerror="alert(1)', deactivated: false }] }),
    '<p><img alt=":e:" class="emoji" src="/x.png&quot; onerror=&quot;alert(1)" title="e"></p>',
  );
  // The renderer's internal placeholders cannot be forged.
  assert.equal(html('a\u0002wzxhzdk:0\u0003b\u0002klzzwxh:0000\u0003'), '<p>awzxhzdk:0bklzzwxh:0000</p>');
});

test('random Markdown never yields scripts, event handlers or javascript: links', () => {
  const tokens = [
    '<script>', '</script>', '<img src=x onerror=alert(1)>', '" onerror="alert(1)', "'", '"', 'javascript:alert(1)',
    '[x](', ')', '](', '<', '>', '&', '&#60;', '`', '```', '```spoiler ', '```math', '~~~quote', '\n', '\n\n', '> ',
    '* ', '1. ', '**', '*', '~~', '$$', '\\', '@**King Hamlet**', '#**Denmark**', ':smile:', ':party:', '<time:',
    'http://x.com/a.png', 'https://chat.example.com/#narrow', '#1234', ' ', 'x', '|', '-|-', '    ',
  ];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...tokens), { maxLength: 40 }), (parts) => {
      const out = renderMarkdown(parts.join(''), ctx).html;
      assert.doesNotMatch(out, /<script|<[a-z][^>]*\son[a-z]+=|href="\s*javascript:|[\u0002\u0003]/i);
    }),
    { numRuns: 400, seed: 1 },
  );
});

test('plain text takes the fast path and renders exactly as the whole pipeline renders it', () => {
  // The fast path is off in organizations with linkifiers (the shared context has some).
  const plainCtx: MarkdownContext = { ...ctx, linkifiers: [] };
  const plain = ['sm123x', 'ok', 'Thanks, see you tomorrow!', 'sounds good.', 'is it "done"? yes', "it's Ünïcödé ok", 'Привет мир', '日本語 です', 'x 1 2 3'];
  for (const content of plain) {
    assert.ok(isPlainText(content, plainCtx), content);
    assert.deepEqual(renderMarkdown(content, plainCtx), renderThroughPipeline(content, plainCtx), content);
  }
  // Each of these is changed by some rule: none may take the fast path.
  const notPlain = ['1. item', 'example.com', 'e.g. this', 'a  b', ' a', 'a ', 'a\nb', 'ℹ info', 'a :) b', '#x', 'a_b_', '@all', '3.14'];
  for (const content of notPlain) assert.equal(isPlainText(content, plainCtx), false, content);
  assert.equal(isPlainText('sm123x', ctx), false, 'with linkifiers');
  // Random strings over the fast path's alphabet and its neighbours: whenever the fast path
  // applies, its result is the pipeline's.
  const chars = ['a', 'Z', 'é', 'ß', 'Ж', '日', 'ℹ', '1', '0', ' ', '  ', ',', '?', '!', "'", '"', '.', ':', ';', ')', '(', '-', '*', '_', '#', '>', '<', '&', 'com', 'www', 'http'];
  let fast = 0;
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...chars), { minLength: 1, maxLength: 12 }), (parts) => {
      const content = parts.join('');
      if (!isPlainText(content, plainCtx)) return;
      fast++;
      assert.deepEqual(renderMarkdown(content, plainCtx), renderThroughPipeline(content, plainCtx), JSON.stringify(content));
    }),
    { numRuns: 5000, seed: 7 },
  );
  assert.ok(fast > 300, `only ${fast} random strings took the fast path`);
});

test('code blocks, math, time and /me', () => {
  assert.equal(
    html('```py\nprint("hi")\n```'),
    '<div class="codehilite" data-code-language="Python"><pre><span></span><code><span class="nb">print</span><span class="p">(</span><span class="s2">"hi"</span><span class="p">)</span>\n</code></pre></div>',
  );
  assert.equal(html('```\nx\n```', { defaultCodeBlockLanguage: 'rust' }), '<div class="codehilite" data-code-language="Rust"><pre><span></span><code>x\n</code></pre></div>');
  assert.match(html('$$x^2$$'), /^<p><span class="katex">/);
  assert.match(html('```math\nx^2\n```'), /^<p><span class="katex-display"><span class="katex">/);
  assert.equal(html('$$\\frac{$$'), '<p><span class="tex-error">$$\\frac{$$</span></p>');
  assert.equal(html('<time:2024-01-15T10:00:00+05:30>'), '<p><time datetime="2024-01-15T04:30:00Z">2024-01-15T10:00:00+05:30</time></p>');
  assert.equal(html('<time:1496701800.5>'), '<p><time datetime="2017-06-05T22:30:00.500000Z">1496701800.5</time></p>');
  const me = renderMarkdown('/me waves', ctx);
  assert.equal(me.html, '<p>/me waves</p>');
  assert.equal(me.isMeMessage, true);
  assert.equal(renderMarkdown('/mentions', ctx).isMeMessage, false);
});

test('links, image previews and uploads', () => {
  let r = renderMarkdown('see https://example.com/a.png', ctx);
  assert.equal(
    r.html,
    '<p>see <a href="https://example.com/a.png">https://example.com/a.png</a></p>\n' +
      '<div class="message_inline_image"><a href="https://example.com/a.png"><img data-src-fullsize="/thumbnail?url=https%3A%2F%2Fexample.com%2Fa.png&amp;size=full" src="/thumbnail?url=https%3A%2F%2Fexample.com%2Fa.png&amp;size=thumbnail"></a></div>',
  );
  assert.equal(r.hasLink, true);
  assert.equal(r.hasImage, true);
  assert.equal(renderMarkdown('https://example.com/a.png', { ...ctx, inlineImagePreview: false }).hasImage, false);
  r = renderMarkdown('[doc](/user_uploads/2/ab/report.pdf) https://chat.example.com/user_uploads/2/cd/x.txt https://elsewhere.com/user_uploads/9/z.txt', ctx);
  assert.equal(r.hasAttachment, true);
  assert.deepEqual(r.attachmentPathIds, ['2/ab/report.pdf', '2/cd/x.txt']);
  // Links into the realm's own narrows become relative.
  assert.equal(html('https://chat.example.com/#narrow/channel/1-Denmark'), '<p><a href="#narrow/channel/1-Denmark">https://chat.example.com/#narrow/channel/1-Denmark</a></p>');
  r = renderMarkdown('plain text', ctx);
  assert.deepEqual([r.hasLink, r.hasImage, r.hasAttachment], [false, false, false]);
});

test('the image syntax: uploaded images in place, anywhere inline; other targets a plain link', () => {
  const cat: UploadPreview = { url: null, isAnimated: false, width: 1200, height: 600, contentType: 'image/png', transcodedImage: null };
  const uploads = { uploadPreviews: new Map([['2/ab/cat.png', cat]]) };
  const img = (alt: string, extra = '') =>
    `<img alt="${alt}" class="inline-image image-loading-placeholder" data-original-content-type="image/png" data-original-dimensions="1200x600" data-original-src="/user_uploads/2/ab/cat.png" src="/static/images/loading/loader-black.svg"${extra}>`;
  let r = renderMarkdown('A ![black *cat*](/user_uploads/2/ab/cat.png) here', { ...ctx, ...uploads });
  assert.equal(r.html, `<p>A ${img('black *cat*')} here</p>`);
  assert.deepEqual([r.hasImage, r.hasLink, r.hasAttachment, r.attachmentPathIds], [true, false, true, ['2/ab/cat.png']]);
  // No alt text, a title, the realm's absolute URL for the upload.
  assert.equal(html('![](https://chat.example.com/user_uploads/2/ab/cat.png "Cat")', uploads), `<p>${img('', ' title="Cat"')}</p>`);
  assert.equal(html('> ![quoted](/user_uploads/2/ab/cat.png)', uploads), `<blockquote>\n<p>${img('quoted')}</p>\n</blockquote>`);
  assert.equal(html('* one\n* ![listed](/user_uploads/2/ab/cat.png)', uploads), `<ul>\n<li>one</li>\n<li>${img('listed')}</li>\n</ul>`);
  // Link text is not processed, so an image inside a link stays text (Zulip's links are atomic).
  assert.equal(html('[![a](/user_uploads/2/ab/cat.png)](https://example.com)', uploads), '<p><a href="https://example.com">![a](/user_uploads/2/ab/cat.png)</a></p>');
  // Zulip has no backslash escapes; a code span shows the syntax.
  assert.equal(html('\\![a](/user_uploads/2/ab/cat.png)', uploads), `<p>\\${img('a')}</p>`);
  assert.equal(html('`![a](/user_uploads/2/ab/cat.png)`', uploads), '<p><code>![a](/user_uploads/2/ab/cat.png)</code></p>');
  // Not an uploaded image (another upload, a third-party image, no upload data): a link named by
  // the alt text, which previews as a link to it would.
  r = renderMarkdown('![report](/user_uploads/2/ab/report.pdf)', { ...ctx, ...uploads });
  assert.equal(r.html, '<p><a href="/user_uploads/2/ab/report.pdf">report</a></p>');
  assert.deepEqual([r.hasImage, r.attachmentPathIds], [false, ['2/ab/report.pdf']]);
  assert.equal(
    html('![a cat](/user_uploads/2/ab/cat.png)'),
    '<p><a href="/user_uploads/2/ab/cat.png">a cat</a></p>\n' +
      '<div class="message_inline_image"><a href="/user_uploads/2/ab/cat.png" title="a cat"><img data-src-fullsize="/thumbnail?url=user_uploads%2F2%2Fab%2Fcat.png&amp;size=full" src="/thumbnail?url=user_uploads%2F2%2Fab%2Fcat.png&amp;size=thumbnail"></a></div>',
  );
  assert.equal(
    html('![](https://example.com/a.png "Pic")', { inlineImagePreview: false }),
    '<p><a href="https://example.com/a.png" title="Pic">https://example.com/a.png</a></p>',
  );
  // Unsafe targets are left as text, as links are.
  assert.equal(html('![x](javascript:alert(1))', uploads), '<p>![x](javascript:alert(1))</p>');
  assert.equal(html('![no target] and !', uploads), '<p>![no target] and !</p>');
});

test('thumbnails replace the spinners of images shown with the image syntax', () => {
  const spinner = (path: string, alt: string) =>
    `<img alt${alt ? `="${alt}"` : '=""'} class="inline-image image-loading-placeholder" data-original-dimensions="60x40" data-original-src="/user_uploads/${path}" src="/static/images/loading/loader-black.svg">`;
  const message = `<p>${spinner('2/ab/dance.gif', 'dance')} ${spinner('2/cd/scan.tiff', '')}</p>`;
  const gif = { url: '/user_uploads/thumbnail/2/ab/dance.gif/840x560-anim.webp', isAnimated: true, width: 60, height: 40, contentType: 'image/gif', transcodedImage: null };
  const once = rewriteThumbnailedImage(message, '2/ab/dance.gif', gif)!;
  assert.equal(
    once,
    `<p><img alt="dance" class="inline-image" data-original-dimensions="60x40" data-original-src="/user_uploads/2/ab/dance.gif" src="/user_uploads/thumbnail/2/ab/dance.gif/840x560-anim.webp" data-original-content-type="image/gif" data-animated="true"> ${spinner('2/cd/scan.tiff', '')}</p>`,
  );
  const tiff = { url: '/user_uploads/thumbnail/2/cd/scan.tiff/840x560.webp', isAnimated: false, width: 60, height: 40, contentType: null, transcodedImage: '3024x4032.webp' };
  assert.ok(rewriteThumbnailedImage(once, '2/cd/scan.tiff', tiff)!.endsWith(
    ' <img alt class="inline-image" data-original-dimensions="60x40" data-original-src="/user_uploads/2/cd/scan.tiff" src="/user_uploads/thumbnail/2/cd/scan.tiff/840x560.webp" data-transcoded-image="3024x4032.webp"></p>',
  ));
  // An image that could not be thumbnailed goes, as a link preview's block does.
  assert.equal(rewriteThumbnailedImage(once, '2/cd/scan.tiff', null), once.replace(` ${spinner('2/cd/scan.tiff', '')}`, ' '));
  assert.equal(rewriteThumbnailedImage(once, '2/ef/other.png', null), null);
});

test('linkifiers and topic links', () => {
  assert.equal(html('fixes #1234.'), '<p>fixes <a href="https://trac.example.com/ticket/1234">#1234</a>.</p>');
  assert.equal(html('a#1234 #1'), '<p>a#1234 #1</p>');
  assert.deepEqual(topicLinks('#1234 and https://zulip.com/x, #77', ctx.linkifiers!), [
    { url: 'https://trac.example.com/ticket/1234', text: '#1234' },
    { url: 'https://zulip.com/x', text: 'https://zulip.com/x' },
    { url: 'https://trac.example.com/ticket/77', text: '#77' },
  ]);
  assert.deepEqual(topicLinks('see example.com', []), [{ url: 'https://example.com', text: 'example.com' }]);
  // An invalid pattern is ignored rather than breaking rendering.
  assert.equal(html('x (y', { linkifiers: [{ pattern: '(unclosed', url_template: 'https://x/{a}' }] }), '<p>x (y</p>');
  assert.equal(expandUriTemplate('https://x/{id}/{+path}{?q,lang}', { id: 'a b', path: 'c/d', q: 'é', lang: undefined }), 'https://x/a%20b/c/d?q=%C3%A9');
});

test('alert words and mention candidates', () => {
  const alertWords = new Map([
    [1, ['Hello']],
    [2, ['world']],
    [3, ['wor']],
  ]);
  assert.deepEqual(renderMarkdown('hello, World!', { ...ctx, alertWords }).alertWordUserIds, [1, 2]);
  assert.deepEqual(mentionCandidates('@**A** @**B|5** @**|7** @_**C** @*g* #**d** @**all** @**topic**'), {
    userNames: ['A', 'C'],
    userIds: [5, 7],
    groupNames: ['g'],
    channelNames: ['d'],
    wildcards: { stream: true, topic: true },
  });
});

function timed(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

// Generous budgets: they catch exponential or quadratic blow-ups, not slow machines.
const BUDGET_MS = 3000;

test('deep nesting is bounded and renders quickly', () => {
  const depth = (h: string, tag: string): number => {
    let max = 0;
    let cur = 0;
    for (const m of h.matchAll(new RegExp(`<(/?)${tag}[ >]`, 'g'))) {
      cur += m[1] ? -1 : 1;
      max = Math.max(max, cur);
    }
    return max;
  };
  const inputs: Record<string, string> = {
    quotes: '>'.repeat(10_000),
    stars: '*'.repeat(10_000),
    bullets: '* '.repeat(5_000) + 'x',
    numbered: Array.from({ length: 99 }, (_, i) => ' '.repeat(2 * i) + '1. x').join('\n'),
    fences: '```quote\n'.repeat(1_200) + 'x',
    emphasis: '*a '.repeat(2_500) + 'x' + ' a*'.repeat(2_500),
    brackets: '['.repeat(10_000),
    links: '[a]('.repeat(2_500),
    parens: 'http://a.com/' + '('.repeat(9_000),
    hashes: '# ' + '#'.repeat(9_990) + 'x',
    rules: '-'.repeat(9_999) + 'x',
    backticks: '` '.repeat(5_000),
    emoji: '😀'.repeat(5_000),
    names: ':smile:'.repeat(1_400),
    math: '$$' + '{'.repeat(5_000) + '$$',
  };
  for (const [name, input] of Object.entries(inputs)) {
    let out = '';
    const ms = timed(() => {
      out = renderMarkdown(input, ctx).html;
    });
    assert.ok(ms < BUDGET_MS, `${name} took ${ms.toFixed(0)} ms`);
    assert.ok(depth(out, 'blockquote') <= MAX_BLOCK_NESTING, name);
    assert.ok(depth(out, 'ul') + depth(out, 'ol') <= 2 * MAX_BLOCK_NESTING, name);
    assert.doesNotMatch(out, /\u0002|\u0003/, name);
  }
  assert.equal(depth(html('>'.repeat(10_000)), 'blockquote'), MAX_BLOCK_NESTING - 1);
});

test('inputs beyond the parsing limit come back escaped', () => {
  const huge = '<b>' + 'x'.repeat(MAX_MARKDOWN_INPUT) + '\n\n**y**';
  let r: ReturnType<typeof renderMarkdown> | undefined;
  const ms = timed(() => {
    r = renderMarkdown(huge, ctx);
  });
  assert.ok(ms < BUDGET_MS);
  assert.ok(r!.html.startsWith('<p>&lt;b&gt;xxx'));
  assert.ok(r!.html.endsWith('</p>\n<p>**y**</p>'));
});
