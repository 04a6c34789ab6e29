/** The package's version, sent in the user agent; test/client-packages.test.ts holds it equal to package.json's. */
export const VERSION = '0.1.0';
