import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { State } from '../state/store';

/** Whether an address belongs to the settings overlay rather than to the message views. */
export function isSettingsHash(hash: string): boolean {
  return /^#(settings|organization|channels|streams|groups)(\/|$)/.test(hash);
}

type SettingsProps = { s: State; hash: string; onClose: () => void };
let loaded: FunctionComponent<SettingsProps> | null = null;

/**
 * The settings overlay, loaded on first use: its code and styles are a chunk of their own, so
 * the app's first load stays within its budget.
 */
export function LazySettings(props: SettingsProps) {
  const [Settings, setSettings] = useState(() => loaded);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (Settings) return;
    import('./Settings').then(
      (m) => {
        loaded = m.Settings;
        setSettings(() => m.Settings);
      },
      (e) => setError(String(e)),
    );
  }, []);
  if (Settings) return <Settings {...props} />;
  return (
    <div class="settings-overlay" role="dialog" aria-label="Settings">
      <div class="loading" role="status">
        {error ? `Could not load settings: ${error}` : 'Loading…'}
      </div>
    </div>
  );
}
