// Code block HTML in the shape Zulip's Pygments-based highlighter produces:
//   <div class="codehilite"><pre><span></span><code>...</code></pre></div>
// Python and TeX get Pygments-compatible token classes; other languages are emitted as
// escaped plain text (valid, just not colored). `canonicalLanguageName` maps fence
// languages to the Pygments lexer names Zulip puts in `data-code-language`.

type Token = readonly [cls: string, text: string];
type Action = string | readonly string[];
interface Rule {
  re: RegExp;
  action: Action;
  next?: string;
}
type Lexer = Record<string, Rule[]>;

/** Rules of one lexer state. Sources are combined into one regex: no back-references. */
function rules(...defs: [string, Action, string?][]): Rule[] {
  return defs.map(([src, action, next]) => ({ re: new RegExp(src, 'myu'), action, next }));
}

const PY_KEYWORDS =
  'assert|async|await|break|continue|del|elif|else|except|finally|for|global|if|lambda|pass|' +
  'raise|nonlocal|return|try|while|yield from|yield|as|with';
const PY_BUILTINS =
  '__import__|abs|aiter|all|any|bin|bool|bytearray|breakpoint|bytes|callable|chr|classmethod|' +
  'compile|complex|delattr|dict|dir|divmod|enumerate|eval|filter|float|format|frozenset|' +
  'getattr|globals|hasattr|hash|hex|id|input|int|isinstance|issubclass|iter|len|list|locals|' +
  'map|max|memoryview|min|next|object|oct|open|ord|pow|print|property|range|repr|reversed|' +
  'round|set|setattr|slice|sorted|staticmethod|str|sum|super|tuple|type|vars|zip';
const PY_EXCEPTIONS =
  'ArithmeticError|AssertionError|AttributeError|BaseException|BufferError|BytesWarning|' +
  'DeprecationWarning|EOFError|EnvironmentError|Exception|FloatingPointError|FutureWarning|' +
  'GeneratorExit|IOError|ImportError|ImportWarning|IndentationError|IndexError|KeyError|' +
  'KeyboardInterrupt|LookupError|MemoryError|NameError|NotImplementedError|OSError|' +
  'OverflowError|PendingDeprecationWarning|RecursionError|ReferenceError|RuntimeError|' +
  'RuntimeWarning|StopIteration|StopAsyncIteration|SyntaxError|SyntaxWarning|SystemError|' +
  'SystemExit|TabError|TimeoutError|TypeError|UnboundLocalError|UnicodeDecodeError|' +
  'UnicodeEncodeError|UnicodeError|UnicodeTranslationError|UnicodeWarning|UserWarning|' +
  'ValueError|Warning|ZeroDivisionError|FileNotFoundError|PermissionError|ConnectionError';

function pyString(quote: string, cls: string): Rule[] {
  const single = quote.length === 1;
  return rules(
    ['\\\\([\\\\abfnrtv"\'\\n]|x[a-fA-F0-9]{2}|[0-7]{1,3}|N\\{[^}]*\\}|u[a-fA-F0-9]{4}|U[a-fA-F0-9]{8})', 'se'],
    [quote, cls, '#pop'],
    [`[^\\\\${quote[0]}\\n]+`, cls],
    [single ? '[\\\\\\n]' : `[\\\\${quote[0]}\\n]`, cls],
  );
}

/** f-strings: like strings, with `{expression}` interpolations lexed as code. */
function pyFString(quote: string, cls: string): Rule[] {
  const single = quote.length === 1;
  return rules(
    ['\\{\\{|\\}\\}', 'se'],
    ['\\\\([\\\\abfnrtv"\'\\n]|x[a-fA-F0-9]{2}|[0-7]{1,3}|N\\{[^}]*\\}|u[a-fA-F0-9]{4}|U[a-fA-F0-9]{8})', 'se'],
    [quote, cls, '#pop'],
    ['\\{', 'si', 'fexpr'],
    ['\\}', 'si'],
    [`[^\\\\${quote[0]}{}\\n]+`, cls],
    [single ? '[\\\\\\n]' : `[\\\\${quote[0]}\\n]`, cls],
  );
}

