export type * from './service.js';
