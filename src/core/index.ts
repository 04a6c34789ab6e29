export { native } from './native.js';
