import { render } from 'preact';
import { register } from './api/events';
import { App } from './ui/App';
import './ui/styles.css';

// Registering starts before the first render: the queue and state arrive while the page draws.
const registration = register();
render(<App registration={registration} />, document.getElementById('app')!);
