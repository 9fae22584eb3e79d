import { useState } from 'preact/hooks';

const COLORS = ['#4f6df5', '#2f9e44', '#e8590c', '#9c36b5', '#1098ad', '#c2255c', '#5c940d', '#d9480f'];

/** A person's (or the organization's) picture; their initials on a colour when it cannot load. */
export function Avatar({ url, name, id, size, className }: { url: string | null | undefined; name: string; id: number; size: number; className?: string }) {
  // The address that failed: a new picture (an upload) is tried again.
  const [failed, setFailed] = useState<string | null>(null);
  if (url && failed !== url) return <img class={`avatar ${className ?? ''}`} src={url} alt="" width={size} height={size} loading="lazy" onError={() => setFailed(url)} />;
  const initials = name
    .split(/[\s,]+/)
    .filter(Boolean)
    .slice(0, 2)
    .map((w) => [...w][0]!.toUpperCase())
    .join('');
  return (
    <span class={`avatar initials ${className ?? ''}`} aria-hidden="true" style={{ width: `${size}px`, height: `${size}px`, background: COLORS[Math.abs(id) % COLORS.length], fontSize: `${Math.round(size * 0.4)}px` }}>
      {initials}
    </span>
  );
}