const PYTHON: Lexer = {
  root: [
    ...rules(
      ['\\n', ''],
      ['^([^\\S\\n]*)([rRuUbB]{0,2})("""[\\s\\S]*?""")', ['', 'sa', 'sd']],
      ["^([^\\S\\n]*)([rRuUbB]{0,2})('''[\\s\\S]*?''')", ['', 'sa', 'sd']],
      ['(?<![\\s\\S])#!.+$', 'ch'],
      ['#.*$', 'c1'],
      ['\\\\\\n', ''],
      ['\\\\', ''],
      [`(${PY_KEYWORDS})\\b`, 'k'],
      ['(def)([^\\S\\n]+)', ['k', ''], 'funcname'],
      ['(class)([^\\S\\n]+)', ['k', ''], 'classname'],
      ['(from)([^\\S\\n]+)', ['kn', ''], 'fromimport'],
      ['(import)([^\\S\\n]+)', ['kn', ''], 'import'],
      ['(in|is|and|or|not)\\b', 'ow'],
      ['(True|False|None)\\b', 'kc'],
      ['([fF][rR]?|[rR][fF])(""")', ['sa', 's2'], 'tdqf'],
      ["([fF][rR]?|[rR][fF])(''')", ['sa', 's1'], 'tsqf'],
      ['([fF][rR]?|[rR][fF])(")', ['sa', 's2'], 'dqf'],
      ["([fF][rR]?|[rR][fF])(')", ['sa', 's1'], 'sqf'],
      ['([rRbBuU]{0,2})(""")', ['sa', 's2'], 'tdqs'],
      ["([rRbBuU]{0,2})(''')", ['sa', 's1'], 'tsqs'],
      ['([rRbBuU]{0,2})(")', ['sa', 's2'], 'dqs'],
      ["([rRbBuU]{0,2})(')", ['sa', 's1'], 'sqs'],
      ['[^\\S\\n]+', ''],
      ['(\\d(?:_?\\d)*\\.(?:\\d(?:_?\\d)*)?|(?:\\d(?:_?\\d)*)?\\.\\d(?:_?\\d)*)([eE][+-]?\\d(?:_?\\d)*)?j?', 'mf'],
      ['\\d(?:_?\\d)*[eE][+-]?\\d(?:_?\\d)*j?', 'mf'],
      ['0[oO](?:_?[0-7])+', 'mo'],
      ['0[bB](?:_?[01])+', 'mb'],
      ['0[xX](?:_?[a-fA-F0-9])+', 'mh'],
      ['\\d(?:_?\\d)*', 'mi'],
      ['!=|==|<<|>>|:=|[-~+/*%=<>&^|.]', 'o'],
      ['[\\]{}:(),;[]', 'p'],
      [`(?<!\\.)(${PY_BUILTINS})\\b`, 'nb'],
      ['(?<!\\.)(self|Ellipsis|NotImplemented|cls)\\b', 'bp'],
      [`(?<!\\.)(${PY_EXCEPTIONS})\\b`, 'ne'],
      ['__[a-zA-Z_]\\w*__', 'fm'],
      ['@[\\p{L}_][\\p{L}\\p{N}_.]*', 'nd'],
      ['@', 'o'],
      ['[\\p{L}_][\\p{L}\\p{N}_]*', 'n'],
      ['.', 'err'],
    ),
  ],
  funcname: rules(['__[a-zA-Z_]\\w*__', 'fm', '#pop'], ['[\\p{L}_][\\p{L}\\p{N}_]*', 'nf', '#pop'], ['', '', '#pop']),
  classname: rules(['[\\p{L}_][\\p{L}\\p{N}_]*', 'nc', '#pop'], ['', '', '#pop']),
  import: rules(
    ['([^\\S\\n]+)(as)([^\\S\\n]+)', ['', 'k', '']],
    ['\\.', 'nn'],
    ['[\\p{L}_][\\p{L}\\p{N}_]*', 'nn'],
    ['([^\\S\\n]*)(,)([^\\S\\n]*)', ['', 'o', '']],
    ['', '', '#pop'],
  ),
  fromimport: rules(
    ['([^\\S\\n]+)(import)\\b', ['', 'kn'], '#pop'],
    ['\\.', 'nn'],
    ['None\\b', 'kc', '#pop'],
    ['[\\p{L}_][\\p{L}\\p{N}_]*', 'nn'],
    ['', '', '#pop'],
  ),
  fexpr: [
    ...rules(['(=\\s*)?(![sraf])?\\}', 'si', '#pop'], ['(=\\s*)?(![sraf])?:', 'si', '#pop'], ['\\s+', '']),
  ],
  dqf: pyFString('"', 's2'),
  sqf: pyFString("'", 's1'),
  tdqf: pyFString('"""', 's2'),
  tsqf: pyFString("'''", 's1'),
  dqs: pyString('"', 's2'),
  sqs: pyString("'", 's1'),
  tdqs: pyString('"""', 's2'),
  tsqs: pyString("'''", 's1'),
};

