import { render } from 'preact';
import './ui/styles.css';

const root = document.getElementById('app')!;
const onLogin = /^\/(login|accounts\/login)\/?$/.test(window.location.pathname);

// The login page and the app are separate chunks: a visitor who is not logged in loads only the form.
if (onLogin) {
  void import('./ui/Login').then(({ Login }) => render(<Login />, root));
} else {
  void import('./ui/App').then(({ App }) => render(<App />, root));
}
