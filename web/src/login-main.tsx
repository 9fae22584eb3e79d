import { render } from 'preact';
import { Login } from './ui/Login';
import './ui/styles.css';

render(<Login />, document.getElementById('app')!);