const TEX: Lexer = {
  root: rules(
    ['\\\\\\[', 'sb', 'displaymath'],
    ['\\\\\\(', 's', 'inlinemath'],
    ['\\$\\$', 'sb', 'displaymath'],
    ['\\$', 's', 'inlinemath'],
    ['\\\\([a-zA-Z@_:]+|\\S?)', 'k', 'command'],
    ['\\\\$', 'k'],
    ['%.*?\\n', 'c'],
    ['[{}]', 'nb'],
    ['[&_^]', 'nb'],
    ['[^\\\\$%&_^{}]+', ''],
  ),
  math: rules(
    ['\\\\([a-zA-Z]+|\\S?)', 'nv'],
    ['%.*?\\n', 'c'],
    ['[{}]', 'nb'],
    ['[&_^]', 'nb'],
    ['[0-9]+', 'm'],
    ['[-=!+*/()\\[\\]]', 'o'],
    ['[^=!+*/()\\[\\]\\\\$%&_^{}0-9-]+', 'nb'],
  ),
  inlinemath: rules(['\\\\\\)', 's', '#pop'], ['\\$', 's', '#pop']),
  displaymath: rules(['\\\\\\]', 's', '#pop'], ['\\$\\$', 's', '#pop'], ['\\$', 'nb']),
  command: rules(['\\[.*?\\]', 'na'], ['\\*', 'k'], ['', '', '#pop']),
};
// Interpolations inside f-strings are ordinary expressions.
PYTHON.fexpr!.push(...PYTHON.root!.filter((r) => !r.re.source.startsWith('\\n')));
TEX.inlinemath!.push(...TEX.math!);
TEX.displaymath!.push(...TEX.math!);

const LEXERS = new Map<string, Lexer>([
  ['Python', PYTHON],
  ['Python 2.x', PYTHON],
  ['TeX', TEX],
]);

