import { useState } from 'preact/hooks';

/**
 * A text field with a suggestion list under it (Zulip's typeahead). It stays a textbox for
 * screen readers (a `list` attribute would make it a combobox), announcing the options as a
 * listbox it controls.
 */
export function SuggestInput(p: {
  id: string;
  label: string;
  type?: 'text' | 'search';
  inputRef?: { current: HTMLInputElement | null };
  value: string;
  placeholder?: string;
  maxLength?: number;
  onInput: (v: string) => void;
  /** Suggestions for the current value; `apply` turns a picked one into the new value. */
  suggestions: (value: string) => string[];
  apply?: (value: string, picked: string) => string;
}) {
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const options = open ? p.suggestions(p.value).slice(0, 8) : [];
  const pick = (o: string) => {
    p.onInput(p.apply ? p.apply(p.value, o) : o);
    setOpen(false);
  };
  return (
    <div class="suggest">
      <input
        ref={p.inputRef}
        type={(p.type ?? 'text') as 'text'}
        id={p.id}
        aria-label={p.label}
        aria-controls={`${p.id}-options`}
        aria-autocomplete="list"
        autoComplete="off"
        placeholder={p.placeholder}
        {...(p.maxLength !== undefined ? { maxLength: p.maxLength } : {})}
        value={p.value}
        onInput={(e) => {
          p.onInput((e.target as HTMLInputElement).value);
          setOpen(true);
          setActive(0);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setTimeout(() => setOpen(false), 150)}
        onKeyDown={(e) => {
          if (!options.length) return;
          if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            e.preventDefault();
            setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length);
          } else if (e.key === 'Enter' || e.key === 'Tab') {
            if (e.key === 'Enter') e.preventDefault();
            pick(options[Math.min(active, options.length - 1)]!);
          } else if (e.key === 'Escape') setOpen(false);
        }}
      />
      {options.length > 0 && (
        <ul class="typeahead below" id={`${p.id}-options`} role="listbox" aria-label={`${p.label} suggestions`}>
          {options.map((o, i) => (
            <li key={o} role="option" aria-selected={i === active} class={i === active ? 'active' : ''} onMouseDown={(e) => {
              e.preventDefault();
              pick(o);
            }}>
              {o}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