// Pygments aliases -> lexer names (what Zulip writes into data-code-language).
const LANGUAGE_NAMES: Record<string, string> = {};
function alias(name: string, ...aliases: string[]): void {
  for (const a of aliases) LANGUAGE_NAMES[a] = name;
}
alias('Python', 'python', 'py', 'sage', 'python3', 'py3', 'bazel', 'starlark');
alias('Python 2.x', 'python2', 'py2');
alias('Python console session', 'pycon', 'python-console');
alias('Python Traceback', 'pytb', 'py3tb');
alias('JavaScript', 'javascript', 'js');
alias('TypeScript', 'typescript', 'ts');
alias('JSX', 'jsx', 'react');
alias('JSON', 'json', 'json-object');
alias('Java', 'java');
alias('Kotlin', 'kotlin');
alias('Scala', 'scala');
alias('Groovy', 'groovy');
alias('C', 'c');
alias('C++', 'cpp', 'c++');
alias('C#', 'csharp', 'c#', 'cs');
alias('F#', 'fsharp', 'f#');
alias('Objective-C', 'objective-c', 'objectivec', 'obj-c', 'objc');
alias('Swift', 'swift');
alias('Go', 'go', 'golang');
alias('Rust', 'rust', 'rs');
alias('Zig', 'zig');
alias('Dart', 'dart');
alias('Ruby', 'ruby', 'rb', 'duby');
alias('PHP', 'php', 'php3', 'php4', 'php5');
alias('Perl', 'perl', 'pl');
alias('Lua', 'lua');
alias('Bash', 'bash', 'sh', 'ksh', 'zsh', 'shell', 'openrc');
alias('Bash Session', 'console', 'shell-session');
alias('PowerShell', 'powershell', 'pwsh', 'posh', 'ps1', 'psm1');
alias('Batchfile', 'batch', 'bat', 'dosbatch', 'winbatch');
alias('HTML', 'html');
alias('XML', 'xml');
alias('CSS', 'css');
alias('SCSS', 'scss');
alias('Sass', 'sass');
alias('LessCss', 'less');
alias('YAML', 'yaml');
alias('TOML', 'toml');
alias('INI', 'ini', 'cfg', 'dosini');
alias('SQL', 'sql');
alias('PostgreSQL SQL dialect', 'postgresql', 'postgres');
alias('MySQL', 'mysql');
alias('TeX', 'tex', 'latex');
alias('Markdown', 'markdown', 'md');
alias('reStructuredText', 'restructuredtext', 'rst', 'rest');
alias('Diff', 'diff', 'udiff');
alias('Docker', 'docker', 'dockerfile');
alias('Makefile', 'make', 'makefile', 'mf', 'bsdmake');
alias('CMake', 'cmake');
alias('Nginx configuration file', 'nginx');
alias('Haskell', 'haskell', 'hs');
alias('OCaml', 'ocaml');
alias('Elixir', 'elixir', 'ex', 'exs');
alias('Erlang', 'erlang');
alias('Clojure', 'clojure', 'clj');
alias('Common Lisp', 'common-lisp', 'cl', 'lisp');
alias('Scheme', 'scheme', 'scm');
alias('Racket', 'racket', 'rkt');
alias('Julia', 'julia', 'jl');
alias('R', 'splus', 's', 'r');
alias('Matlab', 'matlab');
alias('Fortran', 'fortran', 'f90');
alias('VB.net', 'vb.net', 'vbnet', 'lobas', 'oobas', 'sobas', 'visual-basic', 'visualbasic');
alias('CoffeeScript', 'coffeescript', 'coffee-script', 'coffee');
alias('GraphQL', 'graphql');
alias('Protocol Buffer', 'protobuf', 'proto');
alias('Terraform', 'terraform', 'tf', 'hcl');
alias('Nix', 'nixos', 'nix');
alias('VimL', 'vim');
alias('Emacs Lisp', 'emacs-lisp', 'elisp', 'emacs');
alias('Text only', 'text');
alias('Verilog', 'verilog', 'v');
alias('VHDL', 'vhdl');
alias('Solidity', 'solidity');
alias('Gherkin', 'gherkin', 'cucumber');
alias('Handlebars', 'handlebars');
alias('Jinja', 'jinja', 'django');
alias('Prolog', 'prolog');
alias('Smalltalk', 'smalltalk', 'squeak', 'st');
alias('Tcl', 'tcl');
alias('Awk', 'awk', 'gawk', 'mawk', 'nawk');
alias('Elm', 'elm');
alias('PureScript', 'purescript');
alias('Idris', 'idris', 'idr');
alias('Agda', 'agda');
alias('Coq', 'coq');
alias('Lean', 'lean', 'lean3');
alias('Isabelle', 'isabelle');
alias('Assembly', 'nasm');
alias('GAS', 'gas', 'asm');

/** The Pygments lexer name for a fence language, or undefined if Pygments has no such lexer. */
export function canonicalLanguageName(lang: string): string | undefined {
  return Object.hasOwn(LANGUAGE_NAMES, lang) ? LANGUAGE_NAMES[lang] : undefined;
}

interface CompiledState {
  re: RegExp;
  rules: Rule[];
}

const compiledStates = new WeakMap<Rule[], CompiledState>();

/** A regex source with its capturing groups made non-capturing (lookarounds untouched). */
function withoutCaptures(src: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === '\\') {
      out += c + (src[++i] ?? '');
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else if (c === '(' && src[i + 1] !== '?') {
      out += '(?:';
    } else if (c === '(' && src.startsWith('(?<', i) && src[i + 3] !== '=' && src[i + 3] !== '!') {
      out += '(?:';
      i = src.indexOf('>', i);
    } else {
      out += c;
    }
  }
  return out;
}

/**
 * One sticky regex per state whose alternatives are the rules in order (the first rule that
 * matches wins, as in Pygments); group i + 1 tells that rule i matched.
 */
function compileState(state: Rule[]): CompiledState {
  let compiled = compiledStates.get(state);
  if (!compiled) {
    compiled = { re: new RegExp(state.map((r) => `(${withoutCaptures(r.re.source)})`).join('|'), 'myu'), rules: state };
    compiledStates.set(state, compiled);
  }
  return compiled;
}

function tokenize(lexer: Lexer, text: string): Token[] {
  const out: Token[] = [];
  const stack = ['root'];
  let pos = 0;
  while (pos < text.length) {
    const state = compileState(lexer[stack[stack.length - 1]!]!);
    state.re.lastIndex = pos;
    const m = state.re.exec(text);
    let i = -1;
    if (m) for (let g = 1; g < m.length; g++) if (m[g] !== undefined) { i = g - 1; break; }
    const rule = state.rules[i];
    // A zero-width match that does not change state would loop forever: treat as no match.
    if (!m || !rule || (m[0].length === 0 && !rule.next)) {
      // Pygments' error recovery: emit one character and fall back to the root state.
      const ch = String.fromCodePoint(text.codePointAt(pos)!);
      out.push([text[pos] === '\n' ? '' : 'err', ch]);
      pos += ch.length;
      stack.length = 1;
      continue;
    }
    if (typeof rule.action === 'string') {
      if (m[0]) out.push([rule.action, m[0]]);
    } else {
      // Only rules with per-group token types need their own groups.
      rule.re.lastIndex = pos;
      const groups = rule.re.exec(text)!;
      rule.action.forEach((cls, k) => {
        const part = groups[k + 1];
        if (part) out.push([cls, part]);
      });
    }
    if (rule.next === '#pop') {
      if (stack.length > 1) stack.pop();
    } else if (rule.next) {
      stack.push(rule.next);
    }
    pos += m[0].length;
  }
  return out;
}

const PYGMENTS_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function pygmentsEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => PYGMENTS_ESCAPES[c]!);
}

/** Pygments' HtmlFormatter line assembly: spans never cross lines; equal classes merge. */
function formatTokens(tokens: Token[]): string {
  const lines: string[] = [];
  let line: string[] = [];
  let lspan = '';
  for (const [cls, value] of tokens) {
    const cspan = cls ? `<span class="${cls}">` : '';
    const parts = pygmentsEscape(value).split('\n');
    for (const part of parts.slice(0, -1)) {
      if (line.length > 0) {
        if (lspan !== cspan && part) {
          line.push(lspan && '</span>', cspan, part, cspan && '</span>', '\n');
        } else {
          line.push(part, lspan && '</span>', '\n');
        }
        lines.push(line.join(''));
        line = [];
      } else if (part) {
        lines.push(cspan + part + (cspan && '</span>') + '\n');
      } else {
        lines.push('\n');
      }
    }
    const last = parts[parts.length - 1]!;
    if (line.length > 0 && last) {
      if (lspan !== cspan) {
        line.push(lspan && '</span>', cspan, last);
        lspan = cspan;
      } else {
        line.push(last);
      }
    } else if (last) {
      line = [cspan, last];
      lspan = cspan;
    }
  }
  if (line.length > 0) {
    line.push(lspan && '</span>', '\n');
    lines.push(line.join(''));
  }
  return lines.join('');
}

/**
 * Highlight `code` as Pygments would for the language alias `lang` (undefined: plain text).
 * Returns `<div class="codehilite"><pre><span></span><code>...</code></pre></div>`.
 */
export function highlightCode(code: string, lang: string | undefined): string {
  // Pygments' stripnl and ensurenl options.
  let text = code.replace(/^\n+|\n+$/g, '');
  text += '\n';
  const name = lang === undefined ? undefined : canonicalLanguageName(lang);
  const lexer = name === undefined ? undefined : LEXERS.get(name);
  const tokens: Token[] = lexer ? tokenize(lexer, text) : [['', text]];
  return `<div class="codehilite"><pre><span></span><code>${formatTokens(tokens)}</code></pre></div>`;
}
